//! The `nccl-trampoline` command (feature `cli`), run as a user runs it, against the C
//! stand-in libnccl (tests/c/fake_nccl.c); no GPU and no real NCCL needed.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

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

/// Runs the command with a clean NCCL environment plus `env`.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("NCCL_") || k == "VIRTUAL_ENV" || k == "CONDA_PREFIX")
    {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    // The CLI's own loader may reach a system NCCL; the stand-in comes first by the
    // discovery order (NCCL_TRAMPOLINE_LIBRARY).
    cmd.output().expect("run nccl-trampoline")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn oracle_source_is_current() {
    let path = common::repo_file("src/bin/nccl-trampoline/selftest_oracle.c");
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
    assert!(out.contains("Net plugin (NCCL_NET_PLUGIN=unset)") && out.contains("libnccl-net.so"), "{out}");
    assert!(out.contains("GPUs:"), "{out}");

    let o = run(&["doctor"], &[("NCCL_TRAMPOLINE_LIBRARY", new.to_str().unwrap())]);
    let (out, _) = text(&o);
    assert!(out.contains("every symbol the facade knows is present"), "{out}");
}

#[test]
fn doctor_names_a_missing_library_and_a_net_plugin() {
    let dir = common::work_dir("cli-net-plugin");
    let src = dir.join("plugin.c");
    std::fs::write(&src, "int ncclNetPlugin_v8[64];\n").unwrap();
    let plugin = common::build_shared(&dir, "nccl-net-demo", &[src]);
    let o = run(
        &["doctor"],
        &[("NCCL_TRAMPOLINE_LIBRARY", "/nonexistent/libnccl.so.2"), ("NCCL_NET_PLUGIN", plugin.to_str().unwrap())],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let first = out.lines().find(|l| l.contains("1. [")).unwrap();
    assert!(first.contains("fails") && first.contains("/nonexistent/libnccl.so.2"), "{out}");
    assert!(out.contains(&format!("found at {}", plugin.display())) && out.contains("ncclNetPlugin_v8"), "{out}");
    // A bare name is also tried as libnccl-net-<name>.so.
    let o = run(&["doctor"], &[("NCCL_NET_PLUGIN", "nosuchplugin")]);
    let (out, _) = text(&o);
    assert!(out.contains("libnccl-net-nosuchplugin.so: not found"), "{out}");
    assert!(out.contains("none found"), "{out}");
}

#[test]
fn selftest_passes_the_core_and_the_stand_in_without_a_gpu() {
    let lib = fake_nccl(23203);
    let o = run(&["selftest", "--no-gpu", "--library", lib.to_str().unwrap()], &[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(!out.contains("FAIL"), "{out}");
    assert!(out.contains("random signatures (seed 0x5eed2026): 0 mismatches"), "{out}");
    assert!(out.contains("pinned shapes") && out.contains("ncclGetVersion: Nccl 2.32.3"), "{out}");
    assert!(out.contains("NCCL's own error for device -1: ncclCommInitAll -> ncclInvalidArgument (4)"), "{out}");
    assert!(out.contains("skip  --no-gpu"), "{out}");
    assert!(out.trim_end().ends_with("0 failed"), "{out}");
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
        (vec!["perf", "all_reduce", "-c", "2"], "-c"),
        (vec!["perf", "all_reduce", "-t", "2"], "--nthreads"),
        (vec!["perf", "all_reduce", "-b", "1G", "-e", "8", "--library", l], "-e 8 is smaller than -b 1073741824"),
        (vec!["perf", "all_reduce", "-G", "1", "--library", l], "CUDA graphs"),
        (vec!["perf", "broadcast", "-g", "2", "-r", "2", "--library", l], "-r 2: there are only 2 ranks"),
        (vec!["perf", "all_reduce", "--procs", "2", "-g", "2", "--library", l], "-g must be 1"),
    ] {
        let o = run(&args, &[]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}\n{out}\n{err}");
        assert!(err.contains(needle), "{args:?}: no `{needle}` in\n{err}");
    }
}

#[test]
fn perf_without_a_gpu_says_so_and_fails() {
    if Path::new("/dev/nvidiactl").exists() {
        eprintln!("skipped: this machine has an NVIDIA driver");
        return;
    }
    let lib = fake_nccl(23203);
    let o = run(&["perf", "all_reduce", "-b", "8", "-e", "8", "--library", lib.to_str().unwrap()], &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("perf needs the CUDA driver"), "{err}");
}
