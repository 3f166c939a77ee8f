//! The profiler tables v4 to v6 (first loaded by NCCL 2.27, 2.28 and 2.29), their event
//! descriptors and state arguments.

use core::ffi::{c_char, c_int, c_void};

use super::events::EventState;
use super::v1_v3::{DescrNetPluginV3, DescrProxyOpV1, DescrProxyStepV1, StateProxyCtrlV1};
use crate::plugin::common::{DebugLogger, NcclResult};
use crate::plugin::declare::{plugin_struct, plugin_table};

plugin_struct! {
    // ---- v4 ----

    /// `coll` of `ncclProfilerEventDescr_v4_t` (profiler_v4.h:16-28).
    pub struct DescrCollV4 = "__typeof__(((ncclProfilerEventDescr_v4_t*)0)->coll)" {
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
        /// Channels used.
        pub nChannels: u8,
        /// Warps per block.
        pub nWarps: u8,
        /// The algorithm's name.
        pub algo: *const c_char,
        /// The protocol's name.
        pub proto: *const c_char,
    }

    /// `p2p` of `ncclProfilerEventDescr_v4_t` (profiler_v4.h:30-37).
    pub struct DescrP2pV4 = "__typeof__(((ncclProfilerEventDescr_v4_t*)0)->p2p)" {
        /// The function's name.
        pub func: *const c_char,
        /// The buffer.
        pub buff: *mut c_void,
        /// The data type's name.
        pub datatype: *const c_char,
        /// Element count.
        pub count: usize,
        /// The peer rank.
        pub peer: c_int,
        /// Channels used.
        pub nChannels: u8,
    }

    /// `kernelCh` of the descriptors v4 to v6 (profiler_v4.h:52-55, v6.h:84-87).
    pub struct DescrKernelChV4 = "__typeof__(((ncclProfilerEventDescr_v4_t*)0)->kernelCh)" {
        /// The channel.
        pub channelId: u8,
        /// The GPU's global timer at the start.
        pub pTimer: u64,
    }

    /// The anonymous union of `ncclProfilerEventDescr_v4_t` (profiler_v4.h:15-61).
    pub union DescrUnionV4 = "(anonymous union of ncclProfilerEventDescr_v4_t)" {
        /// `ncclProfileColl`.
        pub coll: DescrCollV4,
        /// `ncclProfileP2p`.
        pub p2p: DescrP2pV4,
        /// `ncclProfileProxyOp`.
        pub proxyOp: DescrProxyOpV1,
        /// `ncclProfileProxyStep`.
        pub proxyStep: DescrProxyStepV1,
        /// `ncclProfileKernelCh`.
        pub kernelCh: DescrKernelChV4,
        /// `ncclProfileNetPlugin`.
        pub netPlugin: DescrNetPluginV3,
    }

    /// `ncclProfilerEventDescr_v4_t` (profiler_v4.h:11-62).
    pub struct EventDescrV4 = "ncclProfilerEventDescr_v4_t" {
        /// The event type (`PROFILE_*`).
        pub kind as "type": u8,
        /// The parent event's handle.
        pub parentObj: *mut c_void,
        /// The rank the event comes from.
        pub rank: c_int,
        /// The type's own fields.
        pub u as "coll": DescrUnionV4,
    }

    /// `proxyStep` of `ncclProfilerEventStateArgs_v4_t` to `_v6_t` (profiler_v4.h:65-67).
    pub struct StateProxyStepV4 = "__typeof__(((ncclProfilerEventStateArgs_v4_t*)0)->proxyStep)" {
        /// Bytes transferred.
        pub transSize: usize,
    }

    /// `netPlugin` of `ncclProfilerEventStateArgs_v4_t` to `_v6_t` (profiler_v4.h:73-75).
    pub struct StateNetPluginV4 = "__typeof__(((ncclProfilerEventStateArgs_v4_t*)0)->netPlugin)" {
        /// The network plugin's own event data.
        pub data: *mut c_void,
    }

    /// `kernelCh` of `ncclProfilerEventStateArgs_v4_t` to `_v6_t` (profiler_v4.h:77-79).
    pub struct StateKernelChV4 = "__typeof__(((ncclProfilerEventStateArgs_v4_t*)0)->kernelCh)" {
        /// The GPU's global timer at the stop.
        pub pTimer: u64,
    }

    /// `ncclProfilerEventStateArgs_v4_t` (profiler_v4.h:64-80); v5 declares the same.
    pub union EventStateArgsV4 = "ncclProfilerEventStateArgs_v4_t" {
        /// A proxy step's progress.
        pub proxyStep: StateProxyStepV4,
        /// The proxy thread's appended operations.
        pub proxyCtrl: StateProxyCtrlV1,
        /// A network plugin event's update.
        pub netPlugin: StateNetPluginV4,
        /// A kernel channel's stop.
        pub kernelCh: StateKernelChV4,
    }

    // ---- v5 ----

    /// `groupApi` of `ncclProfilerEventDescr_v5_t` and `_v6_t` (profiler_v5.h:16-19).
    pub struct DescrGroupApiV5 = "__typeof__(((ncclProfilerEventDescr_v5_t*)0)->groupApi)" {
        /// Captured in a CUDA graph.
        pub graphCaptured: bool,
        /// `ncclGroupStart` nesting depth.
        pub groupDepth: c_int,
    }

    /// `collApi` of `ncclProfilerEventDescr_v5_t` and `_v6_t` (profiler_v5.h:21-28).
    pub struct DescrCollApiV5 = "__typeof__(((ncclProfilerEventDescr_v5_t*)0)->collApi)" {
        /// The function's name.
        pub func: *const c_char,
        /// Element count.
        pub count: usize,
        /// The data type's name.
        pub datatype: *const c_char,
        /// Root rank.
        pub root: c_int,
        /// The `cudaStream_t`.
        pub stream: *mut c_void,
        /// Captured in a CUDA graph.
        pub graphCaptured: bool,
    }

    /// `p2pApi` of `ncclProfilerEventDescr_v5_t` and `_v6_t` (profiler_v5.h:30-36).
    pub struct DescrP2pApiV5 = "__typeof__(((ncclProfilerEventDescr_v5_t*)0)->p2pApi)" {
        /// The function's name.
        pub func: *const c_char,
        /// Element count.
        pub count: usize,
        /// The data type's name.
        pub datatype: *const c_char,
        /// The `cudaStream_t`.
        pub stream: *mut c_void,
        /// Captured in a CUDA graph.
        pub graphCaptured: bool,
    }

    /// `kernelLaunch` of `ncclProfilerEventDescr_v5_t` and `_v6_t` (profiler_v5.h:38-40).
    pub struct DescrKernelLaunchV5 = "__typeof__(((ncclProfilerEventDescr_v5_t*)0)->kernelLaunch)" {
        /// The `cudaStream_t`.
        pub stream: *mut c_void,
    }

    /// `coll` of `ncclProfilerEventDescr_v5_t` and `_v6_t` (profiler_v5.h:42-55).
    pub struct DescrCollV5 = "__typeof__(((ncclProfilerEventDescr_v5_t*)0)->coll)" {
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
        /// Channels used.
        pub nChannels: u8,
        /// Warps per block.
        pub nWarps: u8,
        /// The algorithm's name.
        pub algo: *const c_char,
        /// The protocol's name.
        pub proto: *const c_char,
        /// The `ncclProfileGroup` event's handle (v4's parent; `parentObj` is the API event's).
        pub parentGroup: *mut c_void,
    }

    /// `p2p` of `ncclProfilerEventDescr_v5_t` and `_v6_t` (profiler_v5.h:57-65).
    pub struct DescrP2pV5 = "__typeof__(((ncclProfilerEventDescr_v5_t*)0)->p2p)" {
        /// The function's name.
        pub func: *const c_char,
        /// The buffer.
        pub buff: *mut c_void,
        /// The data type's name.
        pub datatype: *const c_char,
        /// Element count.
        pub count: usize,
        /// The peer rank.
        pub peer: c_int,
        /// Channels used.
        pub nChannels: u8,
        /// The `ncclProfileGroup` event's handle (v4's parent).
        pub parentGroup: *mut c_void,
    }

    /// The anonymous union of `ncclProfilerEventDescr_v5_t` (profiler_v5.h:15-89).
    pub union DescrUnionV5 = "(anonymous union of ncclProfilerEventDescr_v5_t)" {
        /// `ncclProfileGroupApi`.
        pub groupApi: DescrGroupApiV5,
        /// `ncclProfileCollApi`.
        pub collApi: DescrCollApiV5,
        /// `ncclProfileP2pApi`.
        pub p2pApi: DescrP2pApiV5,
        /// `ncclProfileKernelLaunch`.
        pub kernelLaunch: DescrKernelLaunchV5,
        /// `ncclProfileColl`.
        pub coll: DescrCollV5,
        /// `ncclProfileP2p`.
        pub p2p: DescrP2pV5,
        /// `ncclProfileProxyOp`.
        pub proxyOp: DescrProxyOpV1,
        /// `ncclProfileProxyStep`.
        pub proxyStep: DescrProxyStepV1,
        /// `ncclProfileKernelCh`.
        pub kernelCh: DescrKernelChV4,
        /// `ncclProfileNetPlugin`.
        pub netPlugin: DescrNetPluginV3,
    }

    /// `ncclProfilerEventDescr_v5_t` (profiler_v5.h:11-90).
    pub struct EventDescrV5 = "ncclProfilerEventDescr_v5_t" {
        /// The event type (`PROFILE_*`), widened to 64 bits in v5.
        pub kind as "type": u64,
        /// The parent event's handle.
        pub parentObj: *mut c_void,
        /// The rank the event comes from.
        pub rank: c_int,
        /// The type's own fields.
        pub u as "groupApi": DescrUnionV5,
    }

    // ---- v6 ----

    /// `ceColl` of `ncclProfilerEventDescr_v6_t` (profiler_v6.h:95-109).
    pub struct DescrCeCollV6 = "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->ceColl)" {
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
        /// The synchronisation strategy's name.
        pub syncStrategy: *const c_char,
        /// Synchronises within a batch.
        pub intraBatchSync: bool,
        /// Operations per batch.
        pub batchSize: u32,
        /// Batches.
        pub numBatches: u32,
        /// The copy-engine sequence number.
        pub ceSeqNum: u32,
        /// The `cudaStream_t`.
        pub stream: *mut c_void,
    }

    /// `ceCollSync` of `ncclProfilerEventDescr_v6_t` (profiler_v6.h:111-114).
    pub struct DescrCeCollSyncV6 = "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->ceCollSync)" {
        /// The synchronisation completed.
        pub isComplete: bool,
        /// Ranks synchronised.
        pub nRanks: c_int,
    }

    /// `ceCollBatch` of `ncclProfilerEventDescr_v6_t` (profiler_v6.h:116-120).
    pub struct DescrCeCollBatchV6 = "__typeof__(((ncclProfilerEventDescr_v6_t*)0)->ceCollBatch)" {
        /// Operations in the batch.
        pub numOps: c_int,
        /// Bytes in the batch.
        pub totalBytes: usize,
        /// Synchronises within the batch.
        pub useIntraSync: bool,
    }

    /// The anonymous union of `ncclProfilerEventDescr_v6_t` (profiler_v6.h:18-121).
    pub union DescrUnionV6 = "(anonymous union of ncclProfilerEventDescr_v6_t)" {
        /// `ncclProfileGroupApi`.
        pub groupApi: DescrGroupApiV5,
        /// `ncclProfileCollApi`.
        pub collApi: DescrCollApiV5,
        /// `ncclProfileP2pApi`.
        pub p2pApi: DescrP2pApiV5,
        /// `ncclProfileKernelLaunch`.
        pub kernelLaunch: DescrKernelLaunchV5,
        /// `ncclProfileColl`.
        pub coll: DescrCollV5,
        /// `ncclProfileP2p`.
        pub p2p: DescrP2pV5,
        /// `ncclProfileProxyOp`.
        pub proxyOp: DescrProxyOpV1,
        /// `ncclProfileProxyStep`.
        pub proxyStep: DescrProxyStepV1,
        /// `ncclProfileKernelCh`.
        pub kernelCh: DescrKernelChV4,
        /// `ncclProfileNetPlugin`.
        pub netPlugin: DescrNetPluginV3,
        /// `ncclProfileCeColl`.
        pub ceColl: DescrCeCollV6,
        /// `ncclProfileCeSync`.
        pub ceCollSync: DescrCeCollSyncV6,
        /// `ncclProfileCeBatch`.
        pub ceCollBatch: DescrCeCollBatchV6,
    }

    /// `ncclProfilerEventDescr_v6_t` (profiler_v6.h:14-122).
    pub struct EventDescrV6 = "ncclProfilerEventDescr_v6_t" {
        /// The event type (`PROFILE_*`).
        pub kind as "type": u64,
        /// The parent event's handle.
        pub parentObj: *mut c_void,
        /// The rank the event comes from.
        pub rank: c_int,
        /// The type's own fields.
        pub u as "groupApi": DescrUnionV6,
    }
}

/// `ncclProfilerEventStateArgs_v5_t` (profiler_v5.h:92-108): declared as v4's.
pub type EventStateArgsV5 = EventStateArgsV4;
/// `ncclProfilerEventStateArgs_v6_t` (profiler_v6.h:126: a typedef of v5's).
pub type EventStateArgsV6 = EventStateArgsV4;

plugin_table! {
    /// `ncclProfiler_v4_t` (profiler_v4.h:82-124); NCCL 2.27 on loads it.
    pub struct ProfilerV4 = "ncclProfiler_v4_t", symbol "ncclProfiler_v4", calls ProfilerV4Calls {
        /// Once per communicator, with its name, hash, node and rank counts, rank and NCCL's
        /// logger.
        init: required fn(context: *mut *mut c_void, eActivationMask: *mut c_int, commName: *const c_char, commHash: u64, nNodes: c_int, nranks: c_int, rank: c_int, logfn: DebugLogger) -> NcclResult,
        /// Starts an event; writes its handle (NULL: not tracked).
        startEvent: required fn(context: *mut c_void, eHandle: *mut *mut c_void, eDescr: *mut EventDescrV4) -> NcclResult,
        /// Stops an event.
        stopEvent: required fn(eHandle: *mut c_void) -> NcclResult,
        /// Records an event's state change.
        recordEventState: required fn(eHandle: *mut c_void, eState: EventState, eStateArgs: *mut EventStateArgsV4) -> NcclResult,
        /// At the communicator's destruction.
        finalize: required fn(context: *mut c_void) -> NcclResult,
    }

    /// `ncclProfiler_v5_t` (profiler_v5.h:110-152); NCCL 2.28 on loads it.
    pub struct ProfilerV5 = "ncclProfiler_v5_t", symbol "ncclProfiler_v5", calls ProfilerV5Calls {
        /// Once per communicator: its hash first (moved ahead of the mask in v5), then as v4.
        init: required fn(context: *mut *mut c_void, commId: u64, eActivationMask: *mut c_int, commName: *const c_char, nNodes: c_int, nranks: c_int, rank: c_int, logfn: DebugLogger) -> NcclResult,
        /// Starts an event; writes its handle (NULL: not tracked).
        startEvent: required fn(context: *mut c_void, eHandle: *mut *mut c_void, eDescr: *mut EventDescrV5) -> NcclResult,
        /// Stops an event.
        stopEvent: required fn(eHandle: *mut c_void) -> NcclResult,
        /// Records an event's state change.
        recordEventState: required fn(eHandle: *mut c_void, eState: EventState, eStateArgs: *mut EventStateArgsV5) -> NcclResult,
        /// At the communicator's destruction.
        finalize: required fn(context: *mut c_void) -> NcclResult,
    }

    /// `ncclProfiler_v6_t` (profiler_v6.h:128-147); NCCL 2.29 on loads it.
    pub struct ProfilerV6 = "ncclProfiler_v6_t", symbol "ncclProfiler_v6", calls ProfilerV6Calls {
        /// Once per communicator, as v5.
        init: required fn(context: *mut *mut c_void, commId: u64, eActivationMask: *mut c_int, commName: *const c_char, nNodes: c_int, nranks: c_int, rank: c_int, logfn: DebugLogger) -> NcclResult,
        /// Starts an event; writes its handle (NULL: not tracked).
        startEvent: required fn(context: *mut c_void, eHandle: *mut *mut c_void, eDescr: *mut EventDescrV6) -> NcclResult,
        /// Stops an event.
        stopEvent: required fn(eHandle: *mut c_void) -> NcclResult,
        /// Records an event's state change.
        recordEventState: required fn(eHandle: *mut c_void, eState: EventState, eStateArgs: *mut EventStateArgsV6) -> NcclResult,
        /// At the communicator's destruction.
        finalize: required fn(context: *mut c_void) -> NcclResult,
    }
}
