//! What `doctor` says of a loaded plugin: its table's name, `init`'s result with the lines it
//! logged through the host's logger, and what its family offers — a network or GIN plugin's
//! devices, a profiler's activation mask. Each `init` is undone (`finalize`, `destroy`) before
//! returning. A plugin's calls run on the caller's thread: a host that must survive a plugin
//! that hangs runs this in a process of its own (`doctor` does).

use core::ffi::{c_int, c_void};
use std::time::Duration;

use crate::nccl::NcclResult;
use crate::plugin::declare::{bind_table, call_entry as call};
use crate::plugin::env::{EnvV1, EnvV1Calls, EnvV2, EnvV2Calls};
use crate::plugin::error::PluginError;
use crate::plugin::gin::{GinV13, GinV13Calls, GinV14, GinV14Calls};
use crate::plugin::host::load::Plugin;
use crate::plugin::host::logger::{LogLine, Logger};
use crate::plugin::host::names::Family;
use crate::plugin::host::printf::read_string as string;
use crate::plugin::net::NetPropertiesV12;
use crate::plugin::net_bench::{self, BenchOptions};
use crate::plugin::net_ops::DeviceProperties;
use crate::plugin::profiler::{self, *};
use crate::plugin::tuner::*;

/// What a plugin said when initialised.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Description {
    /// The table's `name`.
    pub name: String,
    /// What `init` was called with, in words (`1 rank, 1 node`).
    pub init_with: String,
    /// `init`'s result (and the cleanup's), or why it was not called.
    pub init: Option<Result<(), String>>,
    /// The lines it logged.
    pub log: Vec<LogLine>,
    /// A network or GIN plugin's devices.
    pub devices: Vec<DeviceProperties>,
    /// Further facts, one per line (a profiler's activation mask, an env plugin's answer).
    pub details: Vec<String>,
}

/// The NCCL version an env plugin's `init` is told (the newest this crate knows).
pub const ENV_INIT_VERSION: (u8, u8, u8) = (2, 32, 3);

/// A communicator id for the `init`s that take one.
const COMM_ID: u64 = 0x6e63_636c_7472_706c;

fn checked(what: &str, code: NcclResult) -> Result<(), String> {
    if code.is_success() {
        Ok(())
    } else {
        Err(format!("{what} returned {code:?}"))
    }
}

/// Initialises `plugin` as NCCL would for a one-rank communicator, reports, and cleans up.
pub fn describe(plugin: &Plugin) -> Result<Description, PluginError> {
    let mut d = Description { name: plugin.name(), ..Description::default() };
    if plugin.family == Family::Net {
        let options = BenchOptions { deadline: Duration::from_secs(10), ..BenchOptions::default() };
        d.init_with = "NCCL's logger".into();
        match net_bench::describe(plugin, &options) {
            Ok(report) => {
                d.init = Some(Ok(()));
                d.log = report.log;
                d.devices = report.devices;
            }
            Err(e) => d.init = Some(Err(e.to_string())),
        }
        return Ok(d);
    }
    let logger = Logger::new(false)?;
    let log = logger.as_c();
    let v = plugin.version.version;
    let outcome: Result<(), String> = match plugin.family {
        Family::Tuner => {
            d.init_with = "1 rank, 1 node".into();
            let mut ctx: *mut c_void = core::ptr::null_mut();
            match v {
                2..=4 => {
                    macro_rules! old {
                        ($t:ty, $c:ty) => {{
                            let c = bind_table!(plugin, $t, $c);
                            checked("init", call!(c.init(1usize, 1usize, log, &mut ctx)))
                                .and_then(|()| checked("destroy", call!(c.destroy(ctx))))
                        }};
                    }
                    match v {
                        2 => old!(TunerV2, TunerV2Calls),
                        3 => old!(TunerV3, TunerV3Calls),
                        _ => old!(TunerV4, TunerV4Calls),
                    }
                }
                _ => {
                    // SAFETY: plain numbers: zero is a valid value of both.
                    let (mut nvl, mut constants): (NvlDomainInfoV5, TunerConstantsV5) =
                        unsafe { (core::mem::zeroed(), core::mem::zeroed()) };
                    macro_rules! new {
                        ($t:ty, $c:ty) => {{
                            let c = bind_table!(plugin, $t, $c);
                            checked(
                                "init",
                                call!(c.init(&mut ctx, COMM_ID, 1usize, 1usize, log, &mut nvl, &mut constants)),
                            )
                            .and_then(|()| checked("finalize", call!(c.finalize(ctx))))
                        }};
                    }
                    if v == 5 {
                        new!(TunerV5, TunerV5Calls)
                    } else {
                        new!(TunerV6, TunerV6Calls)
                    }
                }
            }
        }
        Family::Env => {
            let (major, minor, patch) = ENV_INIT_VERSION;
            d.init_with = format!("NCCL {major}.{minor}.{patch}");
            macro_rules! env {
                ($t:ty, $c:ty, $($log:expr)?) => {{
                    let c = bind_table!(plugin, $t, $c);
                    let outcome = checked("init", call!(c.init(major, minor, patch, c"".as_ptr() $(, $log)?)));
                    if outcome.is_ok() {
                        let value = call!(c.getEnv(c"NCCL_DEBUG".as_ptr()) else core::ptr::null());
                        d.details.push(format!(
                            "getEnv(NCCL_DEBUG): {}",
                            string(value as usize).map_or("NULL".into(), |s| format!("{s:?}"))
                        ));
                    }
                    outcome.and_then(|()| if c.finalize.is_some() { checked("finalize", call!(c.finalize())) } else { Ok(()) })
                }};
            }
            if v == 1 {
                env!(EnvV1, EnvV1Calls,)
            } else {
                env!(EnvV2, EnvV2Calls, log)
            }
        }
        Family::Gin => {
            d.init_with = "NCCL's logger".into();
            macro_rules! gin {
                ($t:ty, $c:ty) => {{
                    let c = bind_table!(plugin, $t, $c);
                    let mut ctx: *mut c_void = core::ptr::null_mut();
                    let outcome = checked("init", call!(c.init(&mut ctx, COMM_ID, log))).and_then(|()| {
                        let mut n: c_int = 0;
                        checked("devices", call!(c.devices(&mut n)))?;
                        for dev in 0..n.clamp(0, 1024) {
                            // SAFETY: integers, floats and pointers: zero is valid.
                            let mut p: NetPropertiesV12 = unsafe { core::mem::zeroed() };
                            checked(&format!("getProperties({dev})"), call!(c.getProperties(dev, &mut p)))?;
                            d.devices.push(
                                crate::plugin::net_ops::properties_v12(&p)
                                    .map_err(|(_, what)| format!("getProperties({dev}): {what}"))?,
                            );
                        }
                        Ok(())
                    });
                    outcome.and_then(|()| checked("finalize", call!(c.finalize(ctx))))
                }};
            }
            if v == 13 {
                gin!(GinV13, GinV13Calls)
            } else {
                gin!(GinV14, GinV14Calls)
            }
        }
        Family::Profiler => {
            d.init_with = "a one-rank communicator".into();
            let (mut ctx, mut mask): (*mut c_void, c_int) = (core::ptr::null_mut(), 0);
            macro_rules! old {
                ($t:ty, $c:ty) => {{
                    let c = bind_table!(plugin, $t, $c);
                    let outcome = checked("init", call!(c.init(&mut ctx, &mut mask)));
                    (c, outcome)
                }};
            }
            macro_rules! v4 {
                ($t:ty, $c:ty) => {{
                    let c = bind_table!(plugin, $t, $c);
                    let outcome =
                        checked("init", call!(c.init(&mut ctx, &mut mask, core::ptr::null(), COMM_ID, 1, 1, 0, log)));
                    (c, outcome)
                }};
            }
            macro_rules! new {
                ($t:ty, $c:ty) => {{
                    let c = bind_table!(plugin, $t, $c);
                    let outcome =
                        checked("init", call!(c.init(&mut ctx, COMM_ID, &mut mask, core::ptr::null(), 1, 1, 0, log)));
                    (c, outcome)
                }};
            }
            macro_rules! finish {
                ($pair:expr) => {{
                    let (c, outcome) = $pair;
                    outcome
                        .map(|()| d.details.push(format!("asks for events: {}", profiler::event_names(mask))))
                        .and_then(|()| {
                            // NCCL finalizes only a plugin that set a context (profiler.cc).
                            if ctx.is_null() {
                                Ok(())
                            } else {
                                checked("finalize", call!(c.finalize(ctx)))
                            }
                        })
                }};
            }
            match v {
                1 => finish!(old!(ProfilerV1, ProfilerV1Calls)),
                2 => finish!(old!(ProfilerV2, ProfilerV2Calls)),
                3 => finish!(old!(ProfilerV3, ProfilerV3Calls)),
                4 => finish!(v4!(ProfilerV4, ProfilerV4Calls)),
                5 => finish!(new!(ProfilerV5, ProfilerV5Calls)),
                _ => finish!(new!(ProfilerV6, ProfilerV6Calls)),
            }
        }
        Family::Net => unreachable!("handled above"),
    };
    d.init = Some(outcome);
    d.log = logger.take();
    Ok(d)
}
