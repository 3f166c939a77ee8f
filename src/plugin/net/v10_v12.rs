//! The network tables v10 to v12 (loaded from NCCL 2.26.2, 2.28.3 and 2.30.3 on) and the structs
//! they pass: the properties, virtual devices, communicator configurations and attributes.

use core::ffi::{c_char, c_int, c_void};

use super::v6_v9::NetDeviceHandleV7;
use super::{MAX_DEVS_PER_NIC_V11, MAX_DEVS_PER_NIC_V12};
use crate::plugin::common::{DebugLogger, NcclResult, ProfilerCallback};
use crate::plugin::declare::{plugin_struct, plugin_table};

plugin_struct! {
    /// `ncclNetVDeviceProps_v10_t` (net_v10.h:11-14), v9's shape.
    pub struct NetVDevicePropsV10 = "ncclNetVDeviceProps_v10_t" {
        /// How many of `devs` count.
        pub ndevs: c_int,
        /// Physical device indices.
        pub devs: [c_int; MAX_DEVS_PER_NIC_V11],
    }

    /// `ncclNetCommConfig_v10_t` (net_v10.h:18-21): what a communicator asks of its connections.
    pub struct NetCommConfigV10 = "ncclNetCommConfig_v10_t" {
        /// A plugin-specific traffic class, or `TRAFFIC_CLASS_UNDEF`.
        pub trafficClass: c_int,
    }

    /// `ncclNetProperties_v10_t` (net_v10.h:23-41), v9's shape.
    pub struct NetPropertiesV10 = "ncclNetProperties_v10_t" {
        /// The device's name, for logs.
        pub name: *mut c_char,
        /// Its PCI path in /sys.
        pub pciPath: *mut c_char,
        /// The NIC chip's unique id.
        pub guid: u64,
        /// `PTR_HOST | PTR_CUDA | PTR_DMABUF`.
        pub ptrSupport: c_int,
        /// Non-zero when a registration is not tied to one comm.
        pub regIsGlobal: c_int,
        /// Non-zero: NCCL flushes every receive.
        pub forceFlush: c_int,
        /// Port speed in Mbps.
        pub speed: c_int,
        /// Port number.
        pub port: c_int,
        /// Latency in µs.
        pub latency: f32,
        /// The most comms it can create.
        pub maxComms: c_int,
        /// The most receives grouped in one `irecv`.
        pub maxRecvs: c_int,
        /// `ncclNetDeviceType`.
        pub netDeviceType: c_int,
        /// Version of the offload.
        pub netDeviceVersion: c_int,
        /// The physical devices behind this one.
        pub vProps: NetVDevicePropsV10,
        /// The largest point-to-point transfer.
        pub maxP2pBytes: usize,
        /// The largest collective transfer.
        pub maxCollBytes: usize,
    }

    /// `ncclNetVDeviceProps_v11_t` (net_v11.h:13-16), v9's shape.
    pub struct NetVDevicePropsV11 = "ncclNetVDeviceProps_v11_t" {
        /// How many of `devs` count.
        pub ndevs: c_int,
        /// Physical device indices.
        pub devs: [c_int; MAX_DEVS_PER_NIC_V11],
    }

    /// `ncclNetCommConfig_v11_t` (net_v11.h:20-23), v10's shape; passed to `init` from v11.
    pub struct NetCommConfigV11 = "ncclNetCommConfig_v11_t" {
        /// A plugin-specific traffic class, or `TRAFFIC_CLASS_UNDEF`.
        pub trafficClass: c_int,
    }

    /// `ncclNetProperties_v11_t` (net_v11.h:25-44): v10's and `maxMultiRequestSize`.
    pub struct NetPropertiesV11 = "ncclNetProperties_v11_t" {
        /// The device's name, for logs.
        pub name: *mut c_char,
        /// Its PCI path in /sys.
        pub pciPath: *mut c_char,
        /// The NIC chip's unique id.
        pub guid: u64,
        /// `PTR_HOST | PTR_CUDA | PTR_DMABUF`.
        pub ptrSupport: c_int,
        /// Non-zero when a registration is not tied to one comm.
        pub regIsGlobal: c_int,
        /// Non-zero: NCCL flushes every receive.
        pub forceFlush: c_int,
        /// Port speed in Mbps.
        pub speed: c_int,
        /// Port number.
        pub port: c_int,
        /// Latency in µs.
        pub latency: f32,
        /// The most comms it can create.
        pub maxComms: c_int,
        /// The most receives grouped in one `irecv`.
        pub maxRecvs: c_int,
        /// `ncclNetDeviceType`.
        pub netDeviceType: c_int,
        /// Version of the offload.
        pub netDeviceVersion: c_int,
        /// The physical devices behind this one.
        pub vProps: NetVDevicePropsV11,
        /// The largest point-to-point transfer.
        pub maxP2pBytes: usize,
        /// The largest collective transfer.
        pub maxCollBytes: usize,
        /// The most requests in one multi-request.
        pub maxMultiRequestSize: c_int,
    }

    /// `ncclNetCommAttr_v11_t` (net_v11.h:57-62): the peers and flows one side of a
    /// communicator will use; `ATTR_UNDEF` where unknown.
    pub struct NetCommAttrV11 = "ncclNetCommAttr_v11_t" {
        /// The most peers at once.
        pub maxConcurrentPeers: i32,
        /// The fewest peers at once.
        pub minConcurrentPeers: i32,
        /// The most flows per peer.
        pub maxFlowsPerPeer: i32,
        /// The fewest flows per peer.
        pub minFlowsPerPeer: i32,
    }

    /// `ncclNetAttr_v11_t` (net_v11.h:64-70): the hints `setNetAttr` passes.
    pub struct NetAttrV11 = "ncclNetAttr_v11_t" {
        /// The sending side's.
        pub sendCommAttr: NetCommAttrV11,
        /// The receiving side's.
        pub recvCommAttr: NetCommAttrV11,
        /// Bit mask of `ncclFunc_t`s.
        pub op: u32,
        /// Bit mask of algorithms.
        pub algo: u32,
        /// Bit mask of protocols.
        pub proto: u32,
    }

    /// `ncclNetVDeviceProps_v12_t` (net_v12.h:13-16): up to `MAX_DEVS_PER_NIC_V12` devices.
    pub struct NetVDevicePropsV12 = "ncclNetVDeviceProps_v12_t" {
        /// How many of `devs` count.
        pub ndevs: c_int,
        /// Physical device indices.
        pub devs: [c_int; MAX_DEVS_PER_NIC_V12],
    }

    /// `ncclNetCommConfig_v12_t` (net_v12.h:20-23), v10's shape.
    pub struct NetCommConfigV12 = "ncclNetCommConfig_v12_t" {
        /// A plugin-specific traffic class, or `TRAFFIC_CLASS_UNDEF`.
        pub trafficClass: c_int,
    }

    /// `ncclNetProperties_v12_t` (net_v12.h:25-46): v11's, a larger `vProps`, rail and plane.
    pub struct NetPropertiesV12 = "ncclNetProperties_v12_t" {
        /// The device's name, for logs.
        pub name: *mut c_char,
        /// Its PCI path in /sys.
        pub pciPath: *mut c_char,
        /// The NIC chip's unique id.
        pub guid: u64,
        /// `PTR_HOST | PTR_CUDA | PTR_DMABUF`.
        pub ptrSupport: c_int,
        /// Non-zero when a registration is not tied to one comm.
        pub regIsGlobal: c_int,
        /// Non-zero: NCCL flushes every receive.
        pub forceFlush: c_int,
        /// Port speed in Mbps.
        pub speed: c_int,
        /// Port number.
        pub port: c_int,
        /// Latency in µs.
        pub latency: f32,
        /// The most comms it can create.
        pub maxComms: c_int,
        /// The most receives grouped in one `irecv`.
        pub maxRecvs: c_int,
        /// `ncclNetDeviceType`.
        pub netDeviceType: c_int,
        /// Version of the offload.
        pub netDeviceVersion: c_int,
        /// The physical devices behind this one.
        pub vProps: NetVDevicePropsV12,
        /// The largest point-to-point transfer.
        pub maxP2pBytes: usize,
        /// The largest collective transfer.
        pub maxCollBytes: usize,
        /// The most requests in one multi-request.
        pub maxMultiRequestSize: c_int,
        /// The device's rail, or `ID_UNDEF`.
        pub railId: i16,
        /// The device's plane, or `ID_UNDEF`.
        pub planeId: i16,
    }

    /// `ncclNetCommAttr_v12_t` (net_v12.h:61-66), v11's shape.
    pub struct NetCommAttrV12 = "ncclNetCommAttr_v12_t" {
        /// The most peers at once.
        pub maxConcurrentPeers: i32,
        /// The fewest peers at once.
        pub minConcurrentPeers: i32,
        /// The most flows per peer.
        pub maxFlowsPerPeer: i32,
        /// The fewest flows per peer.
        pub minFlowsPerPeer: i32,
    }

    /// `ncclNetAttr_v12_t` (net_v12.h:68-74), v11's shape.
    pub struct NetAttrV12 = "ncclNetAttr_v12_t" {
        /// The sending side's.
        pub sendCommAttr: NetCommAttrV12,
        /// The receiving side's.
        pub recvCommAttr: NetCommAttrV12,
        /// Bit mask of `ncclFunc_t`s.
        pub op: u32,
        /// Bit mask of algorithms.
        pub algo: u32,
        /// Bit mask of protocols.
        pub proto: u32,
    }
}

plugin_table! {
    /// `ncclNet_v10_t` (net_v10.h:43-102); NCCL 2.26.2 to 2.30.7 load it. v9's with the
    /// profiler callback, a comm config on `connect` and profiler handles on transfers.
    pub struct NetV10 = "ncclNet_v10_t", symbol "ncclNetPlugin_v10", calls NetV10Calls {
        /// Initialises the network with NCCL's logger and profiler callback.
        init: required fn(logFunction: DebugLogger, profFunction: ProfilerCallback) -> NcclResult,
        /// The number of devices.
        devices: required fn(ndev: *mut c_int) -> NcclResult,
        /// A device's properties.
        getProperties: required fn(dev: c_int, props: *mut NetPropertiesV10) -> NcclResult,
        /// Creates a receiving object; writes the handle (at most `HANDLE_MAXSIZE` bytes) the
        /// peer connects with.
        listen: required fn(dev: c_int, handle: *mut c_void, listenComm: *mut *mut c_void) -> NcclResult,
        /// Connects to a handle with the communicator's config; non-blocking: success with a
        /// NULL `sendComm` means "call again".
        connect: required fn(dev: c_int, config: *mut NetCommConfigV10, handle: *mut c_void, sendComm: *mut *mut c_void, sendDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Accepts a connection; non-blocking as `connect`.
        accept: required fn(listenComm: *mut c_void, recvComm: *mut *mut c_void, recvDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Registers memory; `type` is `PTR_HOST` or `PTR_CUDA`.
        regMr: required fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Registers DMA-BUF memory; NULL: none (NCCL checks, init.cc:403).
        regMrDmaBuf: optional fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, offset: u64, fd: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Deregisters memory.
        deregMr: required fn(comm: *mut c_void, mhandle: *mut c_void) -> NcclResult,
        /// Starts a send (`phandle`: the profiler's); a NULL `request` means "call again".
        isend: required fn(sendComm: *mut c_void, data: *mut c_void, size: usize, tag: c_int, mhandle: *mut c_void, phandle: *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Starts `n` grouped receives; a NULL `request` means "call again"; `*request` may come
        /// in as `OPTIONAL_RECV_COMPLETION`.
        irecv: required fn(recvComm: *mut c_void, n: c_int, data: *mut *mut c_void, sizes: *mut usize, tags: *mut c_int, mhandles: *mut *mut c_void, phandles: *mut *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Makes received device data visible to the GPU.
        iflush: required fn(recvComm: *mut c_void, n: c_int, data: *mut *mut c_void, sizes: *mut c_int, mhandles: *mut *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Tests a request; `sizes` receives the sizes received.
        test: required fn(request: *mut c_void, done: *mut c_int, sizes: *mut c_int) -> NcclResult,
        /// Closes a send comm.
        closeSend: required fn(sendComm: *mut c_void) -> NcclResult,
        /// Closes a receive comm.
        closeRecv: required fn(recvComm: *mut c_void) -> NcclResult,
        /// Closes a listening comm.
        closeListen: required fn(listenComm: *mut c_void) -> NcclResult,
        /// The device-side handle of a registration, for offload (NCCL checks,
        /// transport/net.cc:1010, 1183).
        getDeviceMr: optional fn(comm: *mut c_void, mhandle: *mut c_void, dptr_mhandle: *mut *mut c_void) -> NcclResult,
        /// Tells the plugin the device consumed a receive (NCCL checks, transport/net.cc:1737).
        irecvConsumed: optional fn(recvComm: *mut c_void, n: c_int, request: *mut c_void) -> NcclResult,
        /// Makes a virtual device of `props` and writes its index (NCCL checks, net_v10.cc:105).
        makeVDevice: optional fn(d: *mut c_int, props: *mut NetVDevicePropsV10) -> NcclResult,
    }

    /// `ncclNet_v11_t` (net_v11.h:72-135); NCCL 2.28.3 to 2.30.7 load it. v10's with a
    /// context per communicator (`init` once per comm, `finalize`) and `setNetAttr`.
    pub struct NetV11 = "ncclNet_v11_t", symbol "ncclNetPlugin_v11", calls NetV11Calls {
        /// Initialises the network for one communicator: writes its context `ctx`.
        init: required fn(ctx: *mut *mut c_void, commId: u64, config: *mut NetCommConfigV11, logFunction: DebugLogger, profFunction: ProfilerCallback) -> NcclResult,
        /// The number of devices.
        devices: required fn(ndev: *mut c_int) -> NcclResult,
        /// A device's properties.
        getProperties: required fn(dev: c_int, props: *mut NetPropertiesV11) -> NcclResult,
        /// Creates a receiving object; writes the handle (at most `HANDLE_MAXSIZE` bytes) the
        /// peer connects with.
        listen: required fn(ctx: *mut c_void, dev: c_int, handle: *mut c_void, listenComm: *mut *mut c_void) -> NcclResult,
        /// Connects to a handle; non-blocking: success with a NULL `sendComm` means "call again".
        connect: required fn(ctx: *mut c_void, dev: c_int, handle: *mut c_void, sendComm: *mut *mut c_void, sendDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Accepts a connection; non-blocking as `connect`.
        accept: required fn(listenComm: *mut c_void, recvComm: *mut *mut c_void, recvDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Registers memory; `type` is `PTR_HOST` or `PTR_CUDA`.
        regMr: required fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Registers DMA-BUF memory; NULL: none (NCCL checks, init.cc:403).
        regMrDmaBuf: optional fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, offset: u64, fd: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Deregisters memory.
        deregMr: required fn(comm: *mut c_void, mhandle: *mut c_void) -> NcclResult,
        /// Starts a send (`phandle`: the profiler's); a NULL `request` means "call again".
        isend: required fn(sendComm: *mut c_void, data: *mut c_void, size: usize, tag: c_int, mhandle: *mut c_void, phandle: *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Starts `n` grouped receives; a NULL `request` means "call again"; `*request` may come
        /// in as `OPTIONAL_RECV_COMPLETION`.
        irecv: required fn(recvComm: *mut c_void, n: c_int, data: *mut *mut c_void, sizes: *mut usize, tags: *mut c_int, mhandles: *mut *mut c_void, phandles: *mut *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Makes received device data visible to the GPU.
        iflush: required fn(recvComm: *mut c_void, n: c_int, data: *mut *mut c_void, sizes: *mut c_int, mhandles: *mut *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Tests a request; `sizes` receives the sizes received.
        test: required fn(request: *mut c_void, done: *mut c_int, sizes: *mut c_int) -> NcclResult,
        /// Closes a send comm.
        closeSend: required fn(sendComm: *mut c_void) -> NcclResult,
        /// Closes a receive comm.
        closeRecv: required fn(recvComm: *mut c_void) -> NcclResult,
        /// Closes a listening comm.
        closeListen: required fn(listenComm: *mut c_void) -> NcclResult,
        /// The device-side handle of a registration, for offload (NCCL checks,
        /// transport/net.cc:1010, 1183).
        getDeviceMr: optional fn(comm: *mut c_void, mhandle: *mut c_void, dptr_mhandle: *mut *mut c_void) -> NcclResult,
        /// Tells the plugin the device consumed a receive (NCCL checks, transport/net.cc:1737).
        irecvConsumed: optional fn(recvComm: *mut c_void, n: c_int, request: *mut c_void) -> NcclResult,
        /// Makes a virtual device of `props` and writes its index (NCCL checks, net_v11.cc:75).
        makeVDevice: optional fn(d: *mut c_int, props: *mut NetVDevicePropsV11) -> NcclResult,
        /// Ends the context `init` made (NCCL calls it unchecked, net_v11.cc:76,
        /// plugin/net.cc:309).
        finalize: required fn(ctx: *mut c_void) -> NcclResult,
        /// Hints at the coming transfers (NCCL checks, net_v11.cc:77, transport/net.cc:223, 253).
        setNetAttr: optional fn(ctx: *mut c_void, netAttr: *mut NetAttrV11) -> NcclResult,
    }

    /// `ncclNet_v12_t` (net_v12.h:76-139); NCCL 2.30.3 to 2.30.7 load it, and use it as
    /// their own table unchanged (net_v12.cc:15-22). v11's with up to `MAX_DEVS_PER_NIC_V12`
    /// devices per virtual device and rail and plane ids.
    pub struct NetV12 = "ncclNet_v12_t", symbol "ncclNetPlugin_v12", calls NetV12Calls {
        /// Initialises the network for one communicator: writes its context `ctx`.
        init: required fn(ctx: *mut *mut c_void, commId: u64, config: *mut NetCommConfigV12, logFunction: DebugLogger, profFunction: ProfilerCallback) -> NcclResult,
        /// The number of devices.
        devices: required fn(ndev: *mut c_int) -> NcclResult,
        /// A device's properties.
        getProperties: required fn(dev: c_int, props: *mut NetPropertiesV12) -> NcclResult,
        /// Creates a receiving object; writes the handle (at most `HANDLE_MAXSIZE` bytes) the
        /// peer connects with.
        listen: required fn(ctx: *mut c_void, dev: c_int, handle: *mut c_void, listenComm: *mut *mut c_void) -> NcclResult,
        /// Connects to a handle; non-blocking: success with a NULL `sendComm` means "call again".
        connect: required fn(ctx: *mut c_void, dev: c_int, handle: *mut c_void, sendComm: *mut *mut c_void, sendDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Accepts a connection; non-blocking as `connect`.
        accept: required fn(listenComm: *mut c_void, recvComm: *mut *mut c_void, recvDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Registers memory; `type` is `PTR_HOST` or `PTR_CUDA`.
        regMr: required fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Registers DMA-BUF memory; NULL: none (NCCL checks, init.cc:403).
        regMrDmaBuf: optional fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, offset: u64, fd: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Deregisters memory.
        deregMr: required fn(comm: *mut c_void, mhandle: *mut c_void) -> NcclResult,
        /// Starts a send (`phandle`: the profiler's); a NULL `request` means "call again".
        isend: required fn(sendComm: *mut c_void, data: *mut c_void, size: usize, tag: c_int, mhandle: *mut c_void, phandle: *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Starts `n` grouped receives; a NULL `request` means "call again"; `*request` may come
        /// in as `OPTIONAL_RECV_COMPLETION`.
        irecv: required fn(recvComm: *mut c_void, n: c_int, data: *mut *mut c_void, sizes: *mut usize, tags: *mut c_int, mhandles: *mut *mut c_void, phandles: *mut *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Makes received device data visible to the GPU.
        iflush: required fn(recvComm: *mut c_void, n: c_int, data: *mut *mut c_void, sizes: *mut c_int, mhandles: *mut *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Tests a request; `sizes` receives the sizes received.
        test: required fn(request: *mut c_void, done: *mut c_int, sizes: *mut c_int) -> NcclResult,
        /// Closes a send comm.
        closeSend: required fn(sendComm: *mut c_void) -> NcclResult,
        /// Closes a receive comm.
        closeRecv: required fn(recvComm: *mut c_void) -> NcclResult,
        /// Closes a listening comm.
        closeListen: required fn(listenComm: *mut c_void) -> NcclResult,
        /// The device-side handle of a registration, for offload (NCCL checks,
        /// transport/net.cc:1010, 1183).
        getDeviceMr: optional fn(comm: *mut c_void, mhandle: *mut c_void, dptr_mhandle: *mut *mut c_void) -> NcclResult,
        /// Tells the plugin the device consumed a receive (NCCL checks, transport/net.cc:1737).
        irecvConsumed: optional fn(recvComm: *mut c_void, n: c_int, request: *mut c_void) -> NcclResult,
        /// Makes a virtual device of `props` and writes its index (NCCL checks,
        /// graph/topo.cc:1710).
        makeVDevice: optional fn(d: *mut c_int, props: *mut NetVDevicePropsV12) -> NcclResult,
        /// Ends the context `init` made (NCCL calls it unchecked, plugin/net.cc:309).
        finalize: required fn(ctx: *mut c_void) -> NcclResult,
        /// Hints at the coming transfers (NCCL checks, transport/net.cc:223, 253).
        setNetAttr: optional fn(ctx: *mut c_void, netAttr: *mut NetAttrV12) -> NcclResult,
    }
}
