//! The `nccl-trampoline` command (feature `cli`), run as a user runs it, against the C
//! stand-in libnccl (tests/c/fake_nccl.c); no GPU and no real NCCL needed.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_nccl-trampoline");

/// The stand-in NCCL built as `version` (e.g. 23203), once per test binary.
fn fake_nccl(version: u32) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<Vec<(u32, PathBuf)>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap();
    if let Some((_, p)) = built.iter().find(|(v, _)| *v == version) {
        return p.clone();
    }
    let dir = common::work_dir(&format!("cli-fake-nccl-{version}"));
    let lib = common::build_shared_with(
        &dir,
        "nccl",
        &[common::repo_file("tests/c/fake_nccl.c")],
        &[&format!("-DFAKE_VERSION={version}")],
    );
    built.push((version, lib.clone()));
    lib
}

/// How long one run of the command may take before the test kills it and fails.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// Runs the command with a clean NCCL environment plus `env`; a run that outlives
/// [`RUN_LIMIT`] is killed and fails the test instead of hanging the suite.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    run_without(args, env, &[])
}

/// As [`run`], with the variables `remove` unset too.
fn run_without(args: &[&str], env: &[(&str, &str)], remove: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, _) in std::env::vars().filter(|(k, _)| inherited_setting(k)) {
        cmd.env_remove(k);
    }
    for k in remove {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    let mut child = cmd.spawn().expect("run nccl-trampoline");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for nccl-trampoline") {
            break s;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("nccl-trampoline {args:?} ran longer than {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output { status, stdout: out_reader.join().unwrap(), stderr: err_reader.join().unwrap() }
}

/// Variables of the machine running the tests that would change what the command does: NCCL's,
/// the Python environment's, and every launcher's (a test run inside a Slurm job or under
/// torchrun must not make the command a rank of that job).
fn inherited_setting(k: &str) -> bool {
    k.starts_with("NCCL_")
        || [
            "VIRTUAL_ENV",
            "CONDA_PREFIX",
            "PYTHONUSERBASE",
            "RANK",
            "WORLD_SIZE",
            "LOCAL_RANK",
            "LOCAL_WORLD_SIZE",
            "MASTER_ADDR",
            "MASTER_PORT",
        ]
        .contains(&k)
        || ["OMPI_COMM_WORLD_", "PMI_", "MPI_LOCAL", "MV2_", "SLURM_", "PET_", "TORCHELASTIC_"]
            .iter()
            .any(|p| k.starts_with(p))
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn oracle_source_is_current() {
    let path = common::repo_file("generated/selftest_oracle.c");
    let want = common::selftest_c_source();
    if std::env::var_os("NCCL_TRAMPOLINE_REGENERATE").is_some() {
        std::fs::write(&path, &want).expect("write selftest_oracle.c");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is stale: regenerate it with NCCL_TRAMPOLINE_REGENERATE=1 cargo test --features cli --test cli oracle",
        path.display()
    );
}

#[test]
fn help_lists_the_three_commands() {
    let o = run(&["--help"], &[]);
    let (out, _) = text(&o);
    assert!(o.status.success());
    for cmd in ["doctor", "selftest", "perf"] {
        assert!(out.contains(cmd), "{out}");
    }
    assert!(!out.contains("probe"), "the internal command is hidden:\n{out}");
    let o = run(&["--version"], &[]);
    assert_eq!(text(&o).0.trim(), format!("nccl-trampoline {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn doctor_reports_the_candidate_that_loads_and_what_it_lacks() {
    let new = fake_nccl(23203);
    let old = fake_nccl(21803);
    let o = run(&["doctor"], &[("NCCL_TRAMPOLINE_LIBRARY", old.to_str().unwrap()), ("NCCL_DEBUG_SUBSYS", "INIT")]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let first = out.lines().find(|l| l.contains("1. [")).expect("a numbered candidate");
    assert!(
        first.contains("LOADS") && first.contains("NCCL 2.18.3") && first.contains("NCCL_TRAMPOLINE_LIBRARY"),
        "{out}"
    );
    assert!(out.contains(&format!("Loaded: NCCL 2.18.3 from {}", old.display())), "{out}");
    // 2.18.3 lacks the 2.19+ symbols, each with the version that introduced it.
    assert!(out.contains("ncclMemAlloc") && out.contains("needs 2.19.1"), "{out}");
    assert!(out.contains("ncclCommShrink"), "{out}");
    assert!(out.contains("NCCL_DEBUG_SUBSYS=INIT"), "{out}");
    assert!(out.contains("  NET (NCCL_NET_PLUGIN=unset):\n    tried: libnccl-net.so: not found\n"), "{out}");
    assert!(out.contains("GPUs:"), "{out}");

    let o = run(&["doctor"], &[("NCCL_TRAMPOLINE_LIBRARY", new.to_str().unwrap())]);
    let (out, _) = text(&o);
    assert!(out.contains("every symbol the facade knows is present"), "{out}");
    // The stand-in exports only functions of the table: every one bound.
    let n = nccl_trampoline::nccl::Sym::ALL.len();
    assert!(
        out.contains(&format!("NCCL API coverage: {n} of {n} functions exported by this library are bound\n")),
        "{out}"
    );
}

#[test]
fn doctor_names_a_missing_library_and_a_net_plugin() {
    let dir = common::work_dir("cli-net-plugin");
    let plugin = common::build_net_plugin(&dir, "nccl-net-tcp", "");
    // A table with NULL entries NCCL calls unchecked: refused, named.
    let src = dir.join("plugin.c");
    std::fs::write(&src, "void *ncclNetPlugin_v8[32];\n").unwrap();
    let zeros = common::build_shared(&dir, "nccl-net-zeros", &[src]);
    let o = run(
        &["doctor"],
        &[("NCCL_TRAMPOLINE_LIBRARY", "/nonexistent/libnccl.so.2"), ("NCCL_NET_PLUGIN", plugin.to_str().unwrap())],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let first = out.lines().find(|l| l.contains("1. [")).unwrap();
    assert!(first.contains("fails") && first.contains("/nonexistent/libnccl.so.2  ->  no such file"), "{out}");
    // An explicit request is never passed over: the later candidates are not tried.
    let second = out.lines().find(|l| l.contains("2. [")).unwrap();
    assert!(second.contains("not tried"), "{out}");
    assert!(
        out.contains(
            "Loaded: nothing; NCCL_TRAMPOLINE_LIBRARY=/nonexistent/libnccl.so.2 cannot be loaded: no such file (fix NCCL_TRAMPOLINE_LIBRARY"
        ),
        "{out}"
    );
    // The plugin found, its table, init's log line and its device, as NCCL would load it.
    for expected in [
        format!("tried: {}: loaded, ncclNetPlugin_v8", plugin.display()),
        "table: ncclNetPlugin_v8 (version 8)".to_string(),
        "name: TestTcp".to_string(),
        "log: INFO net_tcp.c:".to_string(),
        "NET/TestTcp : 1 device(s), loopback 127.0.0.1, 40-byte handles".to_string(),
        "device 0: lo-tcp pci /sys/devices/virtual/net/lo guid 0x1234abcd speed 10000 Mbps port 1 latency 0.5 us pointers host max comms 1024 max recvs 1".to_string(),
        "result: init (NCCL's logger) ncclSuccess, 1 device(s)".to_string(),
    ] {
        assert!(out.contains(&expected), "{expected}\n{out}");
    }
    // A list, as NCCL reads it (once taken as one name, `a,b` -> libnccl-net-a,b.so): each
    // entry in order, a bare name also as libnccl-net-<name>.so.
    let list = format!("nosuchplugin,{}", plugin.display());
    let o = run(&["doctor"], &[("NCCL_NET_PLUGIN", &list)]);
    let (out, _) = text(&o);
    assert!(
        out.contains("tried: nosuchplugin: not found\n    tried: libnccl-net-nosuchplugin.so: not found\n    tried: /"),
        "{out}"
    );
    assert!(out.contains("name: TestTcp"), "{out}");
    let o = run(&["doctor"], &[("NCCL_NET_PLUGIN", "nosuchplugin")]);
    let (out, _) = text(&o);
    assert!(out.contains("libnccl-net-nosuchplugin.so: not found"), "{out}");
    assert!(out.contains("none found"), "{out}");
    let o = run(&["doctor"], &[("NCCL_NET_PLUGIN", zeros.to_str().unwrap())]);
    let (out, _) = text(&o);
    assert!(out.contains("ncclNetPlugin_v8 has NULL init, devices, getProperties"), "{out}");
    let o = run(&["doctor"], &[("NCCL_NET_PLUGIN", "NONE"), ("NCCL_TUNER_PLUGIN", "none")]);
    let (out, _) = text(&o);
    assert!(out.contains("NET plugins are disabled by NCCL_NET_PLUGIN=none"), "{out}");
    assert!(out.contains("TUNER plugins are disabled by NCCL_TUNER_PLUGIN=none"), "{out}");
}

/// `net-bench` through the CLI: the working plugin (every byte of every size), and a
/// misbehaving one (its typed error in one line, exit status 1, within the deadline).
#[test]
fn net_bench_checks_every_byte_and_reports_a_misbehaving_plugin_in_one_line() {
    let dir = common::work_dir("cli-net-bench");
    let good = common::build_net_plugin(&dir, "nccl-net-tcp", "");
    let hang = common::build_net_plugin(&dir, "nccl-net-hang", "hang_connect");
    let o = run(&["net-bench", "--plugin", good.to_str().unwrap(), "--max-bytes", "1048576", "--flush"], &[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("result: every byte of 21 sizes checked"), "{out}");
    assert!(out.contains("     1048576     21"), "{out}");
    let started = std::time::Instant::now();
    let o = run(&["net-bench", "--plugin", hang.to_str().unwrap(), "--deadline", "1"], &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert_eq!(
        err,
        "nccl-trampoline: connect did not finish within 1000 ms (the call has not returned: it runs on in a thread of its own)\n"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn selftest_passes_the_core_and_the_stand_in_without_a_gpu() {
    let lib = fake_nccl(23203);
    let o = run(&["selftest", "--no-gpu", "--library", lib.to_str().unwrap()], &[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(!out.contains("FAIL"), "{out}");
    assert!(out.contains("random signatures (seed 0x5eed2026): 0 mismatches"), "{out}");
    assert!(out.contains("pinned shapes") && out.contains("ncclGetVersion: NCCL 2.32.3"), "{out}");
    // Display names, not Rust's Debug ones.
    assert!(out.contains("  ABI sysv-x86_64") || out.contains("  ABI aapcs64"), "{out}");
    assert!(out.contains("NCCL's own error for device -1: ncclCommInitAll -> ncclInvalidArgument (4)"), "{out}");
    assert!(out.contains("skip  --no-gpu"), "{out}");
    // The summary counts the skipped stage too.
    assert!(out.trim_end().ends_with("passed, 0 failed, 1 skipped"), "{out}");
}

#[test]
fn selftest_fails_with_status_1_when_the_named_library_is_missing() {
    let o = run(&["selftest", "--no-gpu", "--library", "/nonexistent/libnccl.so.2"], &[]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL  loading NCCL"), "{out}");
    // The core checks ran anyway.
    assert!(out.contains("pass  ") && out.contains("mismatches"), "{out}");
}

#[test]
fn perf_rejects_bad_arguments_with_usage_status_2() {
    let lib = fake_nccl(23203);
    let l = lib.to_str().unwrap();
    for (args, needle) in [
        (vec!["perf"], "<COLLECTIVE>"),
        (vec!["perf", "allreduce_typo"], "invalid value"),
        (vec!["perf", "all_reduce", "-b", "12Q"], "is not a size"),
        (vec!["perf", "all_reduce", "-d", "float7"], "unknown type `float7`"),
        (vec!["perf", "all_reduce", "-o", "mean"], "unknown op `mean`"),
        (vec!["perf", "all_reduce", "-z", "4"], "--blocking"),
        (vec!["perf", "broadcast", "-r", "-1", "--library", l], "every root in turn) is not implemented"),
        (vec!["perf", "all_reduce", "-y", "1", "--library", l], "-y 1 is not supported: every rank runs on its own"),
        (vec!["perf", "all_reduce", "-D", "1", "--library", l], "-D is not supported: device implementations"),
        (vec!["perf", "all_reduce", "-I", "1", "-n", "2", "-K", "2", "--library", l], "-K 2 leaves no iteration"),
        (vec!["perf", "all_reduce", "-x", "1", "-g", "2", "--library", l], "-x with -g > 1"),
        (vec!["perf", "all_reduce", "-t", "2"], "--nthreads"),
        (vec!["perf", "all_reduce", "-b", "1G", "-e", "8", "--library", l], "-e 8 is smaller than -b 1073741824"),
        (vec!["perf", "all_reduce", "-G", "1", "--library", l], "CUDA graph capture is not implemented"),
        (vec!["perf", "broadcast", "-g", "2", "-r", "2", "--library", l], "-r 2: there are only 2 ranks"),
        (vec!["perf", "all_reduce", "--procs", "2", "-g", "2", "--library", l], "-g must be 1"),
        // Each of these panicked before.
        (vec!["perf", "all_reduce", "--watchdog", "1e300"], "`1e300` seconds is not a duration"),
        (
            vec!["perf", "all_reduce", "-b", "18446744073709551615", "-e", "18446744073709551615", "--library", l],
            "is larger than 281474976710656 bytes",
        ),
    ] {
        let o = run(&args, &[]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}\n{out}\n{err}");
        assert!(err.contains(needle), "{args:?}: no `{needle}` in\n{err}");
    }
}

#[test]
fn perf_without_a_gpu_says_so_in_one_line_and_fails() {
    // No CUDA driver, whatever this machine has; and no NCCL either: the GPU is asked first.
    let o = run(
        &["perf", "all_reduce", "-b", "8", "-e", "8"],
        &[
            ("NCCL_TRAMPOLINE_CUDA_DRIVER", "/nonexistent/libcuda.so.1"),
            ("NCCL_TRAMPOLINE_LIBRARY", "/nonexistent/libnccl.so.2"),
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert_eq!(
        err,
        "nccl-trampoline: perf needs GPUs: cannot load the CUDA driver /nonexistent/libcuda.so.1: no such file \
         (`nccl-trampoline selftest` checks the core and NCCL without one)\n"
    );
}

#[test]
fn doctor_names_the_wheel_and_the_cuda_major_it_was_built_for() {
    let dir = common::work_dir("cli-wheel");
    let site = dir.join("venv/lib/python3.12/site-packages");
    let lib = site.join("nvidia/nccl/lib/libnccl.so.2");
    std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
    std::fs::copy(fake_nccl(23203), &lib).unwrap();
    let info = site.join("nvidia_nccl_cu13-2.32.3.dist-info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("METADATA"), "Metadata-Version: 2.4\nName: nvidia-nccl-cu13\nVersion: 2.32.3\n\n")
        .unwrap();
    let size = std::fs::metadata(&lib).unwrap().len();
    std::fs::write(info.join("RECORD"), format!("nvidia/nccl/lib/libnccl.so.2,sha256=x,{size}\n")).unwrap();
    let venv = dir.join("venv");
    let o = run(&["doctor"], &[("VIRTUAL_ENV", venv.to_str().unwrap()), ("HOME", dir.to_str().unwrap())]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let wheel = "the nvidia-nccl-cu13 2.32.3 wheel, built for CUDA 13";
    let line = out.lines().find(|l| l.contains("Python environment")).expect("the venv's candidate");
    assert!(line.ends_with(&format!("NCCL 2.32.3 ({wheel})")), "{out}");
    assert!(
        out.contains(&format!("Loaded: NCCL 2.32.3 from {} (Python environment; {wheel})", lib.display())),
        "{out}"
    );
}

#[test]
fn doctor_leaves_out_what_cargo_run_adds() {
    // `cargo run` gives the program cargo's variables, the build script's compile-time
    // NCCL_TRAMPOLINE_* values, and LD_LIBRARY_PATH entries in the target folder and the
    // toolchain, none of them the user's.
    let deps = Path::new(BIN).parent().unwrap().join("deps");
    let ld = format!("/toolchain/lib/rustlib/lib:{}:/opt/user/lib", deps.display());
    let cargo_env = [
        ("CARGO", "/toolchain/bin/cargo"),
        ("CARGO_PKG_NAME", "nccl-trampoline"),
        ("LD_LIBRARY_PATH", ld.as_str()),
        ("NCCL_TRAMPOLINE_CORE_ARCHIVE", "/target/out/libcore.a"),
        ("NCCL_DEBUG", "WARN"),
    ];
    let o = run(&["doctor"], &cargo_env);
    let (out, _) = text(&o);
    assert!(out.contains("\n  LD_LIBRARY_PATH=/opt/user/lib\n") && out.contains("NCCL_DEBUG=WARN"), "{out}");
    assert!(!out.contains("NCCL_TRAMPOLINE_CORE_ARCHIVE") && out.contains("(run by cargo"), "{out}");
    // Started by anything else, every entry is the user's.
    let o = run_without(&["doctor"], &cargo_env[2..], &["CARGO", "CARGO_PKG_NAME"]);
    let (out, _) = text(&o);
    assert!(out.contains(&format!("LD_LIBRARY_PATH={ld}")) && out.contains("NCCL_TRAMPOLINE_CORE_ARCHIVE"), "{out}");
    assert!(!out.contains("(run by cargo"), "{out}");
}

/// A directory holding the stand-in CUDA driver as `libcuda.so.1`, for LD_LIBRARY_PATH.
fn fake_cuda_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = common::work_dir("cli-fake-cuda");
            let lib = common::build_shared(&dir, "fakecuda", &[common::repo_file("tests/c/fake_cuda.c")]);
            std::fs::copy(&lib, dir.join("libcuda.so.1")).expect("name the stand-in libcuda.so.1");
            dir
        })
        .clone()
}

/// `perf` on the stand-ins: CUDA memory in host memory, NCCL executing the collectives.
fn perf(args: &[&str], extra_env: &[(&str, &str)]) -> Output {
    let lib = fake_nccl(23203);
    let cuda = fake_cuda_dir();
    let mut all: Vec<&str> = vec!["perf"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--library", lib.to_str().unwrap()]);
    let mut env = vec![("LD_LIBRARY_PATH", cuda.to_str().unwrap()), ("FAKE_NCCL_EXECUTE", "1")];
    env.extend_from_slice(extra_env);
    run(&all, &env)
}

/// The data lines of the table: every line not starting with '#'.
fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

#[test]
fn perf_prints_nccl_tests_table_on_the_stand_in() {
    let o = perf(&["all_reduce", "-b", "8", "-e", "1K", "-f", "4", "-g", "2", "-o", "all", "-n", "3", "-w", "1"], &[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    // nccl-tests 2.19.6's preamble, line for line (src/util.cu:623-640).
    assert_eq!(lines[0], "# nccl-tests version 2.19.6 nccl-headers=23203 nccl-library=23203");
    assert_eq!(lines[1], "# Collective test starting: all_reduce_perf");
    assert_eq!(
        lines[2],
        "# nThread 1 nGpus 2 minBytes 8 maxBytes 1024 step: 4(factor) warmup iters: 1 iters: 3 agg iters: 1 validation: 1 graph: 0 unalign: 0"
    );
    assert_eq!((lines[3], lines[4]), ("#", "# Using devices"));
    assert!(
        lines[6].starts_with("#  Rank  1 Group  0 Pid ") && lines[6].ends_with("device  1 [0000:02:00] Stand-in GPU 1")
    );
    let header = lines.iter().position(|l| l.contains("#wrong")).expect("column names");
    assert_eq!(
        lines[header],
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong "
    );
    assert_eq!(lines[lines.len() - 2..], ["#", ""], "{out}");
    assert!(out.contains("\n# Collective test concluded: all_reduce_perf\n#\n\n"), "{out}");
    // 8, 32, 128, 512 bytes for each of the six reductions of 2.32 (mulsum from 2.11), every
    // element right.
    let rows = rows(&out);
    assert_eq!(rows.len(), 24, "{out}");
    for (i, r) in rows.iter().enumerate() {
        let size = [8, 32, 128, 512][i % 4];
        let op = ["sum", "prod", "max", "min", "avg", "mulsum"][i / 4];
        assert_eq!(r.len(), 13, "{r:?}");
        assert_eq!(
            (r[0].as_str(), r[2].as_str(), r[3].as_str(), r[4].as_str()),
            (&*size.to_string(), "float", op, "-1")
        );
        assert_eq!(r[1], (size / 4).to_string(), "count");
        assert_eq!((r[8].as_str(), r[12].as_str()), ("0", "0"), "#wrong: {r:?}");
        // busbw = algbw * 2 (n-1)/n = algbw on two ranks.
        assert_eq!(r[6], r[7]);
    }
    assert!(out.contains("# Out of bounds values : 0 OK"), "{out}");
}

#[test]
fn perf_checks_every_collective_layout_on_the_stand_in() {
    for args in [
        &["all_gather", "-g", "3"][..],
        &["broadcast", "-g", "3", "-r", "1"],
        &["reduce", "-g", "3", "-r", "2", "-o", "all"],
        &["reduce_scatter", "-g", "3", "-o", "all"],
        &["all_reduce", "-g", "3", "-d", "all", "-o", "max"],
    ] {
        let mut a = args.to_vec();
        a.extend_from_slice(&["-b", "96", "-e", "6K", "-f", "8", "-n", "2", "-w", "0"]);
        // The stand-in executes integer and 32/64-bit float types; `-d all` includes the
        // 16-bit floats, which it refuses with ncclInvalidArgument.
        let o = perf(&a, &[("FAKE_CUDA_DEVICES", "3")]);
        let (out, err) = text(&o);
        if a.contains(&"all") && a.contains(&"-d") {
            assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
            assert!(err.contains("ncclAllReduce failed") && err.contains("not executed by the stand-in"), "{err}");
            assert!(rows(&out).iter().all(|r| r[8] == "0" && r[12] == "0"), "types before half pass:\n{out}");
            continue;
        }
        assert!(o.status.success(), "{a:?}\n{out}\n{err}");
        assert!(out.contains("# Out of bounds values : 0 OK"), "{a:?}\n{out}");
        let root = if a[0] == "broadcast" {
            "1"
        } else if a[0] == "reduce" {
            "2"
        } else {
            "-1"
        };
        assert!(rows(&out).iter().all(|r| r[4] == root), "{a:?}\n{out}");
    }
}

/// The race of a pageable upload with a launch on a non-blocking stream: the stand-in driver
/// lands `cuMemcpyHtoD`'s DMA and `cuMemsetD32`'s fill only when something ordered after them
/// runs (tests/c/fake_cuda.c), so a collective that is not ordered after its buffers' writes
/// reads stale input, or has its output overwritten by the late receive-buffer fill, every
/// time. Every size from 8 B to 2 MiB, both placements, element by element, on one GPU (as
/// issue 19 saw it: 33,768-113,280 wrong elements per size from 512 KiB to 8 MiB out of place)
/// and on two. With perf's writes made as `cuMemcpyHtoD` alone, each of these runs reports
/// wrong elements (1.6 million at 8 MiB) and exits 1.
#[test]
fn perf_orders_buffer_writes_before_its_collectives_on_one_and_two_gpus() {
    for ngpus in ["1", "2"] {
        for collective in ["all_reduce", "all_gather", "broadcast"] {
            let args = [collective, "-b", "8", "-e", "2M", "-f", "4", "-g", ngpus, "-n", "2", "-w", "1"];
            let o = perf(&args, &[]);
            let (out, err) = text(&o);
            assert!(o.status.success(), "{args:?}\n{out}\n{err}");
            let rows = rows(&out);
            assert_eq!(rows.len(), 10, "{args:?}\n{out}");
            assert!(rows.iter().all(|r| r[8] == "0" && r[12] == "0"), "{args:?}: wrong elements\n{out}");
            assert!(out.contains("# Out of bounds values : 0 OK"), "{args:?}\n{out}");
        }
    }
}

#[test]
fn perf_reports_wrong_elements_and_fails() {
    let o = perf(
        &["reduce_scatter", "-b", "48", "-e", "48", "-g", "3", "-n", "1"],
        &[("FAKE_CUDA_DEVICES", "3"), ("FAKE_NCCL_CORRUPT", "1")],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    // One spoiled element per rank and placement; nccl-tests counts the placements that failed.
    let r = &rows(&out)[0];
    assert_eq!((r[8].as_str(), r[12].as_str()), ("3", "3"), "{out}");
    assert!(out.contains("# Out of bounds values : 2 FAILED"), "{out}");
}

/// The `-J` document field for field as nccl-tests 2.19.6 writes it (src/util.cu), read with
/// the expectations of nccl-tests' own tools/analyze_perf_json.py (the keys it reads and the
/// types it needs: numbers for the per-iteration statistics, lists of numbers for the times).
#[test]
fn perf_json_is_nccl_tests_version_3() {
    let dir = common::work_dir("cli-perf-json");
    let file = dir.join("out.json");
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(dir.join("out.json.0"));
    let args = ["all_gather", "-b", "64", "-e", "256", "-f", "2", "-g", "2", "-n", "4", "-I", "1", "-K", "1"];
    let mut with_file = args.to_vec();
    with_file.extend(["-J", file.to_str().unwrap()]);
    let o = perf(&with_file, &[("NCCL_TRAMPOLINE_SECRET", "hunter2")]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(out.lines().next(), Some(&*format!("# Writing JSON output to {}", file.display())));
    let raw = std::fs::read_to_string(&file).unwrap();
    assert!(!raw.contains('\n') && !raw.contains(": "), "one line, no spaces: {raw}");
    assert!(!raw.contains("hunter2"), "a secret in the environment list");
    let doc: serde_json::Value = serde_json::from_str(&raw).expect("one JSON document");
    let keys: Vec<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec![
        "version",
        "start_time",
        "args",
        "env",
        "nccl_version",
        "config",
        "results",
        "out_of_bounds",
        "average_bus_bandwidth",
        "errors",
        "end_time",
    ];
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    want.sort_unstable();
    assert_eq!(sorted, want);
    assert_eq!(doc["version"], 3);
    assert_eq!(doc["nccl_version"], 23203);
    assert!(doc["args"].as_array().unwrap().iter().any(|a| a == "all_gather"));
    let c = &doc["config"];
    assert_eq!(
        (c["nthreads"].as_i64(), c["ngpus"].as_i64(), c["minimum_bytes"].as_i64()),
        (Some(1), Some(2), Some(64))
    );
    assert_eq!(
        (c["step_factor"].as_i64(), c["iterations"].as_i64(), c["validation"].as_i64()),
        (Some(2), Some(4), Some(1))
    );
    // Booleans are the strings "true"/"false" in nccl-tests' writer.
    assert_eq!((c["per_iter_timing"].as_str(), c["blocking_collectives"].as_str()), (Some("true"), Some("false")));
    assert_eq!(c["per_iter_skip"], 1);
    // One device entry per process, its first rank (nccl-tests parses one line per process).
    assert_eq!(c["devices"].as_array().unwrap().len(), 1);
    assert_eq!(c["devices"][0]["device_info"], "Stand-in GPU 0");
    assert_eq!(c["devices"][0]["device_hex"], "0000:01:00");
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for (r, size) in results.iter().zip([64, 128, 256]) {
        assert_eq!(r["size"], size);
        assert_eq!(r["count"], size / 4 / 2, "all-gather counts per rank");
        assert_eq!(
            (r["type"].as_str(), r["redop"].as_str(), r["root"].as_str()),
            (Some("float"), Some("none"), Some("    -1"))
        );
        assert_eq!((r["actual_iterations"].as_i64(), r["experiment_name"].as_str()), (Some(4), Some("")));
        for p in ["out_of_place", "in_place"] {
            assert_eq!(r[p]["nwrong"].as_f64(), Some(0.0));
            assert!(r[p]["time"].as_f64().unwrap() > 0.0);
            assert!(r[p]["bus_bw"].as_f64().unwrap() <= r[p]["alg_bw"].as_f64().unwrap());
            // What analyze_perf_json.py reads of each placement's statistics.
            let it = &r[format!("{p}_per_iter")];
            assert_eq!(it["skipped_iterations"], 1);
            for k in ["min_us", "max_us", "avg_us", "p50_us", "p95_us", "p99_us", "stdev_us", "cv_pct"] {
                assert!(it[k].as_f64().is_some(), "{p}_per_iter.{k}: {it}");
            }
            let times: Vec<f64> = it["times_us"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect();
            assert_eq!(times.len(), 4);
            let max = times[1..].iter().cloned().fold(0.0, f64::max);
            assert!((it["max_us"].as_f64().unwrap() - max).abs() < 1e-6, "i_max over the iterations after -K");
            assert!(it.get("per_process_max_times_us").is_none(), "one process: no per-process rows");
        }
    }
    assert_eq!(doc["out_of_bounds"], serde_json::json!({"count": 0, "okay": "true"}));
    assert_eq!(doc["average_bus_bandwidth"]["okay"], "unchecked");
    assert_eq!(doc["errors"], serde_json::json!([""]));
    // A second run keeps the first file and writes FILE.0, as nccl-tests' fopen("wx") loop.
    let o = perf(&with_file, &[]);
    assert!(o.status.success());
    assert!(text(&o).0.starts_with(&format!("# Writing JSON output to {}.0\n", file.display())));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), raw);
    // --json: the same document on stdout instead of the table.
    let mut json = args.to_vec();
    json.push("--json");
    let o = perf(&json, &[]);
    let out = text(&o).0;
    let doc: serde_json::Value = serde_json::from_str(&out).expect("stdout is one JSON document");
    assert_eq!(doc["results"].as_array().unwrap().len(), 3);
    // The per-iteration columns in the table.
    let o = perf(&args, &[]);
    let out = text(&o).0;
    assert!(out.contains("# Per-Iteration Report: CUDA event timing; i_* uses max over process rows; summary skips first 1 iterations \n"));
    assert!(out.contains("  i_min    i_max    i_p99    i_cv%"), "{out}");
    assert!(rows(&out).iter().all(|r| r.len() == 21), "{out}");

    let o = perf(&["all_reduce", "-b", "8", "-e", "8", "-g", "2", "-C", "1"], &[]);
    let (out, _) = text(&o);
    assert!(out.contains("  cputime   algbw") && !out.contains("     time   algbw"), "{out}");
}

/// The options of nccl-tests that change how a sweep runs, on the stand-ins: each still
/// checks every element.
#[test]
fn perf_runs_every_nccl_tests_mode_on_the_stand_in() {
    for (extra, rows_expected) in [
        (&["-z", "1"][..], 2),
        (&["-z", "2", "-m", "3"], 2),
        (&["-z", "3", "-I", "1"], 2),
        (&["-N", "3"], 6),
        (&["-c", "3"], 2),
        (&["-u", "3", "-d", "double"], 2),
        (&["-S", "1"], 2),
        (&["-R", "1"], 2),
        (&["-M", "1"], 2),
        (&["-o", "mulsum", "-d", "int32"], 2),
        (&["-p", "1", "-a", "3"], 2),
    ] {
        let mut a = vec!["all_reduce", "-b", "64", "-e", "128", "-f", "2", "-g", "2", "-n", "3", "-w", "1"];
        a.extend_from_slice(extra);
        let o = perf(&a, &[]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{a:?}\n{out}\n{err}");
        let rows = rows(&out);
        assert_eq!(rows.len(), rows_expected, "{a:?}\n{out}");
        // With -I each placement has four more columns.
        let in_place = if a.contains(&"-I") { 16 } else { 12 };
        assert!(rows.iter().all(|r| r[8] == "0" && r[in_place] == "0"), "{a:?}\n{out}");
        if extra[0] == "-S" {
            assert!(out.contains("#wrong           timestamp\n"), "{out}");
            assert!(rows.iter().all(|r| r.len() == 15 && r[13].len() == 10 && r[14].len() == 8), "{out}");
        }
        if extra[0] == "-M" {
            assert!(out.contains("# GPU memory usage     : Initialization "), "{out}");
        }
        if extra[0] == "-z" && extra[1] == "3" {
            assert!(out.contains("time excludes barrier"), "{out}");
        }
    }
    // NCCL_TESTS_MIN_BW: the stand-in's bandwidth is far below 1e6 GB/s.
    let o = perf(&["all_reduce", "-b", "64", "-e", "64", "-n", "1"], &[("NCCL_TESTS_MIN_BW", "1000000")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).0.contains(" FAILED\n#\n# Collective test concluded"), "{:?}", text(&o));
}

#[test]
fn perf_needs_the_gpus_it_is_asked_for() {
    let o = perf(&["all_reduce", "-b", "8", "-e", "8", "-g", "4"], &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("-g 4: only 2 GPUs are visible"), "{err}");
}

#[test]
fn perf_procs_starts_one_rank_per_process_and_rank_0_prints_the_table() {
    // The stand-in meets ranks of other processes in shared memory: every element checked.
    let o = perf(&["all_reduce", "-b", "8", "-e", "64", "-f", "2", "--procs", "2", "-n", "2"], &[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("# nThread 1 nGpus 1 "), "{out}");
    let pids: std::collections::BTreeSet<&str> =
        out.lines().filter(|l| l.starts_with("#  Rank")).map(|l| l.split_whitespace().nth(6).unwrap()).collect();
    assert_eq!(pids.len(), 2, "each rank is its own process:\n{out}");
    let rows = rows(&out);
    assert_eq!(rows.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), ["8", "16", "32", "64"], "one table:\n{out}");
    assert!(rows.iter().all(|r| r[8] == "0" && r[12] == "0"), "{out}");
}

/// Starts `n` ranks of `perf` at once, each with the variables `env(rank)` a launcher would
/// set, on the stand-ins; returns every rank's output, in rank order.
fn launch(
    n: usize,
    env: impl Fn(usize) -> Vec<(String, String)>,
    args: &[&str],
    extra: &[(&str, &str)],
) -> Vec<Output> {
    let threads: Vec<_> = (0..n)
        .map(|r| {
            let mut e: Vec<(String, String)> = env(r);
            e.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            std::thread::spawn(move || {
                let env: Vec<(&str, &str)> = e.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                let args: Vec<&str> = a.iter().map(String::as_str).collect();
                perf(&args, &env)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

/// torchrun's variables for rank `r` of `n` on this host.
fn torchrun(n: usize, port: u16, run_id: &str) -> impl Fn(usize) -> Vec<(String, String)> {
    let run_id = run_id.to_string();
    move |r| {
        [
            ("RANK", r.to_string()),
            ("WORLD_SIZE", n.to_string()),
            ("LOCAL_RANK", r.to_string()),
            ("LOCAL_WORLD_SIZE", n.to_string()),
            ("GROUP_RANK", "0".to_string()),
            ("MASTER_ADDR", "127.0.0.1".to_string()),
            ("MASTER_PORT", port.to_string()),
            ("TORCHELASTIC_RUN_ID", run_id.clone()),
            ("FAKE_CUDA_DEVICES", n.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// A run id no other test or run shares (the rendezvous port is derived from it).
fn run_id(name: &str) -> String {
    format!("{name}-{}-{:?}", std::process::id(), std::time::SystemTime::now())
}

#[test]
fn perf_under_torchrun_variables_is_one_rank_per_process() {
    // torchrun's store holds MASTER_PORT: a listener here stands in for it, and the
    // rendezvous must pick another port.
    let store = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = store.local_addr().unwrap().port();
    let args = ["broadcast", "-b", "64", "-e", "4K", "-f", "8", "-r", "1", "-n", "2", "-w", "1"];
    let outs = launch(3, torchrun(3, port, &run_id("torchrun")), &args, &[]);
    for (r, o) in outs.iter().enumerate() {
        let (out, err) = text(o);
        assert!(o.status.success(), "rank {r}:\n{out}\n{err}");
        if r == 0 {
            assert_eq!(out.lines().filter(|l| l.starts_with("#  Rank")).count(), 3, "{out}");
            let rows = rows(&out);
            assert_eq!(rows.len(), 3, "{out}");
            assert!(rows.iter().all(|row| row[4] == "1" && row[8] == "0" && row[12] == "0"), "{out}");
        } else {
            assert_eq!(out, "", "only rank 0 prints");
        }
    }
}

#[test]
fn perf_under_slurm_variables_is_one_rank_per_process() {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    let job = std::process::id().to_string();
    let env = move |r: usize| -> Vec<(String, String)> {
        [
            ("SLURM_JOB_ID", job.clone()),
            ("SLURM_STEP_ID", "0".to_string()),
            ("SLURM_PROCID", r.to_string()),
            ("SLURM_STEP_NUM_TASKS", "2".to_string()),
            ("SLURM_LOCALID", r.to_string()),
            ("SLURM_NODEID", "0".to_string()),
            ("SLURM_STEP_TASKS_PER_NODE", "2".to_string()),
            ("SLURM_STEP_NODELIST", host.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    };
    let outs = launch(2, env, &["all_gather", "-b", "64", "-e", "256", "-f", "2", "-n", "2"], &[]);
    let (out, err) = text(&outs[0]);
    assert!(outs.iter().all(|o| o.status.success()), "{out}\n{err}\n{:?}", text(&outs[1]));
    assert_eq!(rows(&out).len(), 3, "{out}");
}

/// The crate's own variables for rank `r` of `n` on this host, plus `extra`.
fn explicit(n: usize, extra: Vec<(String, String)>) -> impl Fn(usize) -> Vec<(String, String)> {
    move |r| {
        let mut v: Vec<(String, String)> = [
            ("NCCL_TRAMPOLINE_RANK", r.to_string()),
            ("NCCL_TRAMPOLINE_WORLD_SIZE", n.to_string()),
            ("NCCL_TRAMPOLINE_LOCAL_RANK", r.to_string()),
            ("NCCL_TRAMPOLINE_LOCAL_SIZE", n.to_string()),
            ("FAKE_CUDA_DEVICES", n.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        v.extend(extra.iter().cloned());
        v
    }
}

#[test]
fn perf_over_the_file_route_and_nccl_comm_id() {
    let args = ["all_reduce", "-b", "64", "-e", "256", "-f", "4", "-n", "2", "-w", "0"];
    // A file on a "shared" filesystem: published by rank 0, removed once every rank joined.
    let dir = common::work_dir("cli-file-route");
    let file = dir.join("id");
    let env = explicit(3, vec![("NCCL_TRAMPOLINE_ID_FILE".into(), file.display().to_string())]);
    let outs = launch(3, env, &args, &[]);
    let (out, err) = text(&outs[0]);
    assert!(outs.iter().all(|o| o.status.success()), "{out}\n{err}\n{:?}", text(&outs[2]));
    assert_eq!(rows(&out).len(), 2, "{out}");
    assert!(!file.exists(), "the root removes the file after init");
    // NCCL_COMM_ID: every rank's ncclGetUniqueId gives the same id, no exchange.
    let env = explicit(2, vec![("NCCL_COMM_ID".into(), format!("127.0.0.1:{}", std::process::id() % 20000 + 30000))]);
    let outs = launch(2, env, &args, &[]);
    let (out, err) = text(&outs[0]);
    assert!(outs.iter().all(|o| o.status.success()), "{out}\n{err}");
    assert_eq!(rows(&out).len(), 2, "{out}");
}

#[test]
fn perf_ranks_all_fail_when_any_rank_sees_a_wrong_element() {
    let args = ["all_reduce", "-b", "32", "-e", "32", "-n", "1", "-w", "0"];
    let outs = launch(2, torchrun(2, 1, &run_id("corrupt")), &args, &[("FAKE_NCCL_CORRUPT", "1")]);
    for (r, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(1), "rank {r}: {:?}", text(o));
    }
    let (out, _) = text(&outs[0]);
    // Both placements failed on both ranks: nccl-tests counts once per process and placement
    // (the #wrong columns count each rank's spoiled elements).
    assert!(out.contains("# Out of bounds values : 4 FAILED"), "{out}");
    let r = &rows(&out)[0];
    assert_eq!((r[8].as_str(), r[12].as_str()), ("2", "2"), "{out}");
    // Every rank agreed on each check (nccl-tests: an allreduce of the count).
}

/// A launcher's world of one is a launched job of one rank, not "no launcher": one rank, the
/// one table, and the same refusals as in a larger world (never ranks of its own).
#[test]
fn perf_under_a_launcher_with_a_world_of_one_runs_one_rank() {
    let args = ["all_reduce", "-b", "8", "-e", "1K", "-f", "4", "-n", "2", "-w", "1"];
    let worlds: [Vec<(String, String)>; 2] =
        [torchrun(1, 1, &run_id("world-of-one"))(0), explicit(1, vec![("FAKE_CUDA_DEVICES".into(), "1".into())])(0)];
    for env in worlds {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let o = perf(&args, &env);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{env:?}\n{out}\n{err}");
        assert!(out.contains("# nThread 1 nGpus 1 ") && out.contains("#  Rank  0 Group  0 Pid"), "{out}");
        assert_eq!(rows(&out).len(), 4, "{out}");
        assert!(rows(&out).iter().all(|r| r[8] == "0" && r[12] == "0"), "{out}");
        let o = perf(&["all_reduce", "--procs", "2"], &env);
        assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
        assert!(text(&o).1.contains("already started 1 (leave --procs out)"), "{:?}", text(&o));
    }
}

#[test]
fn perf_under_a_launcher_refuses_what_does_not_fit_it() {
    let env: Vec<(String, String)> = torchrun(2, 1, "x")(1);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let o = perf(&["all_reduce", "-g", "2"], &env);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert!(text(&o).1.contains("drives one GPU"), "{:?}", text(&o));
    let o = perf(&["all_reduce", "--procs", "2"], &env);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("leave --procs out"), "{:?}", text(&o));
    // A contradiction in the launcher's variables: named, exit status 1.
    env.retain(|(k, _)| *k != "RANK");
    env.push(("RANK", "2"));
    let o = perf(&["all_reduce"], &env);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("RANK=2, WORLD_SIZE=2"), "{:?}", text(&o));
}

/// A FIFO at `dir/libnccl.so.2`: opening it for reading waits for a writer for ever.
fn fifo(dir: &Path) -> PathBuf {
    let p = dir.join("libnccl.so.2");
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
    p
}

/// A library whose initialiser never returns: loading it blocks, as loading a FIFO did.
fn hanging_library(dir: &Path) -> PathBuf {
    let src = dir.join("hang.c");
    std::fs::write(&src, "#include <unistd.h>\nstatic void hang(void) __attribute__((constructor));\nstatic void hang(void) { for (;;) pause(); }\nint ncclGetVersion(int *v) { *v = 23203; return 0; }\n").unwrap();
    common::build_shared(dir, "hang", &[src])
}

#[test]
fn doctor_and_selftest_refuse_a_fifo_instead_of_waiting_for_ever() {
    let dir = common::work_dir("cli-fifo");
    let lib = fifo(&dir);
    let l = lib.to_str().unwrap();
    let start = Instant::now();
    let o = run(&["doctor"], &[("NCCL_TRAMPOLINE_LIBRARY", l)]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains(&format!("{l}  ->  not a regular file but a FIFO")), "{out}");
    assert!(out.contains("cannot be loaded: not a regular file but a FIFO"), "{out}");
    // As NCCL_NET_PLUGIN too.
    let o = run(&["doctor"], &[("NCCL_NET_PLUGIN", l), ("NCCL_TRAMPOLINE_LIBRARY", "/nonexistent/libnccl.so.2")]);
    let (out, _) = text(&o);
    assert!(out.contains(&format!("{l}: not a regular file")), "{out}");
    let o = run(&["selftest", "--no-gpu", "--library", l], &[]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL  loading NCCL") && out.contains("not a regular file but a FIFO"), "{out}");
    assert!(start.elapsed() < Duration::from_secs(60), "{:?}", start.elapsed());
}

#[test]
fn doctor_stops_a_probe_that_does_not_answer() {
    let dir = common::work_dir("cli-probe-timeout");
    let lib = hanging_library(&dir);
    let start = Instant::now();
    let o = run(&["doctor", "--probe-timeout", "1"], &[("NCCL_TRAMPOLINE_LIBRARY", lib.to_str().unwrap())]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("no answer within 1 s: the probe was stopped"), "{out}");
    assert!(start.elapsed() < Duration::from_secs(60), "{:?}", start.elapsed());
    let o = run(&["doctor", "--probe-timeout", "0"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o).1);
}

/// The pids of the processes whose parent is `parent` (from /proc/*/stat).
fn children_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // pid (comm) state ppid ...: the command name may hold spaces; split after its ')'.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn a_probe_dies_with_the_doctor_that_started_it() {
    let dir = common::work_dir("cli-probe-orphan");
    let lib = hanging_library(&dir);
    let mut doctor = Command::new(BIN)
        .args(["doctor", "--probe-timeout", "600"])
        .env("NCCL_TRAMPOLINE_LIBRARY", &lib)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the probe (stuck in the library's initialiser) to exist.
    let start = Instant::now();
    let probe = loop {
        if let Some(&p) = children_of(doctor.id()).first() {
            break p;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no probe started");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Give it time to reach the initialiser, then kill doctor the hard way.
    std::thread::sleep(Duration::from_millis(300));
    doctor.kill().unwrap();
    doctor.wait().unwrap();
    let gone = Instant::now();
    while Path::new(&format!("/proc/{probe}")).exists() {
        let zombie = std::fs::read_to_string(format!("/proc/{probe}/stat")).is_ok_and(|s| s.contains(") Z "));
        if zombie {
            break; // dead, waiting for its new parent to reap it
        }
        if gone.elapsed() > Duration::from_secs(10) {
            // Clean up before failing: the probe would otherwise run on.
            // SAFETY: kill(2) of the probe this test caused to be started.
            unsafe { libc::kill(probe as libc::pid_t, libc::SIGKILL) };
            panic!("probe {probe} outlived its doctor by 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// doctor with the project's Rust tuner and profiler plugins (examples/, built as shared
/// libraries beside this test): found by NCCL's variables, initialised as for a one-rank
/// communicator, their log lines and the profiler's activation mask shown.
#[test]
fn doctor_initialises_the_rust_tuner_and_profiler_plugins() {
    let examples = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().join("examples");
    let (tuner, profiler) = (examples.join("libtuner_plugin.so"), examples.join("libprofiler_plugin.so"));
    assert!(tuner.exists() && profiler.exists(), "cargo test builds the examples: {}", examples.display());
    let o = run(
        &["doctor"],
        &[("NCCL_TUNER_PLUGIN", tuner.to_str().unwrap()), ("NCCL_PROFILER_PLUGIN", profiler.to_str().unwrap())],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    for expected in [
        "table: ncclTunerPlugin_v5 (version 5)",
        "name: nccl-trampoline-rust-tuner",
        "rust tuner: init nRanks=1 nNodes=1",
        "result: init (1 rank, 1 node) ncclSuccess",
        "table: ncclProfiler_v5 (version 5)",
        "rust profiler: init comm 0x6e63636c7472706c",
        "asks for events: Group|Coll|P2p|ProxyOp|ProxyStep|ProxyCtrl|KernelCh|NetPlugin|GroupApi|CollApi|P2pApi|KernelLaunch (0xfff)",
        "result: init (a one-rank communicator) ncclSuccess",
    ] {
        assert!(out.contains(expected), "{expected}\n{out}");
    }
}

/// The `checks` entry of `doctor --json` whose `id` is `id` and whose text contains `has`, as
/// its JSON text (the document is one line; the checks are flat objects).
fn json_check<'a>(json: &'a str, id: &str, has: &str) -> &'a str {
    let checks = &json[json.find("\"checks\":[").expect("a checks list")..];
    checks
        .split("{\"id\":")
        .skip(1)
        .map(|c| c.split('}').next().unwrap())
        .find(|c| c.starts_with(&format!("\"{id}\"")) && c.contains(has))
        .unwrap_or_else(|| panic!("no {id} check with {has:?} in {json}"))
}

#[test]
fn doctor_fails_a_socket_ifname_that_matches_no_interface() {
    let env = [("NCCL_SOCKET_IFNAME", "=nonexistent0"), ("NCCL_TRAMPOLINE_LIBRARY", "/nonexistent/libnccl.so.2")];
    let o = run(&["doctor"], &env);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "a FAILED check is exit status 1:\n{out}\n{err}");
    let line = out.lines().find(|l| l.contains("socket-ifname")).expect("the socket check");
    assert!(line.trim_start().starts_with("FAILED   socket-ifname (NCCL_SOCKET_IFNAME==nonexistent0)"), "{line}");
    assert!(line.contains("exact names: nonexistent0") && line.contains("present: "), "{line}");
    assert!(line.contains("; fix: "), "{line}");
    assert!(out.contains("1 check(s) FAILED."), "{out}");
    // No driver here: the CUDA check says so instead of failing.
    assert!(out.lines().any(|l| l.trim_start().starts_with("skipped  cuda-compat")), "{out}");

    let o = run(&["doctor", "--json"], &env);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    let json = out.trim();
    assert_eq!(json.lines().count(), 1, "one document on one line:\n{out}");
    assert!(json.starts_with("{\"schema\":1,") && json.ends_with("\"failed\":1,\"ok\":false}"), "{json}");
    for key in ["tool", "candidates", "also_on_disk", "loaded", "environment", "plugins", "gpus", "parameters"] {
        assert!(json.contains(&format!("\"{key}\":")), "{key} missing: {json}");
    }
    let check = json_check(json, "socket-ifname", "FAILED");
    assert!(check.contains("\"subject\":\"NCCL_SOCKET_IFNAME==nonexistent0\",\"verdict\":\"FAILED\""), "{check}");
    assert!(check.contains("\"fix\":\"set NCCL_SOCKET_IFNAME to"), "{check}");
    json_check(json, "torch-nccl", "\"verdict\":");
    json_check(json, "nccl-params", "\"verdict\":\"info\"");

    // The usual machine: unset, NCCL's default picks something, nothing fails.
    let o = run(&["doctor"], &[("NCCL_TRAMPOLINE_LIBRARY", "/nonexistent/libnccl.so.2")]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("socket-ifname (NCCL_SOCKET_IFNAME unset): NCCL would use "), "{out}");
}

/// The library's own parameter values, through its parameter API (NCCL 2.30.4), where it has
/// one; where not, doctor says the values come from the environment and the files.
#[test]
fn doctor_reads_the_parameters_the_library_itself_reads() {
    let lib = fake_nccl(23203);
    let l = lib.to_str().unwrap();
    let o = run(&["doctor", "--json"], &[("NCCL_TRAMPOLINE_LIBRARY", l), ("FAKE_PARAM_I32", "7")]);
    let doc: serde_json::Value = serde_json::from_str(&text(&o).0).expect("one JSON document");
    let own = &doc["nccl_parameters"];
    assert_eq!(own["available"], true, "{own}");
    let value = |k: &str| own["values"].as_array().unwrap().iter().find(|v| v["key"] == k).map(|v| v["value"].clone());
    assert_eq!(value("FAKE_PARAM_I32"), Some("7".into()), "{own}");
    assert_eq!(value("FAKE_PARAM_U16"), Some("60000".into()), "{own}");
    let o = run(&["doctor"], &[("NCCL_TRAMPOLINE_LIBRARY", l)]);
    assert!(
        text(&o).0.contains("NCCL's own values (ncclParamGetParameter, NCCL 2.30.4): 9 parameters"),
        "{:?}",
        text(&o)
    );
    // 2.28: no parameter API.
    let old = fake_nccl(22803);
    let o = run(&["doctor", "--json"], &[("NCCL_TRAMPOLINE_LIBRARY", old.to_str().unwrap())]);
    let doc: serde_json::Value = serde_json::from_str(&text(&o).0).expect("one JSON document");
    assert_eq!(doc["nccl_parameters"]["available"], false, "{}", doc["nccl_parameters"]);
    assert!(doc["nccl_parameters"]["reason"].as_str().unwrap().contains("2.30.4"), "{}", doc["nccl_parameters"]);
}

#[test]
fn doctor_reads_nccl_conf_file_after_the_environment() {
    let dir = common::work_dir("cli-nccl-conf");
    let conf = dir.join("nccl.conf");
    std::fs::write(&conf, "# site defaults\nNCCL_DEBUG=INFO\nNCCL_IB_HCA=mlx5_0\nNCCL_SOCKET_IFNAME=^=lo,eth0,ens0\n")
        .unwrap();
    let c = conf.to_str().unwrap();
    let env = [
        ("NCCL_CONF_FILE", c),
        ("NCCL_DEBUG", "WARN"),
        ("HOME", dir.to_str().unwrap()),
        ("NCCL_TRAMPOLINE_LIBRARY", "/nonexistent/libnccl.so.2"),
    ];
    let mut with_secret = env.to_vec();
    with_secret.push(("NCCL_TRAMPOLINE_SECRET", "hunter2"));
    for args in [&["doctor"][..], &["doctor", "--json"]] {
        let (out, _) = text(&run(args, &with_secret));
        assert!(!out.contains("hunter2"), "a secret in the report:\n{out}");
    }
    let o = run(&["doctor"], &env);
    let (out, err) = text(&o);
    assert!(
        out.contains(&format!("  NCCL_DEBUG=WARN  (from environment; ignored: NCCL_DEBUG=INFO in {c})")),
        "{out}\n{err}"
    );
    assert!(out.contains(&format!("  NCCL_IB_HCA=mlx5_0  (from {c})")), "{out}");
    assert!(
        out.contains(&format!("info     nccl-params (NCCL_CONF_FILE={c}): 2 from the environment, 2 from files")),
        "{out}"
    );
    // The socket check reads the value NCCL would: the file's.
    assert!(out.contains("socket-ifname (NCCL_SOCKET_IFNAME=^=lo,eth0,ens0)"), "{out}");

    let o = run(&["doctor", "--json"], &env);
    let (out, _) = text(&o);
    assert!(
        out.contains(&format!(
            "{{\"key\":\"NCCL_DEBUG\",\"value\":\"WARN\",\"origin\":\"environment\",\"ignored\":[{{\"origin\":\"{c}\",\"value\":\"INFO\"}}]}}"
        )),
        "{out}"
    );

    // A file saved with CRLF: NCCL keeps the carriage return in the value; doctor warns.
    let crlf = dir.join("crlf.conf");
    std::fs::write(&crlf, "NCCL_SOCKET_IFNAME=eth0\r\n").unwrap();
    let o = run(&["doctor"], &[("NCCL_CONF_FILE", crlf.to_str().unwrap())]);
    let (out, _) = text(&o);
    let line = out.lines().find(|l| l.contains("nccl-params")).expect("the params check");
    assert!(line.trim_start().starts_with("warning  nccl-params") && line.contains("carriage return"), "{line}");

    // A conf file that is not there: NCCL skips it silently; doctor warns.
    let missing = dir.join("missing.conf");
    let o = run(&["doctor"], &[("NCCL_CONF_FILE", missing.to_str().unwrap()), ("HOME", dir.to_str().unwrap())]);
    let (out, _) = text(&o);
    let line = out.lines().find(|l| l.contains("nccl-params")).expect("the params check");
    assert!(line.trim_start().starts_with("warning  nccl-params") && line.contains("(absent)"), "{line}");
}

#[test]
fn doctor_compares_the_library_banner_cuda_major_with_the_driver() {
    let dir = common::work_dir("cli-banner");
    // The literal as NCCL carries it (after a printf format of the same start), appended after
    // the ELF contents: the loader ignores it, doctor scans for it as in a real library.
    let with_banner = |name: &str, cuda: &str| {
        let lib = dir.join(name).join("libnccl.so.2");
        std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
        let mut bytes = std::fs::read(fake_nccl(22809)).unwrap();
        bytes.extend_from_slice(format!("\0NCCL version %s\0NCCL version 2.28.9+cuda{cuda}\0").as_bytes());
        std::fs::write(&lib, bytes).unwrap();
        lib
    };
    let cu13 = with_banner("cu13", "13.0");
    let cu12 = with_banner("cu12", "12.9");
    let check_line = |out: &str| out.lines().find(|l| l.contains("cuda-compat")).expect("the CUDA check").to_string();

    // No driver: the comparison is skipped, with the reason.
    let o = run(&["doctor"], &[("NCCL_TRAMPOLINE_LIBRARY", cu13.to_str().unwrap())]);
    let line = check_line(&text(&o).0);
    assert!(line.trim_start().starts_with("skipped  cuda-compat"), "{line}");
    assert!(line.contains("built for CUDA 13 (its banner says CUDA 13.0); no CUDA driver to compare with"), "{line}");

    // The stand-in driver says CUDA 12.8: a CUDA 13 build FAILS, a 12.9 one is fine (minor-version
    // compatibility).
    let cuda = fake_cuda_dir();
    let env = |lib: &Path| {
        vec![
            ("NCCL_TRAMPOLINE_LIBRARY", lib.to_str().unwrap().to_string()),
            ("LD_LIBRARY_PATH", cuda.to_str().unwrap().to_string()),
        ]
    };
    let run_with = |lib: &Path, json: bool| {
        let e = env(lib);
        let e: Vec<(&str, &str)> = e.iter().map(|(k, v)| (*k, v.as_str())).collect();
        run(if json { &["doctor", "--json"] } else { &["doctor"] }, &e)
    };
    let o = run_with(&cu13, false);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    let line = check_line(&out);
    assert!(line.trim_start().starts_with(&format!("FAILED   cuda-compat ({})", cu13.display())), "{line}");
    assert!(
        line.contains("but the driver supports CUDA 12.8")
            && line.contains("fix: update the driver to one for CUDA 13"),
        "{line}"
    );
    let o = run_with(&cu13, true);
    let json = text(&o).0;
    let check = json_check(&json, "cuda-compat", "FAILED");
    assert!(check.contains(&format!("\"subject\":\"{}\",\"verdict\":\"FAILED\"", cu13.display())), "{check}");
    assert!(json.contains("\"cuda_version\":\"12.8\""), "{json}");

    let o = run_with(&cu12, false);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let line = check_line(&out);
    assert!(line.trim_start().starts_with("ok       cuda-compat"), "{line}");
    assert!(line.contains("minor-version compatibility within CUDA 12"), "{line}");
}
