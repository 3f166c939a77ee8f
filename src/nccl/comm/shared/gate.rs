//! The communicator's call lock and what a call's entry needs of its state, in one word: a call
//! is entered with one compare-and-swap and left with another, and nothing else is locked on
//! the way (ADR 32). The rare paths (an abort asked for, a call abandoned, a state change) set
//! their bit in the same word, so the leaving call sees them in the value its swap compares.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::time::Backoff;

/// What a call's entry needs to know of a [`CommState`](crate::nccl::types::state::CommState).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
pub(super) enum Kind {
    Creating = 0,
    Ready = 1,
    /// Failed or revoked: recovery calls only.
    Recovery = 2,
    /// Aborted, destroyed or lost: nothing.
    Over = 3,
}

/// The word's bits: the kind in the two lowest.
const KIND: u32 = 0b11;
/// The call lock: an NCCL call on the handle is running (NCCL's one-thread-at-a-time rule).
const BUSY: u32 = 1 << 2;
/// An NCCL call on the handle was abandoned inside NCCL: nobody waits for the lock.
const LOST: u32 = 1 << 3;
/// An abort was asked for and has not run: the call holding the lock runs it as it leaves.
const ABORT: u32 = 1 << 4;

/// One reading of the word.
#[derive(Clone, Copy)]
pub(super) struct Word(u32);

impl Word {
    pub(super) fn kind(self) -> Kind {
        match self.0 & KIND {
            0 => Kind::Creating,
            1 => Kind::Ready,
            2 => Kind::Recovery,
            _ => Kind::Over,
        }
    }

    pub(super) fn lost(self) -> bool {
        self.0 & LOST != 0
    }

    pub(super) fn abort_asked(self) -> bool {
        self.0 & ABORT != 0
    }
}

/// The word (see the module).
pub(super) struct Gate(AtomicU32);

impl Gate {
    pub(super) const fn new() -> Gate {
        Gate(AtomicU32::new(Kind::Creating as u32))
    }

    pub(super) fn load(&self) -> Word {
        Word(self.0.load(Ordering::Acquire))
    }

    pub(super) fn set_kind(&self, kind: Kind) {
        self.update(|w| w & !KIND | kind as u32);
    }

    pub(super) fn set_lost(&self, on: bool) {
        self.update(|w| if on { w | LOST } else { w & !LOST });
    }

    pub(super) fn set_abort_asked(&self, on: bool) {
        self.update(|w| if on { w | ABORT } else { w & !ABORT });
    }

    fn update(&self, f: impl Fn(u32) -> u32) {
        let _ = self.0.fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| Some(f(w)));
    }

    /// Takes the call lock if it is free now (lost or not: the caller decides), with the word as
    /// it was taken.
    #[inline(always)]
    pub(super) fn try_hold(&self) -> Option<(Held<'_>, Word)> {
        let mut w = self.0.load(Ordering::Relaxed);
        // Another bit may change meanwhile (a state change, an abort asked for): the swap fails
        // and the next attempt reads it.
        while w & BUSY == 0 {
            match self.0.compare_exchange_weak(w, w | BUSY, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Some((Held(self), Word(w))),
                Err(now) => w = now,
            }
        }
        None
    }

    /// Takes the call lock, waiting for the call that holds it however long it runs.
    pub(super) fn hold(&self) -> Held<'_> {
        let mut backoff = Backoff::new();
        loop {
            if let Some((held, _)) = self.try_hold() {
                return held;
            }
            backoff.pause(None);
        }
    }
}

/// The call lock, held; dropping it frees it.
pub(super) struct Held<'g>(&'g Gate);

impl Held<'_> {
    /// Frees the lock in one swap unless an abort was asked for: then the lock is handed back,
    /// still held, for the caller to run the abort first.
    #[inline(always)]
    pub(super) fn release_unless_abort(self) -> Option<Self> {
        let gate = &self.0 .0;
        let mut w = gate.load(Ordering::Relaxed);
        while w & ABORT == 0 {
            match gate.compare_exchange_weak(w, w & !BUSY, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => {
                    core::mem::forget(self);
                    return None;
                }
                Err(now) => w = now,
            }
        }
        Some(self)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0 .0.fetch_and(!BUSY, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_bits_kept_across_it() {
        let gate = Gate::new();
        gate.set_kind(Kind::Ready);
        let (held, w) = gate.try_hold().expect("free");
        assert_eq!(w.kind(), Kind::Ready);
        assert!(gate.try_hold().is_none(), "held once");
        gate.set_lost(true);
        gate.set_kind(Kind::Over);
        assert!(gate.try_hold().is_none(), "a state change does not free the lock");
        drop(held);
        let (_held, w) = gate.try_hold().expect("freed by drop");
        assert!(w.lost());
        assert_eq!(w.kind(), Kind::Over);
    }

    #[test]
    fn an_abort_asked_for_keeps_the_lock_for_the_leaving_call() {
        let gate = Gate::new();
        let (held, _) = gate.try_hold().unwrap();
        assert!(held.release_unless_abort().is_none());
        let (held, _) = gate.try_hold().expect("released");
        gate.set_abort_asked(true);
        let held = held.release_unless_abort().expect("kept: an abort is asked for");
        assert!(gate.try_hold().is_none());
        assert!(gate.load().abort_asked());
        gate.set_abort_asked(false);
        assert!(held.release_unless_abort().is_none());
        assert!(gate.try_hold().is_some());
    }

    #[test]
    fn many_threads_never_hold_it_together() {
        use std::sync::atomic::AtomicUsize;
        let gate = Gate::new();
        let inside = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..2000 {
                        let held = gate.hold();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                        inside.fetch_sub(1, Ordering::SeqCst);
                        assert!(held.release_unless_abort().is_none());
                    }
                });
            }
        });
    }
}
