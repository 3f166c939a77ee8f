//! What a communicator shares with its abort handles, its watchdog and the threads that run its
//! NCCL calls with deadlines: the handle, the call lock that keeps NCCL calls on it one at a
//! time, its state (readable at any time, never behind an NCCL call), abort from any thread,
//! and (in `teardown`) finalize and destroy with deadlines. The fault model is
//! docs/adr/0009-fault-model.md.

use core::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use crate::cuda::Context;
use crate::engine::typed::CArgs;
use crate::nccl::comm::bounded::CallThread;
use crate::nccl::comm::watchdog::{Watchdog, Watched};
use crate::nccl::library::functions::Function;
use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::nccl::types::state::{Cause, CommState, Timeouts};
use crate::time::Backoff;
use crate::time::Deadline;

mod abort;
mod borrowed;
mod gate;
mod teardown;

use gate::{Gate, Held, Kind, Word};

pub(crate) use teardown::retire;

/// How long a query of NCCL's state (on another thread) issued at, or just before, its deadline
/// may take before it counts as stuck inside NCCL.
pub(crate) const QUERY_GRACE: Duration = Duration::from_millis(50);

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

/// `ncclCommGetAsyncError` of `comm`: NCCL's asynchronous state for it (`ncclInProgress` while
/// NCCL's own thread still works on it); the query itself failing is the error.
///
/// # Safety
///
/// `comm` is a live communicator of `nccl`, or one NCCL stored and has not freed.
pub(crate) unsafe fn async_state(nccl: &Nccl, comm: *mut c_void) -> Result<NcclResult, Error> {
    let mut state = 0i32;
    let out: *mut i32 = &mut state;
    // SAFETY: the caller's contract; a valid `int *`.
    unsafe { nccl.check(&nccl.functions().comm_get_async_error, (comm, out), comm) }?;
    Ok(NcclResult(state))
}

impl RankInfo {
    /// Count, rank and device of a ready communicator (`ncclCommCount`, `ncclCommUserRank`,
    /// `ncclCommCuDevice`), each a typed error if NCCL refuses.
    ///
    /// # Safety
    ///
    /// `comm` is a live communicator of `nccl`.
    pub(crate) unsafe fn read(nccl: &Nccl, comm: *mut c_void) -> Result<RankInfo, Error> {
        let query = |function: &Function<(*mut c_void, *mut i32), NcclResult>| -> Result<i32, Error> {
            let mut v = 0i32;
            let out: *mut i32 = &mut v;
            // SAFETY: the caller's contract; a valid `int *`.
            unsafe { nccl.check(function, (comm, out), comm) }?;
            Ok(v)
        };
        let functions = nccl.functions();
        Ok(RankInfo {
            nranks: query(&functions.comm_count)?,
            rank: query(&functions.comm_user_rank)?,
            device: query(&functions.comm_cu_device)?,
        })
    }
}

/// The thread that NCCL's background job for a communicator belongs to, and how to abort the
/// communicator there. Before 2.27 NCCL keeps a non-blocking job in the thread-local storage of
/// the thread that started it, and before 2.19 only an abort from that thread joins it (see
/// [`crate::nccl::bounded`]): while a creation or a non-blocking finalize runs, every abort of
/// the communicators it involves runs on its thread.
#[derive(Clone)]
pub(crate) struct Home {
    pub(crate) thread: CallThread,
    /// Runs on `thread`: stops NCCL's job and aborts what it involves.
    pub(crate) abort: Arc<dyn Fn(Cause) -> Result<(), Error> + Send + Sync>,
}

/// What a communicator shares with its abort handles, its watchdog and the threads that run its
/// NCCL calls with deadlines.
pub(crate) struct Shared {
    pub(crate) nccl: Nccl,
    /// The `ncclComm_t`; null until NCCL made it known, then never changes.
    handle: AtomicPtr<c_void>,
    /// True once the handle was given to `ncclCommAbort` or `ncclCommDestroy`: never passed to
    /// NCCL again.
    released: AtomicBool,
    /// True once `ncclCommFinalize` succeeded (NCCL refuses a second one): teardown only
    /// destroys.
    finalized: AtomicBool,
    /// The call lock, held for every NCCL call on the handle (NCCL's one-thread-at-a-time rule),
    /// and beside it the state's kind, whether a call was abandoned (lost) and whether an abort
    /// waits (`gate.rs`): a call enters with one compare-and-swap and leaves with a plain
    /// store. State changes that go with a call are made while the lock is held.
    gate: Gate,
    /// Where the communicator is in its life. Its lock is only ever held to read or change it,
    /// never across an NCCL call, so reading the state never waits for NCCL. Changed only
    /// through [`change_state`](Self::change_state), which keeps the gate's kind in step.
    state: Mutex<CommState>,
    /// An abort asked for while an NCCL call held the lock (the gate says one waits); run when
    /// that call returns.
    pending_abort: Mutex<Option<Cause>>,
    /// Where aborts run while NCCL's job for this communicator belongs to another thread.
    home: Mutex<Option<Home>>,
    /// NCCL's non-blocking mode as NCCL will apply it: the config and `NCCL_COMM_BLOCKING`, and
    /// true once any call returned `ncclInProgress`.
    nonblocking: AtomicBool,
    pub(crate) info: OnceLock<RankInfo>,
    /// The CUDA context current where the communicator was made (NCCL's device).
    pub(crate) context: Option<Context>,
    timeouts: Mutex<Timeouts>,
    pub(crate) watchdog: OnceLock<Arc<Watchdog>>,
    /// Adopted as `Ownership::Borrowed` (`borrowed`): NCCL's object is its owner's to end, so
    /// nothing here aborts, finalizes, destroys or revokes it.
    borrowed: bool,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(w) = self.watchdog.get() {
            w.stop();
        }
    }
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Kind {
    fn of(state: &CommState) -> Kind {
        match state {
            CommState::Creating => Kind::Creating,
            CommState::Ready => Kind::Ready,
            CommState::Failed(_) | CommState::Revoked => Kind::Recovery,
            _ => Kind::Over,
        }
    }

    fn allows(self, allow: Allow) -> bool {
        match self {
            Kind::Ready => true,
            Kind::Recovery => allow != Allow::Ready,
            Kind::Creating => allow == Allow::Creating,
            Kind::Over => false,
        }
    }
}

impl Shared {
    pub(crate) fn new(nccl: Nccl, nonblocking: bool, context: Option<Context>, timeouts: Timeouts) -> Self {
        Shared {
            nccl,
            handle: AtomicPtr::new(core::ptr::null_mut()),
            released: AtomicBool::new(false),
            finalized: AtomicBool::new(false),
            gate: Gate::new(),
            state: Mutex::new(CommState::Creating),
            pending_abort: Mutex::new(None),
            home: Mutex::new(None),
            nonblocking: AtomicBool::new(nonblocking),
            info: OnceLock::new(),
            context,
            timeouts: Mutex::new(timeouts),
            watchdog: OnceLock::new(),
            borrowed: false,
        }
    }

    pub(crate) fn handle(&self) -> *mut c_void {
        self.handle.load(Ordering::Acquire)
    }

    /// Records the handle as soon as NCCL made it known (an abort can then reach it).
    pub(crate) fn set_handle(&self, handle: *mut c_void) {
        self.handle.store(handle, Ordering::Release);
    }

    /// This communicator's rank for an event, once creation read it.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) fn rank_for_events(&self) -> Option<i32> {
        self.info.get().map(|i| i.rank)
    }

    pub(crate) fn timeouts(&self) -> Timeouts {
        *locked(&self.timeouts)
    }

    pub(crate) fn set_timeouts(&self, timeouts: Timeouts) {
        *locked(&self.timeouts) = timeouts;
    }

    /// Routes this communicator's aborts to `home` (`None`: back to the calling thread).
    pub(crate) fn set_home(&self, home: Option<Home>) {
        *locked(&self.home) = home;
    }

    /// Sets the state unless it is final (aborted, destroyed or released).
    pub(crate) fn mark(&self, state: CommState) {
        self.change_state(|s| {
            if !matches!(*s, CommState::Aborted(_) | CommState::Destroyed | CommState::Released) {
                *s = state;
            }
        });
    }

    /// The one way the state changes.
    fn change_state(&self, change: impl FnOnce(&mut CommState)) {
        let mut s = locked(&self.state);
        change(&mut s);
        self.gate.set_kind(Kind::of(&s));
    }

    /// True while an abort was asked for and has not run.
    pub(crate) fn has_abort_request(&self) -> bool {
        self.gate.load().abort_asked()
    }

    /// True once an NCCL call on the handle was abandoned inside NCCL (until its thread, back
    /// from NCCL, ended the communicator).
    pub(crate) fn is_lost(&self) -> bool {
        self.gate.load().lost()
    }

    /// `ncclCommGetAsyncError` if the call lock is free right now (the watchdog's and the
    /// stream wait's poll: they never wait behind another call).
    pub(crate) fn try_async_error(&self) -> Option<NcclResult> {
        let (guard, word) = self.gate.try_hold()?;
        if word.lost() {
            return None;
        }
        if !matches!(self.state(), CommState::Ready | CommState::Failed(_) | CommState::Revoked) {
            return None;
        }
        let mut state = 0i32;
        let (comm, out): (*mut c_void, *mut i32) = (self.handle(), &mut state);
        // SAFETY: a live handle (state checked under the call lock) and a valid `int *`.
        let r = unsafe { self.nccl.functions().comm_get_async_error.call(&self.nccl, (comm, out)) }.ok()?;
        drop(guard);
        r.is_success().then_some(NcclResult(state))
    }

    /// The rank facts while the communicator exists in NCCL (ready, failed or revoked; not
    /// once aborted, lost or destroyed), read without a lock.
    #[inline]
    pub(crate) fn rank_info(&self, operation: &'static str) -> Result<RankInfo, Error> {
        let word = self.gate.load();
        match self.info.get() {
            Some(i) if !word.lost() && matches!(word.kind(), Kind::Ready | Kind::Recovery) => Ok(*i),
            _ => Err(self.unusable(operation)),
        }
    }

    /// Creation finished with `handle`: record it and the rank facts, and make it usable.
    pub(crate) fn complete(&self, handle: *mut c_void, info: RankInfo) {
        self.handle.store(handle, Ordering::Release);
        let _ = self.info.set(info);
        self.change_state(|s| {
            if *s == CommState::Creating {
                *s = CommState::Ready;
            }
        });
    }

    pub(crate) fn is_nonblocking(&self) -> bool {
        self.nonblocking.load(Ordering::Relaxed)
    }

    pub(crate) fn saw_in_progress(&self) {
        self.nonblocking.store(true, Ordering::Relaxed);
    }

    /// The state now (`Lost` over anything else once a call was abandoned). Never waits for an
    /// NCCL call.
    pub(crate) fn state(&self) -> CommState {
        if self.is_lost() {
            let cause = locked(&self.pending_abort).clone();
            return CommState::Lost(cause.unwrap_or(Cause::Requested));
        }
        locked(&self.state).clone()
    }

    /// Takes the call lock for `op` on a communicator whose state `allow`s it. While another
    /// thread's call holds the lock this waits for it, unless that call is abandoned meanwhile.
    #[inline]
    pub(crate) fn enter(&self, op: &'static str, allow: Allow) -> Result<CallGuard<'_>, Error> {
        match self.gate.try_hold() {
            Some((held, word)) => self.entered(held, word, op, allow),
            None => self.enter_contended(op, allow),
        }
    }

    /// [`enter`](Self::enter) once the lock was taken with the gate reading `word`: every
    /// change that matters here is made under the call lock, or is final, so the kind read as
    /// the lock was taken stays true for this call.
    #[inline(always)]
    fn entered<'s>(
        &'s self,
        held: Held<'s>,
        word: Word,
        op: &'static str,
        allow: Allow,
    ) -> Result<CallGuard<'s>, Error> {
        if word.lost() || !word.kind().allows(allow) {
            drop(held);
            return Err(self.unusable(op));
        }
        Ok(CallGuard { shared: self, held: Some(held) })
    }

    /// [`enter`](Self::enter) while another thread's call holds the lock: waits for it, unless
    /// that call is abandoned meanwhile.
    #[cold]
    #[inline(never)]
    fn enter_contended(&self, op: &'static str, allow: Allow) -> Result<CallGuard<'_>, Error> {
        let mut backoff = Backoff::new();
        loop {
            if let Some((held, word)) = self.gate.try_hold() {
                return self.entered(held, word, op, allow);
            }
            if self.is_lost() {
                return Err(self.unusable(op));
            }
            backoff.pause(None);
        }
    }

    #[cold]
    #[inline(never)]
    fn unusable(&self, operation: &'static str) -> Error {
        Error::Unusable { operation, state: self.state() }
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
        self.wait_done_with(sym, deadline, &|| Some(self.async_error()))
    }

    /// [`wait_done`](Self::wait_done) with each poll made by `poll` (`None`: the poll itself did
    /// not return in time, see `teardown`).
    pub(crate) fn wait_done_with(
        &self,
        sym: Sym,
        deadline: Deadline,
        poll: &dyn Fn() -> Option<Result<NcclResult, Error>>,
    ) -> Result<(), Error> {
        let mut backoff = Backoff::new();
        loop {
            let Some(r) = poll() else {
                return Err(Error::Timeout { operation: Nccl::name(sym), waited: deadline.waited() });
            };
            let r = r?;
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
        self.change_state(|s| {
            if matches!(*s, CommState::Ready | CommState::Creating) {
                *s = CommState::Failed(cause);
            }
        });
    }
}

/// The watchdog's view of a communicator.
impl Watched for Shared {
    fn try_async_error(&self) -> Option<NcclResult> {
        Shared::try_async_error(self)
    }

    fn abort(self: Arc<Self>, cause: Cause) {
        // A blocking NCCL call holding the lock makes this pending: it runs when that call
        // returns.
        let _ = self.request_abort(cause, "watchdog");
    }

    fn fail(&self, cause: Cause) {
        Shared::fail(self, cause);
    }
}

/// The call lock, held while one NCCL call runs. Dropping it runs an abort that another thread
/// asked for meanwhile.
pub(crate) struct CallGuard<'s> {
    shared: &'s Shared,
    held: Option<Held<'s>>,
}

impl CallGuard<'_> {
    /// Records what `sym` returned: `ncclInProgress` reveals non-blocking mode; a fatal code
    /// fails the communicator (`ncclInvalidArgument` and `ncclInvalidUsage` had no effect).
    #[inline(always)]
    pub(crate) fn note(&mut self, sym: Sym, r: NcclResult) {
        if !r.is_success() {
            self.note_unsuccessful(sym, r);
        }
    }

    #[cold]
    #[inline(never)]
    fn note_unsuccessful(&mut self, sym: Sym, r: NcclResult) {
        if r == NcclResult::IN_PROGRESS {
            self.shared.saw_in_progress();
        } else if r != NcclResult::INVALID_ARGUMENT && r != NcclResult::INVALID_USAGE {
            self.shared.change_state(|s| {
                if matches!(*s, CommState::Ready) {
                    *s = CommState::Failed(Cause::Nccl { function: Nccl::name(sym), code: r });
                }
            });
        }
    }

    /// Sets the state (the call that changed it holds the lock).
    pub(crate) fn set(&mut self, state: CommState) {
        if state == CommState::Destroyed {
            self.shared.released.store(true, Ordering::Release);
        }
        self.shared.change_state(|s| *s = state);
    }
}

impl Drop for CallGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(held) = self.held.take().and_then(Held::release_unless_abort) {
            self.shared.abort_as_call_leaves(held);
        }
    }
}

impl Shared {
    /// The leaving call's part of an abort asked for while it ran: runs it (the lock still
    /// held), unless the call was abandoned (its thread aborts once back) or the communicator
    /// belongs to a creation (which aborts it on its own thread).
    #[cold]
    fn abort_as_call_leaves(&self, held: Held<'_>) {
        if !self.is_lost() && locked(&self.home).is_none() {
            let _ = self.abort_locked(&held);
        }
    }
}
