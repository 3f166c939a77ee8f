//! The communicator's call lock and what a call's entry needs of its state, in two words: a
//! call is entered with one compare-and-swap on the lock and a read of the flags, and left with
//! a read of the flags and a plain store; nothing else is locked on the way (ADR 32). Only the
//! lock's holder writes the lock word, so freeing it needs no atomic read-modify-write; the
//! rare paths (an abort asked for, a call abandoned, a state change) write the flags word.
//!
//! An abort asked for while a call holds the lock is run by that call as it leaves, or by the
//! thread that asked: the leaving call reads the flags before it frees the lock, and a request
//! that came after that read is still trying to take the lock (an abort waits for it until its
//! deadline, see `abort.rs`), so it takes it the moment the call frees it.

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

/// The flags' bits: the kind in the two lowest.
const KIND: u32 = 0b11;
/// An NCCL call on the handle was abandoned inside NCCL: nobody waits for the lock.
const LOST: u32 = 1 << 3;
/// An abort was asked for and has not run: the call holding the lock runs it as it leaves.
const ABORT: u32 = 1 << 4;

/// One reading of the flags.
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

/// The call lock and the flags (see the module).
pub(super) struct Gate {
    /// 1 while an NCCL call on the handle runs (NCCL's one-thread-at-a-time rule); written
    /// only by a compare-and-swap from 0 and by its holder.
    lock: AtomicU32,
    flags: AtomicU32,
}

impl Gate {
    pub(super) const fn new() -> Gate {
        Gate { lock: AtomicU32::new(0), flags: AtomicU32::new(Kind::Creating as u32) }
    }

    pub(super) fn load(&self) -> Word {
        Word(self.flags.load(Ordering::SeqCst))
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
        let _ = self.flags.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| Some(f(w)));
    }

    /// Takes the call lock if it is free now (lost or not: the caller decides), with the flags
    /// as they were once it was taken. The swap and the read are sequentially consistent, so a
    /// request that set its flag before the swap is seen, and one that came after finds the
    /// lock taken.
    #[inline(always)]
    pub(super) fn try_hold(&self) -> Option<(Held<'_>, Word)> {
        if self.lock.load(Ordering::Relaxed) != 0 {
            return None;
        }
        self.lock.compare_exchange(0, 1, Ordering::SeqCst, Ordering::Relaxed).ok()?;
        Some((Held(self), self.load()))
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
    /// Frees the lock unless an abort was asked for: then the lock is handed back, still held,
    /// for the caller to run the abort first. A request made after the flags were read here
    /// finds the lock taken and waits for it (see the module).
    #[inline(always)]
    pub(super) fn release_unless_abort(self) -> Option<Self> {
        if self.0.load().abort_asked() {
            return Some(self);
        }
        drop(self);
        None
    }
}

impl Drop for Held<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.lock.store(0, Ordering::Release);
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
