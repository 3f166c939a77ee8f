//! Every network plugin version seen through one shape, as NCCL itself sees them: NCCL wraps
//! each older table in functions of the newest one (v2.30.7-1 src/plugin/net/net_v6.cc ..
//! net_v11.cc: sizes widened, the missing device-comm, config and profiler arguments
//! dropped, one context for the per-communicator versions v11 and v12). Each entry calls
//! the plugin through the call core (the table's `…Calls` bindings).

use core::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

use crate::nccl::NcclResult;
use crate::plugin::common::{DebugLogger, ProfilerCallback};
use crate::plugin::declare::{bind_table, call_entry as call};
use crate::plugin::error::PluginError;
use crate::plugin::host::load::Plugin;
use crate::plugin::host::printf::read_string as string;
use crate::plugin::net::*;

type Ptr = *mut c_void;

/// A device's properties in every version's fields (`None` where the version has none).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DeviceProperties {
    /// `name`.
    pub name: String,
    /// `pciPath`.
    pub pci_path: String,
    /// `guid`.
    pub guid: u64,
    /// `ptrSupport`: `net::PTR_HOST | PTR_CUDA | PTR_DMABUF`.
    pub ptr_support: i32,
    /// `regIsGlobal` (v8 on).
    pub reg_is_global: Option<bool>,
    /// `forceFlush` (v9 on).
    pub force_flush: Option<bool>,
    /// `speed` in Mbps.
    pub speed: i32,
    /// `port`.
    pub port: i32,
    /// `latency` in µs.
    pub latency: f32,
    /// `maxComms`.
    pub max_comms: i32,
    /// `maxRecvs`.
    pub max_recvs: i32,
    /// `netDeviceType` (v7 on).
    pub device_type: Option<i32>,
    /// `netDeviceVersion` (v7 on).
    pub device_version: Option<i32>,
    /// `maxP2pBytes` (v9 on).
    pub max_p2p_bytes: Option<usize>,
}

impl DeviceProperties {
    /// `ptrSupport` in words.
    pub fn pointers(&self) -> String {
        let kinds: Vec<&str> = [(PTR_HOST, "host"), (PTR_CUDA, "cuda"), (PTR_DMABUF, "dmabuf")]
            .iter()
            .filter(|(bit, _)| self.ptr_support & bit != 0)
            .map(|(_, w)| *w)
            .collect();
        if kinds.is_empty() {
            "none".to_string()
        } else {
            kinds.join("|")
        }
    }
}

/// One network plugin, any version, in the newest shape.
#[allow(clippy::type_complexity)]
pub(crate) struct NetOps {
    pub init: Box<dyn Fn(DebugLogger) -> NcclResult + Send + Sync>,
    pub devices: Box<dyn Fn(*mut c_int) -> NcclResult + Send + Sync>,
    /// `getProperties(dev)`, converted; the error names what is wrong with a success.
    pub properties: Box<dyn Fn(c_int) -> Result<DeviceProperties, (NcclResult, String)> + Send + Sync>,
    pub listen: Box<dyn Fn(c_int, Ptr, *mut Ptr) -> NcclResult + Send + Sync>,
    pub connect: Box<dyn Fn(c_int, Ptr, *mut Ptr) -> NcclResult + Send + Sync>,
    pub accept: Box<dyn Fn(Ptr, *mut Ptr) -> NcclResult + Send + Sync>,
    pub reg_mr: Box<dyn Fn(Ptr, Ptr, usize, *mut Ptr) -> NcclResult + Send + Sync>,
    pub dereg_mr: Box<dyn Fn(Ptr, Ptr) -> NcclResult + Send + Sync>,
    pub isend: Box<dyn Fn(Ptr, Ptr, usize, c_int, Ptr, *mut Ptr) -> NcclResult + Send + Sync>,
    pub irecv: Box<dyn Fn(Ptr, Ptr, usize, c_int, Ptr, *mut Ptr) -> NcclResult + Send + Sync>,
    pub iflush: Box<dyn Fn(Ptr, Ptr, c_int, Ptr, *mut Ptr) -> NcclResult + Send + Sync>,
    pub test: Box<dyn Fn(Ptr, *mut c_int, *mut c_int) -> NcclResult + Send + Sync>,
    pub close_send: Box<dyn Fn(Ptr) -> NcclResult + Send + Sync>,
    pub close_recv: Box<dyn Fn(Ptr) -> NcclResult + Send + Sync>,
    pub close_listen: Box<dyn Fn(Ptr) -> NcclResult + Send + Sync>,
    /// v11 and v12: ends the context `init` made.
    pub finalize: Option<Box<dyn Fn() -> NcclResult + Send + Sync>>,
}

/// The properties common to every version, from a props struct `$p` with NCCL's field names.
macro_rules! properties {
    ($p:expr, reg_is_global: $rg:expr, force_flush: $ff:expr, device: $dt:expr, p2p: $p2p:expr) => {{
        let p = &$p;
        match string(p.name as usize) {
            None => Err((
                NcclResult::SUCCESS,
                format!("success with a {} name", if p.name.is_null() { "NULL" } else { "unreadable" }),
            )),
            Some(name) => Ok(DeviceProperties {
                name,
                pci_path: string(p.pciPath as usize).unwrap_or_default(),
                guid: p.guid,
                ptr_support: p.ptrSupport,
                reg_is_global: $rg,
                force_flush: $ff,
                speed: p.speed,
                port: p.port,
                latency: p.latency,
                max_comms: p.maxComms,
                max_recvs: p.maxRecvs,
                device_type: $dt.map(|(t, _)| t),
                device_version: $dt.map(|(_, v)| v),
                max_p2p_bytes: $p2p,
            }),
        }
    }};
}

/// A v12 properties struct (GIN's too), converted.
pub(crate) fn properties_v12(p: &NetPropertiesV12) -> Result<DeviceProperties, (NcclResult, String)> {
    properties!(p, reg_is_global: Some(p.regIsGlobal != 0), force_flush: Some(p.forceFlush != 0), device: Some((p.netDeviceType, p.netDeviceVersion)), p2p: Some(p.maxP2pBytes))
}

/// `getProperties` of table type `$props`, converted with `$convert`.
macro_rules! get_properties {
    ($c:ident, $props:ty, |$p:ident| $convert:expr) => {{
        let c = $c.clone();
        Box::new(move |dev: c_int| {
            // SAFETY: every field of the properties struct is an integer, a float or a pointer:
            // all zeros is a valid value.
            let mut $p: $props = unsafe { core::mem::zeroed() };
            let code = call!(c.getProperties(dev, &mut $p));
            if !code.is_success() {
                return Err((code, String::new()));
            }
            $convert
        })
    }};
}

/// The entries every version shares, with the same prototype.
macro_rules! shared {
    ($c:ident) => {{
        let (a, b, d, e, f, g, h) =
            ($c.clone(), $c.clone(), $c.clone(), $c.clone(), $c.clone(), $c.clone(), $c.clone());
        (
            Box::new(move |n: *mut c_int| call!(a.devices(n))) as Box<dyn Fn(*mut c_int) -> NcclResult + Send + Sync>,
            Box::new(move |comm: Ptr, mh: Ptr| call!(b.deregMr(comm, mh)))
                as Box<dyn Fn(Ptr, Ptr) -> NcclResult + Send + Sync>,
            Box::new(move |comm: Ptr, data: Ptr, size: c_int, mh: Ptr, req: *mut Ptr| {
                let (mut data, mut size, mut mh) = ([data], [size], [mh]);
                call!(d.iflush(comm, 1, data.as_mut_ptr(), size.as_mut_ptr(), mh.as_mut_ptr(), req))
            }) as Box<dyn Fn(Ptr, Ptr, c_int, Ptr, *mut Ptr) -> NcclResult + Send + Sync>,
            Box::new(move |req: Ptr, done: *mut c_int, sizes: *mut c_int| call!(e.test(req, done, sizes)))
                as Box<dyn Fn(Ptr, *mut c_int, *mut c_int) -> NcclResult + Send + Sync>,
            Box::new(move |comm: Ptr| call!(f.closeSend(comm))) as Box<dyn Fn(Ptr) -> NcclResult + Send + Sync>,
            Box::new(move |comm: Ptr| call!(g.closeRecv(comm))) as Box<dyn Fn(Ptr) -> NcclResult + Send + Sync>,
            Box::new(move |comm: Ptr| call!(h.closeListen(comm))) as Box<dyn Fn(Ptr) -> NcclResult + Send + Sync>,
        )
    }};
}

/// `irecv` of one buffer, its size as the version's type `$size`, `$extra` the phandles
/// argument where the version has one.
macro_rules! irecv_one {
    ($c:ident, $size:ty $(, $extra:ident)?) => {{
        let c = $c.clone();
        Box::new(move |comm: Ptr, data: Ptr, size: usize, tag: c_int, mh: Ptr, req: *mut Ptr| {
            let (mut data, mut sizes, mut tags, mut mh) = ([data], [size as $size], [tag], [mh]);
            $( let mut $extra: [Ptr; 1] = [core::ptr::null_mut()]; )?
            call!(c.irecv(comm, 1, data.as_mut_ptr(), sizes.as_mut_ptr(), tags.as_mut_ptr(), mh.as_mut_ptr(), $( $extra.as_mut_ptr(), )? req))
        }) as Box<dyn Fn(Ptr, Ptr, usize, c_int, Ptr, *mut Ptr) -> NcclResult + Send + Sync>
    }};
}

/// The bindings of a checked table of the plugin's version, shared by the entries' closures.
macro_rules! bind {
    ($plugin:expr, $table:ty, $calls:ty) => {
        Arc::new(bind_table!($plugin, $table, $calls))
    };
}

impl NetOps {
    /// The plugin's table in the newest shape, and its name.
    pub(crate) fn new(plugin: &Plugin) -> Result<(NetOps, String), PluginError> {
        let name = plugin.name();
        let ops = match plugin.version.version {
            6 => {
                let c = bind!(plugin, NetV6, NetV6Calls);
                let (devices, dereg_mr, iflush, test, close_send, close_recv, close_listen) = shared!(c);
                let (i, l, k, a, r, s) = (c.clone(), c.clone(), c.clone(), c.clone(), c.clone(), c.clone());
                NetOps {
                    init: Box::new(move |log| call!(i.init(log))),
                    devices,
                    properties: get_properties!(
                        c,
                        NetPropertiesV6,
                        |p| properties!(p, reg_is_global: None, force_flush: None, device: None::<(i32, i32)>, p2p: None)
                    ),
                    listen: Box::new(move |dev, h, lc| call!(l.listen(dev, h, lc))),
                    connect: Box::new(move |dev, h, sc| call!(k.connect(dev, h, sc))),
                    accept: Box::new(move |lc, rc| call!(a.accept(lc, rc))),
                    reg_mr: Box::new(move |comm, data, size, mh| {
                        call!(r.regMr(comm, data, size as c_int, PTR_HOST, mh))
                    }),
                    dereg_mr,
                    isend: Box::new(move |comm, data, size, tag, mh, req| {
                        call!(s.isend(comm, data, size as c_int, tag, mh, req))
                    }),
                    irecv: irecv_one!(c, c_int),
                    iflush,
                    test,
                    close_send,
                    close_recv,
                    close_listen,
                    finalize: None,
                }
            }
            7 | 8 => {
                macro_rules! v7_v8 {
                    ($table:ty, $calls:ty, $props:ty, $rg:expr, $size:ty) => {{
                        let c = bind!(plugin, $table, $calls);
                        let (devices, dereg_mr, iflush, test, close_send, close_recv, close_listen) = shared!(c);
                        let (i, l, k, a, r, s) = (c.clone(), c.clone(), c.clone(), c.clone(), c.clone(), c.clone());
                        NetOps {
                            init: Box::new(move |log| call!(i.init(log))),
                            devices,
                            properties: get_properties!(c, $props, |p| properties!(p, reg_is_global: $rg(&p), force_flush: None, device: Some((p.netDeviceType, p.netDeviceVersion)), p2p: None)),
                            listen: Box::new(move |dev, h, lc| call!(l.listen(dev, h, lc))),
                            connect: Box::new(move |dev, h, sc| { let mut d = core::ptr::null_mut(); call!(k.connect(dev, h, sc, &mut d)) }),
                            accept: Box::new(move |lc, rc| { let mut d = core::ptr::null_mut(); call!(a.accept(lc, rc, &mut d)) }),
                            reg_mr: Box::new(move |comm, data, size, mh| call!(r.regMr(comm, data, size as $size, PTR_HOST, mh))),
                            dereg_mr,
                            isend: Box::new(move |comm, data, size, tag, mh, req| call!(s.isend(comm, data, size as c_int, tag, mh, req))),
                            irecv: irecv_one!(c, c_int),
                            iflush, test, close_send, close_recv, close_listen,
                            finalize: None,
                        }
                    }};
                }
                if plugin.version.version == 7 {
                    v7_v8!(NetV7, NetV7Calls, NetPropertiesV7, |_: &NetPropertiesV7| None, c_int)
                } else {
                    v7_v8!(NetV8, NetV8Calls, NetPropertiesV8, |p: &NetPropertiesV8| Some(p.regIsGlobal != 0), usize)
                }
            }
            9 => {
                let c = bind!(plugin, NetV9, NetV9Calls);
                let (devices, dereg_mr, iflush, test, close_send, close_recv, close_listen) = shared!(c);
                let (i, l, k, a, r, s) = (c.clone(), c.clone(), c.clone(), c.clone(), c.clone(), c.clone());
                NetOps {
                    init: Box::new(move |log| call!(i.init(log))),
                    devices,
                    properties: get_properties!(
                        c,
                        NetPropertiesV9,
                        |p| properties!(p, reg_is_global: Some(p.regIsGlobal != 0), force_flush: Some(p.forceFlush != 0), device: Some((p.netDeviceType, p.netDeviceVersion)), p2p: Some(p.maxP2pBytes))
                    ),
                    listen: Box::new(move |dev, h, lc| call!(l.listen(dev, h, lc))),
                    connect: Box::new(move |dev, h, sc| {
                        let mut d = core::ptr::null_mut();
                        call!(k.connect(dev, h, sc, &mut d))
                    }),
                    accept: Box::new(move |lc, rc| {
                        let mut d = core::ptr::null_mut();
                        call!(a.accept(lc, rc, &mut d))
                    }),
                    reg_mr: Box::new(move |comm, data, size, mh| call!(r.regMr(comm, data, size, PTR_HOST, mh))),
                    dereg_mr,
                    isend: Box::new(move |comm, data, size, tag, mh, req| {
                        call!(s.isend(comm, data, size, tag, mh, req))
                    }),
                    irecv: irecv_one!(c, usize),
                    iflush,
                    test,
                    close_send,
                    close_recv,
                    close_listen,
                    finalize: None,
                }
            }
            10 => {
                let c = bind!(plugin, NetV10, NetV10Calls);
                let (devices, dereg_mr, iflush, test, close_send, close_recv, close_listen) = shared!(c);
                let (i, l, k, a, r, s) = (c.clone(), c.clone(), c.clone(), c.clone(), c.clone(), c.clone());
                NetOps {
                    init: Box::new(move |log| call!(i.init(log, ProfilerCallback(None)))),
                    devices,
                    properties: get_properties!(
                        c,
                        NetPropertiesV10,
                        |p| properties!(p, reg_is_global: Some(p.regIsGlobal != 0), force_flush: Some(p.forceFlush != 0), device: Some((p.netDeviceType, p.netDeviceVersion)), p2p: Some(p.maxP2pBytes))
                    ),
                    listen: Box::new(move |dev, h, lc| call!(l.listen(dev, h, lc))),
                    connect: Box::new(move |dev, h, sc| {
                        let (mut d, mut config) =
                            (core::ptr::null_mut(), NetCommConfigV10 { trafficClass: TRAFFIC_CLASS_UNDEF });
                        call!(k.connect(dev, &mut config, h, sc, &mut d))
                    }),
                    accept: Box::new(move |lc, rc| {
                        let mut d = core::ptr::null_mut();
                        call!(a.accept(lc, rc, &mut d))
                    }),
                    reg_mr: Box::new(move |comm, data, size, mh| call!(r.regMr(comm, data, size, PTR_HOST, mh))),
                    dereg_mr,
                    isend: Box::new(move |comm, data, size, tag, mh, req| {
                        call!(s.isend(comm, data, size, tag, mh, core::ptr::null_mut(), req))
                    }),
                    irecv: irecv_one!(c, usize, phandles),
                    iflush,
                    test,
                    close_send,
                    close_recv,
                    close_listen,
                    finalize: None,
                }
            }
            11 | 12 => {
                macro_rules! v11_v12 {
                    ($table:ty, $calls:ty, $props:ty, $config:ident) => {{
                        let c = bind!(plugin, $table, $calls);
                        let (devices, dereg_mr, iflush, test, close_send, close_recv, close_listen) = shared!(c);
                        let ctx = Arc::new(AtomicPtr::new(core::ptr::null_mut::<c_void>()));
                        let (i, l, k, a, r, s, f) = (c.clone(), c.clone(), c.clone(), c.clone(), c.clone(), c.clone(), c.clone());
                        let (ci, cl, ck, cf) = (ctx.clone(), ctx.clone(), ctx.clone(), ctx);
                        NetOps {
                            init: Box::new(move |log| {
                                let (mut context, mut config) = (core::ptr::null_mut(), $config { trafficClass: TRAFFIC_CLASS_UNDEF });
                                let code = call!(i.init(&mut context, 0x6e63_636c_7472_706c, &mut config, log, ProfilerCallback(None)));
                                ci.store(context, Ordering::Release);
                                code
                            }),
                            devices,
                            properties: get_properties!(c, $props, |p| properties!(p, reg_is_global: Some(p.regIsGlobal != 0), force_flush: Some(p.forceFlush != 0), device: Some((p.netDeviceType, p.netDeviceVersion)), p2p: Some(p.maxP2pBytes))),
                            listen: Box::new(move |dev, h, lc| call!(l.listen(cl.load(Ordering::Acquire), dev, h, lc))),
                            connect: Box::new(move |dev, h, sc| { let mut d = core::ptr::null_mut(); call!(k.connect(ck.load(Ordering::Acquire), dev, h, sc, &mut d)) }),
                            accept: Box::new(move |lc, rc| { let mut d = core::ptr::null_mut(); call!(a.accept(lc, rc, &mut d)) }),
                            reg_mr: Box::new(move |comm, data, size, mh| call!(r.regMr(comm, data, size, PTR_HOST, mh))),
                            dereg_mr,
                            isend: Box::new(move |comm, data, size, tag, mh, req| call!(s.isend(comm, data, size, tag, mh, core::ptr::null_mut(), req))),
                            irecv: irecv_one!(c, usize, phandles),
                            iflush, test, close_send, close_recv, close_listen,
                            finalize: Some(Box::new(move || call!(f.finalize(cf.load(Ordering::Acquire))))),
                        }
                    }};
                }
                if plugin.version.version == 11 {
                    v11_v12!(NetV11, NetV11Calls, NetPropertiesV11, NetCommConfigV11)
                } else {
                    v11_v12!(NetV12, NetV12Calls, NetPropertiesV12, NetCommConfigV12)
                }
            }
            v => {
                return Err(PluginError::Contract {
                    call: plugin.version.symbol.to_string(),
                    what: format!("version {v} has no adapter"),
                })
            }
        };
        Ok((ops, name))
    }
}
