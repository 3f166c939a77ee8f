//! Adopting a communicator made elsewhere — PyTorch's `ProcessGroupNCCL`, C++ code, another
//! binding — as a [`Communicator`]: the call lock, the deadlines, `ncclInProgress` waited out,
//! the watchdog, the state, the safe and raw collectives and groups, as for one made here.
//! Who ends it is the [`Ownership`] given. docs/adr/0029-adopting-communicators.md says why it
//! works this way.

use core::ffi::c_void;
use std::sync::Arc;

use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::create::predicted_nonblocking;
use crate::nccl::comm::shared::{async_state, Allow, RankInfo, Shared};
use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::nccl::types::state::{Cause, CommState, Timeouts};
use crate::time::{Backoff, Deadline};

/// Who ends an adopted communicator ([`Communicator::from_raw`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ownership {
    /// The code that made it ends it (PyTorch's process group, the C++ program). Nothing here
    /// finalizes, destroys, aborts or revokes it: [`Communicator::finalize`],
    /// [`destroy`](Communicator::destroy), [`abort`](Communicator::abort),
    /// [`revoke`](Communicator::revoke), [`shrink`](Communicator::shrink) with
    /// [`ShrinkMode::Abort`](crate::nccl::ShrinkMode::Abort), its [`AbortHandle`]s and a
    /// watchdog with [`WatchdogAction::Abort`](crate::nccl::WatchdogAction::Abort) are refused
    /// with [`Error::NotOwned`], and dropping it makes no NCCL call at all (its state becomes
    /// [`CommState::Released`]).
    ///
    /// [`AbortHandle`]: crate::nccl::AbortHandle
    Borrowed,
    /// Taken over as if made here: dropped, it is finalized and destroyed within the teardown
    /// deadline (aborted after a failure), and its abort handles and watchdog abort it. Its
    /// maker must never end it or use it again.
    Owned,
}

impl Communicator {
    /// Adopts `comm`, an `ncclComm_t` made by other code of this process with the library
    /// `nccl`, as a [`Communicator`] with its default [`Timeouts`]
    /// ([`set_timeouts`](Self::set_timeouts) changes them).
    ///
    /// It reads NCCL's state of the communicator first (`ncclCommGetAsyncError`): ready, it
    /// then reads the rank facts (`ncclCommCount`, `ncclCommCuDevice`, `ncclCommUserRank`,
    /// each failure a typed [`Error::Nccl`]) and is [`CommState::Ready`]; in error, it is
    /// adopted [`CommState::Failed`] (NCCL gives no rank facts then); still in progress (a
    /// non-blocking operation of its maker not finished), it is adopted
    /// [`CommState::Creating`] until [`wait_ready`](Self::wait_ready) sees NCCL done. Whether
    /// NCCL runs it in non-blocking mode is predicted from `NCCL_COMM_BLOCKING` (its config is
    /// not readable) and learned from the first `ncclInProgress`, as for a communicator made
    /// here. The CUDA context current now (or, if it is another device's, the primary context
    /// of NCCL's device for it) is its context: the watchdog records its events there.
    ///
    /// [`Ownership`] says who ends it: [`Borrowed`](Ownership::Borrowed) leaves that to its
    /// maker (no NCCL call when dropped; every operation that ends or stops it refused with
    /// [`Error::NotOwned`]); [`Owned`](Ownership::Owned) takes it over as if made here.
    ///
    /// **The library.** A handle belongs to the NCCL that made it: inside a PyTorch process
    /// that is PyTorch's NCCL (usually the `nvidia-nccl-cu*` wheel, loaded by `torch`). Use
    /// [`Nccl::loaded`] (or [`Nccl::loaded_from`]), which only takes a library already
    /// loaded in this process and never loads another; [`Nccl::load`] could pick another file
    /// (`NCCL_TRAMPOLINE_LIBRARY` goes first), and a handle given to another NCCL is undefined
    /// behaviour. A PyTorch built with NCCL linked in statically has no such library to find.
    ///
    /// ```no_run
    /// use nccl_trampoline::nccl::{Communicator, DataType, Nccl, Ownership, RedOp};
    /// # fn torch_comm() -> *mut core::ffi::c_void { core::ptr::null_mut() }
    /// # let (send, recv, stream) = (core::ptr::null(), core::ptr::null_mut(), core::ptr::null_mut());
    /// let nccl = Nccl::loaded()?; // the NCCL that made the handle, already in the process
    /// // SAFETY: a live communicator of that NCCL, kept alive by its owner (PyTorch's process
    /// // group) for as long as `comm` lives, and not used by it meanwhile.
    /// let comm = unsafe { Communicator::from_raw(&nccl, torch_comm(), Ownership::Borrowed) }?;
    /// // SAFETY: device pointers of `count` floats on the communicator's GPU, and a stream there.
    /// unsafe { comm.all_reduce_raw(send, recv, 1024, DataType::FLOAT32, RedOp::SUM, stream) }?;
    /// drop(comm); // no NCCL call: PyTorch destroys it with its process group
    /// # Ok::<(), nccl_trampoline::nccl::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::NullCommunicator`] for a null `comm`; [`Error::Unsupported`] for a library
    /// older than `ncclCommGetAsyncError` (2.4); [`Error::Nccl`] when one of the queries
    /// fails (NCCL checks magic words at both ends of its object, `CommCheck`, and refuses a
    /// damaged one with `ncclInvalidArgument`; that is a hint, not a check this can rely on).
    ///
    /// # Safety
    ///
    /// - `comm` is a live `ncclComm_t` made by the very library `nccl` is (the same loaded
    ///   file: the same NCCL in another file, or another version, is undefined behaviour), not
    ///   being finalized, destroyed, aborted or revoked while this function runs.
    /// - [`Borrowed`](Ownership::Borrowed): its owner keeps it alive — neither destroys nor
    ///   aborts it — for as long as the returned `Communicator` and every [`AbortHandle`]
    ///   cloned from it live, and makes no NCCL call on it while a call through them runs
    ///   (NCCL's rule of one thread at a time per communicator: the call lock orders only
    ///   the calls made through this `Communicator`, not its owner's, nor those of another
    ///   adoption of the same handle). A call abandoned at its deadline (a blocking split
    ///   of it that never returned: [`CommState::Lost`]) may still be inside NCCL after the
    ///   `Communicator` is dropped; its owner must not free it before that call returns.
    /// - [`Owned`](Ownership::Owned): nobody else finalizes, destroys, aborts, revokes or uses
    ///   it any more. If NCCL was still working on it (non-blocking, in progress now), the
    ///   thread that started that work stays alive until it ends (before NCCL 2.27 NCCL keeps
    ///   the job in that thread's storage), and on NCCL 2.14–2.18 [`wait_ready`](Self::wait_ready)
    ///   must have seen it done before it is dropped or aborted (those versions join a job only
    ///   from its own thread: docs/adr/0023-creation-threads-and-bounds.md).
    ///
    /// [`AbortHandle`]: crate::nccl::AbortHandle
    pub unsafe fn from_raw(nccl: &Nccl, comm: *mut c_void, ownership: Ownership) -> Result<Communicator, Error> {
        if comm.is_null() {
            return Err(Error::NullCommunicator);
        }
        if !nccl.has_sym(Sym::CommGetAsyncError) {
            return Err(nccl.unsupported(Sym::CommGetAsyncError));
        }
        // SAFETY: the caller's contract: a live communicator of this library.
        let state = unsafe { async_state(nccl, comm) }?;
        // NCCL answers the rank queries only for a ready communicator (ncclCommEnsureReady:
        // NCCL v2.30.7-1 src/init.cc:422-438, 3485-3522).
        // SAFETY: as above.
        let info = if state.is_success() { Some(unsafe { RankInfo::read(nccl, comm) }?) } else { None };
        let nonblocking = predicted_nonblocking(nccl.version(), None) || state == NcclResult::IN_PROGRESS;
        let shared = Shared::new(nccl.clone(), nonblocking, context(nccl, info), Timeouts::default());
        let shared = Arc::new(match ownership {
            Ownership::Borrowed => shared.into_borrowed(),
            Ownership::Owned => shared,
        });
        shared.set_handle(comm);
        match (state, info) {
            (_, Some(info)) => shared.complete(comm, info),
            (NcclResult::IN_PROGRESS, None) => {}
            (code, None) => shared.fail(Cause::Nccl { function: "ncclCommGetAsyncError", code }),
        }
        Ok(Communicator::from_shared(shared))
    }

    /// Who ends this communicator: [`Ownership::Borrowed`] for one adopted so, else
    /// [`Ownership::Owned`] (one made here, or adopted as owned).
    pub fn ownership(&self) -> Ownership {
        if self.shared.is_borrowed() {
            Ownership::Borrowed
        } else {
            Ownership::Owned
        }
    }

    /// Waits, within the creation timeout, until NCCL has finished the work that was in
    /// progress when this communicator was adopted ([`CommState::Creating`]): polls
    /// `ncclCommGetAsyncError` (each poll one NCCL call under the call lock, so an abort
    /// handle gets in between), then reads the rank facts and makes it
    /// [`CommState::Ready`]. `Ok` at once for a ready communicator.
    ///
    /// # Errors
    ///
    /// [`Error::Nccl`] if NCCL reports that work failed (the communicator is then
    /// [`CommState::Failed`]); [`Error::Timeout`] at the deadline (it stays `Creating`: wait
    /// again, or drop it); [`Error::Unusable`] for a communicator neither ready nor in
    /// progress.
    pub fn wait_ready(&self) -> Result<(), Error> {
        const OPERATION: &str = "ncclCommGetAsyncError";
        let deadline = Deadline::after(self.timeouts().create);
        let nccl = &self.shared.nccl;
        let mut backoff = Backoff::new();
        loop {
            match self.shared.state() {
                CommState::Ready => return Ok(()),
                CommState::Creating => {}
                state => return Err(Error::Unusable { operation: OPERATION, state }),
            }
            let guard = self.shared.enter(OPERATION, Allow::Creating)?;
            let comm = self.shared.handle();
            // SAFETY: this communicator's handle, under its call lock.
            let state = unsafe { async_state(nccl, comm) }?;
            let failed = |code: NcclResult| {
                self.shared.fail(Cause::Nccl { function: OPERATION, code });
                nccl.failure(Sym::CommGetAsyncError, code, comm)
            };
            match state {
                NcclResult::IN_PROGRESS => self.shared.saw_in_progress(),
                s if s.is_success() => {
                    // SAFETY: as above; NCCL reports the communicator ready.
                    let info = unsafe { RankInfo::read(nccl, comm) };
                    drop(guard);
                    return match info {
                        Ok(info) => {
                            self.shared.complete(comm, info);
                            Ok(())
                        }
                        Err(Error::Nccl { result, .. }) => Err(failed(result)),
                        Err(e) => Err(e),
                    };
                }
                s => {
                    drop(guard);
                    return Err(failed(s));
                }
            }
            drop(guard);
            if deadline.passed() {
                return Err(Error::Timeout { operation: OPERATION, waited: deadline.waited() });
            }
            backoff.pause(deadline.left());
        }
    }
}

/// The CUDA context of an adopted communicator: the current one, as creation takes it, unless
/// that is another device's than NCCL's, then NCCL's device's primary context (PyTorch's).
fn context(nccl: &Nccl, info: Option<RankInfo>) -> Option<crate::cuda::Context> {
    let driver = nccl.cuda_if_any()?;
    let current = driver.current_context().ok().flatten();
    match info {
        Some(i) if driver.current_device().ok().flatten() != Some(i.device) => {
            driver.primary_context(i.device).ok().or(current)
        }
        _ => current,
    }
}
