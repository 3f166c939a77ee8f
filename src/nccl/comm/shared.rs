//! What a communicator shares with its abort handles, its watchdog and the threads that run its
//! NCCL calls with deadlines: the handle, the call lock that keeps NCCL calls on it one at a
//! time, its state (readable at any time, never behind an NCCL call), abort from any thread,
//! and (in `teardown`) finalize and destroy with deadlines. The fault model is
//! docs/adr/0009-fault-model.md.

use core::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};
use std::time::Duration;

use crate::cuda::Context;
use crate::engine::typed::CArgs;
use crate::nccl::comm::bounded::{spawn_bounded, Busy, CallThread, Exit};
use crate::nccl::comm::watchdog::{Watchdog, Watched};
use crate::nccl::library::functions::Function;
use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::nccl::types::state::{Cause, CommState, Timeouts};
use crate::time::Backoff;
use crate::time::Deadline;
use crate::trace::trace_event;

mod borrowed;
mod teardown;

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
    /// The call lock: held for every NCCL call on the handle (NCCL's one-thread-at-a-time rule).
    /// State changes that go with a call are made while it is held.
    call: Mutex<()>,
    /// Where the communicator is in its life. Its lock is only ever held to read or change it,
    /// never across an NCCL call, so reading the state never waits for NCCL. Changed only
    /// through [`change_state`](Self::change_state), which keeps `kind` in step.
    state: Mutex<CommState>,
    /// The state's kind ([`Kind`]), read by every call's entry without taking `state`'s lock.
    kind: AtomicU8,
    /// Set when an NCCL call on the handle was abandoned inside NCCL: nobody waits for the lock.
    lost: AtomicBool,
    /// An abort asked for while an NCCL call held the lock; run when that call returns.
    pending_abort: Mutex<Option<Cause>>,
    has_pending_abort: AtomicBool,
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

/// What a call's entry needs to know of a [`CommState`].
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Creating,
    Ready,
    /// Failed or revoked: recovery calls only.
    Recovery,
    /// Aborted, destroyed or lost: nothing.
    Over,
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

    fn load(from: &AtomicU8) -> Kind {
        match from.load(Ordering::Acquire) {
            0 => Kind::Creating,
            1 => Kind::Ready,
            2 => Kind::Recovery,
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
            call: Mutex::new(()),
            state: Mutex::new(CommState::Creating),
            kind: AtomicU8::new(Kind::Creating as u8),
            lost: AtomicBool::new(false),
            pending_abort: Mutex::new(None),
            has_pending_abort: AtomicBool::new(false),
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
        self.kind.store(Kind::of(&s) as u8, Ordering::Release);
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
        let guard = self.call.try_lock().ok()?;
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
        if self.lost.load(Ordering::Acquire) {
            let cause = locked(&self.pending_abort).clone();
            return CommState::Lost(cause.unwrap_or(Cause::Requested));
        }
        locked(&self.state).clone()
    }

    /// Takes the call lock for `op` on a communicator whose state `allow`s it. While another
    /// thread's call holds the lock this waits for it, unless that call is abandoned meanwhile.
    pub(crate) fn enter(&self, op: &'static str, allow: Allow) -> Result<CallGuard<'_>, Error> {
        let mut backoff = Backoff::new();
        let call = loop {
            if self.lost.load(Ordering::Acquire) {
                return Err(Error::Unusable { operation: op, state: self.state() });
            }
            match self.call.try_lock() {
                Ok(g) => break g,
                Err(TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(TryLockError::WouldBlock) => backoff.pause(None),
            }
        };
        // Every change that matters here is made under the call lock, or is final: the kind read
        // now stays true for this call.
        if !Kind::load(&self.kind).allows(allow) {
            return Err(Error::Unusable { operation: op, state: self.state() });
        }
        Ok(CallGuard { shared: self, call: Some(call) })
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

    /// Aborts from any thread, within the teardown timeout. While NCCL's job for the
    /// communicator belongs to another thread (its [`Home`]), the abort runs there. Otherwise it
    /// runs on a thread of its own, which takes the call lock (waiting at most the teardown
    /// timeout) and calls `ncclCommAbort`: if a blocking NCCL call holds the lock longer, the
    /// abort is left pending and runs when that call returns (`Error::AbortPending`); if
    /// `ncclCommAbort` itself does not return in time, `Error::Timeout`.
    pub(crate) fn request_abort(self: &Arc<Self>, cause: Cause) -> Result<(), Error> {
        self.refuse_borrowed("ncclCommAbort")?;
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
                        rank = self.info.get().map(|i| i.rank),
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
                            rank = self.info.get().map(|i| i.rank),
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
                            rank = self.info.get().map(|i| i.rank),
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
        self.has_pending_abort.store(true, Ordering::Release);
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
            match self.call.try_lock() {
                Ok(guard) => return self.abort_locked(&guard),
                Err(TryLockError::Poisoned(p)) => return self.abort_locked(&p.into_inner()),
                Err(TryLockError::WouldBlock) => {}
            }
            if deadline.passed() || self.lost.load(Ordering::Acquire) {
                trace_event!(
                    nccl,
                    WARN,
                    "abort.pending",
                    rank = self.info.get().map(|i| i.rank),
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
    fn abort_locked(&self, _call: &MutexGuard<'_, ()>) -> Result<(), Error> {
        let cause = locked(&self.pending_abort).take().unwrap_or(Cause::Requested);
        self.has_pending_abort.store(false, Ordering::Release);
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
        trace_event!(nccl, INFO, "abort.done", rank = self.info.get().map(|i| i.rank), state = %self.state(),
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
        self.lost.store(true, Ordering::Release);
    }

    /// Run by the thread of an abandoned call once that call has returned (the call lock is
    /// free again): aborts the communicator, which nobody else may touch, or records that the
    /// call destroyed it. Returns whether NCCL's object is gone.
    pub(crate) fn finish_abandoned(&self, destroyed: bool) -> bool {
        let call = locked(&self.call);
        let gone = if destroyed {
            self.released.store(true, Ordering::Release);
            self.change_state(|s| *s = CommState::Destroyed);
            true
        } else {
            self.abort_locked(&call).is_ok() || self.handle().is_null()
        };
        drop(call);
        self.lost.store(false, Ordering::Release);
        gone
    }
}

/// The watchdog's view of a communicator.
impl Watched for Shared {
    fn try_async_error(&self) -> Option<NcclResult> {
        Shared::try_async_error(self)
    }

    fn abort(self: Arc<Self>, cause: Cause) {
        trace_event!(nccl, WARN, "abort.requested", by = "watchdog", rank = self.info.get().map(|i| i.rank),
            cause = %cause, "the watchdog aborts the communicator");
        // A blocking NCCL call holding the lock makes this pending: it runs when that call
        // returns.
        let _ = self.request_abort(cause);
    }

    fn fail(&self, cause: Cause) {
        Shared::fail(self, cause);
    }
}

/// The call lock, held while one NCCL call runs. Dropping it runs an abort that another thread
/// asked for meanwhile.
pub(crate) struct CallGuard<'s> {
    shared: &'s Shared,
    call: Option<MutexGuard<'s, ()>>,
}

impl CallGuard<'_> {
    /// Records what `sym` returned: `ncclInProgress` reveals non-blocking mode; a fatal code
    /// fails the communicator (`ncclInvalidArgument` and `ncclInvalidUsage` had no effect).
    pub(crate) fn note(&mut self, sym: Sym, r: NcclResult) {
        if r == NcclResult::IN_PROGRESS {
            self.shared.saw_in_progress();
        } else if !r.is_success() && r != NcclResult::INVALID_ARGUMENT && r != NcclResult::INVALID_USAGE {
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
    fn drop(&mut self) {
        if self.shared.has_pending_abort.load(Ordering::Acquire) && !self.shared.lost.load(Ordering::Acquire) {
            if let Some(call) = self.call.take() {
                // A creation's communicators are aborted by their creation (on its thread).
                if locked(&self.shared.home).is_none() {
                    let _ = self.shared.abort_locked(&call);
                }
            }
        }
    }
}
