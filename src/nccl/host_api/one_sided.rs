//! One-sided communication on symmetric-memory windows (2.29.2): `ncclPutSignal`,
//! `ncclSignal`, `ncclWaitSignal` (enqueued on a stream like collectives) and
//! `ncclWinGetUserPtr`.

use core::ffi::c_void;

use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::grouped;
use crate::nccl::comm::watchdog::OpInfo;
use crate::nccl::library::load::Nccl;
use crate::nccl::ops::buffers::Stream;
use crate::nccl::ops::memory::Registration;
use crate::nccl::types::device_api::WaitSignalDesc;
use crate::nccl::types::enums::DataType;
use crate::nccl::types::error::Error;

impl Communicator {
    /// `ncclPutSignal` (2.29.2): writes `count` elements of `dtype` from `local` to `peer`'s
    /// window `peer_window` at byte `offset`, then signals `sig_idx` of context `ctx` there.
    ///
    /// # Safety
    ///
    /// `local` must point to `count` elements of `dtype` in device memory of this GPU, valid
    /// until `stream` runs the put; `peer_window` must be a window of this communicator
    /// (`ncclCommWindowRegister`) whose peer buffer holds `offset + count` elements' bytes;
    /// `stream` must be a valid stream of this device.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn put_signal_raw(
        &self,
        local: *const c_void,
        count: usize,
        dtype: DataType,
        peer: i32,
        peer_window: *mut c_void,
        offset: usize,
        sig_idx: i32,
        ctx: i32,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        let function = &self.shared.nccl.functions().put_signal;
        let op = OpInfo { name: Nccl::name(function.sym()), count, data_type: dtype, peer: Some(peer) };
        let flags = 0u32; // "Reserved for future use" (nccl.h)
                          // SAFETY: the caller's contract; `comm` is this communicator's live handle.
        unsafe {
            self.enqueue(
                function,
                |comm| (local, count, dtype, peer, peer_window, offset, sig_idx, ctx, flags, comm, stream),
                stream,
                op,
            )
        }
    }

    /// `ncclSignal` (2.29.2): signals `sig_idx` of context `ctx` on `peer`, without data.
    /// Outside a group (the group form would need the stream to outlive the group).
    pub fn signal<S: Stream>(&self, peer: i32, sig_idx: i32, ctx: i32, stream: &S) -> Result<(), Error> {
        grouped::refuse_safe_in_group()?;
        self.check_access(stream, &[])?;
        let function = &self.shared.nccl.functions().signal;
        let raw = stream.as_raw();
        let op = OpInfo { name: Nccl::name(function.sym()), count: 0, data_type: DataType::INT8, peer: Some(peer) };
        // SAFETY: no buffers; the stream is valid (Stream's contract) and of this device.
        unsafe { self.enqueue(function, |comm| (peer, sig_idx, ctx, 0u32, comm, raw), raw, op) }
    }

    /// `ncclWaitSignal` (2.29.2): makes `stream` wait for the signals `descs` describe.
    /// Outside a group: NCCL reads the descriptors when the call is enqueued.
    pub fn wait_signal<S: Stream>(&self, descs: &[WaitSignalDesc], stream: &S) -> Result<(), Error> {
        grouped::refuse_safe_in_group()?;
        self.check_access(stream, &[])?;
        let n = i32::try_from(descs.len())
            .map_err(|_| Error::TooMany { what: "signal descriptors", count: descs.len() })?;
        // NCCL's prototype takes a non-const pointer: hand it a copy, never the caller's slice.
        let mut copy = descs.to_vec();
        let ptr = copy.as_mut_ptr();
        let function = &self.shared.nccl.functions().wait_signal;
        let raw = stream.as_raw();
        let op =
            OpInfo { name: Nccl::name(function.sym()), count: descs.len(), data_type: DataType::INT32, peer: None };
        // SAFETY: `n` descriptors at `ptr`, alive until the call returns (outside a group NCCL
        // has taken them by then); the stream is valid and of this device.
        let r = unsafe { self.enqueue(function, |comm| (n, ptr, comm, raw), raw, op) };
        drop(copy);
        r
    }
}

impl Registration<'_> {
    /// `ncclWinGetUserPtr` (2.29.2): the user buffer behind this window (`None` where the
    /// communicator has no symmetric-memory support: NCCL answers NULL then). Refused for a
    /// buffer registration that is not a window.
    pub fn user_ptr(&self) -> Result<Option<*mut c_void>, Error> {
        if !self.window {
            return Err(Error::NotAWindow { operation: "ncclWinGetUserPtr" });
        }
        let mut out: *mut c_void = core::ptr::null_mut();
        let (comm, win, out_ptr): (_, _, *mut *mut c_void) = (self.comm.shared.handle(), self.handle, &mut out);
        let f = &self.comm.shared.nccl.functions().win_get_user_ptr;
        // SAFETY: this communicator's handle and one of its windows; `out_ptr` valid for the call.
        unsafe { self.comm.call_checked(f, (comm, win, out_ptr)) }?;
        Ok((!out.is_null()).then_some(out))
    }
}
