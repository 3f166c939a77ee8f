//! NCCL's plugins: the C tables NCCL loads from `libnccl-net.so`, `libnccl-tuner.so` and the
//! rest, declared once each (`declare`), for Rust plugins that NCCL loads and for a host that
//! loads plugins the way NCCL does (docs/adr/0026-plugins.md).

pub mod common;
pub(crate) mod declare;
pub mod describe;
pub mod env;
pub mod error;
pub mod gin;
pub mod host;
pub mod net;
pub mod net_bench;
pub(crate) mod net_ops;
pub mod profiler;
pub mod tuner;

pub use common::{DebugLogger, LogLevel, NcclResult, ProfilerCallback, Subsystem};
pub use declare::CLayout;
pub use error::PluginError;

/// Every layout declared, family by family: what tests/plugin_layouts.rs checks against the C
/// compiler.
pub fn layouts() -> Vec<CLayout> {
    [net::LAYOUTS, tuner::LAYOUTS, env::LAYOUTS, gin::LAYOUTS, profiler::LAYOUTS].concat()
}
