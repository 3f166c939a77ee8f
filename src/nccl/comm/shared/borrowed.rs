//! A borrowed communicator's side of the shared state: one adopted as
//! `Ownership::Borrowed` (docs/adr/0029-adopting-communicators.md) belongs to code outside the
//! crate, which ends it. Nothing here may free or stop NCCL's object: every operation that would
//! is refused by name, and giving it back (`Drop`) makes no NCCL call at all, only makes sure
//! none follows.

use crate::nccl::types::error::Error;
use crate::nccl::types::state::CommState;
use crate::time::Backoff;

use super::Shared;

impl Shared {
    /// This state, for a communicator its owner ends (set before it is shared).
    pub(crate) fn into_borrowed(mut self) -> Self {
        self.borrowed = true;
        self
    }

    /// True for a communicator adopted as borrowed.
    pub(crate) fn is_borrowed(&self) -> bool {
        self.borrowed
    }

    /// `Err(NotOwned { operation })` on a borrowed communicator: the check before anything that
    /// ends or stops NCCL's object.
    pub(crate) fn refuse_borrowed(&self, operation: &'static str) -> Result<(), Error> {
        if self.borrowed {
            return Err(Error::NotOwned { operation });
        }
        Ok(())
    }

    /// Gives a borrowed communicator back to its owner (what its `Drop` does): the watchdog
    /// stops, and the state becomes [`CommState::Released`] under the call lock, so that no
    /// later call through this crate (an abort handle, the watchdog's poll) reaches NCCL's
    /// object, which its owner may free from now on. No NCCL call, and no wait for NCCL: the
    /// lock is held only by calls that return (the watchdog's non-blocking poll), unless a call
    /// on the communicator was abandoned at its deadline (`lost`), which is not waited for.
    pub(crate) fn release_borrowed(&self) {
        debug_assert!(self.borrowed);
        if let Some(w) = self.watchdog.get() {
            w.stop();
        }
        let mut backoff = Backoff::new();
        let _call = loop {
            if self.is_lost() {
                break None;
            }
            match self.gate.try_hold() {
                Some((held, _)) => break Some(held),
                None => backoff.pause(None),
            }
        };
        self.change_state(|s| *s = CommState::Released);
    }
}
