//! What the safe collectives (their forms are `collectives`) share: typed device buffers checked
//! for length, device and stream, and accessed until the operation is enqueued.

use core::ffi::c_void;

use crate::nccl::comm::communicator::Communicator;
use crate::nccl::ops::buffers::{DeviceBuffer, DeviceBufferMut, Stream};
use crate::nccl::types::coll_config::CollConfig;
use crate::nccl::types::enums::NcclScalar;
use crate::nccl::types::error::Error;

impl Communicator {
    /// The safe forms' checks: the stream's and each buffer's device is the communicator's, and
    /// a buffer bound to a stream is used on that stream. Where nothing says its device (plain
    /// buffers and streams), only the streams are compared, without reading the communicator.
    #[inline]
    pub(crate) fn check_access<S: Stream + ?Sized>(
        &self,
        stream: &S,
        buffers: &[(&'static str, Option<i32>, Option<*mut c_void>)],
    ) -> Result<(), Error> {
        let stream_device = stream.device();
        if stream_device.is_some() || buffers.iter().any(|b| b.1.is_some()) {
            return self.check_devices(stream_device, stream.as_raw(), buffers);
        }
        let raw = stream.as_raw();
        match buffers.iter().find(|b| b.2.is_some_and(|s| s != raw)) {
            Some(&(what, ..)) => Err(Error::StreamMismatch { what }),
            None => Ok(()),
        }
    }

    /// [`check_access`](Self::check_access) where a device is known: each in turn, the stream
    /// first, then each buffer's device and stream.
    #[inline(never)]
    fn check_devices(
        &self,
        stream_device: Option<i32>,
        stream: *mut c_void,
        buffers: &[(&'static str, Option<i32>, Option<*mut c_void>)],
    ) -> Result<(), Error> {
        let expected = self.cu_device()?;
        if let Some(got) = stream_device.filter(|d| *d != expected) {
            return Err(Error::DeviceMismatch { what: "the stream", expected, got });
        }
        for &(what, device, bound) in buffers {
            if let Some(got) = device.filter(|d| *d != expected) {
                return Err(Error::DeviceMismatch { what, expected, got });
            }
            if bound.is_some_and(|s| s != stream) {
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

    /// The safe forms cannot vouch for a raw CUDA event: a config carrying one goes through
    /// the `*_config_raw` calls, whose contract covers it.
    pub(crate) fn refuse_event(&self, config: &CollConfig) -> Result<(), Error> {
        if config.has_event() {
            return Err(Error::RawEventInSafeCall);
        }
        Ok(())
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

/// The element count of an all-to-all of `nranks` blocks: both buffers the same length, a
/// multiple of `nranks`, else [`Error::LengthMismatch`] (with the next multiple as expected;
/// [`Error::LengthOverflow`] where that is past `usize`).
pub(crate) fn equal_blocks(what: &'static str, send: usize, recv: usize, nranks: usize) -> Result<usize, Error> {
    if send != recv || send % nranks != 0 {
        let expected = send.checked_next_multiple_of(nranks).ok_or(Error::LengthOverflow {
            what,
            count: send / nranks + 1,
            nranks,
        })?;
        return Err(Error::LengthMismatch { what, expected, got: recv });
    }
    Ok(send / nranks)
}
