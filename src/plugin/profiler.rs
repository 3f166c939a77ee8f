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

use core::ffi::{c_char, c_int, c_void};

use crate::engine::typed::CArg;
use crate::engine::types::Type;
use crate::plugin::common::{DebugLogger, NcclResult};
use crate::plugin::declare::{plugin_struct, plugin_table};
use crate::plugin::CLayout;

/// `ncclPid_t` (v2.30.7-1 src/include/os/linux.h:34: `pid_t`, an `int` on Linux), the
/// `pid` of a proxy operation's descriptor.
pub type Pid = c_int;

/// `ncclProfileGroup` (nccl_profiler.h:12), v1 on: a group of NCCL operations.
pub const PROFILE_GROUP: c_int = 1 << 0;

/// The event types of an activation mask, by NCCL's names (`Group|Coll|...`), `none` for 0;
/// unknown bits as a number.
pub fn event_names(mask: c_int) -> String {
    const NAMES: [&str; 15] = [
        "Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl", "KernelCh", "NetPlugin", "GroupApi", "CollApi",
        "P2pApi", "KernelLaunch", "CeColl", "CeSync", "CeBatch",
    ];
    let mut names: Vec<String> =
        NAMES.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, n)| n.to_string()).collect();
    let unknown = mask & !((1 << NAMES.len()) - 1);
    if unknown != 0 {
        names.push(format!("{unknown:#x}"));
    }
    if names.is_empty() {
        "none".to_string()
    } else {
        format!("{} ({mask:#x})", names.join("|"))
    }
}
/// `ncclProfileColl` (nccl_profiler.h:13), v1 on: a collective's task.
pub const PROFILE_COLL: c_int = 1 << 1;
/// `ncclProfileP2p` (nccl_profiler.h:14), v1 on: a send's or receive's task.
pub const PROFILE_P2P: c_int = 1 << 2;
/// `ncclProfileProxyOp` (nccl_profiler.h:15), v1 on: a proxy operation (one channel, one peer).
pub const PROFILE_PROXY_OP: c_int = 1 << 3;
/// `ncclProfileProxyStep` (nccl_profiler.h:16), v1 on: one step of a proxy operation.
pub const PROFILE_PROXY_STEP: c_int = 1 << 4;
/// `ncclProfileProxyCtrl` (nccl_profiler.h:17), v1 on: the proxy thread's own activity.
pub const PROFILE_PROXY_CTRL: c_int = 1 << 5;
/// `ncclProfileKernelCh` (nccl_profiler.h:18), v3 on: a kernel's work on one channel.
pub const PROFILE_KERNEL_CH: c_int = 1 << 6;
/// `ncclProfileNetPlugin` (nccl_profiler.h:19), v3 on: events the network plugin defines.
pub const PROFILE_NET_PLUGIN: c_int = 1 << 7;
/// `ncclProfileGroupApi` (nccl_profiler.h:20), v5 on: an outermost `ncclGroupStart`/`End`
/// (explicit or the implicit group of a lone call).
pub const PROFILE_GROUP_API: c_int = 1 << 8;
/// `ncclProfileCollApi` (nccl_profiler.h:21), v5 on: a collective API call.
pub const PROFILE_COLL_API: c_int = 1 << 9;
/// `ncclProfileP2pApi` (nccl_profiler.h:22), v5 on: an `ncclSend`/`ncclRecv` call.
pub const PROFILE_P2P_API: c_int = 1 << 10;
/// `ncclProfileKernelLaunch` (nccl_profiler.h:23), v5 on: a kernel launch.
pub const PROFILE_KERNEL_LAUNCH: c_int = 1 << 11;
/// `ncclProfileCeColl` (nccl_profiler.h:25), v6: a copy-engine collective.
pub const PROFILE_CE_COLL: c_int = 1 << 12;
/// `ncclProfileCeSync` (nccl_profiler.h:26), v6: a copy-engine synchronisation.
pub const PROFILE_CE_SYNC: c_int = 1 << 13;
/// `ncclProfileCeBatch` (nccl_profiler.h:27), v6: a copy-engine batch.
pub const PROFILE_CE_BATCH: c_int = 1 << 14;

/// Every event type: NCCL's name without `ncclProfile`, its bit, and the first plugin version
/// that has it (v1: NCCL 2.23, v3: 2.26, v5: 2.28, v6: 2.29; the headers of those tags).
pub const EVENT_TYPES: &[(&str, c_int, u32)] = &[
    ("Group", PROFILE_GROUP, 1),
    ("Coll", PROFILE_COLL, 1),
    ("P2p", PROFILE_P2P, 1),
    ("ProxyOp", PROFILE_PROXY_OP, 1),
    ("ProxyStep", PROFILE_PROXY_STEP, 1),
    ("ProxyCtrl", PROFILE_PROXY_CTRL, 1),
    ("KernelCh", PROFILE_KERNEL_CH, 3),
    ("NetPlugin", PROFILE_NET_PLUGIN, 3),
    ("GroupApi", PROFILE_GROUP_API, 5),
    ("CollApi", PROFILE_COLL_API, 5),
    ("P2pApi", PROFILE_P2P_API, 5),
    ("KernelLaunch", PROFILE_KERNEL_LAUNCH, 5),
    ("CeColl", PROFILE_CE_COLL, 6),
    ("CeSync", PROFILE_CE_SYNC, 6),
    ("CeBatch", PROFILE_CE_BATCH, 6),
];

/// `ncclProfilerEventState_t` (nccl_profiler.h:30-74), which `ncclProfilerEventState_v1_t` to
/// `_v6_t` all name (nccl_profiler.h:76-81): a C enum, an open newtype. The values 0 to 18 are
/// v1's (numbered implicitly in NCCL 2.23-2.26), the later ones are noted with their version.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventState(pub c_int);

/// `ncclProfilerEventState_v1_t` (nccl_profiler.h:76).
pub type EventStateV1 = EventState;
/// `ncclProfilerEventState_v2_t` (nccl_profiler.h:77).
pub type EventStateV2 = EventState;
/// `ncclProfilerEventState_v3_t` (nccl_profiler.h:78).
pub type EventStateV3 = EventState;
/// `ncclProfilerEventState_v4_t` (nccl_profiler.h:79).
pub type EventStateV4 = EventState;
/// `ncclProfilerEventState_v5_t` (nccl_profiler.h:80).
pub type EventStateV5 = EventState;
/// `ncclProfilerEventState_v6_t` (nccl_profiler.h:81).
pub type EventStateV6 = EventState;

impl EventState {
    /// `ncclProfilerProxyOpSendPosted` (nccl_profiler.h:31; not sent from v4 on).
    pub const PROXY_OP_SEND_POSTED: Self = Self(0);
    /// `ncclProfilerProxyOpSendRemFifoWait` (nccl_profiler.h:32; not sent from v4 on).
    pub const PROXY_OP_SEND_REM_FIFO_WAIT: Self = Self(1);
    /// `ncclProfilerProxyOpSendTransmitted` (nccl_profiler.h:33; not sent from v4 on).
    pub const PROXY_OP_SEND_TRANSMITTED: Self = Self(2);
    /// `ncclProfilerProxyOpSendDone` (nccl_profiler.h:34; not sent from v4 on).
    pub const PROXY_OP_SEND_DONE: Self = Self(3);
    /// `ncclProfilerProxyOpRecvPosted` (nccl_profiler.h:35; not sent from v4 on).
    pub const PROXY_OP_RECV_POSTED: Self = Self(4);
    /// `ncclProfilerProxyOpRecvReceived` (nccl_profiler.h:36; not sent from v4 on).
    pub const PROXY_OP_RECV_RECEIVED: Self = Self(5);
    /// `ncclProfilerProxyOpRecvTransmitted` (nccl_profiler.h:37; not sent from v4 on).
    pub const PROXY_OP_RECV_TRANSMITTED: Self = Self(6);
    /// `ncclProfilerProxyOpRecvDone` (nccl_profiler.h:38; not sent from v4 on).
    pub const PROXY_OP_RECV_DONE: Self = Self(7);
    /// `ncclProfilerProxyOpInProgress_v4` (nccl_profiler.h:39), v4 on.
    pub const PROXY_OP_IN_PROGRESS_V4: Self = Self(19);
    /// `ncclProfilerProxyStepSendGPUWait` (nccl_profiler.h:42).
    pub const PROXY_STEP_SEND_GPU_WAIT: Self = Self(8);
    /// `ncclProfilerProxyStepSendPeerWait_v4` (nccl_profiler.h:43), v4 on.
    pub const PROXY_STEP_SEND_PEER_WAIT_V4: Self = Self(20);
    /// `ncclProfilerProxyStepSendWait` (nccl_profiler.h:44).
    pub const PROXY_STEP_SEND_WAIT: Self = Self(9);
    /// `ncclProfilerProxyStepRecvWait` (nccl_profiler.h:45).
    pub const PROXY_STEP_RECV_WAIT: Self = Self(10);
    /// `ncclProfilerProxyStepRecvFlushWait` (nccl_profiler.h:46).
    pub const PROXY_STEP_RECV_FLUSH_WAIT: Self = Self(11);
    /// `ncclProfilerProxyStepRecvGPUWait` (nccl_profiler.h:47).
    pub const PROXY_STEP_RECV_GPU_WAIT: Self = Self(12);
    /// `ncclProfilerProxyCtrlIdle` (nccl_profiler.h:50).
    pub const PROXY_CTRL_IDLE: Self = Self(13);
    /// `ncclProfilerProxyCtrlActive` (nccl_profiler.h:51).
    pub const PROXY_CTRL_ACTIVE: Self = Self(14);
    /// `ncclProfilerProxyCtrlSleep` (nccl_profiler.h:52).
    pub const PROXY_CTRL_SLEEP: Self = Self(15);
    /// `ncclProfilerProxyCtrlWakeup` (nccl_profiler.h:53).
    pub const PROXY_CTRL_WAKEUP: Self = Self(16);
    /// `ncclProfilerProxyCtrlAppend` (nccl_profiler.h:54).
    pub const PROXY_CTRL_APPEND: Self = Self(17);
    /// `ncclProfilerProxyCtrlAppendEnd` (nccl_profiler.h:55).
    pub const PROXY_CTRL_APPEND_END: Self = Self(18);
    /// `ncclProfilerNetPluginUpdate` (nccl_profiler.h:58), v4 on.
    pub const NET_PLUGIN_UPDATE: Self = Self(21);
    /// `ncclProfilerKernelChStop` (nccl_profiler.h:61), v4 on.
    pub const KERNEL_CH_STOP: Self = Self(22);
    /// `ncclProfilerGroupStartApiStop` (nccl_profiler.h:64), v5 on.
    pub const GROUP_START_API_STOP: Self = Self(23);
    /// `ncclProfilerGroupEndApiStart` (nccl_profiler.h:65), v5 on.
    pub const GROUP_END_API_START: Self = Self(24);
    /// `ncclProfilerCeCollStart` (nccl_profiler.h:68), v6.
    pub const CE_COLL_START: Self = Self(25);
    /// `ncclProfilerCeCollComplete` (nccl_profiler.h:69), v6.
    pub const CE_COLL_COMPLETE: Self = Self(26);
    /// `ncclProfilerCeSyncStart` (nccl_profiler.h:70), v6.
    pub const CE_SYNC_START: Self = Self(27);
    /// `ncclProfilerCeSyncComplete` (nccl_profiler.h:71), v6.
    pub const CE_SYNC_COMPLETE: Self = Self(28);
    /// `ncclProfilerCeBatchStart` (nccl_profiler.h:72), v6.
    pub const CE_BATCH_START: Self = Self(29);
    /// `ncclProfilerCeBatchComplete` (nccl_profiler.h:73), v6.
    pub const CE_BATCH_COMPLETE: Self = Self(30);
}

// SAFETY: a transparent i32 (a C enum), passed as `int`: its word is the i32's.
unsafe impl CArg for EventState {
    fn c_type() -> Type {
        Type::I32
    }
    #[inline(always)]
    fn word(&self) -> u64 {
        self.0.word()
    }
}

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

/// `ncclProfilerEventStateArgs_v2_t` (profiler_v2.h:58-67): declared as v1's.
pub type EventStateArgsV2 = EventStateArgsV1;
/// `ncclProfilerEventStateArgs_v3_t` (profiler_v3.h:66-75): declared as v1's.
pub type EventStateArgsV3 = EventStateArgsV1;
/// `ncclProfilerEventStateArgs_v5_t` (profiler_v5.h:92-108): declared as v4's.
pub type EventStateArgsV5 = EventStateArgsV4;
/// `ncclProfilerEventStateArgs_v6_t` (profiler_v6.h:126: a typedef of v5's).
pub type EventStateArgsV6 = EventStateArgsV4;

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
