//! Device memory: allocation, copies and fills, each saying what holds when it returns (the
//! module's table).

use core::ffi::c_void;

use super::driver::{Driver, LEGACY_STREAM};
use super::error::Error;
use super::stream::DeviceStream;

impl Driver {
    /// `bytes` of device memory on the current device.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceMemory<'_>, Error> {
        let mut p = 0u64;
        // SAFETY: the out-pointer is live.
        self.check("cuMemAlloc_v2", unsafe { self.fns.mem_alloc(&mut p, bytes.max(1)) })?;
        Ok(DeviceMemory { driver: self, ptr: p, bytes })
    }

    /// Device memory allocated elsewhere (by `ncclMemAlloc`, say), `bytes` long at `ptr`, with
    /// this type's copies and fills; never freed through it (the `ManuallyDrop` stays
    /// undropped).
    ///
    /// # Safety
    ///
    /// `ptr` must be device memory of the current context, at least `bytes` long, live while
    /// the value is used; the value must not be taken out of its `ManuallyDrop`.
    pub unsafe fn memory_at(&self, ptr: *mut c_void, bytes: usize) -> core::mem::ManuallyDrop<DeviceMemory<'_>> {
        core::mem::ManuallyDrop::new(DeviceMemory { driver: self, ptr: ptr as u64, bytes })
    }
}

/// Device memory, freed on drop.
pub struct DeviceMemory<'d> {
    pub(super) driver: &'d Driver,
    pub(super) ptr: u64,
    pub(super) bytes: usize,
}

impl DeviceMemory<'_> {
    /// The device address.
    pub fn ptr(&self) -> *mut c_void {
        self.ptr as *mut c_void
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// True for an empty allocation.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    fn check_upload(&self, src: &[u8]) -> Result<(), Error> {
        if src.len() > self.bytes {
            return Err(Error::LengthMismatch { what: "upload", expected: self.bytes, got: src.len() });
        }
        Ok(())
    }

    fn check_download(&self, dst: &[u8]) -> Result<(), Error> {
        if dst.len() > self.bytes {
            return Err(Error::LengthMismatch { what: "download", expected: self.bytes, got: dst.len() });
        }
        Ok(())
    }

    /// Waits for the legacy default stream of the current context: the `cuMemcpyHtoD` and
    /// `cuMemsetD32` this memory queued there have landed once it returns.
    fn finish_legacy(&self, function: &'static str) -> Result<(), Error> {
        // SAFETY: the legacy default stream of the current context always exists.
        self.driver.check(function, unsafe { self.driver.fns.stream_synchronize(LEGACY_STREAM) })
    }

    /// Copies `src` to the start of this memory and returns once the bytes are in device
    /// memory: work enqueued afterwards, on any stream, reads them. A longer `src` is an error.
    ///
    /// `cuMemcpyHtoD` from pageable memory returns before its DMA has landed (CUDA Driver API,
    /// "API synchronization behavior": "the DMA to final destination may not have completed"),
    /// so this call then waits for the legacy default stream that the copy runs on. It is
    /// ordered after the legacy stream's earlier work, not after work still queued on a
    /// non-blocking stream ([`Driver::stream`]'s): use [`upload_on`](Self::upload_on) when such
    /// work may still use this memory.
    pub fn upload(&self, src: &[u8]) -> Result<(), Error> {
        self.check_upload(src)?;
        // SAFETY: `src` holds the bytes copied; the allocation holds at least as many. A
        // pageable source is staged before the call returns, a pinned one copied in full.
        self.driver.check("cuMemcpyHtoD_v2", unsafe {
            self.driver.fns.memcpy_htod(self.ptr, src.as_ptr().cast(), src.len())
        })?;
        self.finish_legacy("cuStreamSynchronize")
    }

    /// Copies `src` to the start of this memory in `stream`'s order (after the work queued on
    /// it so far, before the work queued after) and returns once the copy has completed, so
    /// that `src` is free and the bytes are in place. A longer `src` is an error.
    ///
    /// `cuMemcpyHtoDAsync` from pinned memory reads the host buffer after it returns (and from
    /// pageable memory "might be synchronous", CUDA Driver API, "API synchronization
    /// behavior"): a borrowed buffer must not be left to it, so the call waits for `stream`
    /// (`cuStreamSynchronize`), and for nothing else.
    pub fn upload_on(&self, stream: &DeviceStream<'_>, src: &[u8]) -> Result<(), Error> {
        self.check_upload(src)?;
        // SAFETY: as `upload`; `src` outlives the copy, which `stream.synchronize()` waits for
        // before this function returns or fails.
        self.driver.check("cuMemcpyHtoDAsync_v2", unsafe {
            self.driver.fns.memcpy_htod_async(self.ptr, src.as_ptr().cast(), src.len(), stream.raw)
        })?;
        stream.synchronize()
    }

    /// Sets every 4-byte word of this memory to `value` and returns once it is done: work
    /// enqueued afterwards, on any stream, sees the words.
    ///
    /// `cuMemsetD32` is asynchronous with respect to the host on device memory (CUDA Driver API,
    /// "API synchronization behavior", Memset), so this call then waits for the legacy default
    /// stream the fill runs on. Ordered as [`upload`](Self::upload); for a stream-ordered fill
    /// without any wait, [`fill_u32_on`](Self::fill_u32_on).
    pub fn fill_u32(&self, value: u32) -> Result<(), Error> {
        // SAFETY: `bytes / 4` words fit in the allocation.
        self.driver.check("cuMemsetD32_v2", unsafe { self.driver.fns.memset_d32(self.ptr, value, self.bytes / 4) })?;
        self.finish_legacy("cuStreamSynchronize")
    }

    /// Queues, on `stream`, the setting of every 4-byte word of this memory to `value`
    /// (`cuMemsetD32Async`), and returns at once: work queued later on `stream` sees the words;
    /// the host and other streams see them once `stream` has been waited for. Wait for
    /// `stream` before this memory is dropped, as for any work queued on it.
    pub fn fill_u32_on(&self, stream: &DeviceStream<'_>, value: u32) -> Result<(), Error> {
        // SAFETY: `bytes / 4` words fit in the allocation, alive now; the fill writes device
        // memory only, never host memory.
        self.driver.check("cuMemsetD32Async", unsafe {
            self.driver.fns.memset_d32_async(self.ptr, value, self.bytes / 4, stream.raw)
        })
    }

    /// Copies the first `dst.len()` bytes to `dst` and returns once they are there. A longer
    /// `dst` is an error.
    ///
    /// `cuMemcpyDtoH` "returns only once the copy has completed" (CUDA Driver API, "API
    /// synchronization behavior"); it runs on the legacy default stream, after that stream's
    /// earlier work but not after work still queued on a non-blocking stream: wait for such a
    /// stream first ([`DeviceStream::synchronize`]), or use [`download_on`](Self::download_on).
    pub fn download(&self, dst: &mut [u8]) -> Result<(), Error> {
        self.check_download(dst)?;
        // SAFETY: `dst` has room for the bytes copied; the allocation holds at least as many.
        self.driver.check("cuMemcpyDtoH_v2", unsafe {
            self.driver.fns.memcpy_dtoh(dst.as_mut_ptr().cast(), self.ptr, dst.len())
        })
    }

    /// Copies the first `dst.len()` bytes to `dst` in `stream`'s order (after the work queued
    /// on it so far) and returns once they are there: the call waits for `stream`. A longer
    /// `dst` is an error.
    pub fn download_on(&self, stream: &DeviceStream<'_>, dst: &mut [u8]) -> Result<(), Error> {
        self.check_download(dst)?;
        // SAFETY: `dst` has room for the bytes copied and outlives the copy, which
        // `stream.synchronize()` waits for before this function returns or fails.
        self.driver.check("cuMemcpyDtoHAsync_v2", unsafe {
            self.driver.fns.memcpy_dtoh_async(dst.as_mut_ptr().cast(), self.ptr, dst.len(), stream.raw)
        })?;
        stream.synchronize()
    }
}

impl Drop for DeviceMemory<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAlloc and freed once.
        let _ = unsafe { self.driver.fns.mem_free(self.ptr) };
    }
}
