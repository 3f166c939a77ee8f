//! Handles tied to a communicator or the library: custom reduction ops, buffer registrations
//! and windows, and NCCL-allocated device memory. Each ends in `Drop` what its constructor
//! started, and never reaches NCCL once its communicator is unusable.

use core::ffi::c_void;
use core::ptr;

use crate::engine::typed::CArgs;
use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::shared::Allow;
use crate::nccl::library::functions::Function;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::enums::{NcclResult, NcclScalar, RedOp, ScalarResidence};
use crate::nccl::types::error::Error;
use crate::time::Deadline;

impl Communicator {
    /// Calls `function` on this communicator (under its call lock); `ncclInProgress`
    /// (non-blocking mode) is waited out within the operation timeout; anything else but
    /// success is an error.
    ///
    /// # Safety
    ///
    /// NCCL's contract for `function` holds for `args`.
    pub(crate) unsafe fn call_checked<A: CArgs>(
        &self,
        function: &Function<A, NcclResult>,
        args: A,
    ) -> Result<(), Error> {
        let sym = function.sym();
        // SAFETY: the caller's contract.
        match unsafe { self.shared.call(function, args, Allow::Ready) }? {
            r if r.is_success() => Ok(()),
            NcclResult::IN_PROGRESS => self.shared.wait_done(sym, Deadline::after(self.timeouts().operation)),
            r => Err(self.shared.nccl.failure(sym, r, self.shared.handle())),
        }
    }

    /// `ncclRedOpCreatePreMulSum` (2.11) with a host scalar read at creation
    /// (`ncclScalarHostImmediate`): `sum(scalar * x)`. Destroyed when the handle drops.
    pub fn create_pre_mul_sum<T: NcclScalar>(&self, scalar: T) -> Result<CustomRedOp<'_>, Error> {
        let mut op = RedOp(0);
        let (out, s): (*mut RedOp, *const T) = (&mut op, &scalar);
        let (dtype, residence, comm) = (T::DATA_TYPE, ScalarResidence::HOST_IMMEDIATE, self.shared.handle());
        let f = &self.shared.nccl.functions().red_op_create_pre_mul_sum;
        // SAFETY: `out` and the scalar are valid for the call (NCCL reads a host-immediate
        // scalar during it); `comm` is this communicator's handle.
        unsafe { self.call_checked(f, (out, s.cast_mut().cast(), dtype, residence, comm)) }?;
        Ok(CustomRedOp { comm: self, op })
    }

    /// `ncclCommRegister` (2.19): registers `size` bytes at `buf` for zero-copy use;
    /// deregistered when the handle drops.
    ///
    /// # Safety
    ///
    /// `buf` must be device memory of this GPU, valid for `size` bytes while registered.
    pub unsafe fn register(&self, buf: *mut c_void, size: usize) -> Result<Registration<'_>, Error> {
        let mut handle: *mut c_void = ptr::null_mut();
        let (out, comm): (*mut *mut c_void, _) = (&mut handle, self.shared.handle());
        // SAFETY: `buf` is the caller's (this function's contract); `out` is valid for the call.
        unsafe { self.call_checked(&self.shared.nccl.functions().comm_register, (comm, buf, size, out)) }?;
        Ok(Registration { comm: self, handle, window: false })
    }

    /// `ncclCommWindowRegister` (2.27): a symmetric-memory window; deregistered on drop.
    ///
    /// # Safety
    ///
    /// As [`register`](Self::register); every rank registers a window of the same size.
    pub unsafe fn window_register(&self, buf: *mut c_void, size: usize, flags: i32) -> Result<Registration<'_>, Error> {
        let mut win: *mut c_void = ptr::null_mut();
        let (out, comm): (*mut *mut c_void, _) = (&mut win, self.shared.handle());
        let f = &self.shared.nccl.functions().comm_window_register;
        // SAFETY: as in `register`.
        unsafe { self.call_checked(f, (comm, buf, size, out, flags)) }?;
        Ok(Registration { comm: self, handle: win, window: true })
    }
}

/// A PreMulSum reduction op; `ncclRedOpDestroy` on drop (skipped once the communicator is
/// unusable: an abort freed it with the communicator).
#[derive(Debug)]
pub struct CustomRedOp<'c> {
    comm: &'c Communicator,
    op: RedOp,
}

impl CustomRedOp<'_> {
    /// The op id to pass to collectives on the same communicator.
    pub fn op(&self) -> RedOp {
        self.op
    }
}

impl Drop for CustomRedOp<'_> {
    fn drop(&mut self) {
        let comm = self.comm.shared.handle();
        let f = &self.comm.shared.nccl.functions().red_op_destroy;
        // SAFETY: an op this communicator created, destroyed once.
        let _ = unsafe { self.comm.shared.call(f, (self.op, comm), Allow::Ready) };
    }
}

/// A buffer registration or window; deregistered on drop (skipped once the communicator is
/// unusable).
#[derive(Debug)]
pub struct Registration<'c> {
    pub(crate) comm: &'c Communicator,
    pub(crate) handle: *mut c_void,
    pub(crate) window: bool,
}

impl Registration<'_> {
    /// The handle NCCL returned.
    pub fn as_raw(&self) -> *mut c_void {
        self.handle
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let functions = self.comm.shared.nccl.functions();
        let f = if self.window { &functions.comm_window_deregister } else { &functions.comm_deregister };
        let comm = self.comm.shared.handle();
        // SAFETY: a registration (or window) of this communicator, ended once.
        let _ = unsafe { self.comm.shared.call(f, (comm, self.handle), Allow::Ready) };
    }
}

/// Memory from `ncclMemAlloc` (2.19); `ncclMemFree` on drop.
#[derive(Debug)]
pub struct DeviceAllocation<'n> {
    nccl: &'n Nccl,
    ptr: *mut c_void,
    size: usize,
}

// SAFETY: device memory from ncclMemAlloc is not tied to a thread; ncclMemFree may run on any.
unsafe impl Send for DeviceAllocation<'_> {}

impl DeviceAllocation<'_> {
    /// The device pointer.
    pub fn as_ptr(&self) -> *mut c_void {
        self.ptr
    }
    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }
}

impl Drop for DeviceAllocation<'_> {
    fn drop(&mut self) {
        // SAFETY: memory from ncclMemAlloc, freed once.
        let _ = unsafe { self.nccl.check(&self.nccl.functions().mem_free, (self.ptr,), ptr::null_mut()) };
    }
}

impl Nccl {
    /// `ncclMemAlloc` (2.19): device memory suited to NCCL's zero-copy paths.
    pub fn mem_alloc(&self, size: usize) -> Result<DeviceAllocation<'_>, Error> {
        let mut p: *mut c_void = ptr::null_mut();
        let out: *mut *mut c_void = &mut p;
        // SAFETY: `out` is valid for the call.
        unsafe { self.check(&self.functions().mem_alloc, (out, size), ptr::null_mut()) }?;
        Ok(DeviceAllocation { nccl: self, ptr: p, size })
    }
}
