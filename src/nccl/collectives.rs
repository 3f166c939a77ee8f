//! Collectives and point-to-point calls: the raw forms on device pointers, the safe forms on
//! typed buffers, and a stream wait with a deadline that knows when the communicator failed.
//!
//! "Ok" means enqueued: a non-blocking communicator's `ncclInProgress` is waited out (within the
//! operation timeout) before a collective returns, never passed off as success.

use core::ffi::c_void;

use crate::cuda::Backoff;
use crate::nccl::communicator::{Allow, Cause, CommState, Communicator, Deadline};
use crate::nccl::functions::Function;
use crate::nccl::group;
use crate::nccl::library::{Nccl, Sym};
use crate::nccl::types::{DataType, NcclResult, NcclScalar, RedOp};
use crate::nccl::watchdog::OpInfo;
use crate::{CArgs, Error};

/// `cudaStreamPerThread`'s handle value; unusable with non-blocking communicators (NCCL
/// silently corrupts data), so it is refused there.
const CUDA_STREAM_PER_THREAD: usize = 0x2;

/// A CUDA (or HIP) stream.
///
/// # Safety
///
/// `as_raw` must return a valid stream handle of the communicator's device (or null for the
/// legacy default stream) that outlives every collective enqueued on it; `device`, when it
/// says, must be the stream's device.
pub unsafe trait Stream {
    /// The `cudaStream_t`.
    fn as_raw(&self) -> *mut c_void;

    /// The stream's device, if known: the safe collectives refuse a stream of another device
    /// than the communicator's.
    fn device(&self) -> Option<i32> {
        None
    }

    /// The cudarc stream behind it, if it is one (cudarc buffers order their accesses on it).
    #[cfg(feature = "cudarc")]
    #[doc(hidden)]
    fn cudarc_stream(&self) -> Option<&cudarc::driver::CudaStream> {
        None
    }
}

// SAFETY: a `DeviceStream` is a live stream of the device whose context was current when it
// was made, for as long as it is borrowed.
unsafe impl Stream for crate::cuda::DeviceStream<'_> {
    fn as_raw(&self) -> *mut c_void {
        self.raw()
    }
}

/// Device memory of `T` elements, as the safe collectives read it.
///
/// # Safety
///
/// `device_ptr` must point to `len()` elements of `T` in device memory of the communicator's
/// GPU, valid (and not written by anything else) for as long as the value is borrowed and
/// until the stream the collective was enqueued on has run it. The guard it returns is dropped
/// after the collective was enqueued on `stream`: a buffer that tracks its accesses (cudarc's
/// events) records the collective's use then.
pub unsafe trait DeviceBuffer<T: NcclScalar> {
    /// Ends an access once the collective is enqueued (`()` for buffers that track nothing).
    type Guard<'a>
    where
        Self: 'a;

    /// Start of the elements, for reading on `stream`, and the guard of that access.
    fn device_ptr<'a>(&'a self, stream: &'a dyn Stream) -> Result<(*const c_void, Self::Guard<'a>), Error>;

    /// Number of elements.
    fn len(&self) -> usize;

    /// True when there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stream the buffer is ordered on, if it has one (cudarc slices do). The safe
    /// collectives refuse a different stream, since nothing would order the collective after
    /// the buffer's pending work or later work after the collective.
    fn stream(&self) -> Option<*mut c_void> {
        None
    }

    /// The buffer's device, if known: the safe collectives refuse another than the
    /// communicator's.
    fn device(&self) -> Option<i32> {
        None
    }
}

/// Device memory the safe collectives write.
///
/// # Safety
///
/// As [`DeviceBuffer`], and the memory must be writable and not read by anything else until
/// the stream has run the collective.
pub unsafe trait DeviceBufferMut<T: NcclScalar>: DeviceBuffer<T> {
    /// Start of the elements, for writing on `stream`, and the guard of that access.
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a dyn Stream) -> Result<(*mut c_void, Self::Guard<'a>), Error>;
}

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
            return Err(Error::InvalidArgument { what: "cudaStreamPerThread with a non-blocking communicator" });
        }
        let mut guard = shared.enter(Nccl::name(sym), Allow::Ready)?;
        // SAFETY: the caller's contract; the handle is live while the call lock is held.
        let r = unsafe { function.call(&shared.nccl, args(shared.handle())) }?;
        guard.note(sym, r);
        drop(guard);
        if group::in_group() {
            if !r.is_success() {
                return Err(shared.nccl.failure(sym, r, shared.handle()));
            }
            group::join(shared, shared.watchdog.get().map(|_| (op, stream)));
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

    /// The safe forms' checks: the stream's and each buffer's device is the communicator's, and
    /// a buffer bound to a stream is used on that stream.
    pub(crate) fn check_access(
        &self,
        stream: &dyn Stream,
        buffers: &[(&'static str, Option<i32>, Option<*mut c_void>)],
    ) -> Result<(), Error> {
        let expected = self.cu_device()?;
        if let Some(got) = stream.device().filter(|d| *d != expected) {
            return Err(Error::DeviceMismatch { what: "the stream", expected, got });
        }
        for &(what, device, bound) in buffers {
            if let Some(got) = device.filter(|d| *d != expected) {
                return Err(Error::DeviceMismatch { what, expected, got });
            }
            if bound.is_some_and(|s| s != stream.as_raw()) {
                return Err(Error::StreamMismatch { what });
            }
        }
        Ok(())
    }

    pub(crate) fn ranks(&self) -> Result<usize, Error> {
        usize::try_from(self.count()?)
            .map_err(|_| Error::InvalidArgument { what: "ncclCommCount gave a negative count" })
    }

    /// All-reduce of typed device buffers; `recv` must hold at least `send.len()` elements.
    /// Outside a group only; inside one use [`GroupScope::all_reduce`](crate::nccl::GroupScope::all_reduce).
    pub fn all_reduce<T: NcclScalar, S: Stream>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        op: RedOp,
        stream: &S,
    ) -> Result<(), Error> {
        group::refuse_safe_in_group()?;
        self.all_reduce_held(send, recv, op, stream).map(drop)
    }

    /// In-place all-reduce of a typed device buffer (outside a group).
    pub fn all_reduce_in_place<T: NcclScalar, S: Stream>(
        &self,
        buf: &mut impl DeviceBufferMut<T>,
        op: RedOp,
        stream: &S,
    ) -> Result<(), Error> {
        group::refuse_safe_in_group()?;
        self.all_reduce_in_place_held(buf, op, stream).map(drop)
    }

    /// Broadcast of `buf` from `root`, in place on every rank (outside a group).
    pub fn broadcast<T: NcclScalar, S: Stream>(
        &self,
        buf: &mut impl DeviceBufferMut<T>,
        root: i32,
        stream: &S,
    ) -> Result<(), Error> {
        group::refuse_safe_in_group()?;
        self.broadcast_held(buf, root, stream).map(drop)
    }

    /// Reduce of `send` into `recv` on `root`; `recv` must hold `send.len()` elements (outside
    /// a group).
    pub fn reduce<T: NcclScalar, S: Stream>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        op: RedOp,
        root: i32,
        stream: &S,
    ) -> Result<(), Error> {
        group::refuse_safe_in_group()?;
        self.reduce_held(send, recv, op, root, stream).map(drop)
    }

    /// All-gather: `recv` must hold `send.len() * nranks` elements (outside a group).
    pub fn all_gather<T: NcclScalar, S: Stream>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        stream: &S,
    ) -> Result<(), Error> {
        group::refuse_safe_in_group()?;
        self.all_gather_held(send, recv, stream).map(drop)
    }

    /// Reduce-scatter: `send` must hold `recv.len() * nranks` elements (outside a group).
    pub fn reduce_scatter<T: NcclScalar, S: Stream>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        op: RedOp,
        stream: &S,
    ) -> Result<(), Error> {
        group::refuse_safe_in_group()?;
        self.reduce_scatter_held(send, recv, op, stream).map(drop)
    }

    /// Send all of `buf` to `peer` (outside a group: a send and its receive usually go together
    /// in a [`GroupScope`](crate::nccl::GroupScope)).
    pub fn send<T: NcclScalar, S: Stream>(
        &self,
        buf: &impl DeviceBuffer<T>,
        peer: i32,
        stream: &S,
    ) -> Result<(), Error> {
        group::refuse_safe_in_group()?;
        self.send_held(buf, peer, stream).map(drop)
    }

    /// Receive `buf.len()` elements from `peer` (outside a group).
    pub fn recv<T: NcclScalar, S: Stream>(
        &self,
        buf: &mut impl DeviceBufferMut<T>,
        peer: i32,
        stream: &S,
    ) -> Result<(), Error> {
        group::refuse_safe_in_group()?;
        self.recv_held(buf, peer, stream).map(drop)
    }

    /// All-to-all: both buffers the same length, a multiple of nranks (outside a group).
    pub fn all_to_all<T: NcclScalar, S: Stream>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        stream: &S,
    ) -> Result<(), Error> {
        group::refuse_safe_in_group()?;
        self.all_to_all_held(send, recv, stream).map(drop)
    }

    // The safe forms' common paths: checks, the buffers' accesses, the enqueue. They return the
    // accesses' guards, which the caller drops once the work is launched: at once outside a
    // group, at its end inside a `GroupScope`.

    /// A two-buffer collective: the device and stream checks, both accesses, then `enqueue`.
    pub(crate) fn two_buffers<'b, T: NcclScalar, B: DeviceBuffer<T>, M: DeviceBufferMut<T>, S: Stream>(
        &self,
        what: [&'static str; 2],
        send: &'b B,
        recv: &'b mut M,
        stream: &'b S,
        enqueue: impl FnOnce(*const c_void, *mut c_void) -> Result<(), Error>,
    ) -> Result<(B::Guard<'b>, M::Guard<'b>), Error> {
        self.check_access(stream, &[(what[0], send.device(), send.stream()), (what[1], recv.device(), recv.stream())])?;
        let (s, read) = send.device_ptr(stream)?;
        let (r, write) = recv.device_ptr_mut(stream)?;
        enqueue(s, r)?;
        Ok((read, write))
    }

    /// A collective on one buffer it writes: the checks, the access, then `enqueue`.
    pub(crate) fn one_buffer<'b, T: NcclScalar, M: DeviceBufferMut<T>, S: Stream>(
        &self,
        what: &'static str,
        buf: &'b mut M,
        stream: &'b S,
        enqueue: impl FnOnce(*mut c_void) -> Result<(), Error>,
    ) -> Result<M::Guard<'b>, Error> {
        self.check_access(stream, &[(what, buf.device(), buf.stream())])?;
        let (p, write) = buf.device_ptr_mut(stream)?;
        enqueue(p)?;
        Ok(write)
    }

    pub(crate) fn all_reduce_held<'b, T: NcclScalar, B: DeviceBuffer<T>, M: DeviceBufferMut<T>, S: Stream>(
        &self,
        send: &'b B,
        recv: &'b mut M,
        op: RedOp,
        stream: &'b S,
    ) -> Result<(B::Guard<'b>, M::Guard<'b>), Error> {
        at_least("all_reduce recv", send.len(), recv.len())?;
        let n = send.len();
        self.two_buffers(["all_reduce send", "all_reduce recv"], send, recv, stream, |s, r| {
            // SAFETY: the buffer traits' contracts, and the length checked above; the guards
            // end the accesses after the launch.
            unsafe { self.all_reduce_raw(s, r, n, T::DATA_TYPE, op, stream.as_raw()) }
        })
    }

    pub(crate) fn all_reduce_in_place_held<'b, T: NcclScalar, M: DeviceBufferMut<T>, S: Stream>(
        &self,
        buf: &'b mut M,
        op: RedOp,
        stream: &'b S,
    ) -> Result<M::Guard<'b>, Error> {
        let n = buf.len();
        self.one_buffer("all_reduce buffer", buf, stream, |p| {
            // SAFETY: the buffer trait's contract; send == recv is NCCL's in-place form.
            unsafe { self.all_reduce_raw(p, p, n, T::DATA_TYPE, op, stream.as_raw()) }
        })
    }

    pub(crate) fn broadcast_held<'b, T: NcclScalar, M: DeviceBufferMut<T>, S: Stream>(
        &self,
        buf: &'b mut M,
        root: i32,
        stream: &'b S,
    ) -> Result<M::Guard<'b>, Error> {
        let n = buf.len();
        self.one_buffer("broadcast buffer", buf, stream, |p| {
            // SAFETY: the buffer trait's contract; in place.
            unsafe { self.broadcast_raw(p, p, n, T::DATA_TYPE, root, stream.as_raw()) }
        })
    }

    pub(crate) fn reduce_held<'b, T: NcclScalar, B: DeviceBuffer<T>, M: DeviceBufferMut<T>, S: Stream>(
        &self,
        send: &'b B,
        recv: &'b mut M,
        op: RedOp,
        root: i32,
        stream: &'b S,
    ) -> Result<(B::Guard<'b>, M::Guard<'b>), Error> {
        at_least("reduce recv", send.len(), recv.len())?;
        let n = send.len();
        self.two_buffers(["reduce send", "reduce recv"], send, recv, stream, |s, r| {
            // SAFETY: the buffer traits' contracts, and the length checked above.
            unsafe { self.reduce_raw(s, r, n, T::DATA_TYPE, op, root, stream.as_raw()) }
        })
    }

    pub(crate) fn all_gather_held<'b, T: NcclScalar, B: DeviceBuffer<T>, M: DeviceBufferMut<T>, S: Stream>(
        &self,
        send: &'b B,
        recv: &'b mut M,
        stream: &'b S,
    ) -> Result<(B::Guard<'b>, M::Guard<'b>), Error> {
        at_least("all_gather recv", send.len().saturating_mul(self.ranks()?), recv.len())?;
        let count = send.len();
        self.two_buffers(["all_gather send", "all_gather recv"], send, recv, stream, |s, r| {
            // SAFETY: the buffer traits' contracts, and the length checked above.
            unsafe { self.all_gather_raw(s, r, count, T::DATA_TYPE, stream.as_raw()) }
        })
    }

    pub(crate) fn reduce_scatter_held<'b, T: NcclScalar, B: DeviceBuffer<T>, M: DeviceBufferMut<T>, S: Stream>(
        &self,
        send: &'b B,
        recv: &'b mut M,
        op: RedOp,
        stream: &'b S,
    ) -> Result<(B::Guard<'b>, M::Guard<'b>), Error> {
        at_least("reduce_scatter send", recv.len().saturating_mul(self.ranks()?), send.len())?;
        let count = recv.len();
        self.two_buffers(["reduce_scatter send", "reduce_scatter recv"], send, recv, stream, |s, r| {
            // SAFETY: the buffer traits' contracts, and the length checked above.
            unsafe { self.reduce_scatter_raw(s, r, count, T::DATA_TYPE, op, stream.as_raw()) }
        })
    }

    pub(crate) fn send_held<'b, T: NcclScalar, B: DeviceBuffer<T>, S: Stream>(
        &self,
        buf: &'b B,
        peer: i32,
        stream: &'b S,
    ) -> Result<B::Guard<'b>, Error> {
        self.check_access(stream, &[("send buffer", buf.device(), buf.stream())])?;
        let n = buf.len();
        let (p, read) = buf.device_ptr(stream)?;
        // SAFETY: the buffer trait's contract.
        unsafe { self.send_raw(p, n, T::DATA_TYPE, peer, stream.as_raw()) }?;
        Ok(read)
    }

    pub(crate) fn recv_held<'b, T: NcclScalar, M: DeviceBufferMut<T>, S: Stream>(
        &self,
        buf: &'b mut M,
        peer: i32,
        stream: &'b S,
    ) -> Result<M::Guard<'b>, Error> {
        let n = buf.len();
        self.one_buffer("recv buffer", buf, stream, |p| {
            // SAFETY: the buffer trait's contract.
            unsafe { self.recv_raw(p, n, T::DATA_TYPE, peer, stream.as_raw()) }
        })
    }

    pub(crate) fn all_to_all_held<'b, T: NcclScalar, B: DeviceBuffer<T>, M: DeviceBufferMut<T>, S: Stream>(
        &self,
        send: &'b B,
        recv: &'b mut M,
        stream: &'b S,
    ) -> Result<(B::Guard<'b>, M::Guard<'b>), Error> {
        let n = self.ranks()?;
        if send.len() != recv.len() || send.len() % n != 0 {
            return Err(Error::LengthMismatch {
                what: "all_to_all buffers (equal, multiple of nranks)",
                expected: send.len().next_multiple_of(n),
                got: recv.len(),
            });
        }
        let count = send.len() / n;
        self.two_buffers(["all_to_all send", "all_to_all recv"], send, recv, stream, |s, r| {
            // SAFETY: the buffer traits' contracts, and the lengths checked above.
            unsafe { self.all_to_all_raw(s, r, count, T::DATA_TYPE, stream.as_raw()) }
        })
    }

    /// Waits until the work queued on `stream` so far has run, within the operation timeout.
    /// See [`wait_within`](Self::wait_within).
    pub fn wait<S: Stream>(&self, stream: &S) -> Result<(), Error> {
        self.wait_within(stream, self.timeouts().operation)
    }

    /// Waits until the work queued on `stream` so far has run (`timeout` `None`: no limit),
    /// polling a CUDA event outside NCCL, so an abort from another thread gets in. Returns `Ok`
    /// only if the work finished *and* the communicator is still usable: an abort makes
    /// spinning kernels exit, and a plain stream synchronize then reports success for work that
    /// never completed. NCCL's asynchronous errors end the wait too. A timeout marks the
    /// communicator failed (its work is stuck); drop or abort it.
    pub fn wait_within<S: Stream>(&self, stream: &S, timeout: Option<std::time::Duration>) -> Result<(), Error> {
        let shared = &self.shared;
        let driver = shared.nccl.cuda()?;
        let deadline = Deadline::after(timeout);
        // The event must be made on the stream's context: the communicator's.
        let restore = driver.current_context()?;
        let switch = shared.context.is_some() && restore != shared.context;
        if switch {
            driver.set_current(shared.context)?;
        }
        let event = driver.event()?;
        // SAFETY: the `Stream` contract: a live stream of this device (current context).
        let recorded = unsafe { event.record(stream.as_raw()) };
        let result = recorded.and_then(|()| {
            let mut backoff = Backoff::new();
            let mut polls = 0u32;
            loop {
                let state = shared.state();
                if !matches!(state, CommState::Ready) {
                    return Err(Error::Unusable { operation: "stream wait", state });
                }
                if event.is_complete()? {
                    // Finished, unless an abort (which ends the kernels early) came meanwhile.
                    let state = shared.state();
                    return if matches!(state, CommState::Ready) {
                        Ok(())
                    } else {
                        Err(Error::Unusable { operation: "stream wait", state })
                    };
                }
                polls += 1;
                if polls % 64 == 0 {
                    if let Some(r) = shared.try_async_error() {
                        if !r.is_success() && r != NcclResult::IN_PROGRESS {
                            shared.fail(Cause::Nccl { function: "ncclCommGetAsyncError", code: r });
                            return Err(shared.nccl.failure(Sym::CommGetAsyncError, r, shared.handle()));
                        }
                    }
                }
                if deadline.passed() {
                    let waited = deadline.waited();
                    shared.fail(Cause::Timeout { operation: "stream wait", waited });
                    return Err(Error::Timeout { operation: "stream wait", waited });
                }
                backoff.pause(deadline.left());
            }
        });
        drop(event);
        if switch {
            let _ = driver.set_current(restore);
        }
        result
    }
}

pub(crate) fn at_least(what: &'static str, expected: usize, got: usize) -> Result<(), Error> {
    if got < expected {
        return Err(Error::LengthMismatch { what, expected, got });
    }
    Ok(())
}
