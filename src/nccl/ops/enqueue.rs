//! Collectives and point-to-point calls: the raw forms on device pointers (here) and the safe
//! forms on typed buffers (`typed`), every one enqueued through one path under the call lock.
//!
//! "Ok" means enqueued: a non-blocking communicator's `ncclInProgress` is waited out (within the
//! operation timeout) before a collective returns, never passed off as success.


use core::ffi::c_void;

use crate::engine::typed::CArgs;
use crate::nccl::ops::buffers::CUDA_STREAM_PER_THREAD;
use crate::nccl::comm::communicator::Communicator;
use crate::nccl::types::error::Error;
use crate::nccl::library::functions::Function;
use crate::nccl::comm::grouped;
use crate::nccl::library::load::Nccl;
use crate::nccl::comm::shared::Allow;
use crate::time::Deadline;
use crate::nccl::types::enums::{DataType, NcclResult, RedOp};
use crate::nccl::comm::watchdog::OpInfo;

/// The raw entry points: one line each gives the method, the function of the NCCL table it
/// calls (`nccl::functions`, whose declared types the arguments must have: a mismatch does not
/// compile), its arguments before `comm` and `stream`, and what the watchdog reports for it.
macro_rules! raw_collectives {
    ($(
        $(#[$doc:meta])*
        fn $name:ident = $function:ident ( $( $arg:ident : $ty:ty ),* ) count: $count:ident, type: $dtype:ident, peer: $peer:expr;
    )*) => {
        impl Communicator {
            $(
                $(#[$doc])*
                #[allow(clippy::too_many_arguments)]
                pub unsafe fn $name(&self, $( $arg: $ty, )* stream: *mut c_void) -> Result<(), Error> {
                    let function = &self.shared.nccl.functions().$function;
                    let op = OpInfo { name: Nccl::name(function.sym()), count: $count, data_type: $dtype, peer: $peer };
                    // SAFETY: the caller's contract (this method's); `comm` is this
                    // communicator's live handle, read under the call lock.
                    unsafe { self.enqueue(function, |comm| ($( $arg, )* comm, stream), stream, op) }
                }
            )*
        }
    };
}

raw_collectives! {
    /// `ncclAllReduce` on raw device pointers.
    ///
    /// # Safety
    ///
    /// `send` and `recv` must point to `count` elements of `dtype` in device memory of this
    /// communicator's GPU (they may be equal: in place), valid until `stream` runs the
    /// collective; `stream` must be a valid stream of that device.
    fn all_reduce_raw = all_reduce(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, op: RedOp)
        count: count, type: dtype, peer: None;
    /// `ncclBroadcast` on raw device pointers.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw); `send` is read on `root` only.
    fn broadcast_raw = broadcast(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32)
        count: count, type: dtype, peer: Some(root);
    /// `ncclReduce` on raw device pointers.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw); `recv` is written on `root` only.
    fn reduce_raw = reduce(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, op: RedOp, root: i32)
        count: count, type: dtype, peer: Some(root);
    /// `ncclAllGather`: `send` has `send_count` elements, `recv` `send_count * nranks`.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw), with those sizes.
    fn all_gather_raw = all_gather(send: *const c_void, recv: *mut c_void, send_count: usize, dtype: DataType)
        count: send_count, type: dtype, peer: None;
    /// `ncclReduceScatter`: `send` has `recv_count * nranks` elements, `recv` `recv_count`.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw), with those sizes.
    fn reduce_scatter_raw = reduce_scatter(send: *const c_void, recv: *mut c_void, recv_count: usize, dtype: DataType, op: RedOp)
        count: recv_count, type: dtype, peer: None;
    /// `ncclSend` (2.7) of `count` elements to `peer`.
    ///
    /// # Safety
    ///
    /// `send` must point to `count` elements of `dtype` in device memory of this GPU, valid
    /// until `stream` runs the send.
    fn send_raw = send(send: *const c_void, count: usize, dtype: DataType, peer: i32)
        count: count, type: dtype, peer: Some(peer);
    /// `ncclRecv` (2.7) of `count` elements from `peer`.
    ///
    /// # Safety
    ///
    /// As [`send_raw`](Self::send_raw), for writing.
    fn recv_raw = recv(recv: *mut c_void, count: usize, dtype: DataType, peer: i32)
        count: count, type: dtype, peer: Some(peer);
    /// `ncclAlltoAll` (2.28): `count` elements to and from every rank.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw); both buffers hold `count * nranks`.
    fn all_to_all_raw = all_to_all(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType)
        count: count, type: dtype, peer: None;
    /// `ncclGather` (2.28): `count` elements from every rank into `recv` on `root`.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw); `recv` holds `count * nranks` on root.
    fn gather_raw = gather(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32)
        count: count, type: dtype, peer: Some(root);
    /// `ncclScatter` (2.28): `count` elements to every rank from `send` on `root`.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw); `send` holds `count * nranks` on root.
    fn scatter_raw = scatter(send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32)
        count: count, type: dtype, peer: Some(root);
}

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
