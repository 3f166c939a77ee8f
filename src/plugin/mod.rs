//! NCCL's plugins: the C tables NCCL loads from `libnccl-net.so`, `libnccl-tuner.so` and the
//! rest, declared once each (`declare`), for Rust plugins that NCCL loads and for a host that
//! loads plugins the way NCCL does (docs/adr/0026-plugins.md).

pub mod common;
pub(crate) mod declare;
pub mod net;
pub mod profiler;

pub use common::{DebugLogger, LogLevel, NcclResult, ProfilerCallback, Subsystem};
pub use declare::CLayout;

/// Every layout declared, family by family: what tests/plugin_layouts.rs checks against the C
/// compiler.
pub fn layouts() -> Vec<CLayout> {
    [net::LAYOUTS, profiler::LAYOUTS].concat()
}
