//! NCCL's plugins: `doctor`'s report of each family (found as NCCL finds it, loaded and
//! initialised in a probe process of its own, so that a plugin that hangs or crashes costs
//! the probe only), and `net-bench`, the network test bench.

use std::process::Command;
use std::time::Duration;

use nccl_trampoline::plugin::describe::describe;
use nccl_trampoline::plugin::host::load::{find, Tried};
use nccl_trampoline::plugin::host::names::Family;
use nccl_trampoline::plugin::net_bench::{self, BenchOptions, DeviceProperties};
use nccl_trampoline::plugin::PluginError;

use crate::args::NetBenchArgs;
use crate::error::Error as CliError;
use crate::json::Json;
use crate::probe::{one_line, output_within};

/// The family named on the command line (`net`, `gin`, `tuner`, `profiler`, `env`).
pub fn family(name: &str) -> Option<Family> {
    Family::ALL.into_iter().find(|f| f.label().eq_ignore_ascii_case(name))
}

/// `doctor`'s section: each family probed in a child process for at most `limit`.
/// Printed unless `text` is false; returned as JSON either way (a list of `{family,
/// variable, setting, lines}`, the probe's lines as printed).
pub fn print_plugins(limit: Duration, text: bool) -> Json {
    if text {
        println!("Plugins (found as NCCL 2.30's src/plugin/plugin_open.cc finds them):");
    }
    let mut out = Vec::new();
    for family in Family::ALL {
        let setting = std::env::var(family.variable()).ok();
        let lines = match probe_in_child(family, limit) {
            Ok(lines) => lines,
            Err(e) => vec![e.to_string()],
        };
        if text {
            println!("  {} ({}={}):", family.label(), family.variable(), setting.as_deref().unwrap_or("unset"));
            lines.iter().for_each(|l| println!("    {l}"));
        }
        out.push(Json::object([
            ("family", Json::from(family.label())),
            ("variable", Json::from(family.variable())),
            ("setting", Json::opt_str(setting)),
            ("lines", Json::strings(lines)),
        ]));
    }
    Json::Array(out)
}

fn probe_in_child(family: Family, limit: Duration) -> Result<Vec<String>, CliError> {
    let exe = std::env::current_exe().map_err(|source| CliError::CurrentExe { source })?;
    let mut command = Command::new(exe);
    command.args(["probe", "--plugin", family.label(), "-"]);
    let out = output_within(command, limit)?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    if !out.status.success() && !lines.last().is_some_and(|l| l.starts_with("result:")) {
        lines.push(format!(
            "the probe died ({}) {}",
            out.status,
            one_line(String::from_utf8_lossy(&out.stderr).trim())
        ));
    }
    Ok(lines)
}

/// `probe --plugin FAMILY`: finds, loads and describes the family's plugin, printing the
/// lines `doctor` shows. Runs in the probe process.
pub fn probe(name: &str) -> Result<bool, CliError> {
    let Some(family) = family(name) else {
        println!("result: {name} is not a plugin family (net, gin, tuner, profiler, env)");
        return Ok(false);
    };
    let setting = std::env::var(family.variable()).ok();
    let plugin = match find(family, setting.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            print_tried_of(&e);
            println!("result: {}", explain(family, &e));
            return Ok(!matches!(
                e,
                PluginError::Load { .. } | PluginError::NullEntries { .. } | PluginError::NotATable { .. }
            ));
        }
    };
    print_tried(&plugin.tried);
    println!(
        "file: {}{}",
        plugin.path.display(),
        if plugin.from_net_plugin { " (the network plugin's library)" } else { "" }
    );
    println!("table: {} (version {})", plugin.version.symbol, plugin.version.version);
    let d = describe(&plugin).map_err(|e| CliError::Plugin { source: e })?;
    println!("name: {}", d.name);
    for line in &d.log {
        println!("log: {line}");
    }
    print_devices(&d.devices);
    for detail in &d.details {
        println!("{detail}");
    }
    match &d.init {
        Some(Ok(())) if d.devices.is_empty() => println!("result: init ({}) ncclSuccess", d.init_with),
        Some(Ok(())) => println!("result: init ({}) ncclSuccess, {} device(s)", d.init_with, d.devices.len()),
        Some(Err(e)) => println!("result: init ({}): {e}", d.init_with),
        None => println!("result: not initialised"),
    }
    Ok(matches!(d.init, Some(Ok(()))))
}

/// A network or GIN plugin's devices, as doctor and the bench print them.
pub fn print_devices(devices: &[DeviceProperties]) {
    for (i, d) in devices.iter().enumerate() {
        let optional = |label: &str, v: Option<String>| v.map_or_else(String::new, |v| format!(", {label} {v}"));
        println!(
            "device {i}: {} pci {} guid {:#x} speed {} Mbps port {} latency {} us pointers {} max comms {} max recvs {}{}{}{}{}",
            d.name,
            if d.pci_path.is_empty() { "-" } else { &d.pci_path },
            d.guid,
            d.speed,
            d.port,
            d.latency,
            d.pointers(),
            d.max_comms,
            d.max_recvs,
            optional("device type", d.device_type.map(|t| format!("{t} (version {})", d.device_version.unwrap_or(0)))),
            optional("global registration", d.reg_is_global.map(|g| g.to_string())),
            optional("force flush", d.force_flush.map(|g| g.to_string())),
            optional("max p2p bytes", d.max_p2p_bytes.map(|g| g.to_string())),
        );
    }
}

fn print_tried(tried: &[Tried]) {
    for t in tried {
        println!("tried: {}: {}", t.name, t.outcome);
    }
}

fn print_tried_of(e: &PluginError) {
    if let PluginError::NotFound { tried, .. } = e {
        for t in tried {
            println!("tried: {t}");
        }
    }
}

fn explain(family: Family, e: &PluginError) -> String {
    match e {
        PluginError::NotFound { .. } if family == Family::Net => {
            "none found: NCCL uses its built-in IB and socket transports".to_string()
        }
        PluginError::NotFound { .. } => format!(
            "none found: NCCL runs without {} {} plugin",
            if family == Family::Env { "an" } else { "a" },
            family.label()
        ),
        e => e.to_string(),
    }
}

/// `net-bench`: the test bench through the network plugin NCCL would load (or `--plugin`).
pub fn net_bench(args: &NetBenchArgs) -> Result<bool, CliError> {
    let value = args.plugin.clone().or_else(|| std::env::var(Family::Net.variable()).ok());
    let plugin = find(Family::Net, value.as_deref()).map_err(|e| CliError::Plugin { source: e })?;
    print_tried(&plugin.tried);
    println!("file: {}", plugin.path.display());
    println!("table: {} (version {})", plugin.version.symbol, plugin.version.version);
    let options = BenchOptions {
        deadline: args.deadline,
        min_size: args.min_bytes as usize,
        max_size: args.max_bytes as usize,
        iterations: args.iterations as usize,
        flush: args.flush,
        device: args.device,
        echo_log: false,
    };
    let report = net_bench::run(&plugin, &options).map_err(|e| CliError::Plugin { source: e })?;
    println!("name: {}", report.name);
    for line in &report.log {
        println!("log: {line}");
    }
    print_devices(&report.devices);
    println!(
        "connected after {} connect and {} accept calls; {} iflush calls",
        report.connect_calls, report.accept_calls, report.flushes
    );
    println!("{:>12} {:>6} {:>6} {:>12} {:>10}", "size (B)", "tag", "iters", "latency (us)", "GB/s");
    for s in &report.sizes {
        println!("{:>12} {:>6} {:>6} {:>12.2} {:>10.3}", s.size, s.tag, s.iterations, s.latency_us, s.bandwidth_gbs);
    }
    println!("result: every byte of {} sizes checked", report.sizes.len());
    Ok(true)
}
