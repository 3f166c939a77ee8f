//! The CUDA driver API (`libcuda.so.1`), loaded at run time and called through the call core like
//! NCCL: devices, contexts, memory, streams and events. The facade uses it for stream waits with
//! deadlines, the watchdog, device checks, and to carry the caller's context onto the threads
//! that run NCCL calls with deadlines; the command-line tool and the GPU tests use it too.
//!
//! Runtime-API handles are the driver's (a `cudaStream_t` is a `CUstream`), and NCCL uses the
//! context current on the calling thread; [`Driver::activate`] makes a device's primary context
//! (the runtime's, and NCCL's) current.
//!
//! # What is synchronous
//!
//! CUDA's "synchronous" copies are not all synchronous (CUDA Driver API, section "API
//! synchronization behavior"): `cuMemcpyHtoD` from pageable memory returns once the bytes are
//! staged for DMA, "but the DMA to final destination may not have completed"; the
//! `cuMemset*` functions are "asynchronous with respect to the host" on device memory; and
//! both run on the legacy default stream, which a stream made with `CU_STREAM_NON_BLOCKING`
//! does not wait for (section "Stream synchronization behavior"). Every stream
//! [`Driver::stream`] makes is such a stream, so a collective launched on it right after a bare
//! `cuMemcpyHtoD` can read the buffer before the copy lands. This module's calls say exactly
//! what holds when they return:
//!
//! | call | ordered after | on return |
//! | --- | --- | --- |
//! | [`DeviceMemory::upload`], [`fill_u32`](DeviceMemory::fill_u32) | the legacy default stream's work (and, through it, blocking streams'), not non-blocking streams' | the bytes are in device memory: work enqueued afterwards on any stream sees them (the call waits for the legacy stream) |
//! | [`DeviceMemory::download`] | as `upload` | the bytes are in the host buffer |
//! | [`upload_on`](DeviceMemory::upload_on), [`download_on`](DeviceMemory::download_on) | the work queued on the stream before the call | the copy and everything queued on the stream before it have completed (the call waits for the stream: the host buffer is borrowed for the call only) |
//! | [`fill_u32_on`](DeviceMemory::fill_u32_on) | the work queued on the stream before the call | nothing: the fill is queued; work queued later on the same stream sees it |
//!
//! None of them waits for the whole device (`cuCtxSynchronize`), and none waits for a stream
//! it was not given.

mod driver;
mod error;
mod memory;
mod stream;

pub use driver::{Context, DeviceInfo, Driver, DRIVER_ENV};
pub use error::Error;
pub use memory::DeviceMemory;
pub use stream::{DeviceStream, Event};
