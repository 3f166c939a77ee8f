//! The network plugin family (`libnccl-net*.so`, symbol `ncclNetPlugin_vN`): every version NCCL
//! 2.19 to 2.30 load, v6 to v12, transcribed from NCCL v2.30.7-1
//! `src/include/plugin/net/net_v<N>.h`, src/include/plugin/nccl_net.h and
//! src/include/nccl_device/net_device.h. NCCL looks for the newest symbol first
//! (src/plugin/net.cc:40-42, v12 down to v6) and adapts older tables to v12
//! (`src/plugin/net/net_v<N>.cc`). The CollNet tables (`ncclCollNetPlugin_vN`) are not declared.
//!
//! Which entries are `optional` was read in NCCL v2.30.7-1; the paths cited in entry docs are
//! under its src/.
//!
//! The constants every version shares are here; the tables v6 to v9 and their structs are in
//! `v6_v9`, v10 to v12 in `v10_v12`.

mod v10_v12;
mod v6_v9;

pub use v10_v12::*;
pub use v6_v9::*;

use core::ffi::c_int;

/// `NCCL_NET_HANDLE_MAXSIZE` (src/include/plugin/nccl_net.h:16): the bytes of the connection
/// handle `listen` writes and `connect` reads.
pub const HANDLE_MAXSIZE: usize = 128;
/// `NCCL_NET_OPTIONAL_RECV_COMPLETION` (nccl_net.h:19): the value NCCL stores in `*request`
/// before an `irecv` whose completion the plugin may leave unreported
/// (transport/net.cc:1585-1589); NCCL's adapters clear it for v6 to v8 plugins
/// (net_v6.cc:82, net_v7.cc:78, net_v8.cc:73), v9 and later see it.
pub const OPTIONAL_RECV_COMPLETION: usize = 0x1;
/// `NCCL_PTR_HOST` (nccl_net.h:25): the plugin sends and receives host memory.
pub const PTR_HOST: c_int = 0x1;
/// `NCCL_PTR_CUDA` (nccl_net.h:26): device memory.
pub const PTR_CUDA: c_int = 0x2;
/// `NCCL_PTR_DMABUF` (nccl_net.h:27): DMA-BUF registration.
pub const PTR_DMABUF: c_int = 0x4;
/// `NCCL_NET_MAX_DEVS_PER_NIC_V11` (net_v11.h:11): the physical devices a v9, v10 or v11
/// virtual device can hold (net_v9.h:13, net_v10.h:13, net_v11.h:15).
pub const MAX_DEVS_PER_NIC_V11: usize = 4;
/// `NCCL_NET_MAX_DEVS_PER_NIC_V12` (net_v12.h:11): the physical devices a v12 virtual device
/// can hold.
pub const MAX_DEVS_PER_NIC_V12: usize = 8;
/// `NCCL_NET_MAX_DEVS_PER_NIC` (nccl_net.h:52): the current version's, v12's.
pub const MAX_DEVS_PER_NIC: usize = MAX_DEVS_PER_NIC_V12;
/// `NCCL_NET_TRAFFIC_CLASS_UNDEF` (net_v10.h:16): `trafficClass` when the communicator sets
/// none (plugin/net.cc:171-172).
pub const TRAFFIC_CLASS_UNDEF: c_int = -1;
/// `NCCL_NET_ATTR_UNDEF` (net_v11.h:46): a field of [`NetAttrV11`] or [`NetCommAttrV11`] (and
/// v12's) that says nothing.
pub const ATTR_UNDEF: i32 = -1;
/// `NCCL_NET_ID_UNDEF` (net_v12.h:50): `railId` or `planeId` unknown.
pub const ID_UNDEF: i16 = -1;

/// Every layout of the family, for the layout test.
pub const LAYOUTS: &[crate::plugin::CLayout] = &[
    NetDeviceHandleV7::LAYOUT,
    NetPropertiesV6::LAYOUT,
    NetV6::LAYOUT,
    NetPropertiesV7::LAYOUT,
    NetV7::LAYOUT,
    NetPropertiesV8::LAYOUT,
    NetV8::LAYOUT,
    NetVDevicePropsV9::LAYOUT,
    NetPropertiesV9::LAYOUT,
    NetV9::LAYOUT,
    NetVDevicePropsV10::LAYOUT,
    NetCommConfigV10::LAYOUT,
    NetPropertiesV10::LAYOUT,
    NetV10::LAYOUT,
    NetVDevicePropsV11::LAYOUT,
    NetCommConfigV11::LAYOUT,
    NetPropertiesV11::LAYOUT,
    NetCommAttrV11::LAYOUT,
    NetAttrV11::LAYOUT,
    NetV11::LAYOUT,
    NetVDevicePropsV12::LAYOUT,
    NetCommConfigV12::LAYOUT,
    NetPropertiesV12::LAYOUT,
    NetCommAttrV12::LAYOUT,
    NetAttrV12::LAYOUT,
    NetV12::LAYOUT,
];
