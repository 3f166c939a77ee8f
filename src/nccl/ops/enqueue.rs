//! The one path every collective and point-to-point call is enqueued through (their forms are
//! `collectives`), under the call lock.
//!
//! "Ok" means enqueued: a non-blocking communicator's `ncclInProgress` is waited out (within the
//! operation timeout) before a collective returns, never passed off as success.

use core::ffi::c_void;

use crate::engine::typed::CArgs;
use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::grouped;
use crate::nccl::comm::shared::Allow;
use crate::nccl::comm::watchdog::OpInfo;
use crate::nccl::library::functions::Function;
use crate::nccl::library::load::Nccl;
use crate::nccl::ops::buffers::CUDA_STREAM_PER_THREAD;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::time::Deadline;

impl Communicator {
    /// Enqueues one operation: under the call lock, refused once the communicator is unusable;
    /// `ncclInProgress` waited out; recorded for the watchdog (at the group's end inside one).
    /// `args` makes the arguments from the communicator's handle.
    ///
    /// # Safety
    ///
    /// NCCL's contract for `function` holds for the arguments `args` makes (buffers, stream).
    #[inline(always)]
    pub(crate) unsafe fn enqueue<A: CArgs>(
        &self,
        function: &Function<A, NcclResult>,
        args: impl FnOnce(*mut c_void) -> A,
        stream: *mut c_void,
        op: OpInfo,
    ) -> Result<(), Error> {
        let shared = &self.shared;
        let sym = function.sym();
        if shared.is_nonblocking() && stream as usize == CUDA_STREAM_PER_THREAD {
            return Err(Error::PerThreadStream { operation: Nccl::name(sym) });
        }
        let mut guard = shared.enter(Nccl::name(sym), Allow::Ready)?;
        // SAFETY: the caller's contract; the handle is live while the call lock is held.
        let r = unsafe { function.call(&shared.nccl, args(shared.handle())) }?;
        guard.note(sym, r);
        drop(guard);
        if grouped::in_group() {
            if !r.is_success() {
                return Err(shared.nccl.failure(sym, r, shared.handle()));
            }
            grouped::join(shared, shared.watchdog.get().map(|_| (op, stream)));
            return Ok(());
        }
        match r {
            r if r.is_success() => {}
            NcclResult::IN_PROGRESS => shared.wait_done(sym, Deadline::after(self.timeouts().operation))?,
            r => return Err(shared.nccl.failure(sym, r, shared.handle())),
        }
        if let Some(w) = shared.watchdog.get() {
            w.record(op, stream)?;
        }
        Ok(())
    }
}
