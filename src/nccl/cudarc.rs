//! cudarc interop (feature `cudarc`): cudarc's device slices are buffers, and its streams are
//! streams, of the safe collectives.
//!
//! A `CudaSlice` is ordered on its own stream. Its device address is taken on that stream, and
//! the safe collectives refuse any other stream for it (`Error::InvalidArgument`), so stream
//! order alone sequences the collective with the slice's earlier and later work.
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
//! # Ok::<(), nccl_trampoline::Error>(())
//! ```

use core::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice};

use crate::nccl::{DeviceBuffer, DeviceBufferMut, NcclScalar, Stream};

// SAFETY: the address comes from cudarc for `len()` elements of `T` of a live allocation; the
// slice's stream is reported, so the safe collectives run on it and stream order keeps the
// memory valid and unshared until the collective has run.
unsafe impl<T: NcclScalar + DeviceRepr> DeviceBuffer<T> for CudaSlice<T> {
    fn device_ptr(&self) -> *const c_void {
        let stream = self.stream().clone();
        let (ptr, _record) = DevicePtr::device_ptr(self, &stream);
        ptr as usize as *const c_void
    }

    fn len(&self) -> usize {
        DeviceSlice::len(self)
    }

    fn stream(&self) -> Option<*mut c_void> {
        Some(self.stream().cu_stream() as *mut c_void)
    }
}

// SAFETY: as above, for writing: `&mut` excludes other users of the slice on the host side.
unsafe impl<T: NcclScalar + DeviceRepr> DeviceBufferMut<T> for CudaSlice<T> {
    fn device_ptr_mut(&mut self) -> *mut c_void {
        let stream = self.stream().clone();
        let (ptr, _record) = DevicePtrMut::device_ptr_mut(self, &stream);
        ptr as usize as *mut c_void
    }
}

// SAFETY: a cudarc stream is a valid CUstream (the same handle as a cudaStream_t) for as long
// as it is borrowed.
unsafe impl Stream for CudaStream {
    fn as_raw(&self) -> *mut c_void {
        self.cu_stream() as *mut c_void
    }
}

// SAFETY: as for `CudaStream`.
unsafe impl Stream for Arc<CudaStream> {
    fn as_raw(&self) -> *mut c_void {
        self.cu_stream() as *mut c_void
    }
}
