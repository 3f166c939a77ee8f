//! The per-collective `nccl*Config` calls (2.31.2): each collective with an `ncclCollConfig_t`
//! written for the loaded library (`nccl::types::coll_config`).

use core::ffi::c_void;

use crate::nccl::ops::buffers::{DeviceBuffer, DeviceBufferMut, Stream};
use crate::nccl::ops::safe::{at_least, times_ranks};
use crate::nccl::comm::communicator::Communicator;
use crate::nccl::types::error::Error;
use crate::nccl::comm::grouped;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::enums::{DataType, NcclScalar, RedOp};
use crate::nccl::types::coll_config::CollConfig;
use crate::nccl::comm::watchdog::OpInfo;

/// The raw per-collective-config entry points: one line each gives the method, the function
/// of the NCCL table it calls, its arguments before `comm`, `stream` and `config`, and what the
/// watchdog reports for it.
macro_rules! raw_config_collectives {
    ($(
        $(#[$doc:meta])*
        fn $name:ident = $function:ident ( $( $arg:ident : $ty:ty ),* ) count: $count:ident, type: $dtype:ident, peer: $peer:expr;
    )*) => {
        impl Communicator {
            $(
                $(#[$doc])*
                #[allow(clippy::too_many_arguments)]
                pub unsafe fn $name(&self, $( $arg: $ty, )* config: &CollConfig, stream: *mut c_void) -> Result<(), Error> {
                    let nccl = &self.shared.nccl;
                    let function = &nccl.functions().$function;
                    if !nccl.has_sym(function.sym()) {
                        return Err(nccl.unsupported(function.sym()));
                    }
                    let buf = config.encode(nccl.version())?;
                    let cfg = buf.as_ptr();
                    let op = OpInfo { name: Nccl::name(function.sym()), count: $count, data_type: $dtype, peer: $peer };
                    // SAFETY: the caller's contract (this method's); `comm` is this
                    // communicator's live handle, read under the call lock; `buf` outlives the
                    // call (NCCL reads the config during it).
                    unsafe { self.enqueue(function, |comm| ($( $arg, )* comm, stream, cfg), stream, op) }
                }
            )*
        }
    };
}

raw_config_collectives! {
    /// `ncclAllReduceConfig` (2.31.2): [`all_reduce_raw`](Self::all_reduce_raw) with `config`.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw); a launch-completion event in `config` must
    /// be a live CUDA event of this device.
    fn all_reduce_config_raw = all_reduce_config(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, op: RedOp)
        count: count, type: dtype, peer: None;
    /// `ncclBroadcastConfig` (2.31.2).
    ///
    /// # Safety
    ///
    /// As [`broadcast_raw`](Self::broadcast_raw) and [`all_reduce_config_raw`](Self::all_reduce_config_raw).
    fn broadcast_config_raw = broadcast_config(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32)
        count: count, type: dtype, peer: Some(root);
    /// `ncclReduceConfig` (2.31.2).
    ///
    /// # Safety
    ///
    /// As [`reduce_raw`](Self::reduce_raw) and [`all_reduce_config_raw`](Self::all_reduce_config_raw).
    fn reduce_config_raw = reduce_config(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, op: RedOp, root: i32)
        count: count, type: dtype, peer: Some(root);
    /// `ncclAllGatherConfig` (2.31.2).
    ///
    /// # Safety
    ///
    /// As [`all_gather_raw`](Self::all_gather_raw) and [`all_reduce_config_raw`](Self::all_reduce_config_raw).
    fn all_gather_config_raw = all_gather_config(send: *const c_void, recv: *mut c_void, send_count: usize, dtype: DataType)
        count: send_count, type: dtype, peer: None;
    /// `ncclReduceScatterConfig` (2.31.2).
    ///
    /// # Safety
    ///
    /// As [`reduce_scatter_raw`](Self::reduce_scatter_raw) and [`all_reduce_config_raw`](Self::all_reduce_config_raw).
    fn reduce_scatter_config_raw = reduce_scatter_config(send: *const c_void, recv: *mut c_void, recv_count: usize, dtype: DataType, op: RedOp)
        count: recv_count, type: dtype, peer: None;
    /// `ncclAlltoAllConfig` (2.31.2).
    ///
    /// # Safety
    ///
    /// As [`all_to_all_raw`](Self::all_to_all_raw) and [`all_reduce_config_raw`](Self::all_reduce_config_raw).
    fn all_to_all_config_raw = all_to_all_config(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType)
        count: count, type: dtype, peer: None;
    /// `ncclGatherConfig` (2.31.2).
    ///
    /// # Safety
    ///
    /// As [`gather_raw`](Self::gather_raw) and [`all_reduce_config_raw`](Self::all_reduce_config_raw).
    fn gather_config_raw = gather_config(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32)
        count: count, type: dtype, peer: Some(root);
    /// `ncclScatterConfig` (2.31.2).
    ///
    /// # Safety
    ///
    /// As [`scatter_raw`](Self::scatter_raw) and [`all_reduce_config_raw`](Self::all_reduce_config_raw).
    fn scatter_config_raw = scatter_config(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32)
        count: count, type: dtype, peer: Some(root);
}

/// The safe forms on typed buffers (outside a group, as the other safe collectives): the same
/// device, stream and length checks as [`Communicator::all_reduce`] and its siblings, then the
/// `nccl*Config` call with `config` written for the loaded library.
impl Communicator {
    /// `ncclAllReduceConfig` (2.31.2) of typed device buffers; `recv` holds at least
    /// `send.len()` elements.
    pub fn all_reduce_config<T: NcclScalar, S: Stream>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        op: RedOp,
        config: &CollConfig,
        stream: &S,
    ) -> Result<(), Error> {
        grouped::refuse_safe_in_group()?;
        self.refuse_event(config)?;
        at_least("all_reduce recv", send.len(), recv.len())?;
        let n = send.len();
        self.two_buffers(["all_reduce send", "all_reduce recv"], send, recv, stream, |s, r| {
            // SAFETY: the buffer traits' contracts and the length checked above; no event.
            unsafe { self.all_reduce_config_raw(s, r, n, T::DATA_TYPE, op, config, stream.as_raw()) }
        })
        .map(drop)
    }

    /// `ncclBroadcastConfig` (2.31.2) in place: `buf` from `root` to every rank.
    pub fn broadcast_config<T: NcclScalar, S: Stream>(
        &self,
        buf: &mut impl DeviceBufferMut<T>,
        root: i32,
        config: &CollConfig,
        stream: &S,
    ) -> Result<(), Error> {
        grouped::refuse_safe_in_group()?;
        self.refuse_event(config)?;
        let n = buf.len();
        self.one_buffer("broadcast buffer", buf, stream, |p| {
            // SAFETY: the buffer trait's contract; in place; no event.
            unsafe { self.broadcast_config_raw(p, p, n, T::DATA_TYPE, root, config, stream.as_raw()) }
        })
        .map(drop)
    }

    /// `ncclAllGatherConfig` (2.31.2): `recv` holds at least `send.len() * nranks` elements.
    pub fn all_gather_config<T: NcclScalar, S: Stream>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        config: &CollConfig,
        stream: &S,
    ) -> Result<(), Error> {
        grouped::refuse_safe_in_group()?;
        self.refuse_event(config)?;
        at_least("all_gather recv", times_ranks("all_gather recv", send.len(), self.ranks()?)?, recv.len())?;
        let count = send.len();
        self.two_buffers(["all_gather send", "all_gather recv"], send, recv, stream, |s, r| {
            // SAFETY: the buffer traits' contracts and the length checked above; no event.
            unsafe { self.all_gather_config_raw(s, r, count, T::DATA_TYPE, config, stream.as_raw()) }
        })
        .map(drop)
    }

    /// `ncclReduceScatterConfig` (2.31.2): `send` holds at least `recv.len() * nranks` elements.
    pub fn reduce_scatter_config<T: NcclScalar, S: Stream>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        op: RedOp,
        config: &CollConfig,
        stream: &S,
    ) -> Result<(), Error> {
        grouped::refuse_safe_in_group()?;
        self.refuse_event(config)?;
        at_least("reduce_scatter send", times_ranks("reduce_scatter send", recv.len(), self.ranks()?)?, send.len())?;
        let count = recv.len();
        self.two_buffers(["reduce_scatter send", "reduce_scatter recv"], send, recv, stream, |s, r| {
            // SAFETY: the buffer traits' contracts and the length checked above; no event.
            unsafe { self.reduce_scatter_config_raw(s, r, count, T::DATA_TYPE, op, config, stream.as_raw()) }
        })
        .map(drop)
    }

    /// The safe forms cannot vouch for a raw CUDA event: a config carrying one goes through
    /// the `*_config_raw` calls, whose contract covers it.
    fn refuse_event(&self, config: &CollConfig) -> Result<(), Error> {
        if config.has_event() {
            return Err(Error::RawEventInSafeCall);
        }
        Ok(())
    }
}
