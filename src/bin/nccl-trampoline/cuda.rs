//! The CUDA driver, through the library's loader (`nccl_trampoline::cuda`, called through the
//! call core like NCCL), and NVML (`libnvidia-ml.so.1`) for the display driver's version.

use std::ffi::c_void;

use nccl_trampoline::{arg, CallPlan, Signature, Type};

pub use nccl_trampoline::cuda::{DeviceMemory, DeviceStream, Driver};

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
