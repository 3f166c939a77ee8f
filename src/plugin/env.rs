//! The environment plugin family (`libnccl-env*.so`, symbol `ncclEnvPlugin_vN`): the plugin
//! NCCL asks for the value of each of its variables instead of `getenv`. Both versions NCCL
//! 2.28.7–2.32 load, v1 and v2, transcribed from NCCL v2.30.7-1 `src/include/plugin/env/env_v<N>.h`.
//!
//! Which releases search which symbol (the `dlsym` names in `src/plugin/env/env_v<N>.cc` per tag;
//! 2.32.3's `libnccl.so.2` strings): v1 from 2.28.7, v2 from 2.30.7, both still in 2.32.3; NCCL
//! tries v2 first (v2.30.7-1 src/plugin/env.cc:55-62). NCCL loads it once per process, calls
//! `init` then (src/plugin/env.cc:93-101), `getEnv` for every variable it reads
//! (src/plugin/env.cc:111-113), and `finalize` at exit (src/plugin/env.cc:99, 104-109).

use core::ffi::c_char;

use crate::plugin::common::{DebugLogger, NcclResult};
use crate::plugin::declare::plugin_table;

plugin_table! {
    /// `ncclEnv_v1_t` (env_v1.h:13-34); NCCL 2.28.7 to 2.32 load it. NCCL's adapter calls `init`
    /// without the logger and passes `finalize` and `getEnv` on as they are (v2.30.7-1
    /// src/plugin/env/env_v1.cc:17-31).
    pub struct EnvV1 = "ncclEnv_v1_t", symbol "ncclEnvPlugin_v1", calls EnvV1Calls {
        /// Initialises the plugin with NCCL's version (`ncclMajor.ncclMinor.ncclPatch` and the
        /// suffix, e.g. `""`); called without a NULL check (env_v1.cc:19, env.cc:98).
        init: required fn(ncclMajor: u8, ncclMinor: u8, ncclPatch: u8, suffix: *const c_char) -> NcclResult,
        /// Finalises the plugin at exit; NULL: nothing to do (checked at env.cc:105).
        finalize: optional fn() -> NcclResult,
        /// The value of the variable `name`, or NULL; the string must stay valid until NCCL asks
        /// for the same name again or finalises. Called without a NULL check (env.cc:112).
        getEnv: required fn(name: *const c_char) -> *const c_char,
    }

    /// `ncclEnv_v2_t` (env_v2.h:13-36); NCCL 2.30.7 to 2.32 load it, and use it as their own
    /// table (v2.30.7-1 src/plugin/env/env_v2.cc:15-21): v1 with NCCL's logger in `init`.
    pub struct EnvV2 = "ncclEnv_v2_t", symbol "ncclEnvPlugin_v2", calls EnvV2Calls {
        /// Initialises the plugin with NCCL's version and logger; called without a NULL check
        /// (env.cc:98).
        init: required fn(ncclMajor: u8, ncclMinor: u8, ncclPatch: u8, suffix: *const c_char, logFunction: DebugLogger) -> NcclResult,
        /// Finalises the plugin at exit; NULL: nothing to do (checked at env.cc:105).
        finalize: optional fn() -> NcclResult,
        /// As v1's (env.cc:112).
        getEnv: required fn(name: *const c_char) -> *const c_char,
    }
}

/// Every layout of the family, for the layout test.
pub const LAYOUTS: &[crate::plugin::CLayout] = &[EnvV1::LAYOUT, EnvV2::LAYOUT];
