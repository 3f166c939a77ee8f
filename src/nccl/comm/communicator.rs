//! The communicator as callers see it: queries, abort from any thread through an
//! [`AbortHandle`], revoke, finalize and destroy with deadlines, and a `Drop` that never blocks
//! past its deadline. The state it shares with its handles is in `shared`; the fault model is
//! docs/adr/0009-fault-model.md.

use core::cell::Cell;
use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use std::sync::{Arc, Weak};

use crate::nccl::comm::shared::Shared;
use crate::nccl::comm::shared::{Allow, RankInfo};
use crate::nccl::comm::watchdog::{Watchdog, WatchdogAction, WatchdogConfig, Watched};
use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::nccl::types::state::{Cause, CommState, Timeouts, WatchdogReport};
use crate::time::Deadline;
use crate::trace::trace_event;

/// A handle that aborts a communicator from any thread: `Send + Sync`, cheap to clone.
///
/// [`abort`](AbortHandle::abort) works while the owning thread is blocked in a stream wait, in a
/// non-blocking collective, group end or creation (all poll outside NCCL), or anywhere outside
/// NCCL. While a *blocking* NCCL call is running on the communicator it cannot run (NCCL frees
/// the communicator in `ncclCommAbort`); it then returns [`Error::AbortPending`] and runs the
/// moment that call returns. Afterwards every call on the communicator returns
/// [`Error::Unusable`] without reaching NCCL, and nothing is freed twice.
///
/// The handle of a communicator adopted as [`Ownership::Borrowed`](crate::nccl::Ownership)
/// refuses to abort it ([`Error::NotOwned`]): `ncclCommAbort` frees NCCL's object, under its
/// owner, whose own later abort or destroy would then pass NCCL a freed handle.
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
    /// returns. Aborting an aborted or destroyed communicator does nothing; a borrowed one is
    /// refused ([`Error::NotOwned`]).
    pub fn abort(&self) -> Result<(), Error> {
        self.shared.request_abort(Cause::Requested, "abort handle")
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
///
/// A communicator adopted as [`Ownership::Borrowed`](crate::nccl::Ownership) is its owner's
/// to end: its drop makes no NCCL call ([`CommState::Released`]), and `finalize`, `destroy`,
/// `abort` and `revoke` are refused ([`Error::NotOwned`]); see
/// [`from_raw`](Communicator::from_raw).
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
        self.shared.rank_info(operation)
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
    /// Refused on a borrowed communicator ([`Error::NotOwned`]).
    pub fn finalize(&self) -> Result<(), Error> {
        self.shared.refuse_borrowed("ncclCommFinalize")?;
        self.shared.enter("ncclCommFinalize", Allow::Ready).map(drop)?;
        self.shared.finalize_within(Deadline::after(self.timeouts().operation))
    }

    /// `ncclCommDestroy`, reporting its result, within the teardown timeout (it can wait for
    /// peers); a destroy still running at the deadline is abandoned ([`CommState::Lost`]).
    /// Refused on a borrowed communicator ([`Error::NotOwned`]), which is consumed all the same:
    /// it goes back to its owner as its drop would give it.
    pub fn destroy(self) -> Result<(), Error> {
        self.shared.refuse_borrowed("ncclCommDestroy")?;
        self.shared.enter("ncclCommDestroy", Allow::Ready).map(drop)?;
        let r = self.shared.destroy_within(Deadline::after(self.timeouts().teardown));
        // Drop now finds the communicator destroyed (or lost) and does nothing.
        drop(self);
        r
    }

    /// `ncclCommAbort` (2.4): tears the communicator down without waiting for peers. Run it on
    /// every rank of a node whose communicator failed.
    /// Refused on a borrowed communicator ([`Error::NotOwned`]), which is consumed all the same:
    /// it goes back to its owner as its drop would give it.
    pub fn abort(self) -> Result<(), Error> {
        self.shared.request_abort(Cause::Requested, "caller")
    }

    /// `ncclCommRevoke` (2.28.7): stops in-flight operations and leaves the communicator for
    /// [`shrink`](Self::shrink) (or abort and drop); no collective runs on it afterwards. A
    /// non-blocking revoke is waited for within the operation timeout.
    /// Refused on a borrowed communicator ([`Error::NotOwned`]).
    pub fn revoke(&self) -> Result<(), Error> {
        self.shared.refuse_borrowed("ncclCommRevoke")?;
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
        trace_event!(nccl, INFO, "comm.revoked", rank = self.shared.rank_for_events(), result = ?r,
            nonblocking = self.shared.is_nonblocking(), "ncclCommRevoke returned");
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

impl Communicator {
    /// Starts this communicator's watchdog (needs the CUDA driver: [`Nccl::cuda`](crate::nccl::Nccl::cuda)).
    /// Every operation enqueued afterwards is watched; see [`WatchdogConfig`]. Starting it twice
    /// is an error. Cost per operation: one event record (a burst on one stream, within 1 % of
    /// the timeout, shares one event, recorded again after each; measured in docs/perf.md).
    ///
    /// On a borrowed communicator only [`WatchdogAction::MarkFailed`] is allowed: `Abort` is
    /// refused ([`Error::NotOwned`]) rather than quietly weakened, since its owner must then
    /// be the one to end the stuck work (docs/adr/0029-adopting-communicators.md).
    pub fn start_watchdog(&self, config: WatchdogConfig) -> Result<(), Error> {
        if config.action == WatchdogAction::Abort {
            self.shared.refuse_borrowed("ncclCommAbort (WatchdogAction::Abort)")?;
        }
        let driver = Arc::clone(self.shared.nccl.cuda()?);
        let context = self.shared.context.or(driver.current_context()?);
        let dog = Watchdog::new(driver, context, config)?;
        if self.shared.watchdog.set(Arc::clone(&dog)).is_err() {
            dog.discard();
            return Err(Error::WatchdogRunning);
        }
        let watched: Weak<dyn Watched> = Arc::downgrade(&self.shared) as Weak<dyn Watched>;
        dog.spawn(watched)?;
        trace_event!(nccl, INFO, "watchdog.started", rank = self.shared.rank_for_events(),
            nranks = self.shared.info.get().map(|i| i.nranks), device = self.shared.info.get().map(|i| i.device),
            timeout_ms = crate::trace::ms(config.timeout),
            poll_ms = crate::trace::ms(config.poll), action = ?config.action, "a communicator's watchdog started");
        Ok(())
    }

    /// What the watchdog acted on, once it did.
    pub fn watchdog_report(&self) -> Option<WatchdogReport> {
        self.shared.watchdog.get().and_then(|w| w.report())
    }
}
