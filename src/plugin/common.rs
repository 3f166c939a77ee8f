//! What every plugin family shares: NCCL's logger type, its levels and subsystems
//! (NCCL v2.30.7-1 src/include/nccl_common.h:27-59), and the profiler callback that network
//! plugins from v10 receive (nccl_common.h:69-70).

use core::ffi::{c_char, c_int, c_ulong, c_void};

use crate::ctype::types::Type;
use crate::engine::typed::CArg;

pub use crate::nccl::NcclResult;

/// `ncclDebugLogger_t`: `void (*)(ncclDebugLogLevel level, unsigned long flags, const char *file,
/// int line, const char *fmt, ...)` (nccl_common.h:58-59), the variadic logger NCCL hands every
/// plugin's `init`. Nullable, as a C function pointer is.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DebugLogger(
    /// The C function, if any.
    pub  Option<
        unsafe extern "C" fn(level: c_int, flags: c_ulong, file: *const c_char, line: c_int, fmt: *const c_char, ...),
    >,
);

impl DebugLogger {
    /// Logs `message` as NCCL's own lines are logged: `fmt` is `"%s"`, so nothing in `message`
    /// is read as a conversion. A message with an interior NUL is cut there; no logger, nothing.
    ///
    /// # Safety
    ///
    /// The logger is the one NCCL passed to this plugin's `init` (or another function of the
    /// logger's type that accepts `"%s"` and one string), still valid.
    pub unsafe fn log(self, level: LogLevel, flags: Subsystem, file: &core::ffi::CStr, line: c_int, message: &str) {
        let Some(f) = self.0 else { return };
        let mut text = message.as_bytes().split(|&b| b == 0).next().unwrap_or_default().to_vec();
        text.push(0);
        // SAFETY: the logger's prototype; "%s" reads exactly the one NUL-terminated string
        // passed after it (caller's contract for the logger).
        unsafe { f(level.0, flags.0, file.as_ptr(), line, c"%s".as_ptr(), text.as_ptr().cast::<c_char>()) }
    }
}

/// `CArg` for a `#[repr(transparent)]` nullable C function pointer: passed as a pointer, its
/// word its address (0 for `None`).
macro_rules! function_pointer_arg {
    ($($t:ty),*) => {$(
        // SAFETY: a nullable C function pointer is a C pointer; its word is its address.
        unsafe impl CArg for $t {
            fn c_type() -> Type {
                Type::Pointer
            }
            #[inline(always)]
            fn word(&self) -> u64 {
                self.0.map_or(0, |f| f as usize as u64)
            }
        }
    )*};
}

function_pointer_arg!(DebugLogger, ProfilerCallback);

/// `ncclProfilerCallback_t`: `ncclResult_t (*)(void **eHandle, int type, void *pHandle,
/// int64_t pluginId, void *extData)` (nccl_common.h:69-70), which NCCL hands network plugins
/// from v10 on so that they report their own events to the profiler.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ProfilerCallback(
    /// The C function, if any.
    pub  Option<
        unsafe extern "C" fn(
            e_handle: *mut *mut c_void,
            kind: c_int,
            p_handle: *mut c_void,
            plugin_id: i64,
            ext_data: *mut c_void,
        ) -> NcclResult,
    >,
);

/// `ncclDebugLogLevel` (nccl_common.h:27-34): an open newtype.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LogLevel(pub c_int);

impl LogLevel {
    /// `NCCL_LOG_NONE`.
    pub const NONE: Self = Self(0);
    /// `NCCL_LOG_VERSION`.
    pub const VERSION: Self = Self(1);
    /// `NCCL_LOG_WARN`.
    pub const WARN: Self = Self(2);
    /// `NCCL_LOG_INFO`.
    pub const INFO: Self = Self(3);
    /// `NCCL_LOG_ABORT`.
    pub const ABORT: Self = Self(4);
    /// `NCCL_LOG_TRACE`.
    pub const TRACE: Self = Self(5);

    /// NCCL's word for the level (`WARN`, `INFO`, ...), or `None` for a value it does not define.
    pub fn name(self) -> Option<&'static str> {
        ["NONE", "VERSION", "WARN", "INFO", "ABORT", "TRACE"].get(usize::try_from(self.0).ok()?).copied()
    }
}

/// `ncclDebugLogSubSys` (nccl_common.h:36-56): the flags of a log line.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Subsystem(pub c_ulong);

impl Subsystem {
    /// `NCCL_INIT`.
    pub const INIT: Self = Self(0x1);
    /// `NCCL_COLL`.
    pub const COLL: Self = Self(0x2);
    /// `NCCL_NET`.
    pub const NET: Self = Self(0x10);
    /// `NCCL_TUNING`.
    pub const TUNING: Self = Self(0x40);
    /// `NCCL_ENV`.
    pub const ENV: Self = Self(0x80);
    /// `NCCL_PROFILE`.
    pub const PROFILE: Self = Self(0x4000);
}
