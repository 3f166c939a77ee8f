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

use core::ffi::{c_char, c_void, CStr};
use core::ptr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::time::{Backoff, Deadline};

/// What can fail in the CUDA driver's binding, one variant per failure site: the CUDA layer's
/// error, one of the crate's errors per layer (docs/adr/0019-errors-per-layer.md). Below it, the
/// call core's [`crate::Error`] is the `source()` of [`Error::Core`]; above it, the NCCL
/// facade's [`nccl::Error`](crate::nccl::Error) wraps this one in
/// [`nccl::Error::Cuda`](crate::nccl::Error::Cuda), and the launchers'
/// [`launch::Error`](crate::launch::Error) in its GPU choice. The plugins' error is
/// [`plugin::PluginError`](crate::plugin::PluginError).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The call core refused a plan or a call (a driver function the library lacks, a
    /// prototype that cannot be planned here).
    #[error("{0}")]
    Core(#[source] crate::Error),
    /// The CUDA driver could not be loaded.
    #[error("cannot load the CUDA driver {path}: {reason}")]
    Load {
        /// The library tried.
        path: String,
        /// The loader's message, or the functions it lacks.
        reason: String,
    },
    /// A CUDA driver call failed.
    #[error("{function} failed: CUDA error {code} ({text})")]
    Driver {
        /// The driver function.
        function: &'static str,
        /// The `CUresult`.
        code: i32,
        /// `cuGetErrorString`'s text.
        text: String,
    },
    /// A stream wait passed its deadline.
    #[error("{operation} timed out after {waited:.1?}")]
    Timeout {
        /// What was waited for ("stream wait").
        operation: &'static str,
        /// How long it waited.
        waited: Duration,
    },
    /// A host buffer of another size than the device memory it is copied to or from.
    #[error("{what}: need {expected} bytes, got {got}")]
    LengthMismatch {
        /// "upload" or "download".
        what: &'static str,
        /// Bytes of the device memory.
        expected: usize,
        /// Bytes of the host buffer.
        got: usize,
    },
}

impl From<crate::Error> for Error {
    fn from(e: crate::Error) -> Self {
        Error::Core(e)
    }
}

/// Environment variable naming the CUDA driver library to load instead of `libcuda.so.1`.
pub const DRIVER_ENV: &str = "NCCL_TRAMPOLINE_CUDA_DRIVER";

/// `CUDA_ERROR_NOT_READY`: an event or stream still has work.
const NOT_READY: i32 = 600;
/// `CU_STREAM_NON_BLOCKING`: no implicit synchronisation with the legacy default stream.
const STREAM_NON_BLOCKING: u32 = 1;
/// The legacy default stream of the current context, as the driver API's `CUstream` (null: the
/// `_ptsz` per-thread variants are not the ones this table binds).
const LEGACY_STREAM: *mut c_void = ptr::null_mut();
/// `CU_EVENT_DISABLE_TIMING`: the cheapest event to record and query.
const EVENT_DISABLE_TIMING: u32 = 2;
/// `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`.
const POINTER_ATTRIBUTE_DEVICE_ORDINAL: i32 = 9;

crate::foreign_functions! {
    /// The driver functions this crate calls. All return `CUresult`.
    struct DriverFns, enum DriverSym {
        init: Init = "cuInit" (flags: u32) -> i32;
        driver_get_version: DriverGetVersion = "cuDriverGetVersion" (version: *mut i32) -> i32;
        device_get_count: DeviceGetCount = "cuDeviceGetCount" (count: *mut i32) -> i32;
        device_get: DeviceGet = "cuDeviceGet" (device: *mut i32, ordinal: i32) -> i32;
        device_get_name: DeviceGetName = "cuDeviceGetName" (name: *mut u8, len: i32, device: i32) -> i32;
        device_total_mem: DeviceTotalMem = "cuDeviceTotalMem_v2" (bytes: *mut usize, device: i32) -> i32;
        device_get_pci_bus_id: DeviceGetPciBusId = "cuDeviceGetPCIBusId" (id: *mut u8, len: i32, device: i32) -> i32;
        primary_ctx_retain: PrimaryCtxRetain = "cuDevicePrimaryCtxRetain" (ctx: *mut *mut c_void, device: i32) -> i32;
        ctx_set_current: CtxSetCurrent = "cuCtxSetCurrent" (ctx: *mut c_void) -> i32;
        ctx_get_current: CtxGetCurrent = "cuCtxGetCurrent" (ctx: *mut *mut c_void) -> i32;
        ctx_get_device: CtxGetDevice = "cuCtxGetDevice" (device: *mut i32) -> i32;
        mem_alloc: MemAlloc = "cuMemAlloc_v2" (ptr: *mut u64, bytes: usize) -> i32;
        mem_free: MemFree = "cuMemFree_v2" (ptr: u64) -> i32;
        memcpy_htod: MemcpyHtod = "cuMemcpyHtoD_v2" (dst: u64, src: *const c_void, bytes: usize) -> i32;
        memcpy_dtoh: MemcpyDtoh = "cuMemcpyDtoH_v2" (dst: *mut c_void, src: u64, bytes: usize) -> i32;
        memset_d32: MemsetD32 = "cuMemsetD32_v2" (dst: u64, value: u32, count: usize) -> i32;
        memcpy_htod_async: MemcpyHtodAsync = "cuMemcpyHtoDAsync_v2" (dst: u64, src: *const c_void, bytes: usize, stream: *mut c_void) -> i32;
        memcpy_dtoh_async: MemcpyDtohAsync = "cuMemcpyDtoHAsync_v2" (dst: *mut c_void, src: u64, bytes: usize, stream: *mut c_void) -> i32;
        memset_d32_async: MemsetD32Async = "cuMemsetD32Async" (dst: u64, value: u32, count: usize, stream: *mut c_void) -> i32;
        stream_create: StreamCreate = "cuStreamCreate" (stream: *mut *mut c_void, flags: u32) -> i32;
        stream_query: StreamQuery = "cuStreamQuery" (stream: *mut c_void) -> i32;
        stream_synchronize: StreamSynchronize = "cuStreamSynchronize" (stream: *mut c_void) -> i32;
        stream_destroy: StreamDestroy = "cuStreamDestroy_v2" (stream: *mut c_void) -> i32;
        stream_get_ctx: StreamGetCtx = "cuStreamGetCtx" (stream: *mut c_void, ctx: *mut *mut c_void) -> i32;
        event_create: EventCreate = "cuEventCreate" (event: *mut *mut c_void, flags: u32) -> i32;
        event_record: EventRecord = "cuEventRecord" (event: *mut c_void, stream: *mut c_void) -> i32;
        event_query: EventQuery = "cuEventQuery" (event: *mut c_void) -> i32;
        event_destroy: EventDestroy = "cuEventDestroy_v2" (event: *mut c_void) -> i32;
        pointer_get_attribute: PointerGetAttribute = "cuPointerGetAttribute" (data: *mut c_void, attribute: i32, ptr: u64) -> i32;
        get_error_string: GetErrorString = "cuGetErrorString" (code: i32, text: *mut *const c_char) -> i32;
    }
}

/// A CUDA context handle (`CUcontext`), valid in every thread of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context(*mut c_void);

// SAFETY: a context handle is a process-wide value; the driver allows making it current on any
// thread.
unsafe impl Send for Context {}
// SAFETY: as above; the value is never dereferenced here.
unsafe impl Sync for Context {}

impl Context {
    /// The `CUcontext`.
    pub fn as_raw(self) -> *mut c_void {
        self.0
    }
}

/// What is known about one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Ordinal.
    pub ordinal: i32,
    /// Marketing name.
    pub name: String,
    /// Memory in bytes.
    pub memory: u64,
    /// PCI bus id (`0000:18:00.0`).
    pub pci_bus_id: String,
}

/// The loaded driver, initialised (`cuInit`).
///
/// `Send` and `Sync`: after loading it holds only function addresses and plans, and the driver
/// API may be entered from any thread.
pub struct Driver {
    fns: DriverFns,
    path: PathBuf,
    // Last field: dropped after the entries that point into it.
    _lib: libloading::Library,
}

impl core::fmt::Debug for Driver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Driver").field("path", &self.path).finish()
    }
}

impl Driver {
    /// Loads `$NCCL_TRAMPOLINE_CUDA_DRIVER`, else `libcuda.so.1` from the system loader, and
    /// calls `cuInit(0)`.
    pub fn load() -> Result<Driver, Error> {
        match std::env::var_os(DRIVER_ENV).filter(|p| !p.is_empty()) {
            Some(p) => Self::load_from(PathBuf::from(p)),
            None => Self::load_from("libcuda.so.1"),
        }
    }

    /// Loads the driver library at `path` (or a bare soname) and calls `cuInit(0)`.
    pub fn load_from(path: impl AsRef<Path>) -> Result<Driver, Error> {
        let path = path.as_ref().to_path_buf();
        let load_error = |reason: String| Error::Load { path: path.display().to_string(), reason };
        use crate::foreign::loader;
        // SAFETY: the CUDA driver's initialisers are safe to run in any process; its file is
        // checked before the loader maps it (a FIFO or a truncated file is refused, docs/adr/0024).
        // RTLD_NODELETE: the driver keeps threads and process-wide state.
        let lib = unsafe { loader::load(&path, loader::NOW_LOCAL | loader::NODELETE) }
            .map_err(|e| load_error(e.to_string()))?
            .library;
        let fns = DriverFns::resolve(&lib)?;
        let missing = fns.missing();
        if !missing.is_empty() {
            return Err(load_error(format!("it lacks {}", missing.join(", "))));
        }
        let driver = Driver { fns, path, _lib: lib };
        // SAFETY: `CUresult cuInit(unsigned int)`.
        driver.check("cuInit", unsafe { driver.fns.init(0) })?;
        Ok(driver)
    }

    /// The library the driver was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check(&self, function: &'static str, r: Result<i32, crate::Error>) -> Result<(), Error> {
        let code = r?;
        if code == 0 {
            return Ok(());
        }
        Err(Error::Driver { function, code, text: self.error_text(code) })
    }

    fn error_text(&self, code: i32) -> String {
        let mut text: *const c_char = ptr::null();
        // SAFETY: `CUresult cuGetErrorString(CUresult, const char **)`.
        match unsafe { self.fns.get_error_string(code, &mut text) } {
            // SAFETY: the driver returns a static NUL-terminated string.
            Ok(0) if !text.is_null() => unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned(),
            _ => "unknown error".to_string(),
        }
    }

    /// The driver's CUDA version, as `major * 1000 + minor * 10`.
    pub fn version(&self) -> Result<i32, Error> {
        let mut v = 0i32;
        // SAFETY: the out-pointer is live.
        self.check("cuDriverGetVersion", unsafe { self.fns.driver_get_version(&mut v) })?;
        Ok(v)
    }

    /// Visible devices.
    pub fn device_count(&self) -> Result<i32, Error> {
        let mut n = 0i32;
        // SAFETY: the out-pointer is live.
        self.check("cuDeviceGetCount", unsafe { self.fns.device_get_count(&mut n) })?;
        Ok(n)
    }

    fn device(&self, ordinal: i32) -> Result<i32, Error> {
        let mut d = 0i32;
        // SAFETY: the out-pointer is live.
        self.check("cuDeviceGet", unsafe { self.fns.device_get(&mut d, ordinal) })?;
        Ok(d)
    }

    /// Name, memory and PCI bus id of device `ordinal`.
    pub fn device_info(&self, ordinal: i32) -> Result<DeviceInfo, Error> {
        let dev = self.device(ordinal)?;
        let mut name = [0u8; 256];
        let mut memory = 0usize;
        let mut bus = [0u8; 64];
        // SAFETY: each buffer holds the length passed with it; the out-pointers are live.
        unsafe {
            self.check("cuDeviceGetName", self.fns.device_get_name(name.as_mut_ptr(), name.len() as i32, dev))?;
            self.check("cuDeviceTotalMem_v2", self.fns.device_total_mem(&mut memory, dev))?;
            self.check("cuDeviceGetPCIBusId", self.fns.device_get_pci_bus_id(bus.as_mut_ptr(), bus.len() as i32, dev))?;
        }
        Ok(DeviceInfo { ordinal, name: c_text(&name), memory: memory as u64, pci_bus_id: c_text(&bus) })
    }

    /// Makes device `ordinal`'s primary context (NCCL's and the runtime's) current on this
    /// thread, and returns it.
    pub fn activate(&self, ordinal: i32) -> Result<Context, Error> {
        let dev = self.device(ordinal)?;
        let mut ctx: *mut c_void = ptr::null_mut();
        // SAFETY: the out-pointer is live.
        self.check("cuDevicePrimaryCtxRetain", unsafe { self.fns.primary_ctx_retain(&mut ctx, dev) })?;
        self.set_current(Some(Context(ctx)))?;
        Ok(Context(ctx))
    }

    /// Device `ordinal`'s primary context (retained; not made current).
    pub fn primary_context(&self, ordinal: i32) -> Result<Context, Error> {
        let dev = self.device(ordinal)?;
        let mut ctx: *mut c_void = ptr::null_mut();
        // SAFETY: the out-pointer is live.
        self.check("cuDevicePrimaryCtxRetain", unsafe { self.fns.primary_ctx_retain(&mut ctx, dev) })?;
        Ok(Context(ctx))
    }

    /// The context current on this thread, if any.
    pub fn current_context(&self) -> Result<Option<Context>, Error> {
        let mut ctx: *mut c_void = ptr::null_mut();
        // SAFETY: the out-pointer is live.
        self.check("cuCtxGetCurrent", unsafe { self.fns.ctx_get_current(&mut ctx) })?;
        Ok((!ctx.is_null()).then_some(Context(ctx)))
    }

    /// Makes `ctx` current on this thread (`None`: no context).
    pub fn set_current(&self, ctx: Option<Context>) -> Result<(), Error> {
        let raw = ctx.map_or(ptr::null_mut(), Context::as_raw);
        // SAFETY: a context handle from this driver, or null.
        self.check("cuCtxSetCurrent", unsafe { self.fns.ctx_set_current(raw) })
    }

    /// The device of this thread's current context, if one is current.
    pub fn current_device(&self) -> Result<Option<i32>, Error> {
        if self.current_context()?.is_none() {
            return Ok(None);
        }
        let mut d = 0i32;
        // SAFETY: the out-pointer is live.
        self.check("cuCtxGetDevice", unsafe { self.fns.ctx_get_device(&mut d) })?;
        Ok(Some(d))
    }

    /// The device `stream` belongs to (through its context).
    ///
    /// # Safety
    ///
    /// `stream` must be a valid stream handle (or null for the legacy default stream of the
    /// current context).
    pub unsafe fn stream_device(&self, stream: *mut c_void) -> Result<i32, Error> {
        let mut ctx: *mut c_void = ptr::null_mut();
        // SAFETY: the caller's contract; the out-pointer is live.
        self.check("cuStreamGetCtx", unsafe { self.fns.stream_get_ctx(stream, &mut ctx) })?;
        let before = self.current_context()?;
        self.set_current(Some(Context(ctx)))?;
        let device = self.current_device();
        self.set_current(before)?;
        device?.ok_or(Error::Driver { function: "cuCtxGetDevice", code: 201, text: "no context".into() })
    }

    /// The device that device pointer `ptr` belongs to.
    pub fn pointer_device(&self, ptr: *const c_void) -> Result<i32, Error> {
        let mut ordinal = 0i32;
        let data: *mut i32 = &mut ordinal;
        // SAFETY: the attribute is an int written to `data`; the driver validates `ptr`.
        self.check("cuPointerGetAttribute", unsafe {
            self.fns.pointer_get_attribute(data.cast(), POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr as u64)
        })?;
        Ok(ordinal)
    }

    /// `bytes` of device memory on the current device.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceMemory<'_>, Error> {
        let mut p = 0u64;
        // SAFETY: the out-pointer is live.
        self.check("cuMemAlloc_v2", unsafe { self.fns.mem_alloc(&mut p, bytes.max(1)) })?;
        Ok(DeviceMemory { driver: self, ptr: p, bytes })
    }

    /// A non-blocking stream (`CU_STREAM_NON_BLOCKING`) on the current device: its work does not
    /// wait for the legacy default stream's, nor the legacy stream's for its (CUDA Driver API,
    /// "Stream synchronization behavior"). Order device memory writes before a launch on it with
    /// [`DeviceMemory::upload_on`] / [`fill_u32_on`](DeviceMemory::fill_u32_on) on this stream, or
    /// with the fully synchronous [`DeviceMemory::upload`] / [`fill_u32`](DeviceMemory::fill_u32).
    pub fn stream(&self) -> Result<DeviceStream<'_>, Error> {
        let mut s: *mut c_void = ptr::null_mut();
        // SAFETY: the out-pointer is live.
        self.check("cuStreamCreate", unsafe { self.fns.stream_create(&mut s, STREAM_NON_BLOCKING) })?;
        Ok(DeviceStream { driver: self, raw: s })
    }

    /// An event without timing, on the current context.
    pub fn event(&self) -> Result<Event<'_>, Error> {
        // SAFETY: the event is destroyed by `Event`'s drop, through this driver.
        Ok(Event { driver: self, raw: unsafe { self.event_create_raw()? } })
    }

    /// Creates a timing-free event; the caller destroys it with [`event_destroy_raw`](Self::event_destroy_raw).
    ///
    /// # Safety
    ///
    /// A context must be current; the event must be destroyed exactly once.
    pub(crate) unsafe fn event_create_raw(&self) -> Result<*mut c_void, Error> {
        let mut e: *mut c_void = ptr::null_mut();
        // SAFETY: the out-pointer is live.
        self.check("cuEventCreate", unsafe { self.fns.event_create(&mut e, EVENT_DISABLE_TIMING) })?;
        Ok(e)
    }

    /// Records `event` on `stream`: it completes when the work queued on `stream` so far has.
    ///
    /// # Safety
    ///
    /// `event` and `stream` must be live handles of the same context.
    pub unsafe fn event_record_raw(&self, event: *mut c_void, stream: *mut c_void) -> Result<(), Error> {
        // SAFETY: the caller's contract.
        self.check("cuEventRecord", unsafe { self.fns.event_record(event, stream) })
    }

    /// Whether `event`'s work has completed (`Ok(false)`: not yet).
    ///
    /// # Safety
    ///
    /// `event` must be a live event handle.
    pub unsafe fn event_query_raw(&self, event: *mut c_void) -> Result<bool, Error> {
        // SAFETY: the caller's contract.
        match unsafe { self.fns.event_query(event) }? {
            0 => Ok(true),
            NOT_READY => Ok(false),
            code => Err(Error::Driver { function: "cuEventQuery", code, text: self.error_text(code) }),
        }
    }

    /// Destroys an event made by [`event_create_raw`](Self::event_create_raw).
    ///
    /// # Safety
    ///
    /// `event` must be live and not used afterwards.
    pub(crate) unsafe fn event_destroy_raw(&self, event: *mut c_void) {
        // SAFETY: the caller's contract. Nothing to report: the handle is gone either way.
        let _ = unsafe { self.fns.event_destroy(event) };
    }

    /// Waits until the work queued on `stream` so far has completed, at most `timeout` (`None`:
    /// no limit), polling an event rather than blocking in the driver, so the wait always ends.
    ///
    /// # Safety
    ///
    /// `stream` must be a live stream of the current context (or null: its legacy default
    /// stream).
    pub unsafe fn wait_stream(&self, stream: *mut c_void, timeout: Option<Duration>) -> Result<(), Error> {
        // SAFETY: the caller's contract: a context is current and `stream` is live.
        let event = unsafe { self.event_create_raw()? };
        let event = Event { driver: self, raw: event };
        // SAFETY: as above.
        unsafe { self.event_record_raw(event.raw, stream)? };
        let deadline = Deadline::after(timeout);
        let mut backoff = Backoff::new();
        loop {
            if event.is_complete()? {
                return Ok(());
            }
            if deadline.passed() {
                return Err(Error::Timeout { operation: "stream wait", waited: deadline.waited() });
            }
            backoff.pause(deadline.left());
        }
    }
}

/// Device memory, freed on drop.
pub struct DeviceMemory<'d> {
    driver: &'d Driver,
    ptr: u64,
    bytes: usize,
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

/// A stream, destroyed on drop.
pub struct DeviceStream<'d> {
    driver: &'d Driver,
    raw: *mut c_void,
}

impl DeviceStream<'_> {
    /// The `CUstream` / `cudaStream_t`.
    pub fn raw(&self) -> *mut c_void {
        self.raw
    }

    /// Waits for all work on the stream (in the driver: no deadline; see
    /// [`wait`](Self::wait)).
    pub fn synchronize(&self) -> Result<(), Error> {
        // SAFETY: a live stream.
        self.driver.check("cuStreamSynchronize", unsafe { self.driver.fns.stream_synchronize(self.raw) })
    }

    /// Waits for the work queued so far, at most `timeout`.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<(), Error> {
        // SAFETY: a live stream made on the context current when it was created; its context
        // is made current for the wait by the driver's own handle lookup.
        unsafe { self.driver.wait_stream(self.raw, timeout) }
    }

    /// True when the stream has no unfinished work.
    pub fn is_idle(&self) -> Result<bool, Error> {
        // SAFETY: a live stream.
        match unsafe { self.driver.fns.stream_query(self.raw) }? {
            0 => Ok(true),
            NOT_READY => Ok(false),
            code => Err(Error::Driver { function: "cuStreamQuery", code, text: self.driver.error_text(code) }),
        }
    }
}

impl Drop for DeviceStream<'_> {
    fn drop(&mut self) {
        // SAFETY: created by cuStreamCreate and destroyed once.
        let _ = unsafe { self.driver.fns.stream_destroy(self.raw) };
    }
}

/// An event, destroyed on drop.
pub struct Event<'d> {
    driver: &'d Driver,
    raw: *mut c_void,
}

impl Event<'_> {
    /// Records the event on `stream`.
    ///
    /// # Safety
    ///
    /// `stream` must be a live stream of the event's context.
    pub unsafe fn record(&self, stream: *mut c_void) -> Result<(), Error> {
        // SAFETY: the caller's contract; the event is live.
        unsafe { self.driver.event_record_raw(self.raw, stream) }
    }

    /// True when the work it marks has completed (or it was never recorded).
    pub fn is_complete(&self) -> Result<bool, Error> {
        // SAFETY: a live event.
        unsafe { self.driver.event_query_raw(self.raw) }
    }
}

impl Drop for Event<'_> {
    fn drop(&mut self) {
        // SAFETY: created by event_create_raw and destroyed once.
        unsafe { self.driver.event_destroy_raw(self.raw) };
    }
}

fn c_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
