//! The profiler's event types (the `PROFILE_*` bits of an activation mask) and event states,
//! which every table version shares.

use core::ffi::c_int;

use crate::ctype::types::Type;
use crate::engine::typed::CArg;

/// `ncclPid_t` (v2.30.7-1 src/include/os/linux.h:34: `pid_t`, an `int` on Linux), the
/// `pid` of a proxy operation's descriptor.
pub type Pid = c_int;

/// `ncclProfileGroup` (nccl_profiler.h:12), v1 on: a group of NCCL operations.
pub const PROFILE_GROUP: c_int = 1 << 0;

/// The event types of an activation mask, by NCCL's names (`Group|Coll|...`), `none` for 0;
/// unknown bits as a number.
pub fn event_names(mask: c_int) -> String {
    const NAMES: [&str; 15] = [
        "Group",
        "Coll",
        "P2p",
        "ProxyOp",
        "ProxyStep",
        "ProxyCtrl",
        "KernelCh",
        "NetPlugin",
        "GroupApi",
        "CollApi",
        "P2pApi",
        "KernelLaunch",
        "CeColl",
        "CeSync",
        "CeBatch",
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
