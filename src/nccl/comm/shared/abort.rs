//! Aborting a communicator: from any thread, routed to the thread NCCL's job belongs to, left
//! pending behind a blocking call and run when it returns; and a call abandoned at its deadline,
//! whose thread aborts the communicator once NCCL returns. docs/adr/0023 has the bounds.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{locked, Held, Shared, QUERY_GRACE};
use crate::nccl::comm::bounded::{spawn_bounded, Busy, Exit};
use crate::nccl::library::functions::Sym;
use crate::nccl::types::error::Error;
use crate::nccl::types::state::{Cause, CommState};
use crate::time::{Backoff, Deadline};
use crate::trace::trace_event;

impl Shared {
    /// Aborts from any thread, within the teardown timeout. While NCCL's job for the
    /// communicator belongs to another thread (its [`Home`]), the abort runs there. Otherwise it
    /// runs on a thread of its own, which takes the call lock (waiting at most the teardown
    /// timeout) and calls `ncclCommAbort`: if a blocking NCCL call holds the lock longer, the
    /// abort is left pending and runs when that call returns (`Error::AbortPending`); if
    /// `ncclCommAbort` itself does not return in time, `Error::Timeout`.
    /// `by` names who asked, for the `abort.requested` event (feature `tracing`).
    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
    pub(crate) fn request_abort(self: &Arc<Self>, cause: Cause, by: &'static str) -> Result<(), Error> {
        self.refuse_borrowed("ncclCommAbort")?;
        trace_event!(nccl, WARN, "abort.requested", by = by, rank = self.rank_for_events(), cause = %cause,
            state = %self.state(), "an abort of the communicator was requested");
        self.record_abort(cause.clone());
        let deadline = Deadline::after(self.timeouts().teardown);
        let home = locked(&self.home).clone();
        if let Some(home) = home {
            let abort = Arc::clone(&home.abort);
            if !home.thread.call_returned() {
                // The call that started NCCL's job is still inside NCCL: the abort runs on its
                // thread the moment it returns.
                if home.thread.hand(Box::new(move || drop(abort(cause)))) {
                    trace_event!(
                        nccl,
                        WARN,
                        "abort.pending",
                        rank = self.rank_for_events(),
                        waiting_for = "the creating call",
                        "an abort waits for the call that is making the communicator"
                    );
                    return Err(Error::AbortPending);
                }
            } else {
                match home.thread.run(deadline, move || abort(cause)) {
                    Some(r) => return r,
                    None if deadline.passed() => {
                        trace_event!(
                            nccl,
                            WARN,
                            "abort.pending",
                            rank = self.rank_for_events(),
                            waiting_for = "the creation's thread",
                            waited_ms = crate::trace::ms(deadline.waited()),
                            "an abort waits for the thread of the creation it belongs to"
                        );
                        return Err(Error::AbortPending);
                    }
                    // The home thread has ended: its job is over, abort here.
                    None => {}
                }
            }
            self.set_home(None);
        }
        let me = Arc::clone(self);
        let context = self.nccl.cuda_if_any().cloned().zip(self.context);
        let abort = move || {
            let _busy = Busy::start();
            me.abort_here(deadline)
        };
        match spawn_bounded(context, abort, |_| Exit::AfterWork) {
            Ok(call) => {
                let operation = "ncclCommAbort";
                // `ncclCommAbort` itself did not return: the communicator is left to that
                // thread like any abandoned call (teardown then does nothing).
                let abandon = || self.abandon(Cause::Timeout { operation, waited: deadline.waited() });
                // The thread gives up waiting for the call lock at `deadline`: its answer
                // (AbortPending) comes a moment later.
                match call.wait(deadline.later(QUERY_GRACE), &|| false, abandon) {
                    Some(r) => r,
                    None => {
                        trace_event!(
                            nccl,
                            ERROR,
                            "abort.timed_out",
                            rank = self.rank_for_events(),
                            waited_ms = crate::trace::ms(deadline.waited()),
                            "ncclCommAbort did not return in time: the communicator is lost, left to that thread"
                        );
                        Err(Error::Timeout { operation, waited: deadline.waited() })
                    }
                }
            }
            Err(_) => self.abort_here(deadline),
        }
    }

    /// Asks for an abort with `cause` (the first cause asked for is kept).
    fn record_abort(&self, cause: Cause) {
        locked(&self.pending_abort).get_or_insert(cause);
        self.gate.set_abort_asked(true);
        if let Some(w) = self.watchdog.get() {
            w.wake();
        }
    }

    /// Aborts on this thread, whatever the home (a home's own abort, a creation aborting what
    /// it made): see [`abort_here`](Self::abort_here).
    pub(crate) fn abort_on_this_thread(&self, cause: Cause, deadline: Deadline) -> Result<(), Error> {
        self.record_abort(cause);
        self.abort_here(deadline)
    }

    /// The abort itself, on this thread: takes the call lock (waiting until `deadline`, not at
    /// all once the communicator is lost) and runs the pending abort. Never routed to a home:
    /// a home runs it.
    fn abort_here(&self, deadline: Deadline) -> Result<(), Error> {
        let mut backoff = Backoff::new();
        loop {
            if let Some((held, _)) = self.gate.try_hold() {
                return self.abort_locked(&held);
            }
            if deadline.passed() || self.is_lost() {
                trace_event!(
                    nccl,
                    WARN,
                    "abort.pending",
                    rank = self.rank_for_events(),
                    waiting_for = "an NCCL call on the communicator",
                    waited_ms = crate::trace::ms(deadline.waited()),
                    "an abort waits for the blocking NCCL call that holds the communicator; it runs when that returns"
                );
                return Err(Error::AbortPending);
            }
            backoff.pause(deadline.left());
        }
    }

    /// Runs a pending abort (the call lock is held): `ncclCommAbort` on the handle unless it
    /// was released already or NCCL never made it known (then only the state changes: whoever
    /// gets the handle later aborts it, see `create`).
    pub(super) fn abort_locked(&self, _call: &Held<'_>) -> Result<(), Error> {
        let cause = locked(&self.pending_abort).take().unwrap_or(Cause::Requested);
        self.gate.set_abort_asked(false);
        if self.borrowed {
            // Reached only from inside (a creation stopping a borrowed parent, an abandoned
            // call's cleanup): the owner ends it. Not "aborted", so a creation that needed the
            // abort to join NCCL's job keeps its slots and thread.
            self.fail(cause);
            return Err(Error::NotOwned { operation: "ncclCommAbort" });
        }
        let comm = self.handle();
        let mark = |cause: Cause| self.mark(CommState::Aborted(cause));
        if comm.is_null() || self.released.swap(true, Ordering::AcqRel) {
            mark(cause);
            return Ok(());
        }
        if let Some(w) = self.watchdog.get() {
            w.stop();
        }
        // Marked first: NCCL's abort makes the kernels exit before it returns, and a stream
        // wait that sees them done must see the abort too.
        mark(cause);
        // SAFETY: this communicator's handle, under its call lock, given to NCCL's abort once
        // (`released` says so from now on).
        let r = unsafe { self.nccl.functions().comm_abort.call(&self.nccl, (comm,)) };
        trace_event!(nccl, INFO, "abort.done", rank = self.rank_for_events(), state = %self.state(),
            result = ?r, "ncclCommAbort returned");
        match r? {
            r if r.is_success() => Ok(()),
            r => Err(self.nccl.failure(Sym::CommAbort, r, core::ptr::null_mut())),
        }
    }

    /// True once the handle was given to `ncclCommAbort` or `ncclCommDestroy`.
    pub(crate) fn is_released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    /// Marks the communicator lost: an NCCL call on it was abandoned (`cause` says why). The
    /// thread running that call aborts it when the call returns.
    pub(crate) fn abandon(&self, cause: Cause) {
        self.record_abort(cause);
        self.gate.set_lost(true);
    }

    /// Run by the thread of an abandoned call once that call has returned (the call lock is
    /// free again): aborts the communicator, which nobody else may touch, or records that the
    /// call destroyed it. Returns whether NCCL's object is gone.
    pub(crate) fn finish_abandoned(&self, destroyed: bool) -> bool {
        let call = self.gate.hold();
        let gone = if destroyed {
            self.released.store(true, Ordering::Release);
            self.change_state(|s| *s = CommState::Destroyed);
            true
        } else {
            self.abort_locked(&call).is_ok() || self.handle().is_null()
        };
        drop(call);
        self.gate.set_lost(false);
        gone
    }
}
