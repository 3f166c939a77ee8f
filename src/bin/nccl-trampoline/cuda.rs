//! The CUDA driver API (`libcuda.so.1`) and NVML (`libnvidia-ml.so.1`), loaded at run time and
//! called through the call core like NCCL: devices, primary contexts, memory, copies and
//! streams, as much as `doctor`, `selftest` and `perf` need. Runtime-API handles are the
//! driver's (a `cudaStream_t` is a `CUstream`), and NCCL uses each device's primary context,
//! the one [`Driver::activate`] makes current.

use std::ffi::{c_char, c_void, CStr};
use std::ptr;

use nccl_trampoline::{arg, CallPlan, Signature, Type};

/// A CUDA driver call that failed.
#[derive(Debug, thiserror::Error)]
#[error("{function} failed: CUDA error {code} ({text})")]
pub struct CudaError {
    /// The driver function.
    pub function: &'static str,
    /// The `CUresult`.
    pub code: i32,
    /// `cuGetErrorString`'s text.
    pub text: String,
}

/// One driver function: its address and the plan of its prototype.
struct DriverFn {
    name: &'static str,
    func: *const c_void,
    plan: CallPlan,
}

/// Every function used, in one table: (name, argument types). All return `CUresult` (int).
const FUNCTIONS: &[(&str, &[Type])] = &[
    ("cuInit", &[Type::U32]),
    ("cuDriverGetVersion", &[Type::Pointer]),
    ("cuDeviceGetCount", &[Type::Pointer]),
    ("cuDeviceGet", &[Type::Pointer, Type::I32]),
    ("cuDeviceGetName", &[Type::Pointer, Type::I32, Type::I32]),
    ("cuDeviceTotalMem_v2", &[Type::Pointer, Type::I32]),
    ("cuDeviceGetPCIBusId", &[Type::Pointer, Type::I32, Type::I32]),
    ("cuDevicePrimaryCtxRetain", &[Type::Pointer, Type::I32]),
    ("cuCtxSetCurrent", &[Type::Pointer]),
    ("cuMemAlloc_v2", &[Type::Pointer, Type::U64]),
    ("cuMemFree_v2", &[Type::U64]),
    ("cuMemcpyHtoD_v2", &[Type::U64, Type::Pointer, Type::U64]),
    ("cuMemcpyDtoH_v2", &[Type::Pointer, Type::U64, Type::U64]),
    ("cuStreamCreate", &[Type::Pointer, Type::U32]),
    ("cuStreamSynchronize", &[Type::Pointer]),
    ("cuStreamDestroy_v2", &[Type::Pointer]),
    ("cuGetErrorString", &[Type::I32, Type::Pointer]),
];

#[derive(Clone, Copy)]
#[repr(usize)]
enum F {
    Init,
    DriverGetVersion,
    DeviceGetCount,
    DeviceGet,
    DeviceGetName,
    DeviceTotalMem,
    DeviceGetPciBusId,
    PrimaryCtxRetain,
    CtxSetCurrent,
    MemAlloc,
    MemFree,
    MemcpyHtoD,
    MemcpyDtoH,
    StreamCreate,
    StreamSynchronize,
    StreamDestroy,
    GetErrorString,
}

/// `CU_STREAM_NON_BLOCKING`: no implicit synchronisation with the legacy default stream.
const CU_STREAM_NON_BLOCKING: u32 = 1;

/// The loaded driver, initialised (`cuInit`).
pub struct Driver {
    fns: Vec<DriverFn>,
    _lib: libloading::Library,
}

/// What is known about one device.
#[derive(Clone, Debug)]
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

impl Driver {
    /// Loads `libcuda.so.1` and calls `cuInit(0)`. `Err` carries why (no driver, no device).
    pub fn load() -> Result<Driver, String> {
        // SAFETY: the CUDA driver's initialisers are safe to run.
        let lib = unsafe { libloading::Library::new("libcuda.so.1") }.map_err(|e| format!("libcuda.so.1: {e}"))?;
        let mut fns = Vec::with_capacity(FUNCTIONS.len());
        for (name, args) in FUNCTIONS {
            let mut cname = name.as_bytes().to_vec();
            cname.push(0);
            // SAFETY: only the address is read; it is called through a plan of its prototype.
            let func = unsafe { lib.get::<*const c_void>(&cname) }.map_err(|e| format!("{name}: {e}"))?;
            let sig = Signature::new(args.to_vec(), Some(Type::I32)).map_err(|e| e.to_string())?;
            fns.push(DriverFn { name, func: *func, plan: CallPlan::new(&sig).map_err(|e| e.to_string())? });
        }
        let driver = Driver { fns, _lib: lib };
        driver.call(F::Init, &[arg(&0u32)]).map_err(|e| e.to_string())?;
        Ok(driver)
    }

    fn call(&self, f: F, args: &[*const c_void]) -> Result<(), CudaError> {
        let entry = &self.fns[f as usize];
        let mut r = 0i32;
        // SAFETY: the plan is the function's prototype (FUNCTIONS); every caller passes
        // pointers to values of those types, and output pointers to live storage.
        unsafe { entry.plan.call(entry.func, args, (&mut r as *mut i32).cast()) }
            .expect("argument count matches the prototype table");
        if r == 0 {
            return Ok(());
        }
        let mut text: *const c_char = ptr::null();
        let out: *mut *const c_char = &mut text;
        let entry_s = &self.fns[F::GetErrorString as usize];
        let mut r2 = 0i32;
        // SAFETY: `CUresult cuGetErrorString(CUresult, const char **)`.
        let _ = unsafe { entry_s.plan.call(entry_s.func, &[arg(&r), arg(&out)], (&mut r2 as *mut i32).cast()) };
        let text = if r2 == 0 && !text.is_null() {
            // SAFETY: the driver returns a static NUL-terminated string.
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        } else {
            "unknown error".to_string()
        };
        Err(CudaError { function: entry.name, code: r, text })
    }

    /// The driver's CUDA version, as `major * 1000 + minor * 10`.
    pub fn version(&self) -> Result<i32, CudaError> {
        let mut v = 0i32;
        self.call(F::DriverGetVersion, &[arg(&(&mut v as *mut i32))])?;
        Ok(v)
    }

    /// Visible devices.
    pub fn device_count(&self) -> Result<i32, CudaError> {
        let mut n = 0i32;
        self.call(F::DeviceGetCount, &[arg(&(&mut n as *mut i32))])?;
        Ok(n)
    }

    fn device(&self, ordinal: i32) -> Result<i32, CudaError> {
        let mut d = 0i32;
        self.call(F::DeviceGet, &[arg(&(&mut d as *mut i32)), arg(&ordinal)])?;
        Ok(d)
    }

    /// Name, memory and PCI bus id of device `ordinal`.
    pub fn device_info(&self, ordinal: i32) -> Result<DeviceInfo, CudaError> {
        let dev = self.device(ordinal)?;
        let mut name = [0u8; 256];
        let len = name.len() as i32;
        self.call(F::DeviceGetName, &[arg(&name.as_mut_ptr()), arg(&len), arg(&dev)])?;
        let mut memory = 0u64;
        self.call(F::DeviceTotalMem, &[arg(&(&mut memory as *mut u64)), arg(&dev)])?;
        let mut bus = [0u8; 64];
        let blen = bus.len() as i32;
        self.call(F::DeviceGetPciBusId, &[arg(&bus.as_mut_ptr()), arg(&blen), arg(&dev)])?;
        Ok(DeviceInfo { ordinal, name: c_text(&name), memory, pci_bus_id: c_text(&bus) })
    }

    /// Makes device `ordinal`'s primary context (NCCL's) current on this thread.
    pub fn activate(&self, ordinal: i32) -> Result<(), CudaError> {
        let dev = self.device(ordinal)?;
        let mut ctx: *mut c_void = ptr::null_mut();
        self.call(F::PrimaryCtxRetain, &[arg(&(&mut ctx as *mut *mut c_void)), arg(&dev)])?;
        self.call(F::CtxSetCurrent, &[arg(&ctx)])
    }

    /// `bytes` of device memory on the current device.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceMemory<'_>, CudaError> {
        let mut p = 0u64;
        let size = bytes.max(1) as u64;
        self.call(F::MemAlloc, &[arg(&(&mut p as *mut u64)), arg(&size)])?;
        Ok(DeviceMemory { driver: self, ptr: p, bytes })
    }

    /// A non-blocking stream on the current device.
    pub fn stream(&self) -> Result<DeviceStream<'_>, CudaError> {
        let mut s: *mut c_void = ptr::null_mut();
        self.call(F::StreamCreate, &[arg(&(&mut s as *mut *mut c_void)), arg(&CU_STREAM_NON_BLOCKING)])?;
        Ok(DeviceStream { driver: self, raw: s })
    }
}

/// Device memory, freed on drop (its device's context must be current then, or any context of
/// the process: the driver resolves the allocation).
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

    /// Copies `src` to the start of this memory (synchronously).
    pub fn upload(&self, src: &[u8]) -> Result<(), CudaError> {
        assert!(src.len() <= self.bytes, "upload larger than the allocation");
        let (p, n) = (src.as_ptr(), src.len() as u64);
        self.driver.call(F::MemcpyHtoD, &[arg(&self.ptr), arg(&p), arg(&n)])
    }

    /// Copies the first `dst.len()` bytes to `dst` (synchronously).
    pub fn download(&self, dst: &mut [u8]) -> Result<(), CudaError> {
        assert!(dst.len() <= self.bytes, "download larger than the allocation");
        let (p, n) = (dst.as_mut_ptr(), dst.len() as u64);
        self.driver.call(F::MemcpyDtoH, &[arg(&p), arg(&self.ptr), arg(&n)])
    }
}

impl Drop for DeviceMemory<'_> {
    fn drop(&mut self) {
        let _ = self.driver.call(F::MemFree, &[arg(&self.ptr)]);
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

    /// Waits for all work on the stream.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.driver.call(F::StreamSynchronize, &[arg(&self.raw)])
    }
}

impl Drop for DeviceStream<'_> {
    fn drop(&mut self) {
        let _ = self.driver.call(F::StreamDestroy, &[arg(&self.raw)]);
    }
}

fn c_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The display driver's version string from NVML (`580.95.05`), if NVML is present.
pub fn nvml_driver_version() -> Option<String> {
    // SAFETY: NVML's initialisers are safe to run.
    let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }.ok()?;
    let get = |name: &[u8]| -> Option<*const c_void> {
        // SAFETY: only the address is read.
        unsafe { lib.get::<*const c_void>(name) }.ok().map(|s| *s)
    };
    let (init, version) = (get(b"nvmlInit_v2\0")?, get(b"nvmlSystemGetDriverVersion\0")?);
    let init_plan = CallPlan::new(&Signature::new(vec![], Some(Type::I32)).ok()?).ok()?;
    let version_plan = CallPlan::new(&Signature::new(vec![Type::Pointer, Type::U32], Some(Type::I32)).ok()?).ok()?;
    let mut r = 0i32;
    // SAFETY: `nvmlReturn_t nvmlInit_v2(void)`.
    unsafe { init_plan.call(init, &[], (&mut r as *mut i32).cast()) }.ok()?;
    if r != 0 {
        return None;
    }
    let mut buf = [0u8; 96];
    let (p, len) = (buf.as_mut_ptr(), buf.len() as u32);
    // SAFETY: `nvmlReturn_t nvmlSystemGetDriverVersion(char *, unsigned)`; `buf` holds `len`.
    unsafe { version_plan.call(version, &[arg(&p), arg(&len)], (&mut r as *mut i32).cast()) }.ok()?;
    (r == 0).then(|| c_text(&buf))
}
