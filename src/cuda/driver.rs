//! The driver itself: loading `libcuda`, its function table, devices and contexts, and the
//! raw event and stream calls the facade's watchdog and stream waits use.

use core::ffi::{c_char, c_void, CStr};
use core::ptr;
use std::path::{Path, PathBuf};

use super::error::Error;

/// Environment variable naming the CUDA driver library to load instead of `libcuda.so.1`.
pub const DRIVER_ENV: &str = "NCCL_TRAMPOLINE_CUDA_DRIVER";

/// `CUDA_ERROR_NOT_READY`: an event or stream still has work.
pub(super) const NOT_READY: i32 = 600;
/// `CU_STREAM_NON_BLOCKING`: no implicit synchronisation with the legacy default stream.
pub(super) const STREAM_NON_BLOCKING: u32 = 1;
/// The legacy default stream of the current context, as the driver API's `CUstream` (null: the
/// `_ptsz` per-thread variants are not the ones this table binds).
pub(super) const LEGACY_STREAM: *mut c_void = ptr::null_mut();
/// `CU_EVENT_DISABLE_TIMING`: the cheapest event to record and query.
const EVENT_DISABLE_TIMING: u32 = 2;
/// `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`.
const POINTER_ATTRIBUTE_DEVICE_ORDINAL: i32 = 9;

crate::foreign_functions! {
    /// The driver functions this crate calls. All return `CUresult`.
    pub(super) struct DriverFns, pub(super) enum DriverSym {
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
        event_elapsed_time: EventElapsedTime = "cuEventElapsedTime" (ms: *mut f32, start: *mut c_void, end: *mut c_void) -> i32;
        mem_get_info: MemGetInfo = "cuMemGetInfo_v2" (free: *mut usize, total: *mut usize) -> i32;
        device_get_attribute: DeviceGetAttribute = "cuDeviceGetAttribute" (value: *mut i32, attribute: i32, device: i32) -> i32;
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
#[non_exhaustive]
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
    pub(super) fns: DriverFns,
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

    pub(super) fn check(&self, function: &'static str, r: Result<i32, crate::Error>) -> Result<(), Error> {
        let code = r?;
        if code == 0 {
            return Ok(());
        }
        Err(Error::Driver { function, code, text: self.error_text(code) })
    }

    pub(super) fn error_text(&self, code: i32) -> String {
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

    /// Device `ordinal`'s compute capability, (major, minor): (9, 0) for an H100 or H200.
    pub fn compute_capability(&self, ordinal: i32) -> Result<(i32, i32), Error> {
        // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR and _MINOR (cuda.h).
        const MAJOR: i32 = 75;
        const MINOR: i32 = 76;
        let dev = self.device(ordinal)?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: the out-pointers are live.
        unsafe {
            self.check("cuDeviceGetAttribute", self.fns.device_get_attribute(&mut major, MAJOR, dev))?;
            self.check("cuDeviceGetAttribute", self.fns.device_get_attribute(&mut minor, MINOR, dev))?;
        }
        Ok((major, minor))
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

    /// Creates a timing-free event; the caller destroys it with [`event_destroy_raw`](Self::event_destroy_raw).
    ///
    /// # Safety
    ///
    /// A context must be current; the event must be destroyed exactly once.
    pub(crate) unsafe fn event_create_raw(&self) -> Result<*mut c_void, Error> {
        // SAFETY: the caller's contract.
        unsafe { self.event_create_flags(EVENT_DISABLE_TIMING) }
    }

    /// Creates an event with `flags` (`CU_EVENT_*`).
    ///
    /// # Safety
    ///
    /// As [`event_create_raw`](Self::event_create_raw).
    pub(super) unsafe fn event_create_flags(&self, flags: u32) -> Result<*mut c_void, Error> {
        let mut e: *mut c_void = ptr::null_mut();
        // SAFETY: the out-pointer is live.
        self.check("cuEventCreate", unsafe { self.fns.event_create(&mut e, flags) })?;
        Ok(e)
    }

    /// The current context's device memory: (free, total) bytes (`cuMemGetInfo`).
    pub fn memory_info(&self) -> Result<(usize, usize), Error> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both out-pointers are live.
        self.check("cuMemGetInfo", unsafe { self.fns.mem_get_info(&mut free, &mut total) })?;
        Ok((free, total))
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
}

fn c_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
