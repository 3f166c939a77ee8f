//! The network plugin family (`libnccl-net*.so`, symbol `ncclNetPlugin_vN`): every version NCCL
//! 2.19–2.32 loads, v6 to v12, transcribed from NCCL v2.30.7-1
//! `src/include/plugin/net/net_v<N>.h` and src/include/nccl_device/net_device.h.

use core::ffi::{c_char, c_int, c_void};

use crate::plugin::common::{DebugLogger, NcclResult};
use crate::plugin::declare::{plugin_struct, plugin_table};

/// `NCCL_NET_HANDLE_MAXSIZE` (src/include/plugin/nccl_net.h:16): the bytes of the connection
/// handle `listen` writes and `connect` reads.
pub const HANDLE_MAXSIZE: usize = 128;
/// `NCCL_PTR_HOST` (nccl_net.h:25): the plugin sends and receives host memory.
pub const PTR_HOST: c_int = 0x1;
/// `NCCL_PTR_CUDA` (nccl_net.h:26): device memory.
pub const PTR_CUDA: c_int = 0x2;
/// `NCCL_PTR_DMABUF` (nccl_net.h:27): DMA-BUF registration.
pub const PTR_DMABUF: c_int = 0x4;

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

    /// `ncclNetProperties_v8_t` (net_v8.h:11-25).
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
}

plugin_table! {
    /// `ncclNet_v8_t` (net_v8.h:27-80); NCCL 2.20.3 to 2.30.7 load it.
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
        /// Registers DMA-BUF memory (optional: NULL when `ptrSupport` lacks `PTR_DMABUF`).
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
        /// The device-side handle of a registration (offload networks only).
        getDeviceMr: optional fn(comm: *mut c_void, mhandle: *mut c_void, dptr_mhandle: *mut *mut c_void) -> NcclResult,
        /// Tells the plugin received data was consumed (offload networks only).
        irecvConsumed: optional fn(recvComm: *mut c_void, n: c_int, request: *mut c_void) -> NcclResult,
    }
}

/// Every layout of the family, for the layout test.
pub const LAYOUTS: &[crate::plugin::CLayout] = &[NetDeviceHandleV7::LAYOUT, NetPropertiesV8::LAYOUT, NetV8::LAYOUT];
