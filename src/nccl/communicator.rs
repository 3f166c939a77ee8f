//! The communicator: its state shared with abort handles, the watchdog and the threads that run
//! NCCL calls with deadlines; the lock that keeps NCCL calls on it one at a time; queries; abort
//! from any thread; revoke; finalize and destroy with deadlines; and a `Drop` that never blocks
//! past its deadline. The fault model is docs/adr/0009-fault-model.md.

use core::cell::Cell;
use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::cuda::{Backoff, Context};
use crate::nccl::bounded::run_bounded;
use crate::nccl::functions::{Function, Functions};
use crate::nccl::library::{Nccl, Sym};
use crate::nccl::types::NcclResult;
use crate::nccl::watchdog::{Watchdog, WatchdogReport};
use crate::{CArgs, Error};

/// How long a communicator's operations may take. `None` waits without limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Creation: init, split, shrink (every peer must arrive). Default 10 minutes.
    pub create: Option<Duration>,
    /// An operation NCCL finishes in the background: a non-blocking collective until it is
    /// enqueued, a group's end, finalize, revoke. Default 10 minutes.
    pub operation: Option<Duration>,
    /// What `Drop` may spend finalizing and destroying before it aborts, and how long an abort
    /// waits for an NCCL call in progress on the communicator. Default 30 seconds.
    pub teardown: Option<Duration>,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            create: Some(Duration::from_secs(600)),
            operation: Some(Duration::from_secs(600)),
            teardown: Some(Duration::from_secs(30)),
        }
    }
}

/// A point in time after which a wait gives up; none for "no limit". Any `Duration`, including
/// `Duration::MAX`, is accepted (it never overflows an `Instant`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    start: Instant,
    limit: Option<Duration>,
}

impl Deadline {
    pub(crate) fn after(limit: Option<Duration>) -> Self {
        Deadline { start: Instant::now(), limit }
    }

    /// Time left (`Some(ZERO)` once passed), or `None` without a limit.
    pub(crate) fn left(&self) -> Option<Duration> {
        self.limit.map(|l| l.saturating_sub(self.start.elapsed()))
    }

    pub(crate) fn passed(&self) -> bool {
        self.left() == Some(Duration::ZERO)
    }

    pub(crate) fn waited(&self) -> Duration {
        self.start.elapsed()
    }
}

/// Why a communicator stopped being usable.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cause {
    /// [`Communicator::abort`] or an [`AbortHandle`].
    Requested,
    /// The watchdog found an operation that did not finish in time, or an asynchronous error.
    Watchdog(Box<WatchdogReport>),
    /// An operation passed its deadline.
    Timeout {
        /// The NCCL function waited for.
        operation: &'static str,
        /// How long it was waited for.
        waited: Duration,
    },
    /// NCCL reported a fatal error, from a call or asynchronously.
    Nccl {
        /// The NCCL function that reported it (`ncclCommGetAsyncError` for an asynchronous one).
        function: &'static str,
        /// The result.
        code: NcclResult,
    },
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Requested => f.write_str("by request"),
            Cause::Watchdog(r) => write!(f, "by the watchdog: {r}"),
            Cause::Timeout { operation, waited } => write!(f, "after {operation} timed out ({waited:.1?})"),
            Cause::Nccl { function, code } => write!(f, "after {function} reported {code:?}"),
        }
    }
}

/// Where a communicator is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommState {
    /// Being created (init, split or shrink not finished).
    Creating,
    /// Usable.
    Ready,
    /// An operation failed with a fatal error or timed out. NCCL's object still exists: only
    /// abort, revoke, shrink and drop remain (drop aborts).
    Failed(Cause),
    /// `ncclCommRevoke` ran: in-flight work was stopped; only shrink, abort and drop remain.
    Revoked,
    /// `ncclCommAbort` ran: the handle is gone.
    Aborted(Cause),
    /// An NCCL call on it was abandoned at its deadline and may still be running inside NCCL:
    /// the handle is never used or freed again by the caller (the thread running that call
    /// aborts it if the call ever returns).
    Lost(Cause),
    /// `ncclCommDestroy` ran.
    Destroyed,
}

impl fmt::Display for CommState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommState::Creating => f.write_str("still being created"),
            CommState::Ready => f.write_str("ready"),
            CommState::Failed(c) => write!(f, "failed ({c}); abort, revoke, shrink or drop it"),
            CommState::Revoked => f.write_str("revoked; shrink, abort or drop it"),
            CommState::Aborted(c) => write!(f, "aborted ({c})"),
            CommState::Lost(c) => write!(f, "lost ({c}): an NCCL call on it never returned"),
            CommState::Destroyed => f.write_str("destroyed"),
        }
    }
}

/// Which states an operation accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allow {
    /// Only a ready communicator (collectives, queries, registration).
    Ready,
    /// Also a failed or revoked one (shrink, revoke, the async-error poll).
    Recovery,
    /// Also one being created (polling its creation).
    Creating,
}

/// Rank facts, read once when creation completes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RankInfo {
    pub(crate) nranks: i32,
    pub(crate) rank: i32,
    pub(crate) device: i32,
}

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

    /// Graceful end within `limit`, else abort: what `Drop` does. See [`Communicator`]'s docs.
    pub(crate) fn teardown(self: &Arc<Self>, limit: Option<Duration>) -> Result<(), Error> {
        if self.lost.load(Ordering::Acquire) {
            return Ok(());
        }
        let deadline = Deadline::after(limit);
        match self.state() {
            CommState::Ready => {}
            CommState::Aborted(_) | CommState::Destroyed | CommState::Lost(_) => return Ok(()),
            CommState::Creating | CommState::Failed(_) | CommState::Revoked => {
                return self.request_abort(Cause::Requested)
            }
        }
        // Work still running (known from the watchdog's events) is aborted, not waited for
        // inside NCCL: a kernel spinning on a dead peer never finishes.
        if let Some(w) = self.watchdog.get() {
            if let Err(cause) = w.drain(deadline) {
                return self.request_abort(cause);
            }
            w.stop();
        }
        if let Err(e) = self.finalize_within(deadline) {
            return match e {
                Error::Unusable { .. } => Ok(()),
                _ if self.lost.load(Ordering::Acquire) => Err(e),
                _ => self.request_abort(Cause::Timeout { operation: "ncclCommFinalize", waited: deadline.waited() }),
            };
        }
        self.destroy_within(deadline)
    }

    /// `ncclCommFinalize` within `deadline`: non-blocking, NCCL returns at once and the state is
    /// polled; blocking, the call runs on a bounded thread (abandoned at the deadline).
    pub(crate) fn finalize_within(self: &Arc<Self>, deadline: Deadline) -> Result<(), Error> {
        if !self.nccl.has_sym(Sym::CommFinalize) {
            return Ok(());
        }
        let r = self.bounded_call(|f| &f.comm_finalize, deadline)?;
        if r == NcclResult::IN_PROGRESS {
            self.saw_in_progress();
            return self.wait_done(Sym::CommFinalize, deadline);
        }
        if r.is_success() {
            Ok(())
        } else {
            Err(self.nccl.failure(Sym::CommFinalize, r, self.handle()))
        }
    }

    /// `ncclCommDestroy` on a bounded thread (it can wait for peers); abandoned at the deadline.
    pub(crate) fn destroy_within(self: &Arc<Self>, deadline: Deadline) -> Result<(), Error> {
        let r = self.bounded_call(|f| &f.comm_destroy, deadline)?;
        if r.is_success() {
            Ok(())
        } else {
            Err(self.nccl.failure(Sym::CommDestroy, r, core::ptr::null_mut()))
        }
    }

    /// Runs the one-argument call `function(comm)` on a thread with the communicator's context, under
    /// the call lock, waiting at most until `deadline`. At the deadline the call is abandoned
    /// (the communicator becomes `Lost`). `ncclCommDestroy` marks it destroyed when it returns.
    fn bounded_call(
        self: &Arc<Self>,
        function: fn(&Functions) -> &Function<(*mut c_void,), NcclResult>,
        deadline: Deadline,
    ) -> Result<NcclResult, Error> {
        let sym = function(self.nccl.functions()).sym();
        let me = Arc::clone(self);
        let destroys = sym == Sym::CommDestroy;
        let operation = Nccl::name(sym);
        let outcome = run_bounded(
            self.nccl.cuda_if_any().cloned().zip(self.context),
            deadline,
            &|| self.has_pending_abort.load(Ordering::Acquire),
            move || -> Result<NcclResult, Error> {
                let mut guard = me.enter_even_if_lost(operation)?;
                let comm = me.handle();
                // SAFETY: the handle is this communicator's, under its call lock.
                let r = unsafe { function(me.nccl.functions()).call(&me.nccl, (comm,)) }?;
                if destroys {
                    guard.set(CommState::Destroyed);
                } else {
                    guard.note(sym, r);
                }
                Ok(r)
            },
            || self.abandon(Cause::Timeout { operation, waited: deadline.waited() }),
            {
                let me = Arc::clone(self);
                move |_| me.finish_abandoned(destroys)
            },
        );
        match outcome {
            Some(r) => r,
            None if deadline.passed() => Err(Error::Timeout { operation, waited: deadline.waited() }),
            None => Err(Error::Unusable { operation, state: self.state() }),
        }
    }

    /// The call lock for a call the owner started before it may have abandoned it.
    fn enter_even_if_lost(&self, op: &'static str) -> Result<CallGuard<'_>, Error> {
        let guard = self.lock();
        match &*guard {
            CommState::Ready | CommState::Failed(_) | CommState::Revoked => {
                Ok(CallGuard { shared: self, state: Some(guard) })
            }
            s => Err(Error::Unusable { operation: op, state: s.clone() }),
        }
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

/// A handle that aborts a communicator from any thread: `Send + Sync`, cheap to clone.
///
/// [`abort`](AbortHandle::abort) works while the owning thread is blocked in a stream wait, in a
/// non-blocking collective, group end or creation (all poll outside NCCL), or anywhere outside
/// NCCL. While a *blocking* NCCL call is running on the communicator it cannot run (NCCL frees
/// the communicator in `ncclCommAbort`); it then returns [`Error::AbortPending`] and runs the
/// moment that call returns. Afterwards every call on the communicator returns
/// [`Error::Unusable`] without reaching NCCL, and nothing is freed twice.
#[derive(Clone)]
pub struct AbortHandle {
    shared: Arc<Shared>,
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle").field("state", &self.shared.state()).finish()
    }
}

impl AbortHandle {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        AbortHandle { shared }
    }

    /// `ncclCommAbort`, now or (see the type's docs) when the blocking call in progress
    /// returns. Aborting an aborted or destroyed communicator does nothing.
    pub fn abort(&self) -> Result<(), Error> {
        self.shared.request_abort(Cause::Requested)
    }

    /// The communicator's state.
    pub fn state(&self) -> CommState {
        self.shared.state()
    }
}

/// An NCCL communicator: one rank of a group of GPUs.
///
/// `Send` (it may move to another thread) but not `Sync` (NCCL forbids using one communicator
/// from several threads at once); [`AbortHandle`]s reach it from other threads.
///
/// **Drop never blocks past [`Timeouts::teardown`]** (30 s by default):
/// - after an error, a timeout, a revoke, or when it was never completed, it aborts
///   (`ncclCommAbort`);
/// - aborted, destroyed or lost, it does nothing (a lost communicator is leaked: an NCCL call
///   abandoned on it may still be running);
/// - otherwise it ends gracefully within the deadline: with a watchdog, it waits for the
///   communicator's outstanding work (aborting if that does not finish); then
///   `ncclCommFinalize` (non-blocking: polled; blocking: on a bounded thread) and
///   `ncclCommDestroy` on a bounded thread. If finalize does not finish in time it aborts; if
///   a blocking call is still running at the deadline, the communicator is left to that thread,
///   which aborts it should the call ever return.
pub struct Communicator {
    pub(crate) shared: Arc<Shared>,
    _not_sync: PhantomData<Cell<()>>,
}

impl fmt::Debug for Communicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Communicator")
            .field("comm", &self.shared.handle())
            .field("state", &self.shared.state())
            .field("nonblocking", &self.shared.is_nonblocking())
            .finish()
    }
}

impl Communicator {
    pub(crate) fn from_shared(shared: Arc<Shared>) -> Self {
        Communicator { shared, _not_sync: PhantomData }
    }

    /// The library this communicator calls.
    pub fn nccl(&self) -> &Nccl {
        &self.shared.nccl
    }

    /// Its state.
    pub fn state(&self) -> CommState {
        self.shared.state()
    }

    /// Whether NCCL runs this communicator in non-blocking mode (from its config and
    /// `NCCL_COMM_BLOCKING`, and confirmed by any `ncclInProgress` seen).
    pub fn is_nonblocking(&self) -> bool {
        self.shared.is_nonblocking()
    }

    /// Its timeouts.
    pub fn timeouts(&self) -> Timeouts {
        self.shared.timeouts()
    }

    /// Changes its timeouts (for its abort handles and watchdog too).
    pub fn set_timeouts(&self, timeouts: Timeouts) {
        self.shared.set_timeouts(timeouts);
    }

    /// A handle that aborts this communicator from any thread.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle::new(Arc::clone(&self.shared))
    }

    /// The rank facts, while the communicator exists in NCCL (not once aborted, lost or
    /// destroyed).
    fn info(&self, operation: &'static str) -> Result<RankInfo, Error> {
        let state = self.shared.state();
        match (self.shared.info.get(), &state) {
            (Some(i), CommState::Ready | CommState::Failed(_) | CommState::Revoked) => Ok(*i),
            _ => Err(Error::Unusable { operation, state }),
        }
    }

    /// Number of ranks (`ncclCommCount`, read once at creation).
    pub fn count(&self) -> Result<i32, Error> {
        Ok(self.info("ncclCommCount")?.nranks)
    }

    /// This rank (`ncclCommUserRank`, read once at creation).
    pub fn rank(&self) -> Result<i32, Error> {
        Ok(self.info("ncclCommUserRank")?.rank)
    }

    /// Its CUDA device (`ncclCommCuDevice`, read once at creation).
    pub fn cu_device(&self) -> Result<i32, Error> {
        Ok(self.info("ncclCommCuDevice")?.device)
    }

    /// `ncclCommGetAsyncError` (2.4): the communicator's state as NCCL reports it
    /// (`IN_PROGRESS` while a non-blocking operation runs). A fatal error marks it failed.
    pub fn async_error(&self) -> Result<NcclResult, Error> {
        let r = self.shared.async_error()?;
        if !r.is_success() && r != NcclResult::IN_PROGRESS {
            self.shared.fail(Cause::Nccl { function: "ncclCommGetAsyncError", code: r });
        }
        Ok(r)
    }

    /// `ncclGetLastError(comm)` (2.13): NCCL's last error text for this communicator.
    pub fn last_error(&self) -> Result<Option<String>, Error> {
        self.shared.nccl.last_error_for(self.shared.handle())
    }

    /// The `ncclComm_t` handle, for code that calls NCCL by other means (null once aborted or
    /// destroyed, or never completed).
    pub fn as_raw(&self) -> *mut c_void {
        match self.shared.state() {
            CommState::Ready | CommState::Failed(_) | CommState::Revoked => self.shared.handle(),
            _ => core::ptr::null_mut(),
        }
    }

    /// `ncclCommFinalize` (2.14): flushes outstanding work, within the operation timeout.
    pub fn finalize(&self) -> Result<(), Error> {
        self.shared.enter("ncclCommFinalize", Allow::Ready).map(drop)?;
        self.shared.finalize_within(Deadline::after(self.timeouts().operation))
    }

    /// `ncclCommDestroy`, reporting its result, within the teardown timeout (it can wait for
    /// peers); a destroy still running at the deadline is abandoned ([`CommState::Lost`]).
    pub fn destroy(self) -> Result<(), Error> {
        self.shared.enter("ncclCommDestroy", Allow::Ready).map(drop)?;
        let r = self.shared.destroy_within(Deadline::after(self.timeouts().teardown));
        // Drop now finds the communicator destroyed (or lost) and does nothing.
        drop(self);
        r
    }

    /// `ncclCommAbort` (2.4): tears the communicator down without waiting for peers. Run it on
    /// every rank of a node whose communicator failed.
    pub fn abort(self) -> Result<(), Error> {
        self.shared.request_abort(Cause::Requested)
    }

    /// `ncclCommRevoke` (2.28.7): stops in-flight operations and leaves the communicator for
    /// [`shrink`](Self::shrink) (or abort and drop); no collective runs on it afterwards. A
    /// non-blocking revoke is waited for within the operation timeout.
    pub fn revoke(&self) -> Result<(), Error> {
        let deadline = Deadline::after(self.timeouts().operation);
        let (comm, flags) = (self.shared.handle(), 0i32);
        let mut guard = self.shared.enter("ncclCommRevoke", Allow::Recovery)?;
        // SAFETY: this communicator's handle, under its call lock.
        let r = unsafe { self.shared.nccl.functions().comm_revoke.call(&self.shared.nccl, (comm, flags)) }?;
        guard.note(Sym::CommRevoke, r);
        if r.is_success() || r == NcclResult::IN_PROGRESS {
            guard.set(CommState::Revoked);
        }
        drop(guard);
        if let Some(w) = self.shared.watchdog.get() {
            w.stop();
        }
        match r {
            r if r.is_success() => Ok(()),
            NcclResult::IN_PROGRESS => self.shared.wait_done(Sym::CommRevoke, deadline),
            r => Err(self.shared.nccl.failure(Sym::CommRevoke, r, comm)),
        }
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        // Errors cannot be reported from drop; `destroy` reports them.
        let _ = self.shared.teardown(self.timeouts().teardown);
    }
}
