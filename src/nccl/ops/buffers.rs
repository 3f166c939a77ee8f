//! What the safe collectives take: streams and typed device buffers, as traits a caller's
//! types implement (cudarc's behind the `cudarc` feature: `nccl::cudarc`).

use core::ffi::c_void;

use crate::nccl::types::enums::NcclScalar;
use crate::nccl::types::error::Error;

/// `cudaStreamPerThread`'s handle value; unusable with non-blocking communicators (NCCL
/// silently corrupts data), so it is refused there.
pub(crate) const CUDA_STREAM_PER_THREAD: usize = 0x2;

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
