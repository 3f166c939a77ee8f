//! The profiler plugin family (`libnccl-profiler*.so`, symbol `ncclProfiler_vN`): every version
//! NCCL 2.23–2.30 loads, v1 to v6, transcribed from NCCL v2.30.7-1
//! `src/include/plugin/nccl_profiler.h` and `src/include/plugin/profiler/profiler_v<N>.h`.
//!
//! NCCL tries `ncclProfiler_v6`, then v5 down to v1 (v2.30.7-1 src/plugin/profiler.cc:73-88),
//! and calls all five entries of the table it found without checking them for NULL
//! (profiler.cc:250, 266, and `src/plugin/profiler/profiler_v<N>.cc`, which copy `stopEvent` and
//! `finalize` and wrap `startEvent` and `recordEventState`): every entry is `required`.
//!
//! An event descriptor's anonymous C union is a Rust union (`DescrUnionVn`) in a field `u`, and
//! each of the union's anonymous structs a Rust struct whose C name is a `__typeof__`
//! expression. Where the same anonymous struct recurs in later versions, one Rust struct stands
//! for all of them and [`LAYOUTS`] checks it against each version's member. The unions
//! themselves have no C name; they are checked through their members (each member's layout) and
//! their parent (its size and the union's offset).
//!
//! The event types and states every version shares are in `events`; the tables, descriptors
//! and state arguments of v1 to v3 (with the descriptor members every later version reuses) in
//! `v1_v3`, those of v4 to v6 in `v4_v6`.

mod events;
mod v1_v3;
mod v4_v6;

pub use events::*;
pub use v1_v3::*;
pub use v4_v6::*;

use crate::plugin::CLayout;

/// `layout` under another C name: a Rust type that stands for the same C declaration in several
/// versions, checked against each.
const fn also(layout: CLayout, c_name: &'static str) -> CLayout {
    CLayout { c_name, ..layout }
}

/// Every layout of the family, for the layout test (the descriptors' anonymous unions through
/// their members and parents: they have no C name).
pub const LAYOUTS: &[CLayout] = &[
    DescrProxyOpV1::LAYOUT,
    also(DescrProxyOpV1::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v2_t*)0)->proxyOp)"),
    also(DescrProxyOpV1::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v3_t*)0)->proxyOp)"),
    also(DescrProxyOpV1::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v4_t*)0)->proxyOp)"),
    also(DescrProxyOpV1::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v5_t*)0)->proxyOp)"),
    also(DescrProxyOpV1::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->proxyOp)"),
    DescrProxyStepV1::LAYOUT,
    also(DescrProxyStepV1::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v2_t*)0)->proxyStep)"),
    also(DescrProxyStepV1::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v3_t*)0)->proxyStep)"),
    also(DescrProxyStepV1::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v4_t*)0)->proxyStep)"),
    also(DescrProxyStepV1::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v5_t*)0)->proxyStep)"),
    also(DescrProxyStepV1::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->proxyStep)"),
    DescrNetPluginV3::LAYOUT,
    also(DescrNetPluginV3::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v4_t*)0)->netPlugin)"),
    also(DescrNetPluginV3::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v5_t*)0)->netPlugin)"),
    also(DescrNetPluginV3::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->netPlugin)"),
    // v1
    DescrCollV1::LAYOUT,
    DescrP2pV1::LAYOUT,
    EventDescrV1::LAYOUT,
    StateProxyOpV1::LAYOUT,
    also(StateProxyOpV1::LAYOUT, "__typeof__(((ncclProfilerEventStateArgs_v2_t*)0)->proxyOp)"),
    also(StateProxyOpV1::LAYOUT, "__typeof__(((ncclProfilerEventStateArgs_v3_t*)0)->proxyOp)"),
    StateProxyCtrlV1::LAYOUT,
    also(StateProxyCtrlV1::LAYOUT, "__typeof__(((ncclProfilerEventStateArgs_v2_t*)0)->proxyCtrl)"),
    also(StateProxyCtrlV1::LAYOUT, "__typeof__(((ncclProfilerEventStateArgs_v3_t*)0)->proxyCtrl)"),
    also(StateProxyCtrlV1::LAYOUT, "__typeof__(((ncclProfilerEventStateArgs_v4_t*)0)->proxyCtrl)"),
    also(StateProxyCtrlV1::LAYOUT, "__typeof__(((ncclProfilerEventStateArgs_v5_t*)0)->proxyCtrl)"),
    EventStateArgsV1::LAYOUT,
    ProfilerV1::LAYOUT,
    // v2
    DescrCollV2::LAYOUT,
    DescrP2pV2::LAYOUT,
    EventDescrV2::LAYOUT,
    also(EventStateArgsV1::LAYOUT, "ncclProfilerEventStateArgs_v2_t"),
    ProfilerV2::LAYOUT,
    // v3
    DescrCollV3::LAYOUT,
    also(DescrP2pV2::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v3_t*)0)->p2p)"),
    DescrKernelChV3::LAYOUT,
    EventDescrV3::LAYOUT,
    also(EventStateArgsV1::LAYOUT, "ncclProfilerEventStateArgs_v3_t"),
    ProfilerV3::LAYOUT,
    // v4
    DescrCollV4::LAYOUT,
    DescrP2pV4::LAYOUT,
    DescrKernelChV4::LAYOUT,
    also(DescrKernelChV4::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v5_t*)0)->kernelCh)"),
    also(DescrKernelChV4::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->kernelCh)"),
    EventDescrV4::LAYOUT,
    StateProxyStepV4::LAYOUT,
    also(StateProxyStepV4::LAYOUT, "__typeof__(((ncclProfilerEventStateArgs_v5_t*)0)->proxyStep)"),
    StateNetPluginV4::LAYOUT,
    also(StateNetPluginV4::LAYOUT, "__typeof__(((ncclProfilerEventStateArgs_v5_t*)0)->netPlugin)"),
    StateKernelChV4::LAYOUT,
    also(StateKernelChV4::LAYOUT, "__typeof__(((ncclProfilerEventStateArgs_v5_t*)0)->kernelCh)"),
    EventStateArgsV4::LAYOUT,
    ProfilerV4::LAYOUT,
    // v5
    DescrGroupApiV5::LAYOUT,
    also(DescrGroupApiV5::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->groupApi)"),
    DescrCollApiV5::LAYOUT,
    also(DescrCollApiV5::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->collApi)"),
    DescrP2pApiV5::LAYOUT,
    also(DescrP2pApiV5::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->p2pApi)"),
    DescrKernelLaunchV5::LAYOUT,
    also(DescrKernelLaunchV5::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->kernelLaunch)"),
    DescrCollV5::LAYOUT,
    also(DescrCollV5::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->coll)"),
    DescrP2pV5::LAYOUT,
    also(DescrP2pV5::LAYOUT, "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->p2p)"),
    EventDescrV5::LAYOUT,
    also(EventStateArgsV4::LAYOUT, "ncclProfilerEventStateArgs_v5_t"),
    ProfilerV5::LAYOUT,
    // v6
    DescrCeCollV6::LAYOUT,
    DescrCeCollSyncV6::LAYOUT,
    DescrCeCollBatchV6::LAYOUT,
    EventDescrV6::LAYOUT,
    also(EventStateArgsV4::LAYOUT, "ncclProfilerEventStateArgs_v6_t"),
    ProfilerV6::LAYOUT,
];
