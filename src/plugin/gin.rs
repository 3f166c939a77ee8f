//! The GPU-initiated networking family (GIN: `libnccl-gin*.so`, or a network plugin that also
//! exports it; symbol `ncclGinPlugin_vN`): the plugin behind the device API's one-sided puts
//! and signals. Both versions NCCL 2.30.7–2.32 load, v13 and v14, transcribed from NCCL
//! v2.30.7-1 `src/include/plugin/gin/gin_v<N>.h` and src/include/plugin/nccl_gin.h, with the
//! network types they use (src/include/plugin/net/net_v12.h, src/include/nccl_device/net_device.h).
//!
//! Which releases search which symbol (the `dlsym` names in `src/plugin/gin/gin_v<N>.cc` per tag;
//! 2.32.3's `libnccl.so.2` strings): v13 from 2.30.3, v14 from 2.30.7, both still in 2.32.3
//! (2.28.7 to 2.30.4 also searched v11 and v12, not declared here); NCCL tries v14 first
//! (v2.30.7-1 src/plugin/gin.cc:24-26, 79-83). NCCL initialises every plugin it loads for each
//! communicator (src/plugin/gin.cc:106-131), keeps the first whose devices' type suits
//! (src/plugin/gin.cc:133-174), and connects it when the communicator asks for GIN
//! (src/gin/gin_host.cc).

use core::ffi::{c_int, c_void};

use crate::plugin::common::{DebugLogger, NcclResult};
use crate::plugin::declare::{plugin_struct, plugin_table};
use crate::plugin::net::{NetDeviceHandleV7, NetPropertiesV12};

/// `NCCL_GIN_HANDLE_MAXSIZE` (nccl_gin.h:16).
pub const HANDLE_MAXSIZE: usize = 128;
/// `NCCL_GIN_SIGNAL_OP_INC` (nccl_gin.h:24): a signal's `signalOp` that increments.
pub const SIGNAL_OP_INC: u32 = 0x1;
/// `NCCL_GIN_SIGNAL_OP_ADD` (nccl_gin.h:25): a signal's `signalOp` that adds `signalValue`.
pub const SIGNAL_OP_ADD: u32 = 0x2;
/// `NCCL_NET_MR_FLAG_FORCE_SO` (src/include/plugin/nccl_net.h:29): `regMrSym`'s `mrFlags` bit
/// for strict ordering.
pub const MR_FLAG_FORCE_SO: u64 = 1 << 0;
/// `NCCL_NET_DEVICE_GIN_PROXY` (net_device.h:21): the `netDeviceType` of a GIN plugin whose
/// operations a CPU proxy carries out.
pub const NET_DEVICE_GIN_PROXY: c_int = 2;
/// `NCCL_NET_DEVICE_GIN_GDAKI` (net_device.h:22): the GPU drives the NIC directly.
pub const NET_DEVICE_GIN_GDAKI: c_int = 3;
/// `NCCL_NET_DEVICE_GIN_GPI` (net_device.h:23).
pub const NET_DEVICE_GIN_GPI: c_int = 4;

/// `ncclNetDeviceHandle_v11_t`, what `createContext` hands back: the v7 handle under its v11
/// name (net_device.h:34-37).
pub type NetDeviceHandleV11 = NetDeviceHandleV7;

plugin_struct! {
    /// `ncclGinConfig_v13_t` (gin_v13.h:12-18): what `createContext` is asked for. NCCL fills
    /// it from v14's (v2.30.7-1 src/plugin/gin/gin_v13.cc:22-32).
    pub struct GinConfigV13 = "ncclGinConfig_v13_t" {
        /// Signals to allocate.
        pub nSignals: c_int,
        /// Counters to allocate.
        pub nCounters: c_int,
        /// Contexts (queues) to create.
        pub nContexts: c_int,
        /// The depth of each queue.
        pub queueDepth: c_int,
        /// The network traffic class.
        pub trafficClass: c_int,
    }

    /// `ncclGinProperties_v14_t` (gin_v14.h:12-15): what `getGinProperties` reports. For a v13
    /// plugin NCCL assumes both (src/plugin/gin/gin_v13.cc:16-20).
    pub struct GinPropertiesV14 = "ncclGinProperties_v14_t" {
        /// The plugin supports strong signals.
        pub supportsStrongSignals: bool,
        /// The plugin supports signals at virtual addresses.
        pub supportsVASignals: bool,
    }

    /// `ncclGinConfig_v14_t` (gin_v14.h:17-25): v13's and two fields (src/gin/gin_host.cc:265-275
    /// fills it).
    pub struct GinConfigV14 = "ncclGinConfig_v14_t" {
        /// Signals to allocate.
        pub nSignals: c_int,
        /// Counters to allocate.
        pub nCounters: c_int,
        /// Contexts (queues) to create.
        pub nContexts: c_int,
        /// The depth of each queue.
        pub queueDepth: c_int,
        /// The network traffic class.
        pub trafficClass: c_int,
        /// Which backend version the device code speaks (an index, src/gin/gin_host.cc:251-261).
        pub backendVersion: c_int,
        /// The stride between the ranks of one rail: 1, or the LSA team size for rail
        /// connections over full ones (src/gin/gin_host.cc:272-274).
        pub rankStride: c_int,
    }
}

plugin_table! {
    /// `ncclGin_v13_t` (gin_v13.h:20-73); NCCL 2.30.3 to 2.32 load it. NCCL 2.30.7 copies the
    /// entries it uses into its v14 table and adds its own `getGinProperties` and
    /// `createContext` (v2.30.7-1 src/plugin/gin/gin_v13.cc:34-58); the data-path entries
    /// (`iput` .. `test`) it does not copy, so 2.30.7 never calls them — 2.30.3 and 2.30.4,
    /// whose own table v13 was, called them from their GIN proxy (v2.30.4-1
    /// src/gin/gin_host_proxy.cc:239-305, src/rma/rma_proxy_progress.cc:22-96). Which entries
    /// NCCL calls unchecked: as for [`GinV14`].
    pub struct GinV13 = "ncclGin_v13_t", symbol "ncclGinPlugin_v13", calls GinV13Calls {
        /// As v14's.
        init: required fn(ctx: *mut *mut c_void, commId: u64, logFunction: DebugLogger) -> NcclResult,
        /// As v14's.
        devices: required fn(ndev: *mut c_int) -> NcclResult,
        /// As v14's.
        getProperties: required fn(dev: c_int, props: *mut NetPropertiesV12) -> NcclResult,
        /// As v14's.
        listen: required fn(ctx: *mut c_void, dev: c_int, handle: *mut c_void, listenComm: *mut *mut c_void) -> NcclResult,
        /// As v14's.
        connect: required fn(ctx: *mut c_void, handles: *mut *mut c_void, nranks: c_int, rank: c_int, listenComm: *mut c_void, collComm: *mut *mut c_void) -> NcclResult,
        /// As v14's, with v13's config (called through NCCL's adapter, gin_v13.cc:31).
        createContext: required fn(collComm: *mut c_void, config: *mut GinConfigV13, ginCtx: *mut *mut c_void, devHandle: *mut *mut NetDeviceHandleV11) -> NcclResult,
        /// As v14's.
        regMrSym: required fn(collComm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, mrFlags: u64, mhandle: *mut *mut c_void, ginHandle: *mut *mut c_void) -> NcclResult,
        /// As v14's.
        regMrSymDmaBuf: optional fn(collComm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, offset: u64, fd: c_int, mrFlags: u64, mhandle: *mut *mut c_void, ginHandle: *mut *mut c_void) -> NcclResult,
        /// As v14's.
        deregMrSym: required fn(collComm: *mut c_void, mhandle: *mut c_void) -> NcclResult,
        /// As v14's.
        destroyContext: required fn(ginCtx: *mut c_void) -> NcclResult,
        /// As v14's.
        closeColl: required fn(collComm: *mut c_void) -> NcclResult,
        /// As v14's.
        closeListen: required fn(listenComm: *mut c_void) -> NcclResult,
        /// Puts `size` bytes from `srcOff` of one registration to `dstOff` of `rank`'s; not
        /// called by NCCL 2.30.7 (above).
        iput: optional fn(ginCtx: *mut c_void, context: c_int, srcOff: u64, srcMhandle: *mut c_void, size: usize, dstOff: u64, dstMhandle: *mut c_void, rank: u32, request: *mut *mut c_void) -> NcclResult,
        /// A put followed by a signal (`signalOp`: [`SIGNAL_OP_INC`], [`SIGNAL_OP_ADD`]); not
        /// called by NCCL 2.30.7.
        iputSignal: optional fn(ginCtx: *mut c_void, context: c_int, srcOff: u64, srcMhandle: *mut c_void, size: usize, dstOff: u64, dstMhandle: *mut c_void, rank: u32, signalOff: u64, signalMhandle: *mut c_void, signalValue: u64, signalOp: u32, request: *mut *mut c_void) -> NcclResult,
        /// Gets `size` bytes of `rank`'s registration; not called by NCCL 2.30.7.
        iget: optional fn(ginCtx: *mut c_void, context: c_int, remoteOff: u64, remoteMhandle: *mut c_void, size: usize, localOff: u64, localMhandle: *mut c_void, rank: u32, request: *mut *mut c_void) -> NcclResult,
        /// Flushes the operations to `rank`; not called by NCCL 2.30.7.
        iflush: optional fn(ginCtx: *mut c_void, context: c_int, mhandle: *mut c_void, rank: u32, request: *mut *mut c_void) -> NcclResult,
        /// Tests a request; not called by NCCL 2.30.7.
        test: optional fn(collComm: *mut c_void, request: *mut c_void, done: *mut c_int) -> NcclResult,
        /// As v14's.
        ginProgress: optional fn(ginCtx: *mut c_void) -> NcclResult,
        /// As v14's.
        queryLastError: required fn(ginCtx: *mut c_void, hasError: *mut bool) -> NcclResult,
        /// As v14's.
        finalize: required fn(ctx: *mut c_void) -> NcclResult,
    }

    /// `ncclGin_v14_t` (gin_v14.h:27-67); NCCL 2.30.7 to 2.32 load it, and use it as their own
    /// table (v2.30.7-1 src/plugin/gin/gin_v14.cc:14-21). Lines below: v2.30.7-1
    /// src/plugin/gin.cc and src/gin/gin_host.cc.
    pub struct GinV14 = "ncclGin_v14_t", symbol "ncclGinPlugin_v14", calls GinV14Calls {
        /// Initialises the plugin for the communicator `commId`, writing its context to `*ctx`.
        /// NCCL checks it for NULL, but a NULL or failing `init` disables the plugin
        /// (gin.cc:110-117): a table without it is never used.
        init: required fn(ctx: *mut *mut c_void, commId: u64, logFunction: DebugLogger) -> NcclResult,
        /// The number of GIN-capable devices; none disables the plugin (gin.cc:119-125,
        /// gin_host.cc:100).
        devices: required fn(ndev: *mut c_int) -> NcclResult,
        /// The plugin's GIN properties (gin.cc:166-169).
        getGinProperties: required fn(ginProps: *mut GinPropertiesV14) -> NcclResult,
        /// A device's properties (gin.cc:139, gin_host.cc:163).
        getProperties: required fn(dev: c_int, props: *mut NetPropertiesV12) -> NcclResult,
        /// Creates a listening object on `dev` and writes its handle (at most
        /// [`HANDLE_MAXSIZE`] bytes), which every rank receives (gin_host.cc:159).
        listen: required fn(ctx: *mut c_void, dev: c_int, handle: *mut c_void, listenComm: *mut *mut c_void) -> NcclResult,
        /// Connects the `nranks` handles into one collective comm, this rank being `rank`
        /// (gin_host.cc:167).
        connect: required fn(ctx: *mut c_void, handles: *mut *mut c_void, nranks: c_int, rank: c_int, listenComm: *mut c_void, collComm: *mut *mut c_void) -> NcclResult,
        /// Creates a device-side context; `*devHandle` goes to the device code, and its
        /// `needsProxyProgress` asks for `ginProgress` (gin_host.cc:278-299).
        createContext: required fn(collComm: *mut c_void, config: *mut GinConfigV14, ginCtx: *mut *mut c_void, devHandle: *mut *mut NetDeviceHandleV11) -> NcclResult,
        /// Registers `size` bytes at `data` on every rank at once (a window; `kind` is
        /// `NCCL_PTR_HOST` or `NCCL_PTR_CUDA`); writes the host handle and the device handle
        /// (gin_host.cc:390).
        regMrSym: required fn(collComm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, mrFlags: u64, mhandle: *mut *mut c_void, ginHandle: *mut *mut c_void) -> NcclResult,
        /// `regMrSym` of DMA-BUF memory. NCCL's GIN code never calls it (its own proxy
        /// table leaves it NULL, src/gin/gin_host_proxy.cc:657).
        regMrSymDmaBuf: optional fn(collComm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, offset: u64, fd: c_int, mrFlags: u64, mhandle: *mut *mut c_void, ginHandle: *mut *mut c_void) -> NcclResult,
        /// Deregisters a window (gin_host.cc:403).
        deregMrSym: required fn(collComm: *mut c_void, mhandle: *mut c_void) -> NcclResult,
        /// Frees a device-side context (gin_host.cc:316, 345).
        destroyContext: required fn(ginCtx: *mut c_void) -> NcclResult,
        /// Closes a collective comm (gin_host.cc:366).
        closeColl: required fn(collComm: *mut c_void) -> NcclResult,
        /// Closes a listening object (gin_host.cc:171).
        closeListen: required fn(listenComm: *mut c_void) -> NcclResult,
        /// Progresses a context from NCCL's GIN thread, which runs only when a context's
        /// device handle says `needsProxyProgress` (gin_host.cc:43-63, 291-299).
        ginProgress: optional fn(ginCtx: *mut c_void) -> NcclResult,
        /// Whether a context saw an error; asked by `ncclCommGetAsyncError` once GIN is
        /// connected (gin_host.cc:408-419, src/init.cc:3459-3472).
        queryLastError: required fn(ginCtx: *mut c_void, hasError: *mut bool) -> NcclResult,
        /// Finalises the plugin's context of a communicator (gin.cc:121, 260).
        finalize: required fn(ctx: *mut c_void) -> NcclResult,
    }
}

/// The layout of `ncclNetDeviceHandle_v11_t` (the v7 type under its v11 name).
const NET_DEVICE_HANDLE_V11: crate::plugin::CLayout =
    crate::plugin::CLayout { c_name: "ncclNetDeviceHandle_v11_t", ..NetDeviceHandleV7::LAYOUT };

/// Every layout of the family, for the layout test.
pub const LAYOUTS: &[crate::plugin::CLayout] = &[
    NET_DEVICE_HANDLE_V11,
    GinConfigV13::LAYOUT,
    GinPropertiesV14::LAYOUT,
    GinConfigV14::LAYOUT,
    GinV13::LAYOUT,
    GinV14::LAYOUT,
];
