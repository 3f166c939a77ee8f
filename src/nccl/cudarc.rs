//! cudarc interop (feature `cudarc`): cudarc's device slices are buffers, and its streams are
//! streams, of the safe collectives.
//!
//! A `CudaSlice` is ordered on its own stream, and the safe collectives refuse any other. Its
//! device address is taken through cudarc's own access tracking, and the access guard
//! (`SyncOnDrop`) is dropped only after the collective was enqueued: cudarc then records the
//! slice's read or write event *after* the collective, so work on other streams that cudarc
//! orders after that event sees the collective's result. Slices and streams report their
//! device, and the safe collectives refuse another than the communicator's.
//!
//! ```no_run
//! use cudarc::driver::CudaContext;
//! use nccl_trampoline::nccl::{Communicator, Nccl, RedOp};
//!
//! let nccl = Nccl::load()?;
//! let ctx = CudaContext::new(0).expect("GPU 0");
//! let stream = ctx.default_stream();
//! let mut buf = stream.clone_htod(&[1.0f32; 1024]).expect("upload");
//! let comm = Communicator::init_rank(&nccl, 1, &nccl.unique_id()?, 0)?;
//! comm.all_reduce_in_place(&mut buf, RedOp::SUM, &stream)?;
//! let back: Vec<f32> = stream.clone_dtoh(&buf).expect("download");
//! assert!(back.iter().all(|v| *v == 1.0));
//! # Ok::<(), nccl_trampoline::nccl::Error>(())
//! ```

use core::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice, SyncOnDrop};

use crate::nccl::types::error::Error;
use crate::nccl::{DeviceBuffer, DeviceBufferMut, NcclScalar, Stream};

/// The cudarc stream of `stream`: a slice's accesses are recorded on one.
fn cudarc_stream(stream: &dyn Stream) -> Result<&CudaStream, Error> {
    stream.cudarc_stream().ok_or(Error::StreamMismatch { what: "a cudarc slice (use its cudarc stream)" })
}

// SAFETY: the address comes from cudarc for `len()` elements of `T` of a live allocation, taken
// through cudarc's access tracking on the collective's stream; the guard records the access
// after the enqueue. The slice's stream and device are reported, so the safe collectives run
// on that stream and that device only.
unsafe impl<T: NcclScalar + DeviceRepr> DeviceBuffer<T> for CudaSlice<T> {
    type Guard<'a>
        = SyncOnDrop<'a>
    where
        Self: 'a;

    fn device_ptr<'a>(&'a self, stream: &'a dyn Stream) -> Result<(*const c_void, SyncOnDrop<'a>), Error> {
        let (ptr, guard) = DevicePtr::device_ptr(self, cudarc_stream(stream)?);
        Ok((ptr as usize as *const c_void, guard))
    }

    fn len(&self) -> usize {
        DeviceSlice::len(self)
    }

    fn stream(&self) -> Option<*mut c_void> {
        Some(CudaSlice::stream(self).cu_stream() as *mut c_void)
    }

    fn device(&self) -> Option<i32> {
        i32::try_from(CudaSlice::stream(self).context().ordinal()).ok()
    }
}

// SAFETY: as above, for writing: `&mut` excludes other users of the slice on the host side.
unsafe impl<T: NcclScalar + DeviceRepr> DeviceBufferMut<T> for CudaSlice<T> {
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a dyn Stream) -> Result<(*mut c_void, SyncOnDrop<'a>), Error> {
        let (ptr, guard) = DevicePtrMut::device_ptr_mut(self, cudarc_stream(stream)?);
        Ok((ptr as usize as *mut c_void, guard))
    }
}

// SAFETY: a cudarc stream is a valid CUstream (the same handle as a cudaStream_t) of its
// context's device for as long as it is borrowed.
unsafe impl Stream for CudaStream {
    fn as_raw(&self) -> *mut c_void {
        self.cu_stream() as *mut c_void
    }

    fn device(&self) -> Option<i32> {
        i32::try_from(self.context().ordinal()).ok()
    }

    fn cudarc_stream(&self) -> Option<&CudaStream> {
        Some(self)
    }
}

// SAFETY: as for `CudaStream`.
unsafe impl Stream for Arc<CudaStream> {
    fn as_raw(&self) -> *mut c_void {
        self.cu_stream() as *mut c_void
    }

    fn device(&self) -> Option<i32> {
        i32::try_from(self.context().ordinal()).ok()
    }

    fn cudarc_stream(&self) -> Option<&CudaStream> {
        Some(self)
    }
}
