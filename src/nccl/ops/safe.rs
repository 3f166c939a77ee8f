//! The safe collectives: typed device buffers checked for length, device and stream, held until
//! the operation is enqueued, then handed to the raw forms.

use core::ffi::c_void;

use crate::nccl::ops::buffers::{DeviceBuffer, DeviceBufferMut, Stream};
use crate::nccl::comm::communicator::Communicator;
use crate::nccl::types::error::Error;
use crate::nccl::comm::grouped;
use crate::nccl::types::enums::{NcclScalar, RedOp};

impl Communicator {
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

    /// The number of ranks, at least 1: a count of 0 or below from `ncclCommCount` (which a
    /// real communicator never has) is refused before any length is divided or multiplied by it.
    pub(crate) fn ranks(&self) -> Result<usize, Error> {
        usize::try_from(self.count()?)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or(Error::ImpossibleOutput { function: "ncclCommCount", what: "a count below 1" })
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
        grouped::refuse_safe_in_group()?;
        self.all_reduce_held(send, recv, op, stream).map(drop)
    }

    /// In-place all-reduce of a typed device buffer (outside a group).
    pub fn all_reduce_in_place<T: NcclScalar, S: Stream>(
        &self,
        buf: &mut impl DeviceBufferMut<T>,
        op: RedOp,
        stream: &S,
    ) -> Result<(), Error> {
        grouped::refuse_safe_in_group()?;
        self.all_reduce_in_place_held(buf, op, stream).map(drop)
    }

    /// Broadcast of `buf` from `root`, in place on every rank (outside a group).
    pub fn broadcast<T: NcclScalar, S: Stream>(
        &self,
        buf: &mut impl DeviceBufferMut<T>,
        root: i32,
        stream: &S,
    ) -> Result<(), Error> {
        grouped::refuse_safe_in_group()?;
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
        grouped::refuse_safe_in_group()?;
        self.reduce_held(send, recv, op, root, stream).map(drop)
    }

    /// All-gather: `recv` must hold `send.len() * nranks` elements (outside a group).
    pub fn all_gather<T: NcclScalar, S: Stream>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        stream: &S,
    ) -> Result<(), Error> {
        grouped::refuse_safe_in_group()?;
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
        grouped::refuse_safe_in_group()?;
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
        grouped::refuse_safe_in_group()?;
        self.send_held(buf, peer, stream).map(drop)
    }

    /// Receive `buf.len()` elements from `peer` (outside a group).
    pub fn recv<T: NcclScalar, S: Stream>(
        &self,
        buf: &mut impl DeviceBufferMut<T>,
        peer: i32,
        stream: &S,
    ) -> Result<(), Error> {
        grouped::refuse_safe_in_group()?;
        self.recv_held(buf, peer, stream).map(drop)
    }

    /// All-to-all: both buffers the same length, a multiple of nranks (outside a group).
    pub fn all_to_all<T: NcclScalar, S: Stream>(
        &self,
        send: &impl DeviceBuffer<T>,
        recv: &mut impl DeviceBufferMut<T>,
        stream: &S,
    ) -> Result<(), Error> {
        grouped::refuse_safe_in_group()?;
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
        at_least("all_gather recv", times_ranks("all_gather recv", send.len(), self.ranks()?)?, recv.len())?;
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
        at_least("reduce_scatter send", times_ranks("reduce_scatter send", recv.len(), self.ranks()?)?, send.len())?;
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
            const WHAT: &str = "all_to_all buffers (equal, multiple of nranks)";
            let expected = send.len().checked_next_multiple_of(n).ok_or(Error::LengthOverflow {
                what: WHAT,
                count: send.len() / n + 1,
                nranks: n,
            })?;
            return Err(Error::LengthMismatch { what: WHAT, expected, got: recv.len() });
        }
        let count = send.len() / n;
        self.two_buffers(["all_to_all send", "all_to_all recv"], send, recv, stream, |s, r| {
            // SAFETY: the buffer traits' contracts, and the lengths checked above.
            unsafe { self.all_to_all_raw(s, r, count, T::DATA_TYPE, stream.as_raw()) }
        })
    }
}

/// `count * nranks` elements, the length a buffer of a gathering or scattering collective
/// needs; [`Error::LengthOverflow`] where that is past `usize` (never saturated: a saturated
/// length would let a buffer of `usize::MAX` elements pass for one it cannot be).
pub(crate) fn times_ranks(what: &'static str, count: usize, nranks: usize) -> Result<usize, Error> {
    count.checked_mul(nranks).ok_or(Error::LengthOverflow { what, count, nranks })
}

pub(crate) fn at_least(what: &'static str, expected: usize, got: usize) -> Result<(), Error> {
    if got < expected {
        return Err(Error::LengthMismatch { what, expected, got });
    }
    Ok(())
}
