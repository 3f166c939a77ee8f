//! The network tables v6 to v9 (loaded from NCCL 2.13.4, 2.19.1, 2.20.3 and 2.24.3 on) and the
//! structs they pass: the properties, v9's virtual devices and the device handle of v7 on.

use core::ffi::{c_char, c_int, c_void};

use super::MAX_DEVS_PER_NIC_V11;
use crate::plugin::common::{DebugLogger, NcclResult};
use crate::plugin::declare::{plugin_struct, plugin_table};

plugin_struct! {
    /// `ncclNetDeviceHandle_v7_t`, also v8 to v12 (net_device.h:26-38): what `connect` and
    /// `accept` hand back for a network with device-side offload.
    pub struct NetDeviceHandleV7 = "ncclNetDeviceHandle_v7_t" {
        /// `ncclNetDeviceType`: 0 host (`NCCL_NET_DEVICE_HOST`), 1 unpack.
        pub netDeviceType: c_int,
        /// Version of the offload.
        pub netDeviceVersion: c_int,
        /// The offload's handle.
        pub handle: *mut c_void,
        /// Its size.
        pub size: usize,
        /// Whether the proxy must keep progressing it.
        pub needsProxyProgress: c_int,
    }

    /// `ncclNetProperties_v6_t` (net_v6.h:14-25).
    pub struct NetPropertiesV6 = "ncclNetProperties_v6_t" {
        /// The device's name, for logs.
        pub name: *mut c_char,
        /// Its PCI path in /sys.
        pub pciPath: *mut c_char,
        /// The NIC chip's unique id.
        pub guid: u64,
        /// `PTR_HOST | PTR_CUDA | PTR_DMABUF`.
        pub ptrSupport: c_int,
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
    }

    /// `ncclNetProperties_v7_t` (net_v7.h:11-24): v6's and the offload's type and version.
    pub struct NetPropertiesV7 = "ncclNetProperties_v7_t" {
        /// The device's name, for logs.
        pub name: *mut c_char,
        /// Its PCI path in /sys.
        pub pciPath: *mut c_char,
        /// The NIC chip's unique id.
        pub guid: u64,
        /// `PTR_HOST | PTR_CUDA | PTR_DMABUF`.
        pub ptrSupport: c_int,
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
    }

    /// `ncclNetProperties_v8_t` (net_v8.h:11-25): v7's and `regIsGlobal`.
    pub struct NetPropertiesV8 = "ncclNetProperties_v8_t" {
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
    }

    /// `ncclNetVDeviceProps_v9_t` (net_v9.h:11-14): the physical devices a virtual one merges.
    pub struct NetVDevicePropsV9 = "ncclNetVDeviceProps_v9_t" {
        /// How many of `devs` count.
        pub ndevs: c_int,
        /// Physical device indices.
        pub devs: [c_int; MAX_DEVS_PER_NIC_V11],
    }

    /// `ncclNetProperties_v9_t` (net_v9.h:16-34): v8's, `forceFlush`, the virtual device and
    /// the transfer limits.
    pub struct NetPropertiesV9 = "ncclNetProperties_v9_t" {
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
        pub vProps: NetVDevicePropsV9,
        /// The largest point-to-point transfer.
        pub maxP2pBytes: usize,
        /// The largest collective transfer.
        pub maxCollBytes: usize,
    }
}

plugin_table! {
    /// `ncclNet_v6_t` (net_v6.h:27-72); NCCL 2.13.4 to 2.30.7 load it. Without device offload.
    pub struct NetV6 = "ncclNet_v6_t", symbol "ncclNetPlugin_v6", calls NetV6Calls {
        /// Initialises the network with NCCL's logger.
        init: required fn(logFunction: DebugLogger) -> NcclResult,
        /// The number of devices.
        devices: required fn(ndev: *mut c_int) -> NcclResult,
        /// A device's properties.
        getProperties: required fn(dev: c_int, props: *mut NetPropertiesV6) -> NcclResult,
        /// Creates a receiving object; writes the handle (at most `HANDLE_MAXSIZE` bytes) the
        /// peer connects with.
        listen: required fn(dev: c_int, handle: *mut c_void, listenComm: *mut *mut c_void) -> NcclResult,
        /// Connects to a handle; non-blocking: success with a NULL `sendComm` means "call again".
        connect: required fn(dev: c_int, handle: *mut c_void, sendComm: *mut *mut c_void) -> NcclResult,
        /// Accepts a connection; non-blocking as `connect`.
        accept: required fn(listenComm: *mut c_void, recvComm: *mut *mut c_void) -> NcclResult,
        /// Registers memory; `type` is `PTR_HOST` or `PTR_CUDA`.
        regMr: required fn(comm: *mut c_void, data: *mut c_void, size: c_int, kind: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Registers DMA-BUF memory; NULL: none (NCCL checks, init.cc:403).
        regMrDmaBuf: optional fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, offset: u64, fd: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Deregisters memory.
        deregMr: required fn(comm: *mut c_void, mhandle: *mut c_void) -> NcclResult,
        /// Starts a send; a NULL `request` means "call again".
        isend: required fn(sendComm: *mut c_void, data: *mut c_void, size: c_int, tag: c_int, mhandle: *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Starts `n` grouped receives; a NULL `request` means "call again".
        irecv: required fn(recvComm: *mut c_void, n: c_int, data: *mut *mut c_void, sizes: *mut c_int, tags: *mut c_int, mhandles: *mut *mut c_void, request: *mut *mut c_void) -> NcclResult,
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
    }

    /// `ncclNet_v7_t` (net_v7.h:26-79); NCCL 2.19.1 to 2.30.7 load it. v6's with device
    /// offload.
    pub struct NetV7 = "ncclNet_v7_t", symbol "ncclNetPlugin_v7", calls NetV7Calls {
        /// Initialises the network with NCCL's logger.
        init: required fn(logFunction: DebugLogger) -> NcclResult,
        /// The number of devices.
        devices: required fn(ndev: *mut c_int) -> NcclResult,
        /// A device's properties.
        getProperties: required fn(dev: c_int, props: *mut NetPropertiesV7) -> NcclResult,
        /// Creates a receiving object; writes the handle (at most `HANDLE_MAXSIZE` bytes) the
        /// peer connects with.
        listen: required fn(dev: c_int, handle: *mut c_void, listenComm: *mut *mut c_void) -> NcclResult,
        /// Connects to a handle; non-blocking: success with a NULL `sendComm` means "call again".
        connect: required fn(dev: c_int, handle: *mut c_void, sendComm: *mut *mut c_void, sendDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Accepts a connection; non-blocking as `connect`.
        accept: required fn(listenComm: *mut c_void, recvComm: *mut *mut c_void, recvDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Registers memory; `type` is `PTR_HOST` or `PTR_CUDA`.
        regMr: required fn(comm: *mut c_void, data: *mut c_void, size: c_int, kind: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Registers DMA-BUF memory; NULL: none (NCCL checks, init.cc:403).
        regMrDmaBuf: optional fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, offset: u64, fd: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Deregisters memory.
        deregMr: required fn(comm: *mut c_void, mhandle: *mut c_void) -> NcclResult,
        /// Starts a send; a NULL `request` means "call again".
        isend: required fn(sendComm: *mut c_void, data: *mut c_void, size: c_int, tag: c_int, mhandle: *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Starts `n` grouped receives; a NULL `request` means "call again".
        irecv: required fn(recvComm: *mut c_void, n: c_int, data: *mut *mut c_void, sizes: *mut c_int, tags: *mut c_int, mhandles: *mut *mut c_void, request: *mut *mut c_void) -> NcclResult,
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
    }

    /// `ncclNet_v8_t` (net_v8.h:27-80); NCCL 2.20.3 to 2.30.7 load it. v7's with `size_t`
    /// registration sizes.
    pub struct NetV8 = "ncclNet_v8_t", symbol "ncclNetPlugin_v8", calls NetV8Calls {
        /// Initialises the network with NCCL's logger.
        init: required fn(logFunction: DebugLogger) -> NcclResult,
        /// The number of devices.
        devices: required fn(ndev: *mut c_int) -> NcclResult,
        /// A device's properties.
        getProperties: required fn(dev: c_int, props: *mut NetPropertiesV8) -> NcclResult,
        /// Creates a receiving object; writes the handle (at most `HANDLE_MAXSIZE` bytes) the
        /// peer connects with.
        listen: required fn(dev: c_int, handle: *mut c_void, listenComm: *mut *mut c_void) -> NcclResult,
        /// Connects to a handle; non-blocking: success with a NULL `sendComm` means "call again".
        connect: required fn(dev: c_int, handle: *mut c_void, sendComm: *mut *mut c_void, sendDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Accepts a connection; non-blocking as `connect`.
        accept: required fn(listenComm: *mut c_void, recvComm: *mut *mut c_void, recvDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Registers memory; `type` is `PTR_HOST` or `PTR_CUDA`.
        regMr: required fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Registers DMA-BUF memory; NULL: none (NCCL checks, init.cc:403).
        regMrDmaBuf: optional fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, offset: u64, fd: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Deregisters memory.
        deregMr: required fn(comm: *mut c_void, mhandle: *mut c_void) -> NcclResult,
        /// Starts a send; a NULL `request` means "call again".
        isend: required fn(sendComm: *mut c_void, data: *mut c_void, size: c_int, tag: c_int, mhandle: *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Starts `n` grouped receives; a NULL `request` means "call again".
        irecv: required fn(recvComm: *mut c_void, n: c_int, data: *mut *mut c_void, sizes: *mut c_int, tags: *mut c_int, mhandles: *mut *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Makes received device data visible to the GPU (NCCL calls it only after receiving
        /// into device memory, or when a newer plugin's `forceFlush` asks).
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
    }

    /// `ncclNet_v9_t` (net_v9.h:36-93); NCCL 2.24.3 to 2.30.7 load it. v8's with `size_t`
    /// transfer sizes and virtual devices.
    pub struct NetV9 = "ncclNet_v9_t", symbol "ncclNetPlugin_v9", calls NetV9Calls {
        /// Initialises the network with NCCL's logger.
        init: required fn(logFunction: DebugLogger) -> NcclResult,
        /// The number of devices.
        devices: required fn(ndev: *mut c_int) -> NcclResult,
        /// A device's properties.
        getProperties: required fn(dev: c_int, props: *mut NetPropertiesV9) -> NcclResult,
        /// Creates a receiving object; writes the handle (at most `HANDLE_MAXSIZE` bytes) the
        /// peer connects with.
        listen: required fn(dev: c_int, handle: *mut c_void, listenComm: *mut *mut c_void) -> NcclResult,
        /// Connects to a handle; non-blocking: success with a NULL `sendComm` means "call again".
        connect: required fn(dev: c_int, handle: *mut c_void, sendComm: *mut *mut c_void, sendDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Accepts a connection; non-blocking as `connect`.
        accept: required fn(listenComm: *mut c_void, recvComm: *mut *mut c_void, recvDevComm: *mut *mut NetDeviceHandleV7) -> NcclResult,
        /// Registers memory; `type` is `PTR_HOST` or `PTR_CUDA`.
        regMr: required fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Registers DMA-BUF memory; NULL: none (NCCL checks, init.cc:403).
        regMrDmaBuf: optional fn(comm: *mut c_void, data: *mut c_void, size: usize, kind: c_int, offset: u64, fd: c_int, mhandle: *mut *mut c_void) -> NcclResult,
        /// Deregisters memory.
        deregMr: required fn(comm: *mut c_void, mhandle: *mut c_void) -> NcclResult,
        /// Starts a send; a NULL `request` means "call again".
        isend: required fn(sendComm: *mut c_void, data: *mut c_void, size: usize, tag: c_int, mhandle: *mut c_void, request: *mut *mut c_void) -> NcclResult,
        /// Starts `n` grouped receives; a NULL `request` means "call again"; `*request` may come
        /// in as `OPTIONAL_RECV_COMPLETION`.
        irecv: required fn(recvComm: *mut c_void, n: c_int, data: *mut *mut c_void, sizes: *mut usize, tags: *mut c_int, mhandles: *mut *mut c_void, request: *mut *mut c_void) -> NcclResult,
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
        /// Makes a virtual device of `props` and writes its index (NCCL checks, net_v9.cc:163).
        makeVDevice: optional fn(d: *mut c_int, props: *mut NetVDevicePropsV9) -> NcclResult,
    }
}
