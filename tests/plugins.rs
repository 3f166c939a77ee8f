//! NCCL's plugins through the crate's host: the project's TCP loopback network plugin
//! (tests/c/plugins/net_tcp.c) found by NCCL's rules and driven by the network test bench —
//! every byte of every size from 1 B to 64 MiB checked — and each of its misbehaving variants
//! ending in the typed error it must, within the deadline plus 10 %. Natively, under
//! qemu-aarch64, and under AddressSanitizer (scripts/test.sh: the plugins instrumented).

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nccl_trampoline::plugin::host::load::find;
use nccl_trampoline::plugin::host::names::Family;
use nccl_trampoline::plugin::net_bench::{self, BenchOptions};
use nccl_trampoline::plugin::PluginError;

/// Every variant of the test plugin, built once for this target: `""` is the working one.
const VARIANTS: &[&str] = &[
    "",
    "never_complete",
    "error_isend",
    "null_listen",
    "null_table_entry",
    "bad_log_format",
    "hang_connect",
    "no_devices",
    "bad_props",
    "corrupt",
    "short_size",
];

/// The folder holding `libnccl-net-<variant>.so` for every variant (`libnccl-net-tcp.so` for
/// the working one).
fn plugins() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = common::work_dir("plugins");
        std::thread::scope(|s| {
            for variant in VARIANTS {
                let dir = &dir;
                s.spawn(move || {
                    let name =
                        if variant.is_empty() { "nccl-net-tcp".to_string() } else { format!("nccl-net-{variant}") };
                    common::build_net_plugin(dir, &name, variant);
                });
            }
        });
        dir
    })
}

fn plugin_path(variant: &str) -> String {
    let name = if variant.is_empty() { "tcp" } else { variant };
    plugins().join(format!("libnccl-net-{name}.so")).display().to_string()
}

fn supported() -> bool {
    if nccl_trampoline::Abi::native().is_none() || !cfg!(target_os = "linux") {
        println!("no callbacks on this target: the host cannot hand plugins a logger");
        return false;
    }
    true
}

#[test]
fn the_tcp_plugin_moves_every_byte_from_1_byte_to_64_mib() {
    if !supported() {
        return;
    }
    let plugin = find(Family::Net, Some(&plugin_path(""))).unwrap();
    assert_eq!((plugin.version.symbol, plugin.version.version), ("ncclNetPlugin_v8", 8));
    let options = BenchOptions { iterations: 2, flush: true, ..BenchOptions::default() };
    let report = net_bench::run(&plugin, &options).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.name, "TestTcp");
    assert_eq!(report.sizes.len(), 27, "1 B to 64 MiB, doubling");
    assert_eq!((report.sizes[0].size, report.sizes[26].size), (1, 64 << 20));
    assert!(report.flushes >= 27);
    let d = &report.devices[0];
    assert_eq!(
        (d.name.as_str(), d.pci_path.as_str(), d.guid, d.ptr_support, d.speed, d.port, d.max_comms, d.max_recvs),
        ("lo-tcp", "/sys/devices/virtual/net/lo", 0x1234abcd, 1, 10000, 1, 1024, 1)
    );
    assert_eq!((d.latency, d.reg_is_global, d.device_type), (0.5, Some(false), Some(0)));
    // init's line, formatted by the host's printf from the plugin's variable arguments.
    let init = &report.log[0];
    assert_eq!(init.text, "NET/TestTcp : 1 device(s), loopback 127.0.0.1, 40-byte handles");
    assert_eq!((init.level.name(), init.flags, init.file.as_str()), (Some("INFO"), 0x11, "net_tcp.c"));
    println!(
        "TestTcp: {} sizes checked, 64 MiB at {:.2} GB/s, 1 B in {:.1} us",
        report.sizes.len(),
        report.sizes[26].bandwidth_gbs,
        report.sizes[0].latency_us
    );
}

/// Each misbehaving variant, with the bench's deadline: its typed error, and the time it took.
#[test]
fn each_misbehaving_plugin_is_a_typed_error_within_its_deadline() {
    if !supported() {
        return;
    }
    // Long enough that the steps before the one that misbehaves (init, listen, connect; slower
    // under qemu) fit in its 10 %.
    let deadline = Duration::from_secs(3);
    let options = BenchOptions { deadline, max_size: 1 << 16, iterations: 1, ..BenchOptions::default() };
    for variant in &VARIANTS[1..] {
        let path = plugin_path(variant);
        let started = Instant::now();
        let outcome = find(Family::Net, Some(&path)).and_then(|p| net_bench::run(&p, &options));
        let took = started.elapsed();
        let e = outcome.err().unwrap_or_else(|| panic!("{variant}: the bench passed"));
        let text = e.to_string();
        let expected = match (*variant, &e) {
            ("never_complete", PluginError::Deadline { call, returned: true, .. }) => call.starts_with("test"),
            ("hang_connect", PluginError::Deadline { call, returned: false, .. }) => call == "connect",
            ("error_isend", PluginError::Call { call, code, log: Some(log) }) => {
                call.starts_with("isend") && code.0 == 2 && log.contains("fails on purpose")
            }
            ("null_listen", PluginError::Contract { call, what }) => {
                call == "listen" && what.contains("NULL listenComm")
            }
            ("null_table_entry", PluginError::NullEntries { missing, .. }) => missing == &["test"],
            ("bad_log_format", PluginError::LogFormat { call, line }) => {
                call == "init" && line.contains("%n refused") && line.contains("unknown conversion")
            }
            ("no_devices", PluginError::Contract { call, what }) => call == "devices" && what.contains("0 devices"),
            ("bad_props", PluginError::Contract { call, what }) => {
                call == "getProperties(0)" && what.contains("NULL name")
            }
            ("corrupt", PluginError::Corrupt { size: 2, offset: 1, got, expected, .. }) => *got == expected ^ 0x5a,
            ("short_size", PluginError::Contract { call, what }) => {
                call == "test(recv, 2 B, tag 2)" && what == "reports 1 bytes received, 2 were sent"
            }
            _ => false,
        };
        assert!(expected, "{variant}: unexpected error {e:?}");
        assert!(took <= deadline.mul_f64(1.1), "{variant}: {took:?} for a deadline of {deadline:?}");
        println!("{variant}: {text} ({} ms)", took.as_millis());
    }
}

/// A library that loads but whose table cannot be used: the symbol is a function, the
/// object is smaller than its version's table, or only a version the crate does not know is
/// exported. Each is refused before any of it is read as a table.
#[test]
fn a_symbol_that_is_no_usable_table_is_refused_by_name() {
    if !supported() {
        return;
    }
    let dir = common::work_dir("plugins-bad-tables");
    let build = |name: &str, source: &str| {
        let file = dir.join(format!("{name}.c"));
        std::fs::write(&file, source).unwrap();
        common::build_shared(&dir, name, &[file]).display().to_string()
    };
    let function = build("function", "int ncclNetPlugin_v8(void) { return 0; }\n");
    let small = build("small", "void *ncclNetPlugin_v8[3] = { 0 };\n");
    let unknown = build("unknown", "void *ncclNetPlugin_v5[32] = { 0 };\nvoid *ncclNetPlugin_v99[32] = { 0 };\n");
    match find(Family::Net, Some(&function)) {
        Err(PluginError::NotATable { symbol: "ncclNetPlugin_v8", kind: "a function", .. }) => {}
        other => panic!("{other:?}"),
    }
    match find(Family::Net, Some(&small)) {
        Err(PluginError::Contract { call, what }) => {
            assert_eq!(call, "ncclNetPlugin_v8");
            assert!(what.starts_with("24 bytes, a table of this version has "), "{what}");
        }
        other => panic!("{other:?}"),
    }
    match find(Family::Net, Some(&unknown)) {
        Err(PluginError::NoKnownVersion { known, unknown, .. }) => {
            assert_eq!(known.first(), Some(&"ncclNetPlugin_v12"));
            assert_eq!(known.last(), Some(&"ncclNetPlugin_v6"));
            assert_eq!(unknown, ["ncclNetPlugin_v5", "ncclNetPlugin_v99"]);
        }
        other => panic!("{other:?}"),
    }
}

/// NCCL_NET_PLUGIN's rules against real files: a bare name found by the system loader's
/// search as `libnccl-net-<name>.so`, a list tried in order, `none`. Run in a child with
/// LD_LIBRARY_PATH (the loader reads it when the process starts).
#[test]
fn nccl_net_plugin_is_read_as_nccl_reads_it() {
    if !supported() {
        return;
    }
    let dir = plugins().display().to_string();
    let out =
        common::rerun_self("names_in_a_child", &[("LD_LIBRARY_PATH", &dir), ("NCCL_TRAMPOLINE_PLUGIN_CHILD", "1")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("names: ok"), "{text}");
}

#[test]
fn names_in_a_child() {
    if std::env::var_os("NCCL_TRAMPOLINE_PLUGIN_CHILD").is_none() || !supported() {
        return;
    }
    let tried = |p: &nccl_trampoline::plugin::host::load::Plugin| -> Vec<(String, String)> {
        p.tried.iter().map(|t| (t.name.clone(), t.outcome.clone())).collect()
    };
    // A bare name: as given (not found), then libnccl-net-<name>.so (found by the search).
    let p = find(Family::Net, Some("tcp")).unwrap();
    assert_eq!(
        tried(&p),
        [("tcp".into(), "not found".into()), ("libnccl-net-tcp.so".into(), "loaded, ncclNetPlugin_v8".into())]
    );
    // A list: each entry in order, the first that loads wins.
    let p = find(Family::Net, Some("nosuch,tcp")).unwrap();
    assert_eq!(
        tried(&p).iter().map(|t| t.0.as_str()).collect::<Vec<_>>(),
        ["nosuch", "libnccl-net-nosuch.so", "tcp", "libnccl-net-tcp.so"]
    );
    // An entry that loads with a bad table stops nothing in a list: the next is tried.
    let p = find(Family::Net, Some("null_table_entry,tcp")).unwrap();
    assert!(p.path.ends_with("libnccl-net-tcp.so"), "{:?}", p.tried);
    assert!(matches!(find(Family::Net, Some("none")), Err(PluginError::Disabled { .. })));
    match find(Family::Net, Some("nosuch")) {
        Err(PluginError::NotFound { tried, .. }) => {
            assert_eq!(tried, ["nosuch: not found", "libnccl-net-nosuch.so: not found"])
        }
        other => panic!("{other:?}"),
    }
    // Unset: libnccl-net.so, which is not there.
    assert!(matches!(find(Family::Net, None), Err(PluginError::NotFound { .. })));
    println!("names: ok");
}
