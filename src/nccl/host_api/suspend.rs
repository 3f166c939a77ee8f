//! Suspending a communicator's memory and reading its memory statistics:
//! `ncclCommSuspend`, `ncclCommResume` and `ncclCommMemStats` (2.29.7).
//!
//! Suspend and resume are group operations on the communicator (NCCL v2.30.7-1
//! src/mem_manager.cc:926-1006): in non-blocking mode they may return `ncclInProgress` and
//! finish on NCCL's thread, so the facade waits for the communicator's async state within its
//! operation timeout, as for revoke. NCCL refuses both with `ncclInvalidUsage` where its memory
//! manager is disabled or shared by a split (:938-948, :980-990).

use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::shared::Allow;
use crate::nccl::library::functions::Sym;
use crate::nccl::types::enums::{MemStat, NcclResult};
use crate::nccl::types::error::Error;
use crate::time::Deadline;

/// `ncclCommSuspend`'s flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SuspendFlags(pub i32);

impl SuspendFlags {
    /// `NCCL_SUSPEND_MEM`: release the communicator's dynamic GPU memory.
    pub const MEMORY: Self = Self(0x01);
}

impl Communicator {
    /// `ncclCommSuspend` (2.29.7): the communicator cannot be used until
    /// [`resume`](Self::resume); with [`SuspendFlags::MEMORY`] NCCL releases its dynamic GPU
    /// memory.
    pub fn suspend(&self, flags: SuspendFlags) -> Result<(), Error> {
        self.suspend_or_resume(Sym::CommSuspend, Some(flags.0))
    }

    /// `ncclCommResume` (2.29.7): brings back what [`suspend`](Self::suspend) released.
    pub fn resume(&self) -> Result<(), Error> {
        self.suspend_or_resume(Sym::CommResume, None)
    }

    fn suspend_or_resume(&self, sym: Sym, flags: Option<i32>) -> Result<(), Error> {
        let deadline = Deadline::after(self.timeouts().operation);
        let (nccl, comm) = (&self.shared.nccl, self.shared.handle());
        let functions = nccl.functions();
        // SAFETY: this communicator's handle, under its call lock (Shared::call).
        let r = unsafe {
            match flags {
                Some(f) => self.shared.call(&functions.comm_suspend, (comm, f), Allow::Ready),
                None => self.shared.call(&functions.comm_resume, (comm,), Allow::Ready),
            }
        }?;
        match r {
            r if r.is_success() => Ok(()),
            NcclResult::IN_PROGRESS => self.shared.wait_done(sym, deadline),
            r => Err(nccl.failure(sym, r, comm)),
        }
    }

    /// `ncclCommMemStats` (2.29.7): one memory statistic of this communicator (bytes, or 0/1
    /// for [`MemStat::GPU_MEM_SUSPENDED`]).
    pub fn mem_stat(&self, stat: MemStat) -> Result<u64, Error> {
        let (nccl, comm) = (&self.shared.nccl, self.shared.handle());
        let mut value = 0u64;
        let out: *mut u64 = &mut value;
        // SAFETY: this communicator's handle under its call lock, a valid `uint64_t*`.
        let r = unsafe { self.shared.call(&nccl.functions().comm_mem_stats, (comm, stat, out), Allow::Ready) }?;
        if !r.is_success() {
            return Err(nccl.failure(Sym::CommMemStats, r, comm));
        }
        Ok(value)
    }
}
