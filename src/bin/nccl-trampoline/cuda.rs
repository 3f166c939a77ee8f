//! The CUDA driver, through the library's loader (`nccl_trampoline::cuda`, called through the
//! call core like NCCL), and NVML (`libnvidia-ml.so.1`) for the display driver's version.

use std::ffi::c_char;

pub use nccl_trampoline::cuda::{DeviceMemory, DeviceStream, Driver};

nccl_trampoline::foreign_functions! {
    /// The NVML functions the tool calls. Both return `nvmlReturn_t` (`NVML_SUCCESS` is 0).
    struct NvmlFns, enum NvmlSym {
        /// `nvmlReturn_t nvmlInit_v2(void)`
        init: Init = "nvmlInit_v2" () -> i32;
        /// `nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)`
        system_get_driver_version: SystemGetDriverVersion = "nvmlSystemGetDriverVersion"
            (version: *mut c_char, length: u32) -> i32;
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
    let nvml = NvmlFns::resolve(&lib).ok()?;
    // SAFETY: `nvmlInit_v2(void)`; `Err` if the library lacks it.
    if unsafe { nvml.init() }.ok()? != 0 {
        return None;
    }
    let mut buf = [0u8; 96];
    // SAFETY: `buf` holds `length` bytes; `Err` if the library lacks the function.
    let r = unsafe { nvml.system_get_driver_version(buf.as_mut_ptr().cast(), buf.len() as u32) }.ok()?;
    (r == 0).then(|| c_text(&buf))
}
