//! The GPU examples on a machine without a GPU (feature `cudarc`): one line that says what is
//! missing, exit status 1; no panic, backtrace or list of the names cudarc searched. Then the
//! same examples on the stand-ins (tests/c/fake_cuda.c as `libcuda.so.1` and `libcuda.so`, for
//! the crate and for cudarc; tests/c/fake_nccl.c executing the collectives): with one GPU, or a
//! launcher's world of one, a single rank runs and the program ends; with two, one process per
//! GPU; each process counted.
//!
//! The examples are binaries this test runs, so they must be built first, with the same
//! profile: `cargo build --features cudarc-nccl --examples` (scripts/test.sh does). The CUDA
//! driver is pointed at a file that does not exist, or at the stand-in, so the result is the
//! same on a GPU machine.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `target/<profile>/examples`, beside this test's `target/<profile>/deps`.
fn examples_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("this test's path");
    exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>").join("examples")
}

#[test]
fn gpu_examples_without_a_gpu_say_so_in_one_line() {
    for (name, args) in [
        ("init_all", &[][..]),
        ("allreduce", &[][..]),
        ("cudarc_streams", &[][..]),
        ("cudarc_allreduce_perf", &["-b", "8", "-e", "8"][..]),
    ] {
        let exe = examples_dir().join(name);
        assert!(
            exe.is_file(),
            "{} is not built: run `cargo build --features cudarc-nccl --examples` first",
            exe.display()
        );
        let out = Command::new(&exe)
            .args(args)
            .env("NCCL_TRAMPOLINE_CUDA_DRIVER", "/nonexistent/libcuda.so.1")
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line, got:\n{err}");
        assert!(err.starts_with(&format!("{name}: ")), "{name}: {err}");
        assert!(
            err.contains("needs NVIDIA GPUs and their driver: cannot load the CUDA driver /nonexistent/libcuda.so.1: no such file"),
            "{name}: {err}"
        );
        assert!(!err.contains("panicked") && !err.contains("libcuda64"), "{name}: {err}");
    }
}

/// A directory holding the stand-in driver as `libcuda.so.1` (the crate's loader) and
/// `libcuda.so` (cudarc's) and the stand-in NCCL as `libnccl.so.2`, for LD_LIBRARY_PATH, and
/// the spawn limit (tests/c/spawn_limit.c) for LD_PRELOAD.
/// `libcuda.so` is a link to the same file: the loader then hands both the one instance, whose
/// streams and memory they share.
fn stand_ins() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = common::work_dir("examples-stand-ins");
            let cuda = common::build_shared(&dir, "fakecuda", &[common::repo_file("tests/c/fake_cuda.c")]);
            std::fs::rename(&cuda, dir.join("libcuda.so.1")).unwrap();
            std::os::unix::fs::symlink("libcuda.so.1", dir.join("libcuda.so")).unwrap();
            let nccl = common::build_shared(&dir, "fakenccl", &[common::repo_file("tests/c/fake_nccl.c")]);
            std::fs::rename(&nccl, dir.join("libnccl.so.2")).unwrap();
            common::build_shared(&dir, "spawnlimit", &[common::repo_file("tests/c/spawn_limit.c")]);
            dir
        })
        .clone()
}

/// What one run of an example did.
struct Run {
    code: Option<i32>,
    out: String,
    err: String,
    /// Every process of the run's process group: the example and whatever it started.
    processes: BTreeSet<u32>,
}

/// The live processes of process group `group` (field 5 of `/proc/PID/stat`, after the
/// command name in parentheses): every process a program started inherits its group. `/proc/PID/stat`
/// is read without touching the process's memory, so the count keeps up with a program that
/// forks in a loop.
fn in_group(group: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
            let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
            // State, parent, group; a zombie has ended (its parent has yet to reap it).
            fields.len() > 2 && fields[0] != "Z" && fields[2].parse::<u32>().ok() == Some(group)
        })
        .collect()
}

/// Kills process group `group` until none of it is left: a process forking at the moment of a
/// kill can leave a child that the signal missed, which carries the group on.
fn end_group(group: u32) {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        let _ = Command::new("kill").args(["-KILL", &format!("-{group}")]).stderr(Stdio::null()).status();
        if in_group(group).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("process group {group} still has processes 30 s after the first kill");
}

/// Runs example `name` on the stand-ins in `dir` with `env`, in a process group of its own,
/// counting the processes it is and starts. It may start processes `depth` levels deep (the
/// spawn limit refuses the next level at once: a program that starts itself again and again
/// would otherwise fill the machine with processes faster than anything here could count
/// them); past `limit`, or once more than `most` processes were seen, the whole group is
/// killed and the test fails.
fn run_on_stand_ins(dir: &Path, name: &str, env: &[(&str, &str)], limit: Duration, depth: u32, most: usize) -> Run {
    let exe = examples_dir().join(name);
    assert!(exe.is_file(), "{} is not built: run `cargo build --features cudarc-nccl --examples` first", exe.display());
    let mut cmd = Command::new(&exe);
    for var in ["NCCL_TRAMPOLINE_CUDA_DRIVER", "NCCL_TRAMPOLINE_LIBRARY", "CUDA_VISIBLE_DEVICES"] {
        cmd.env_remove(var);
    }
    // No launcher's variables from the environment this test runs in.
    for (var, _) in std::env::vars_os() {
        let Some(var) = var.to_str() else { continue };
        if var.starts_with("NCCL_TRAMPOLINE_")
            || var.starts_with("SLURM_")
            || var.starts_with("OMPI_")
            || var.starts_with("PMI_")
            || var.starts_with("MV2_")
            || var.starts_with("PET_")
            || ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID"].contains(&var)
        {
            cmd.env_remove(var);
        }
    }
    let child = cmd
        .env("LD_LIBRARY_PATH", dir)
        .env("NCCL_TRAMPOLINE_LIBRARY", dir.join("libnccl.so.2"))
        .env("FAKE_NCCL_EXECUTE", "1")
        .env("LD_PRELOAD", dir.join("libspawnlimit.so"))
        .env("NCCL_TRAMPOLINE_TEST_SPAWN_DEPTH", depth.to_string())
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let group = child.id();
    let output = std::thread::spawn(move || child.wait_with_output());
    let started = Instant::now();
    let mut processes = BTreeSet::new();
    while !output.is_finished() {
        processes.extend(in_group(group));
        if started.elapsed() > limit || processes.len() > most {
            let after = started.elapsed();
            end_group(group);
            let o = output.join().unwrap().unwrap();
            panic!(
                "{name} {env:?}: {} processes seen (at most {most} expected) after {after:.1?}: killed\n{}\n{}",
                processes.len(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let o = output.join().unwrap().unwrap();
    // Whatever it left behind is counted (and ended) too.
    let left = in_group(group);
    processes.extend(&left);
    if !left.is_empty() {
        end_group(group);
    }
    Run {
        code: o.status.code(),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
        processes,
    }
}

/// The README's quickstart on a one-GPU machine: `allreduce` alone, or under a launcher that
/// says the world is one rank, runs that rank in its own process and ends; it never starts
/// itself again. With two GPUs it is the launcher of two ranks, one process each.
#[test]
fn allreduce_runs_one_rank_on_one_gpu_and_one_process_per_gpu_on_two() {
    let dir = stand_ins();
    let limit = Duration::from_secs(60);
    let world_of_one: [(&str, &[(&str, &str)]); 3] = [
        ("no launcher, one GPU", &[("FAKE_CUDA_DEVICES", "1")]),
        (
            "the crate's variables, a world of one",
            &[
                ("FAKE_CUDA_DEVICES", "1"),
                ("NCCL_TRAMPOLINE_RANK", "0"),
                ("NCCL_TRAMPOLINE_WORLD_SIZE", "1"),
                ("NCCL_TRAMPOLINE_LOCAL_RANK", "0"),
                ("NCCL_TRAMPOLINE_LOCAL_SIZE", "1"),
            ],
        ),
        (
            "torchrun --nproc_per_node 1 on a two-GPU machine",
            &[
                ("FAKE_CUDA_DEVICES", "2"),
                ("RANK", "0"),
                ("WORLD_SIZE", "1"),
                ("LOCAL_RANK", "0"),
                ("LOCAL_WORLD_SIZE", "1"),
                ("MASTER_ADDR", "127.0.0.1"),
                ("MASTER_PORT", "29500"),
            ],
        ),
    ];
    for (case, env) in world_of_one {
        let r = run_on_stand_ins(&dir, "allreduce", env, limit, 0, 1);
        assert_eq!(r.code, Some(0), "{case}:\n{}\n{}", r.out, r.err);
        assert!(r.out.starts_with("rank 0/1 (") && r.out.contains("verified"), "{case}: {}", r.out);
        assert!(!r.err.contains("spawn_limit"), "{case}: it tried to start a process:\n{}", r.err);
        assert_eq!(r.processes.len(), 1, "{case}: one process, none started: {:?}\n{}", r.processes, r.out);
    }
    let r = run_on_stand_ins(&dir, "allreduce", &[("FAKE_CUDA_DEVICES", "2")], limit, 1, 3);
    assert_eq!(r.code, Some(0), "two GPUs:\n{}\n{}", r.out, r.err);
    assert!(r.out.contains("all-reduce over 2 processes: every rank verified"), "{}", r.out);
    assert_eq!(r.processes.len(), 3, "the example and one rank per GPU: {:?}\n{}", r.processes, r.out);
}

/// `init_all` (one process, every GPU) on the stand-ins, with one GPU and with two.
#[test]
fn init_all_runs_on_one_gpu_and_on_two() {
    let dir = stand_ins();
    for gpus in ["1", "2"] {
        let r = run_on_stand_ins(&dir, "init_all", &[("FAKE_CUDA_DEVICES", gpus)], Duration::from_secs(60), 0, 1);
        assert_eq!(r.code, Some(0), "{gpus} GPUs:\n{}\n{}", r.out, r.err);
        assert!(r.out.contains(&format!("init_all over {gpus} GPUs")) && r.out.contains("verified"), "{}", r.out);
        assert_eq!(r.processes.len(), 1, "{:?}", r.processes);
    }
}
