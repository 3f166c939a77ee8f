//! The profiler tables v1 to v3 (first loaded by NCCL 2.23, 2.24 and 2.26), their event
//! descriptors and state arguments, and the descriptor members that recur unchanged in every
//! later version.

use core::ffi::{c_char, c_int, c_void};

use super::events::{EventState, Pid};
use crate::plugin::common::NcclResult;
use crate::plugin::declare::{plugin_struct, plugin_table};

plugin_struct! {
    // ---- Descriptor members that recur across versions ----

    /// `proxyOp` of every descriptor, v1 to v6 (profiler_v1.h:46-53, v5.h:67-74, v6.h:71-78).
    pub struct DescrProxyOpV1 = "__typeof__(((ncclProfilerEventDescr_v1_t*)0)->proxyOp)" {
        /// The process that posted the operation.
        pub pid: Pid,
        /// The channel.
        pub channelId: u8,
        /// The remote rank.
        pub peer: c_int,
        /// Its steps.
        pub nSteps: c_int,
        /// Bytes per step.
        pub chunkSize: c_int,
        /// Non-zero for a send.
        pub isSend: c_int,
    }

    /// `proxyStep` of every descriptor, v1 to v6 (profiler_v1.h:55-57, v6.h:80-82).
    pub struct DescrProxyStepV1 = "__typeof__(((ncclProfilerEventDescr_v1_t*)0)->proxyStep)" {
        /// The step's number.
        pub step: c_int,
    }

    /// `netPlugin` of the descriptors v3 to v6 (profiler_v3.h:59-62, v6.h:89-92).
    pub struct DescrNetPluginV3 = "__typeof__(((ncclProfilerEventDescr_v3_t*)0)->netPlugin)" {
        /// The network plugin's type and version (`NCCL_PROFILER_NET_TYPE_*` | version).
        pub id: i64,
        /// The network plugin's own event data.
        pub data: *mut c_void,
    }

    // ---- v1 ----

    /// `coll` of `ncclProfilerEventDescr_v1_t` (profiler_v1.h:16-34).
    pub struct DescrCollV1 = "__typeof__(((ncclProfilerEventDescr_v1_t*)0)->coll)" {
        /// The communicator's name.
        pub name: *const c_char,
        /// The communicator's hash.
        pub commHash: u64,
        /// The collective's sequence number in the communicator.
        pub seqNumber: u64,
        /// `ncclFunc_t`.
        pub func: u8,
        /// Send buffer.
        pub sendBuff: *const c_void,
        /// Receive buffer.
        pub recvBuff: *mut c_void,
        /// Element count.
        pub count: usize,
        /// Root rank.
        pub root: c_int,
        /// `ncclDataType_t`.
        pub datatype: u8,
        /// `ncclRedOp_t`.
        pub op: u32,
        /// Bytes moved.
        pub trafficBytes: usize,
        /// The most channels.
        pub nMaxChannels: u8,
        /// Warps per block.
        pub nWarps: u8,
        /// `NCCL_ALGO_*`.
        pub algo: u8,
        /// `NCCL_PROTO_*`.
        pub proto: u8,
        /// Non-zero for CollNet.
        pub isCollnet: c_int,
        /// Non-zero for NVLS.
        pub isNvls: c_int,
    }

    /// `p2p` of `ncclProfilerEventDescr_v1_t` (profiler_v1.h:36-44).
    pub struct DescrP2pV1 = "__typeof__(((ncclProfilerEventDescr_v1_t*)0)->p2p)" {
        /// The communicator's name.
        pub name: *const c_char,
        /// The communicator's hash.
        pub commHash: u64,
        /// `ncclFunc_t`.
        pub func: u8,
        /// The buffer.
        pub buff: *mut c_void,
        /// `ncclDataType_t`.
        pub datatype: u8,
        /// Element count.
        pub count: usize,
        /// The peer rank.
        pub peer: c_int,
    }

    /// The anonymous union of `ncclProfilerEventDescr_v1_t` (profiler_v1.h:15-58).
    pub union DescrUnionV1 = "(anonymous union of ncclProfilerEventDescr_v1_t)" {
        /// `ncclProfileColl`.
        pub coll: DescrCollV1,
        /// `ncclProfileP2p`.
        pub p2p: DescrP2pV1,
        /// `ncclProfileProxyOp`.
        pub proxyOp: DescrProxyOpV1,
        /// `ncclProfileProxyStep`.
        pub proxyStep: DescrProxyStepV1,
    }

    /// `ncclProfilerEventDescr_v1_t` (profiler_v1.h:11-59).
    pub struct EventDescrV1 = "ncclProfilerEventDescr_v1_t" {
        /// The event type (`PROFILE_*`).
        pub kind as "type": u8,
        /// The parent event's handle.
        pub parentObj: *mut c_void,
        /// The rank the event comes from.
        pub rank: c_int,
        /// The type's own fields.
        pub u as "coll": DescrUnionV1,
    }

    /// `proxyOp` of `ncclProfilerEventStateArgs_v1_t` to `_v3_t` (profiler_v1.h:62-65).
    pub struct StateProxyOpV1 = "__typeof__(((ncclProfilerEventStateArgs_v1_t*)0)->proxyOp)" {
        /// Bytes transferred.
        pub transSize: usize,
        /// Steps done.
        pub steps: c_int,
    }

    /// `proxyCtrl` of every state-argument union, v1 to v6 (profiler_v1.h:67-69, v5.h:97-99).
    pub struct StateProxyCtrlV1 = "__typeof__(((ncclProfilerEventStateArgs_v1_t*)0)->proxyCtrl)" {
        /// Proxy operations appended.
        pub appendedProxyOps: c_int,
    }

    /// `ncclProfilerEventStateArgs_v1_t` (profiler_v1.h:61-70); v2 and v3 declare the same.
    pub union EventStateArgsV1 = "ncclProfilerEventStateArgs_v1_t" {
        /// A proxy operation's progress.
        pub proxyOp: StateProxyOpV1,
        /// The proxy thread's appended operations.
        pub proxyCtrl: StateProxyCtrlV1,
    }

    // ---- v2 ----

    /// `coll` of `ncclProfilerEventDescr_v2_t` (profiler_v2.h:16-31).
    pub struct DescrCollV2 = "__typeof__(((ncclProfilerEventDescr_v2_t*)0)->coll)" {
        /// The communicator's name.
        pub name: *const c_char,
        /// The communicator's hash.
        pub commHash: u64,
        /// The collective's sequence number in the communicator.
        pub seqNumber: u64,
        /// The function's name (`"AllReduce"`, ...).
        pub func: *const c_char,
        /// Send buffer.
        pub sendBuff: *const c_void,
        /// Receive buffer.
        pub recvBuff: *mut c_void,
        /// Element count.
        pub count: usize,
        /// Root rank.
        pub root: c_int,
        /// The data type's name (`"ncclFloat32"`, ...).
        pub datatype: *const c_char,
        /// Bytes moved.
        pub trafficBytes: usize,
        /// The most channels.
        pub nMaxChannels: u8,
        /// Warps per block.
        pub nWarps: u8,
        /// The algorithm's name.
        pub algo: *const c_char,
        /// The protocol's name.
        pub proto: *const c_char,
    }

    /// `p2p` of `ncclProfilerEventDescr_v2_t` and `_v3_t` (profiler_v2.h:33-41, v3.h:32-40).
    pub struct DescrP2pV2 = "__typeof__(((ncclProfilerEventDescr_v2_t*)0)->p2p)" {
        /// The communicator's name.
        pub name: *const c_char,
        /// The communicator's hash.
        pub commHash: u64,
        /// The function's name (`"Send"`, `"Recv"`).
        pub func: *const c_char,
        /// The buffer.
        pub buff: *mut c_void,
        /// The data type's name.
        pub datatype: *const c_char,
        /// Element count.
        pub count: usize,
        /// The peer rank.
        pub peer: c_int,
    }

    /// The anonymous union of `ncclProfilerEventDescr_v2_t` (profiler_v2.h:15-55).
    pub union DescrUnionV2 = "(anonymous union of ncclProfilerEventDescr_v2_t)" {
        /// `ncclProfileColl`.
        pub coll: DescrCollV2,
        /// `ncclProfileP2p`.
        pub p2p: DescrP2pV2,
        /// `ncclProfileProxyOp`.
        pub proxyOp: DescrProxyOpV1,
        /// `ncclProfileProxyStep`.
        pub proxyStep: DescrProxyStepV1,
    }

    /// `ncclProfilerEventDescr_v2_t` (profiler_v2.h:11-56).
    pub struct EventDescrV2 = "ncclProfilerEventDescr_v2_t" {
        /// The event type (`PROFILE_*`).
        pub kind as "type": u8,
        /// The parent event's handle.
        pub parentObj: *mut c_void,
        /// The rank the event comes from.
        pub rank: c_int,
        /// The type's own fields.
        pub u as "coll": DescrUnionV2,
    }

    // ---- v3 ----

    /// `coll` of `ncclProfilerEventDescr_v3_t` (profiler_v3.h:16-30).
    pub struct DescrCollV3 = "__typeof__(((ncclProfilerEventDescr_v3_t*)0)->coll)" {
        /// The communicator's name.
        pub name: *const c_char,
        /// The communicator's hash.
        pub commHash: u64,
        /// The collective's sequence number in the communicator.
        pub seqNumber: u64,
        /// The function's name.
        pub func: *const c_char,
        /// Send buffer.
        pub sendBuff: *const c_void,
        /// Receive buffer.
        pub recvBuff: *mut c_void,
        /// Element count.
        pub count: usize,
        /// Root rank.
        pub root: c_int,
        /// The data type's name.
        pub datatype: *const c_char,
        /// The most channels.
        pub nMaxChannels: u8,
        /// Warps per block.
        pub nWarps: u8,
        /// The algorithm's name.
        pub algo: *const c_char,
        /// The protocol's name.
        pub proto: *const c_char,
    }

    /// `kernelCh` of `ncclProfilerEventDescr_v3_t` (profiler_v3.h:55-57).
    pub struct DescrKernelChV3 = "__typeof__(((ncclProfilerEventDescr_v3_t*)0)->kernelCh)" {
        /// The channel.
        pub channelId: u8,
    }

    /// The anonymous union of `ncclProfilerEventDescr_v3_t` (profiler_v3.h:15-63).
    pub union DescrUnionV3 = "(anonymous union of ncclProfilerEventDescr_v3_t)" {
        /// `ncclProfileColl`.
        pub coll: DescrCollV3,
        /// `ncclProfileP2p`.
        pub p2p: DescrP2pV2,
        /// `ncclProfileProxyOp`.
        pub proxyOp: DescrProxyOpV1,
        /// `ncclProfileProxyStep`.
        pub proxyStep: DescrProxyStepV1,
        /// `ncclProfileKernelCh`.
        pub kernelCh: DescrKernelChV3,
        /// `ncclProfileNetPlugin`.
        pub netPlugin: DescrNetPluginV3,
    }

    /// `ncclProfilerEventDescr_v3_t` (profiler_v3.h:11-64).
    pub struct EventDescrV3 = "ncclProfilerEventDescr_v3_t" {
        /// The event type (`PROFILE_*`).
        pub kind as "type": u8,
        /// The parent event's handle.
        pub parentObj: *mut c_void,
        /// The rank the event comes from.
        pub rank: c_int,
        /// The type's own fields.
        pub u as "coll": DescrUnionV3,
    }
}

/// `ncclProfilerEventStateArgs_v2_t` (profiler_v2.h:58-67): declared as v1's.
pub type EventStateArgsV2 = EventStateArgsV1;
/// `ncclProfilerEventStateArgs_v3_t` (profiler_v3.h:66-75): declared as v1's.
pub type EventStateArgsV3 = EventStateArgsV1;

plugin_table! {
    /// `ncclProfiler_v1_t` (profiler_v1.h:72-107); NCCL 2.23 on loads it.
    pub struct ProfilerV1 = "ncclProfiler_v1_t", symbol "ncclProfiler_v1", calls ProfilerV1Calls {
        /// Once per communicator: a context for it, and the events wanted (`PROFILE_*` bits).
        init: required fn(context: *mut *mut c_void, eActivationMask: *mut c_int) -> NcclResult,
        /// Starts an event; writes its handle (NULL: not tracked).
        startEvent: required fn(context: *mut c_void, eHandle: *mut *mut c_void, eDescr: *mut EventDescrV1) -> NcclResult,
        /// Stops an event.
        stopEvent: required fn(eHandle: *mut c_void) -> NcclResult,
        /// Records an event's state change.
        recordEventState: required fn(eHandle: *mut c_void, eState: EventState, eStateArgs: *mut EventStateArgsV1) -> NcclResult,
        /// At the communicator's destruction.
        finalize: required fn(context: *mut c_void) -> NcclResult,
    }

    /// `ncclProfiler_v2_t` (profiler_v2.h:69-104); NCCL 2.24 on loads it.
    pub struct ProfilerV2 = "ncclProfiler_v2_t", symbol "ncclProfiler_v2", calls ProfilerV2Calls {
        /// Once per communicator: a context for it, and the events wanted (`PROFILE_*` bits).
        init: required fn(context: *mut *mut c_void, eActivationMask: *mut c_int) -> NcclResult,
        /// Starts an event; writes its handle (NULL: not tracked).
        startEvent: required fn(context: *mut c_void, eHandle: *mut *mut c_void, eDescr: *mut EventDescrV2) -> NcclResult,
        /// Stops an event.
        stopEvent: required fn(eHandle: *mut c_void) -> NcclResult,
        /// Records an event's state change.
        recordEventState: required fn(eHandle: *mut c_void, eState: EventState, eStateArgs: *mut EventStateArgsV2) -> NcclResult,
        /// At the communicator's destruction.
        finalize: required fn(context: *mut c_void) -> NcclResult,
    }

    /// `ncclProfiler_v3_t` (profiler_v3.h:77-112); NCCL 2.26 on loads it.
    pub struct ProfilerV3 = "ncclProfiler_v3_t", symbol "ncclProfiler_v3", calls ProfilerV3Calls {
        /// Once per communicator: a context for it, and the events wanted (`PROFILE_*` bits).
        init: required fn(context: *mut *mut c_void, eActivationMask: *mut c_int) -> NcclResult,
        /// Starts an event; writes its handle (NULL: not tracked).
        startEvent: required fn(context: *mut c_void, eHandle: *mut *mut c_void, eDescr: *mut EventDescrV3) -> NcclResult,
        /// Stops an event.
        stopEvent: required fn(eHandle: *mut c_void) -> NcclResult,
        /// Records an event's state change.
        recordEventState: required fn(eHandle: *mut c_void, eState: EventState, eStateArgs: *mut EventStateArgsV3) -> NcclResult,
        /// At the communicator's destruction.
        finalize: required fn(context: *mut c_void) -> NcclResult,
    }
}
