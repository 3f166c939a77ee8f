//! What a communicator shares with its abort handles, its watchdog and the threads that run its
//! NCCL calls with deadlines: the handle, the call lock that keeps NCCL calls on it one at a
//! time and the state it guards, abort from any thread, and (in `teardown`) finalize and destroy
//! with deadlines. The fault model is docs/adr/0009-fault-model.md.

use core::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use crate::cuda::{Backoff, Context};
use crate::engine::typed::CArgs;
use crate::nccl::error::Error;
use crate::nccl::functions::Function;
use crate::nccl::functions::Sym;
use crate::nccl::library::Nccl;
use crate::nccl::state::{Allow, Cause, CommState, Deadline, RankInfo, Timeouts};
use crate::nccl::types::NcclResult;
use crate::nccl::watchdog::Watchdog;

mod teardown;

/// What a communicator shares with its abort handles, its watchdog and the threads that run its
/// NCCL calls with deadlines.
pub(crate) struct Shared {
    pub(crate) nccl: Nccl,
    /// The `ncclComm_t`; null until creation completes, then never changes.
    handle: AtomicPtr<c_void>,
    /// The call lock: held for every NCCL call on the handle (NCCL's one-thread-at-a-time rule),
    /// and the state it guards.
    state: Mutex<CommState>,
    /// Set when an NCCL call on the handle was abandoned inside NCCL: nobody waits for the lock.
    lost: AtomicBool,
    /// An abort asked for while an NCCL call held the lock; run when that call returns.
    pending_abort: Mutex<Option<Cause>>,
    has_pending_abort: AtomicBool,
    /// NCCL's non-blocking mode as NCCL will apply it: the config and `NCCL_COMM_BLOCKING`, and
    /// true once any call returned `ncclInProgress`.
    nonblocking: AtomicBool,
    pub(crate) info: OnceLock<RankInfo>,
    /// The CUDA context current where the communicator was made (NCCL's device).
    pub(crate) context: Option<Context>,
    timeouts: Mutex<Timeouts>,
    pub(crate) watchdog: OnceLock<Arc<Watchdog>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(w) = self.watchdog.get() {
            w.stop();
        }
    }
}

impl Shared {
    pub(crate) fn new(nccl: Nccl, nonblocking: bool, context: Option<Context>, timeouts: Timeouts) -> Self {
        Shared {
            nccl,
            handle: AtomicPtr::new(core::ptr::null_mut()),
            state: Mutex::new(CommState::Creating),
            lost: AtomicBool::new(false),
            pending_abort: Mutex::new(None),
            has_pending_abort: AtomicBool::new(false),
            nonblocking: AtomicBool::new(nonblocking),
            info: OnceLock::new(),
            context,
            timeouts: Mutex::new(timeouts),
            watchdog: OnceLock::new(),
        }
    }

    pub(crate) fn handle(&self) -> *mut c_void {
        self.handle.load(Ordering::Acquire)
    }

    /// Records the handle as soon as NCCL made it known (an abort can then reach it).
    pub(crate) fn set_handle(&self, handle: *mut c_void) {
        self.handle.store(handle, Ordering::Release);
    }

    pub(crate) fn timeouts(&self) -> Timeouts {
        *self.timeouts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_timeouts(&self, timeouts: Timeouts) {
        *self.timeouts.lock().unwrap_or_else(PoisonError::into_inner) = timeouts;
    }

    /// Sets the state (creation's end for children that will not be handed out).
    pub(crate) fn mark(&self, state: CommState) {
        let mut s = self.lock();
        if !matches!(*s, CommState::Aborted(_) | CommState::Destroyed) {
            *s = state;
        }
    }

    /// True while an abort was asked for and has not run.
    pub(crate) fn has_abort_request(&self) -> bool {
        self.has_pending_abort.load(Ordering::Acquire)
    }

    /// `ncclCommGetAsyncError` if the call lock is free right now (the watchdog's and the
    /// stream wait's poll: they never wait behind another call).
    pub(crate) fn try_async_error(&self) -> Option<NcclResult> {
        if self.lost.load(Ordering::Acquire) {
            return None;
        }
        let guard = self.state.try_lock().ok()?;
        if !matches!(*guard, CommState::Ready | CommState::Failed(_) | CommState::Revoked) {
            return None;
        }
        let mut state = 0i32;
        let (comm, out): (*mut c_void, *mut i32) = (self.handle(), &mut state);
        // SAFETY: a live handle (state checked under the lock) and a valid `int *`.
        let r = unsafe { self.nccl.functions().comm_get_async_error.call(&self.nccl, (comm, out)) }.ok()?;
        drop(guard);
        r.is_success().then_some(NcclResult(state))
    }

    /// Creation finished with `handle`: record it and the rank facts, and make it usable.
    pub(crate) fn complete(&self, handle: *mut c_void, info: RankInfo) {
        self.handle.store(handle, Ordering::Release);
        let _ = self.info.set(info);
        let mut s = self.lock();
        if *s == CommState::Creating {
            *s = CommState::Ready;
        }
    }

    pub(crate) fn is_nonblocking(&self) -> bool {
        self.nonblocking.load(Ordering::Relaxed)
    }

    pub(crate) fn saw_in_progress(&self) {
        self.nonblocking.store(true, Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, CommState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state now (`Lost` over anything else once a call was abandoned).
    pub(crate) fn state(&self) -> CommState {
        if self.lost.load(Ordering::Acquire) {
            let cause = self.pending_abort.lock().unwrap_or_else(PoisonError::into_inner).clone();
            return CommState::Lost(cause.unwrap_or(Cause::Requested));
        }
        self.lock().clone()
    }

    /// Takes the call lock for `op` on a communicator whose state `allow`s it.
    pub(crate) fn enter(&self, op: &'static str, allow: Allow) -> Result<CallGuard<'_>, Error> {
        if self.lost.load(Ordering::Acquire) {
            return Err(Error::Unusable { operation: op, state: self.state() });
        }
        let guard = self.lock();
        let ok = match &*guard {
            CommState::Ready => true,
            CommState::Failed(_) | CommState::Revoked => allow != Allow::Ready,
            CommState::Creating => allow == Allow::Creating,
            _ => false,
        };
        if !ok {
            return Err(Error::Unusable { operation: op, state: guard.clone() });
        }
        Ok(CallGuard { shared: self, state: Some(guard) })
    }

    /// Calls `function` under the call lock; a fatal result marks the communicator failed.
    ///
    /// # Safety
    ///
    /// NCCL's contract for `function` holds for `args`.
    pub(crate) unsafe fn call<A: CArgs>(
        &self,
        function: &Function<A, NcclResult>,
        args: A,
        allow: Allow,
    ) -> Result<NcclResult, Error> {
        let sym = function.sym();
        let mut guard = self.enter(Nccl::name(sym), allow)?;
        // SAFETY: the caller's contract.
        let r = unsafe { function.call(&self.nccl, args) }?;
        guard.note(sym, r);
        Ok(r)
    }

    /// `ncclCommGetAsyncError`, under the call lock.
    pub(crate) fn async_error(&self) -> Result<NcclResult, Error> {
        let mut state = 0i32;
        let (comm, out): (*mut c_void, *mut i32) = (self.handle(), &mut state);
        // SAFETY: this communicator's handle and a valid `int *`.
        let r = unsafe { self.call(&self.nccl.functions().comm_get_async_error, (comm, out), Allow::Recovery) }?;
        if !r.is_success() {
            return Err(self.nccl.failure(Sym::CommGetAsyncError, r, comm));
        }
        Ok(NcclResult(state))
    }

    /// Polls the async state until NCCL's background work for `sym` is done, at most until
    /// `deadline`. The lock is held only for each poll, so an abort from another thread gets in.
    pub(crate) fn wait_done(&self, sym: Sym, deadline: Deadline) -> Result<(), Error> {
        let mut backoff = Backoff::new();
        loop {
            let r = self.async_error()?;
            if r.is_success() {
                return Ok(());
            }
            if r != NcclResult::IN_PROGRESS {
                self.fail(Cause::Nccl { function: Nccl::name(sym), code: r });
                return Err(self.nccl.failure(sym, r, self.handle()));
            }
            if deadline.passed() {
                let (operation, waited) = (Nccl::name(sym), deadline.waited());
                self.fail(Cause::Timeout { operation, waited });
                return Err(Error::Timeout { operation, waited });
            }
            backoff.pause(deadline.left());
        }
    }

    /// Marks a ready communicator failed (a later state wins).
    pub(crate) fn fail(&self, cause: Cause) {
        let mut s = self.lock();
        if matches!(*s, CommState::Ready | CommState::Creating) {
            *s = CommState::Failed(cause);
        }
    }

    /// Aborts from any thread: takes the call lock (waiting at most the abort wait) and calls
    /// `ncclCommAbort`. If a blocking NCCL call holds the lock longer, the abort is left pending
    /// and runs when that call returns (`Error::AbortPending`).
    pub(crate) fn request_abort(&self, cause: Cause) -> Result<(), Error> {
        {
            let mut p = self.pending_abort.lock().unwrap_or_else(PoisonError::into_inner);
            p.get_or_insert(cause);
            self.has_pending_abort.store(true, Ordering::Release);
        }
        if let Some(w) = self.watchdog.get() {
            w.wake();
        }
        if self.lost.load(Ordering::Acquire) {
            return Err(Error::AbortPending);
        }
        let deadline = Deadline::after(self.timeouts().teardown);
        let mut backoff = Backoff::new();
        loop {
            match self.state.try_lock() {
                Ok(mut guard) => return self.abort_locked(&mut guard),
                Err(std::sync::TryLockError::Poisoned(p)) => return self.abort_locked(&mut p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
            if deadline.passed() || self.lost.load(Ordering::Acquire) {
                return Err(Error::AbortPending);
            }
            backoff.pause(deadline.left());
        }
    }

    /// Runs a pending abort (the lock is held).
    fn abort_locked(&self, state: &mut CommState) -> Result<(), Error> {
        let cause = self.pending_abort.lock().unwrap_or_else(PoisonError::into_inner).take();
        self.has_pending_abort.store(false, Ordering::Release);
        let cause = cause.unwrap_or(Cause::Requested);
        match state {
            CommState::Aborted(_) | CommState::Destroyed => return Ok(()),
            CommState::Creating if self.handle().is_null() => {
                *state = CommState::Aborted(cause);
                return Ok(());
            }
            _ => {}
        }
        let comm = self.handle();
        if let Some(w) = self.watchdog.get() {
            w.stop();
        }
        // SAFETY: this communicator's handle, aborted once (the state says so from now on).
        let r = unsafe { self.nccl.functions().comm_abort.call(&self.nccl, (comm,)) };
        *state = CommState::Aborted(cause);
        match r? {
            r if r.is_success() => Ok(()),
            r => Err(self.nccl.failure(Sym::CommAbort, r, core::ptr::null_mut())),
        }
    }

    /// Marks the communicator lost: an NCCL call on it was abandoned (`cause` says why). The
    /// thread running that call aborts it when the call returns.
    pub(crate) fn abandon(&self, cause: Cause) {
        self.pending_abort.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(cause);
        self.has_pending_abort.store(true, Ordering::Release);
        self.lost.store(true, Ordering::Release);
    }

    /// Run by the thread of an abandoned call once that call has returned: aborts the
    /// communicator, which nobody else may touch.
    pub(crate) fn finish_abandoned(&self, destroyed: bool) {
        let mut state = self.lock();
        if destroyed {
            *state = CommState::Destroyed;
        } else if !self.handle().is_null() {
            let _ = self.abort_locked(&mut state);
        }
        drop(state);
        self.lost.store(false, Ordering::Release);
    }
}

/// The call lock, held while one NCCL call runs. Dropping it runs an abort that another thread
/// asked for meanwhile.
pub(crate) struct CallGuard<'s> {
    shared: &'s Shared,
    state: Option<MutexGuard<'s, CommState>>,
}

impl CallGuard<'_> {
    /// Records what `sym` returned: `ncclInProgress` reveals non-blocking mode; a fatal code
    /// fails the communicator (`ncclInvalidArgument` and `ncclInvalidUsage` had no effect).
    pub(crate) fn note(&mut self, sym: Sym, r: NcclResult) {
        if r == NcclResult::IN_PROGRESS {
            self.shared.saw_in_progress();
        } else if !r.is_success() && r != NcclResult::INVALID_ARGUMENT && r != NcclResult::INVALID_USAGE {
            if let Some(s) = self.state.as_deref_mut() {
                if matches!(s, CommState::Ready) {
                    *s = CommState::Failed(Cause::Nccl { function: Nccl::name(sym), code: r });
                }
            }
        }
    }

    pub(crate) fn set(&mut self, state: CommState) {
        if let Some(s) = self.state.as_deref_mut() {
            *s = state;
        }
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if self.shared.has_pending_abort.load(Ordering::Acquire) && !self.shared.lost.load(Ordering::Acquire) {
            if let Some(mut s) = self.state.take() {
                let _ = self.shared.abort_locked(&mut s);
            }
        }
    }
}
