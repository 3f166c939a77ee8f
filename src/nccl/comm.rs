//! Communicators, collectives, groups and the RAII handles that come with them.

use core::cell::Cell;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr;

use crate::arg;
use crate::nccl::library::{Nccl, Sym};
use crate::nccl::types::{DataType, NcclResult, NcclScalar, RedOp, ScalarResidence, UniqueId};
use crate::nccl::Config;
use crate::Error;

thread_local! {
    /// Groups open on this thread ([`Group`] guards alive). NCCL writes the handle of a
    /// communicator created inside a group only at `ncclGroupEnd`, so creating one through the
    /// single-rank calls inside a group would let NCCL write into a dead stack slot.
    static GROUP_DEPTH: Cell<u32> = const { Cell::new(0) };
}

fn refuse_in_group() -> Result<(), Error> {
    if GROUP_DEPTH.with(Cell::get) > 0 {
        return Err(Error::InvalidArgument {
            what: "communicators cannot be created inside a group (NCCL fills the handle at ncclGroupEnd); use Nccl::split_all",
        });
    }
    Ok(())
}

/// `cudaStreamPerThread`'s handle value; unusable with non-blocking communicators (NCCL
/// silently corrupts data), so it is refused there.
const CUDA_STREAM_PER_THREAD: usize = 0x2;

/// Device memory of `T` elements, as the safe collectives read it.
///
/// # Safety
///
/// `device_ptr` must point to `len()` elements of `T` in device memory of the communicator's
/// GPU, valid (and not written by anything else) for as long as the value is borrowed and
/// until the stream the collective was enqueued on has run it.
pub unsafe trait DeviceBuffer<T: NcclScalar> {
    /// Start of the elements.
    fn device_ptr(&self) -> *const c_void;
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
}

/// Device memory the safe collectives write.
///
/// # Safety
///
/// As [`DeviceBuffer`], and the memory must be writable and not read by anything else until
/// the stream has run the collective.
pub unsafe trait DeviceBufferMut<T: NcclScalar>: DeviceBuffer<T> {
    /// Start of the elements, for writing.
    fn device_ptr_mut(&mut self) -> *mut c_void;
}

/// A CUDA (or HIP) stream.
///
/// # Safety
///
/// `as_raw` must return a valid stream handle of the communicator's device (or null for the
/// legacy default stream) that outlives every collective enqueued on it.
pub unsafe trait Stream {
    /// The `cudaStream_t`.
    fn as_raw(&self) -> *mut c_void;
}

/// An NCCL communicator: one rank of a group of GPUs.
///
/// `Send` (a communicator may move to another thread) but not `Sync`: NCCL forbids using one
/// communicator from several threads at once. Dropping it calls `ncclCommDestroy`, which can
/// block if peers died: call [`abort`](Communicator::abort) on every rank in that case.
pub struct Communicator<'n> {
    nccl: &'n Nccl,
    comm: *mut c_void,
    nonblocking: bool,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: NCCL communicators may be used from any thread, one at a time; `!Sync` keeps it to
// one at a time.
unsafe impl Send for Communicator<'_> {}

impl core::fmt::Debug for Communicator<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Communicator").field("comm", &self.comm).field("nonblocking", &self.nonblocking).finish()
    }
}

impl<'n> Communicator<'n> {
    fn wrap(nccl: &'n Nccl, comm: *mut c_void, nonblocking: bool) -> Self {
        Communicator { nccl, comm, nonblocking, _not_sync: PhantomData }
    }

    /// `ncclCommInitRank`: joins communicator `id` as `rank` of `nranks` on the current CUDA
    /// device. The id is passed by value through the call core (a private copy per call).
    pub fn init_rank(nccl: &'n Nccl, nranks: i32, id: &UniqueId, rank: i32) -> Result<Self, Error> {
        check_rank(nranks, rank)?;
        refuse_in_group()?;
        let mut comm: *mut c_void = ptr::null_mut();
        let out: *mut *mut c_void = &mut comm;
        nccl.check(Sym::CommInitRank, &[arg(&out), arg(&nranks), arg(id), arg(&rank)], ptr::null_mut())?;
        Ok(Self::wrap(nccl, comm, false))
    }

    /// `ncclCommInitRankConfig` (2.14) with a config written for the loaded library.
    pub fn init_rank_config(
        nccl: &'n Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        config: &Config,
    ) -> Result<Self, Error> {
        check_rank(nranks, rank)?;
        refuse_in_group()?;
        let mut buf = config.encode(nccl.version())?;
        let cfg = buf.as_ptr();
        let mut comm: *mut c_void = ptr::null_mut();
        let out: *mut *mut c_void = &mut comm;
        nccl.check(
            Sym::CommInitRankConfig,
            &[arg(&out), arg(&nranks), arg(id), arg(&rank), arg(&cfg)],
            ptr::null_mut(),
        )?;
        Ok(Self::wrap(nccl, comm, config.is_nonblocking()))
    }

    /// `ncclCommInitAll`: one communicator per device of `devices`, in this process.
    pub fn init_all(nccl: &'n Nccl, devices: &[i32]) -> Result<Vec<Self>, Error> {
        let n = i32::try_from(devices.len()).map_err(|_| Error::InvalidArgument { what: "too many devices" })?;
        if n == 0 {
            return Err(Error::InvalidArgument { what: "init_all needs at least one device" });
        }
        let mut comms: Vec<*mut c_void> = vec![ptr::null_mut(); devices.len()];
        let (out, list) = (comms.as_mut_ptr(), devices.as_ptr());
        nccl.check(Sym::CommInitAll, &[arg(&out), arg(&n), arg(&list)], ptr::null_mut())?;
        Ok(comms.into_iter().map(|c| Self::wrap(nccl, c, false)).collect())
    }

    /// `ncclCommSplit` (2.18). `color` -1 (`NCCL_SPLIT_NOCOLOR`) leaves this rank out: `None`.
    /// For a non-blocking parent, the child is usable once the parent's
    /// [`async_error`](Self::async_error) reports success. One thread driving several ranks
    /// splits them together with [`Nccl::split_all`]; inside a [`Group`] this call is refused.
    pub fn split(&self, color: i32, key: i32, config: Option<&Config>) -> Result<Option<Communicator<'n>>, Error> {
        refuse_in_group()?;
        let mut buf = config.map(|c| c.encode(self.nccl.version())).transpose()?;
        let cfg = buf.as_mut().map_or(ptr::null_mut(), |b| b.as_ptr());
        let mut child: *mut c_void = ptr::null_mut();
        self.split_into(color, key, cfg, &mut child)?;
        let nonblocking = config.map_or(self.nonblocking, Config::is_nonblocking);
        Ok((!child.is_null()).then(|| Self::wrap(self.nccl, child, nonblocking)))
    }

    /// The `ncclCommSplit` call itself; `out` must stay valid until the enclosing group ends.
    fn split_into(&self, color: i32, key: i32, cfg: *mut c_void, out: *mut *mut c_void) -> Result<(), Error> {
        self.nccl.check(Sym::CommSplit, &[arg(&self.comm), arg(&color), arg(&key), arg(&out), arg(&cfg)], self.comm)
    }

    /// `ncclCommShrink` (2.27): a new communicator without the ranks in `exclude`.
    pub fn shrink(&self, exclude: &[i32], config: Option<&Config>, flags: i32) -> Result<Communicator<'n>, Error> {
        refuse_in_group()?;
        let count =
            i32::try_from(exclude.len()).map_err(|_| Error::InvalidArgument { what: "too many ranks to exclude" })?;
        let mut buf = config.map(|c| c.encode(self.nccl.version())).transpose()?;
        let cfg = buf.as_mut().map_or(ptr::null_mut(), |b| b.as_ptr());
        let list = exclude.as_ptr();
        let mut child: *mut c_void = ptr::null_mut();
        let out: *mut *mut c_void = &mut child;
        self.nccl.check(
            Sym::CommShrink,
            &[arg(&self.comm), arg(&list), arg(&count), arg(&out), arg(&cfg), arg(&flags)],
            self.comm,
        )?;
        Ok(Self::wrap(self.nccl, child, config.map_or(self.nonblocking, Config::is_nonblocking)))
    }

    /// `ncclCommFinalize` (2.14): flush outstanding work before `destroy`.
    pub fn finalize(&self) -> Result<(), Error> {
        self.nccl.check(Sym::CommFinalize, &[arg(&self.comm)], self.comm)
    }

    /// `ncclCommDestroy`, reporting its result.
    pub fn destroy(mut self) -> Result<(), Error> {
        let comm = core::mem::replace(&mut self.comm, ptr::null_mut());
        self.nccl.check(Sym::CommDestroy, &[arg(&comm)], ptr::null_mut())
    }

    /// `ncclCommAbort` (2.4): tear down without waiting for peers. Must run on every rank of a
    /// node whose communicator failed.
    pub fn abort(mut self) -> Result<(), Error> {
        let comm = core::mem::replace(&mut self.comm, ptr::null_mut());
        self.nccl.check(Sym::CommAbort, &[arg(&comm)], ptr::null_mut())
    }

    /// `ncclCommGetAsyncError` (2.4): the communicator's state (`IN_PROGRESS` while a
    /// non-blocking operation runs).
    pub fn async_error(&self) -> Result<NcclResult, Error> {
        let mut state = 0i32;
        let out: *mut i32 = &mut state;
        self.nccl.check(Sym::CommGetAsyncError, &[arg(&self.comm), arg(&out)], self.comm)?;
        Ok(NcclResult(state))
    }

    fn query(&self, sym: Sym) -> Result<i32, Error> {
        let mut v = 0i32;
        let out: *mut i32 = &mut v;
        self.nccl.check(sym, &[arg(&self.comm), arg(&out)], self.comm)?;
        Ok(v)
    }

    /// `ncclCommCount`: number of ranks.
    pub fn count(&self) -> Result<i32, Error> {
        self.query(Sym::CommCount)
    }

    /// `ncclCommCuDevice`: the CUDA device of this rank.
    pub fn cu_device(&self) -> Result<i32, Error> {
        self.query(Sym::CommCuDevice)
    }

    /// `ncclCommUserRank`: this rank.
    pub fn rank(&self) -> Result<i32, Error> {
        self.query(Sym::CommUserRank)
    }

    /// `ncclGetLastError(comm)` (2.13): NCCL's last error text for this communicator.
    pub fn last_error(&self) -> Result<Option<String>, Error> {
        self.nccl.last_error_for(self.comm)
    }

    /// The `ncclComm_t` handle, for code that calls NCCL by other means.
    pub fn as_raw(&self) -> *mut c_void {
        self.comm
    }

    fn stream_ok(&self, stream: *mut c_void) -> Result<(), Error> {
        if self.nonblocking && stream as usize == CUDA_STREAM_PER_THREAD {
            return Err(Error::InvalidArgument { what: "cudaStreamPerThread with a non-blocking communicator" });
        }
        Ok(())
    }

    /// The safe forms' stream check: a buffer bound to a stream must be used on that stream.
    fn same_stream(&self, bound: &[Option<*mut c_void>], stream: *mut c_void) -> Result<(), Error> {
        if bound.iter().flatten().any(|s| *s != stream) {
            return Err(Error::InvalidArgument { what: "a buffer is bound to another stream than the collective's" });
        }
        Ok(())
    }

    fn enqueue(&self, sym: Sym, args: &[*const c_void], stream: *mut c_void) -> Result<(), Error> {
        self.stream_ok(stream)?;
        self.nccl.check(sym, args, self.comm)
    }

    /// `ncclAllReduce` on raw device pointers.
    ///
    /// # Safety
    ///
    /// `send` and `recv` must point to `count` elements of `dtype` in device memory of this
    /// communicator's GPU (they may be equal: in place), valid until `stream` runs the
    /// collective; `stream` must be a valid stream of that device.
    pub unsafe fn all_reduce_raw(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        op: RedOp,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        self.enqueue(
            Sym::AllReduce,
            &[arg(&send), arg(&recv), arg(&count), arg(&dtype), arg(&op), arg(&self.comm), arg(&stream)],
            stream,
        )
    }

    /// `ncclBroadcast` on raw device pointers.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw); `send` is read on `root` only.
    pub unsafe fn broadcast_raw(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        root: i32,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        self.enqueue(
            Sym::Broadcast,
            &[arg(&send), arg(&recv), arg(&count), arg(&dtype), arg(&root), arg(&self.comm), arg(&stream)],
            stream,
        )
    }

    /// `ncclReduce` on raw device pointers.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw); `recv` is written on `root` only.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn reduce_raw(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        op: RedOp,
        root: i32,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        self.enqueue(
            Sym::Reduce,
            &[arg(&send), arg(&recv), arg(&count), arg(&dtype), arg(&op), arg(&root), arg(&self.comm), arg(&stream)],
            stream,
        )
    }

    /// `ncclAllGather`: `send` has `send_count` elements, `recv` `send_count * nranks`.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw), with those sizes.
    pub unsafe fn all_gather_raw(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        send_count: usize,
        dtype: DataType,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        self.enqueue(
            Sym::AllGather,
            &[arg(&send), arg(&recv), arg(&send_count), arg(&dtype), arg(&self.comm), arg(&stream)],
            stream,
        )
    }

    /// `ncclReduceScatter`: `recv` has `recv_count` elements, `send` `recv_count * nranks`.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw), with those sizes.
    pub unsafe fn reduce_scatter_raw(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        recv_count: usize,
        dtype: DataType,
        op: RedOp,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        self.enqueue(
            Sym::ReduceScatter,
            &[arg(&send), arg(&recv), arg(&recv_count), arg(&dtype), arg(&op), arg(&self.comm), arg(&stream)],
            stream,
        )
    }

    /// `ncclSend` (2.7) of `count` elements to `peer`.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw) for `send`.
    pub unsafe fn send_raw(
        &self,
        send: *const c_void,
        count: usize,
        dtype: DataType,
        peer: i32,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        self.enqueue(
            Sym::Send,
            &[arg(&send), arg(&count), arg(&dtype), arg(&peer), arg(&self.comm), arg(&stream)],
            stream,
        )
    }

    /// `ncclRecv` (2.7) of `count` elements from `peer`.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw) for `recv`.
    pub unsafe fn recv_raw(
        &self,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        peer: i32,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        self.enqueue(
            Sym::Recv,
            &[arg(&recv), arg(&count), arg(&dtype), arg(&peer), arg(&self.comm), arg(&stream)],
            stream,
        )
    }

    /// `ncclAlltoAll` (2.28; RCCL's `ncclAllToAll`): `count` elements to and from each peer.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw); both buffers hold `count * nranks`.
    pub unsafe fn all_to_all_raw(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        self.enqueue(
            Sym::AlltoAll,
            &[arg(&send), arg(&recv), arg(&count), arg(&dtype), arg(&self.comm), arg(&stream)],
            stream,
        )
    }

    /// `ncclGather` (2.28): `count` elements from every rank into `recv` on `root`.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw); `recv` holds `count * nranks` on root.
    pub unsafe fn gather_raw(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        root: i32,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        self.enqueue(
            Sym::Gather,
            &[arg(&send), arg(&recv), arg(&count), arg(&dtype), arg(&root), arg(&self.comm), arg(&stream)],
            stream,
        )
    }

    /// `ncclScatter` (2.28): `count` elements to every rank from `send` on `root`.
    ///
    /// # Safety
    ///
    /// As [`all_reduce_raw`](Self::all_reduce_raw); `send` holds `count * nranks` on root.
    pub unsafe fn scatter_raw(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        root: i32,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        self.enqueue(
            Sym::Scatter,
            &[arg(&send), arg(&recv), arg(&count), arg(&dtype), arg(&root), arg(&self.comm), arg(&stream)],
            stream,
        )
    }

    /// All-reduce of typed device buffers; `recv` must hold at least `send.len()` elements.
    pub fn all_reduce<T: NcclScalar>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        op: RedOp,
        stream: &impl Stream,
    ) -> Result<(), Error> {
        at_least("all_reduce recv", send.len(), recv.len())?;
        self.same_stream(&[send.stream(), recv.stream()], stream.as_raw())?;
        // SAFETY: the buffer traits' contracts, and the length checked above.
        unsafe {
            self.all_reduce_raw(send.device_ptr(), recv.device_ptr_mut(), send.len(), T::DATA_TYPE, op, stream.as_raw())
        }
    }

    /// In-place all-reduce of a typed device buffer.
    pub fn all_reduce_in_place<T: NcclScalar>(
        &self,
        buf: &mut impl DeviceBufferMut<T>,
        op: RedOp,
        stream: &impl Stream,
    ) -> Result<(), Error> {
        self.same_stream(&[buf.stream()], stream.as_raw())?;
        let p = buf.device_ptr_mut();
        // SAFETY: the buffer trait's contract; send == recv is NCCL's in-place form.
        unsafe { self.all_reduce_raw(p, p, buf.len(), T::DATA_TYPE, op, stream.as_raw()) }
    }

    /// Broadcast of `buf` from `root` (in place on every rank).
    pub fn broadcast<T: NcclScalar>(
        &self,
        buf: &mut impl DeviceBufferMut<T>,
        root: i32,
        stream: &impl Stream,
    ) -> Result<(), Error> {
        self.same_stream(&[buf.stream()], stream.as_raw())?;
        let p = buf.device_ptr_mut();
        // SAFETY: the buffer trait's contract; in place.
        unsafe { self.broadcast_raw(p, p, buf.len(), T::DATA_TYPE, root, stream.as_raw()) }
    }

    /// Reduce of `send` into `recv` on `root`; `recv` must hold `send.len()` elements.
    pub fn reduce<T: NcclScalar>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        op: RedOp,
        root: i32,
        stream: &impl Stream,
    ) -> Result<(), Error> {
        at_least("reduce recv", send.len(), recv.len())?;
        self.same_stream(&[send.stream(), recv.stream()], stream.as_raw())?;
        // SAFETY: the buffer traits' contracts, and the length checked above.
        unsafe {
            self.reduce_raw(
                send.device_ptr(),
                recv.device_ptr_mut(),
                send.len(),
                T::DATA_TYPE,
                op,
                root,
                stream.as_raw(),
            )
        }
    }

    /// All-gather: `recv` must hold `send.len() * nranks` elements.
    pub fn all_gather<T: NcclScalar>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        stream: &impl Stream,
    ) -> Result<(), Error> {
        let n = self.ranks()?;
        at_least("all_gather recv", send.len().saturating_mul(n), recv.len())?;
        self.same_stream(&[send.stream(), recv.stream()], stream.as_raw())?;
        // SAFETY: the buffer traits' contracts, and the length checked above.
        unsafe {
            self.all_gather_raw(send.device_ptr(), recv.device_ptr_mut(), send.len(), T::DATA_TYPE, stream.as_raw())
        }
    }

    /// Reduce-scatter: `send` must hold `recv.len() * nranks` elements.
    pub fn reduce_scatter<T: NcclScalar>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        op: RedOp,
        stream: &impl Stream,
    ) -> Result<(), Error> {
        let n = self.ranks()?;
        at_least("reduce_scatter send", recv.len().saturating_mul(n), send.len())?;
        self.same_stream(&[send.stream(), recv.stream()], stream.as_raw())?;
        // SAFETY: the buffer traits' contracts, and the length checked above.
        unsafe {
            self.reduce_scatter_raw(
                send.device_ptr(),
                recv.device_ptr_mut(),
                recv.len(),
                T::DATA_TYPE,
                op,
                stream.as_raw(),
            )
        }
    }

    /// Send all of `buf` to `peer`.
    pub fn send<T: NcclScalar>(
        &self,
        buf: &impl DeviceBuffer<T>,
        peer: i32,
        stream: &impl Stream,
    ) -> Result<(), Error> {
        self.same_stream(&[buf.stream()], stream.as_raw())?;
        // SAFETY: the buffer trait's contract.
        unsafe { self.send_raw(buf.device_ptr(), buf.len(), T::DATA_TYPE, peer, stream.as_raw()) }
    }

    /// Receive `buf.len()` elements from `peer`.
    pub fn recv<T: NcclScalar>(
        &self,
        buf: &mut impl DeviceBufferMut<T>,
        peer: i32,
        stream: &impl Stream,
    ) -> Result<(), Error> {
        self.same_stream(&[buf.stream()], stream.as_raw())?;
        // SAFETY: the buffer trait's contract.
        unsafe { self.recv_raw(buf.device_ptr_mut(), buf.len(), T::DATA_TYPE, peer, stream.as_raw()) }
    }

    /// All-to-all: both buffers the same length, a multiple of nranks.
    pub fn all_to_all<T: NcclScalar>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        stream: &impl Stream,
    ) -> Result<(), Error> {
        self.same_stream(&[send.stream(), recv.stream()], stream.as_raw())?;
        let n = self.ranks()?;
        if send.len() != recv.len() || send.len() % n != 0 {
            return Err(Error::LengthMismatch {
                what: "all_to_all buffers (equal, multiple of nranks)",
                expected: send.len().next_multiple_of(n),
                got: recv.len(),
            });
        }
        // SAFETY: the buffer traits' contracts, and the lengths checked above.
        unsafe {
            self.all_to_all_raw(send.device_ptr(), recv.device_ptr_mut(), send.len() / n, T::DATA_TYPE, stream.as_raw())
        }
    }

    fn ranks(&self) -> Result<usize, Error> {
        usize::try_from(self.count()?)
            .map_err(|_| Error::InvalidArgument { what: "ncclCommCount gave a negative count" })
    }

    /// `ncclRedOpCreatePreMulSum` (2.11) with a host scalar read at creation
    /// (`ncclScalarHostImmediate`): `sum(scalar * x)`. Destroyed when the handle drops.
    pub fn create_pre_mul_sum<T: NcclScalar>(&self, scalar: T) -> Result<CustomRedOp<'_, 'n>, Error> {
        let mut op = RedOp(0);
        let (out, s): (*mut RedOp, *const T) = (&mut op, &scalar);
        let (dtype, residence) = (T::DATA_TYPE, ScalarResidence::HOST_IMMEDIATE);
        self.nccl.check(
            Sym::RedOpCreatePreMulSum,
            &[arg(&out), arg(&s), arg(&dtype), arg(&residence), arg(&self.comm)],
            self.comm,
        )?;
        Ok(CustomRedOp { comm: self, op })
    }

    /// `ncclCommRegister` (2.19): registers `size` bytes at `buf` for zero-copy use;
    /// deregistered when the handle drops.
    ///
    /// # Safety
    ///
    /// `buf` must be device memory of this GPU, valid for `size` bytes while registered.
    pub unsafe fn register(&self, buf: *mut c_void, size: usize) -> Result<Registration<'_, 'n>, Error> {
        let mut handle: *mut c_void = ptr::null_mut();
        let out: *mut *mut c_void = &mut handle;
        self.nccl.check(Sym::CommRegister, &[arg(&self.comm), arg(&buf), arg(&size), arg(&out)], self.comm)?;
        Ok(Registration { comm: self, handle, window: false })
    }

    /// `ncclCommWindowRegister` (2.27): a symmetric-memory window; deregistered on drop.
    ///
    /// # Safety
    ///
    /// As [`register`](Self::register); every rank registers a window of the same size.
    pub unsafe fn window_register(
        &self,
        buf: *mut c_void,
        size: usize,
        flags: i32,
    ) -> Result<Registration<'_, 'n>, Error> {
        let mut win: *mut c_void = ptr::null_mut();
        let out: *mut *mut c_void = &mut win;
        self.nccl.check(
            Sym::CommWindowRegister,
            &[arg(&self.comm), arg(&buf), arg(&size), arg(&out), arg(&flags)],
            self.comm,
        )?;
        Ok(Registration { comm: self, handle: win, window: true })
    }
}

impl Drop for Communicator<'_> {
    fn drop(&mut self) {
        if !self.comm.is_null() {
            // Errors cannot be reported from drop; `destroy` reports them.
            let _ = self.nccl.check(Sym::CommDestroy, &[arg(&self.comm)], ptr::null_mut());
        }
    }
}

fn check_rank(nranks: i32, rank: i32) -> Result<(), Error> {
    if nranks < 1 || rank < 0 || rank >= nranks {
        return Err(Error::InvalidArgument { what: "rank must be in 0..nranks and nranks at least 1" });
    }
    Ok(())
}

fn at_least(what: &'static str, expected: usize, got: usize) -> Result<(), Error> {
    if got < expected {
        return Err(Error::LengthMismatch { what, expected, got });
    }
    Ok(())
}

/// A PreMulSum reduction op; `ncclRedOpDestroy` on drop.
#[derive(Debug)]
pub struct CustomRedOp<'c, 'n> {
    comm: &'c Communicator<'n>,
    op: RedOp,
}

impl CustomRedOp<'_, '_> {
    /// The op id to pass to collectives on the same communicator.
    pub fn op(&self) -> RedOp {
        self.op
    }
}

impl Drop for CustomRedOp<'_, '_> {
    fn drop(&mut self) {
        let _ = self.comm.nccl.check(Sym::RedOpDestroy, &[arg(&self.op), arg(&self.comm.comm)], self.comm.comm);
    }
}

/// A buffer registration or window; deregistered on drop.
#[derive(Debug)]
pub struct Registration<'c, 'n> {
    comm: &'c Communicator<'n>,
    handle: *mut c_void,
    window: bool,
}

impl Registration<'_, '_> {
    /// The handle NCCL returned.
    pub fn as_raw(&self) -> *mut c_void {
        self.handle
    }
}

impl Drop for Registration<'_, '_> {
    fn drop(&mut self) {
        let sym = if self.window { Sym::CommWindowDeregister } else { Sym::CommDeregister };
        let _ = self.comm.nccl.check(sym, &[arg(&self.comm.comm), arg(&self.handle)], self.comm.comm);
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
        let _ = self.nccl.check(Sym::MemFree, &[arg(&self.ptr)], ptr::null_mut());
    }
}

/// An open `ncclGroupStart` on this thread; [`end`](Group::end) reports `ncclGroupEnd`'s
/// result. Not `Send`: NCCL groups are per thread. Dropped without `end`, it ends the group
/// and ignores the result (it never panics).
#[derive(Debug)]
pub struct Group<'n> {
    nccl: &'n Nccl,
    open: bool,
    _per_thread: PhantomData<*const ()>,
}

impl<'n> Group<'n> {
    /// `ncclGroupEnd`, with its result.
    pub fn end(mut self) -> Result<(), Error> {
        self.open = false;
        GROUP_DEPTH.with(|d| d.set(d.get() - 1));
        self.nccl.check(Sym::GroupEnd, &[], ptr::null_mut())
    }
}

impl Drop for Group<'_> {
    fn drop(&mut self) {
        if self.open {
            GROUP_DEPTH.with(|d| d.set(d.get() - 1));
            let _ = self.nccl.check(Sym::GroupEnd, &[], ptr::null_mut());
        }
    }
}

impl Nccl {
    /// `ncclGroupStart`: collectives until [`Group::end`] are fused.
    pub fn group(&self) -> Result<Group<'_>, Error> {
        self.check(Sym::GroupStart, &[], ptr::null_mut())?;
        GROUP_DEPTH.with(|d| d.set(d.get() + 1));
        Ok(Group { nccl: self, open: true, _per_thread: PhantomData })
    }

    /// `ncclCommSplit` for several ranks driven by this thread, in one group: `parts` holds
    /// (parent, color, key) per rank. NCCL fills the children at `ncclGroupEnd`, so their
    /// handles live in memory owned here until then. A child is `None` for color -1.
    pub fn split_all<'n>(
        &'n self,
        parts: &[(&Communicator<'n>, i32, i32)],
        config: Option<&Config>,
    ) -> Result<Vec<Option<Communicator<'n>>>, Error> {
        refuse_in_group()?;
        let mut buf = config.map(|c| c.encode(self.version())).transpose()?;
        let cfg = buf.as_mut().map_or(ptr::null_mut(), |b| b.as_ptr());
        // Declared before the group so it outlives the group's end, where NCCL writes it.
        let mut children: Vec<*mut c_void> = vec![ptr::null_mut(); parts.len()];
        let out = children.as_mut_ptr();
        {
            let group = self.group()?;
            for (i, (parent, color, key)) in parts.iter().enumerate() {
                // SAFETY: `i < children.len()`; the vector is not touched until the group ends.
                parent.split_into(*color, *key, cfg, unsafe { out.add(i) })?;
            }
            group.end()?;
        }
        let nonblocking = config.is_some_and(Config::is_nonblocking);
        Ok(children.into_iter().map(|c| (!c.is_null()).then(|| Communicator::wrap(self, c, nonblocking))).collect())
    }

    /// `ncclMemAlloc` (2.19): device memory suited to NCCL's zero-copy paths.
    pub fn mem_alloc(&self, size: usize) -> Result<DeviceAllocation<'_>, Error> {
        let mut p: *mut c_void = ptr::null_mut();
        let out: *mut *mut c_void = &mut p;
        self.check(Sym::MemAlloc, &[arg(&out), arg(&size)], ptr::null_mut())?;
        Ok(DeviceAllocation { nccl: self, ptr: p, size })
    }
}
