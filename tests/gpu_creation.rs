//! Real GPU, one is enough: creations given up on the real NCCL end with NCCL's own abort
//! (docs/adr/0023-creation-threads-and-bounds.md). A dropped non-blocking pending init, a
//! non-blocking init whose peer never comes (past its deadline), and a blocking init that NCCL
//! finishes only after its deadline: each shows `ncclCommAbort` having run (NCCL's
//! `NCCL_DEBUG=INFO` line "Abort START", from `NCCL_DEBUG_FILE`) and no NCCL thread left (the
//! process's threads back to what they were before the creation). NCCL prints "Abort
//! COMPLETE" only when it frees the communicator, which it does only for one whose init got
//! far enough (v2.28.3-1 src/init.cc `commReclaim` acts only `if (comm->intraComm0 != NULL)`;
//! the line is `commFree`'s, :314): a half-made one is aborted, its threads joined, and NCCL
//! keeps its memory.
//!
//! Opt-in (`#[ignore]`d): `cargo test --release --test gpu_creation -- --ignored
//! --test-threads=1` on a machine with a GPU; NCCL from the discovery order
//! (`NCCL_TRAMPOLINE_LIBRARY` picks a build). `scripts/gpu-test.sh` builds it for a GPU machine
//! without Rust.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nccl_trampoline::cuda::Driver as Cuda;
use nccl_trampoline::nccl::{CommOptions, Communicator, Config, Error, Nccl, Timeouts};

/// The process's threads, by name (`/proc/self/task/*/comm`), sorted.
fn threads() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                .map(|s| s.trim().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Waits (at most `limit`) until the process has no more threads than `baseline`.
fn settles(baseline: &[String], limit: Duration) -> Result<Duration, Vec<String>> {
    let started = Instant::now();
    loop {
        let now = threads();
        if now.len() <= baseline.len() {
            return Ok(started.elapsed());
        }
        if started.elapsed() > limit {
            return Err(now);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

struct Debug(PathBuf);

impl Debug {
    /// NCCL's `Abort START` lines so far (`ncclCommAbort` ran).
    fn aborts(&self) -> usize {
        self.count("Abort START")
    }
    fn count(&self, what: &str) -> usize {
        std::fs::read_to_string(&self.0).unwrap_or_default().matches(what).count()
    }
    /// Waits (at most `limit`) until NCCL logged more than `before` aborts.
    fn abort_after(&self, before: usize, limit: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < limit {
            if self.aborts() > before {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

fn timeouts(create: Duration) -> Timeouts {
    Timeouts { create: Some(create), operation: Some(Duration::from_secs(30)), teardown: Some(Duration::from_secs(30)) }
}

#[test]
#[ignore = "needs a GPU: cargo test --release --test gpu_creation -- --ignored --test-threads=1"]
fn gpu_creations_given_up_are_aborted_and_leave_no_nccl_thread() {
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        std::env::set_var("NCCL_NVLS_ENABLE", "0");
    }
    // NCCL reads these once, at its first communicator: before it is loaded.
    let log = std::env::temp_dir().join(format!("nccl-debug-{}.log", std::process::id()));
    std::env::set_var("NCCL_DEBUG", "INFO");
    std::env::set_var("NCCL_DEBUG_FILE", &log);
    let debug = Debug(log);
    let nccl = Nccl::load().unwrap_or_else(|e| panic!("{e}"));
    let cuda = Cuda::load().unwrap_or_else(|e| panic!("this test needs a GPU: {e}"));
    assert!(cuda.device_count().unwrap() >= 1, "no GPU");
    cuda.activate(0).unwrap();
    println!("NCCL {} from {}; CUDA driver {}", nccl.version(), nccl.path().display(), cuda.version().unwrap());

    // A communicator made and destroyed first: the process-wide threads NCCL and CUDA start
    // once (not per communicator) exist before any count.
    let warm = Communicator::init_rank(&nccl, 1, &nccl.unique_id().unwrap(), 0).expect("a one-rank communicator");
    warm.destroy().expect("destroy");
    let mut failures = Vec::new();
    let nonblocking = || CommOptions::new().config(Config::new().blocking(false));

    // 1. A non-blocking init of two ranks (the second never comes), dropped while NCCL works.
    let id = nccl.unique_id().unwrap(); // its bootstrap root thread stays: part of the baseline
    let baseline = threads();
    let aborts = debug.aborts();
    let pending =
        Communicator::begin_init_rank(&nccl, 2, &id, 0, &nonblocking().timeouts(timeouts(Duration::from_secs(60))))
            .expect("begin a non-blocking init");
    std::thread::sleep(Duration::from_millis(1000));
    let during = threads().len();
    let started = Instant::now();
    drop(pending);
    let dropped_in = started.elapsed();
    let aborted = debug.abort_after(aborts, Duration::from_secs(5));
    let settled = settles(&baseline, Duration::from_secs(10));
    println!(
        "dropped pending init: drop took {dropped_in:?}; threads {} before, {during} while NCCL worked, after: {settled:?}; NCCL's abort: {aborted}",
        baseline.len()
    );
    if !aborted || settled.is_err() {
        failures.push("dropped pending init");
    }

    // 2. A non-blocking init whose peer never comes, past its deadline.
    let id = nccl.unique_id().unwrap();
    let baseline = threads();
    let aborts = debug.aborts();
    let started = Instant::now();
    let err = Communicator::init_rank_with(&nccl, 2, &id, 0, &nonblocking().timeouts(timeouts(Duration::from_secs(2))))
        .expect_err("the peer never comes");
    let took = started.elapsed();
    let aborted = debug.aborts() > aborts; // before the error returned
    let settled = settles(&baseline, Duration::from_secs(10));
    println!("non-blocking init past its deadline: {err} (returned after {took:?}); NCCL's abort before it returned: {aborted}; threads after: {settled:?}");
    if !matches!(err, Error::Timeout { .. }) || took > Duration::from_millis(2200) || !aborted || settled.is_err() {
        failures.push("non-blocking init past its deadline");
    }

    // 3. A blocking one-rank init with a deadline shorter than NCCL's own init: the caller gets
    // Timeout at once; NCCL finishes later, and the call's thread aborts what it made.
    let id = nccl.unique_id().unwrap();
    let baseline = threads();
    let aborts = debug.aborts();
    let started = Instant::now();
    let completes = debug.count("Abort COMPLETE");
    let r = Communicator::init_rank_with(
        &nccl,
        1,
        &id,
        0,
        &CommOptions::new().timeouts(timeouts(Duration::from_millis(1))),
    );
    let took = started.elapsed();
    // NCCL frees a communicator whose init completed: wait for its own last word on it.
    let aborted = debug.abort_after(aborts, Duration::from_secs(30)) && {
        let started = Instant::now();
        while debug.count("Abort COMPLETE") == completes && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(20));
        }
        debug.count("Abort COMPLETE") > completes
    };
    let settled = settles(&baseline, Duration::from_secs(10));
    let inits = debug.count("Init COMPLETE");
    println!(
        "blocking init past its deadline: {:?} (returned after {took:?}); NCCL finished it later and the call's thread aborted it: {aborted}; threads after: {settled:?}; Init COMPLETE lines so far: {inits}",
        r.as_ref().map(|_| "a communicator").map_err(ToString::to_string)
    );
    if !matches!(r, Err(Error::Timeout { .. })) || !aborted || settled.is_err() {
        failures.push("blocking init past its deadline");
    }

    println!(
        "NCCL's log {}: {} Abort START, {} Abort COMPLETE (freed by NCCL: the communicators whose init got far enough)",
        debug.0.display(),
        debug.aborts(),
        debug.count("Abort COMPLETE")
    );

    // 4. A program that ends right after a creation timed out, while the call's thread still
    // aborts what NCCL made: it exits 0 (the exit waits for that abort: nccl::bounded).
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "gpu_a_program_that_ends_right_after_a_creation_timed_out", "--nocapture"])
        .env(EXIT_CHILD, "1")
        .output()
        .expect("run the child");
    let out = String::from_utf8_lossy(&child.stdout);
    println!(
        "a program ending right after a creation timed out: {} ({})",
        child.status,
        out.lines().find(|l| l.starts_with("child:")).unwrap_or("no line")
    );
    if !child.status.success() {
        failures.push("a program ending right after a creation timed out");
    }
    assert!(failures.is_empty(), "failed: {failures:?}");
}

/// Set in the child process of case 4.
const EXIT_CHILD: &str = "NCCL_TRAMPOLINE_TEST_EXIT_CHILD";

/// Case 4's child (does nothing unless started by it): a blocking init that NCCL finishes
/// after its 1 ms deadline, then the end of the program at once.
#[test]
#[ignore = "needs a GPU: run by gpu_creations_given_up_are_aborted_and_leave_no_nccl_thread"]
fn gpu_a_program_that_ends_right_after_a_creation_timed_out() {
    if std::env::var_os(EXIT_CHILD).is_none() {
        return;
    }
    std::env::set_var("NCCL_NVLS_ENABLE", "0");
    let nccl = Nccl::load().unwrap_or_else(|e| panic!("{e}"));
    Cuda::load().unwrap().activate(0).unwrap();
    let r = Communicator::init_rank_with(
        &nccl,
        1,
        &nccl.unique_id().unwrap(),
        0,
        &CommOptions::new().timeouts(timeouts(Duration::from_millis(1))),
    );
    println!("child: {:?}, ending now", r.map(|_| ()).map_err(|e| e.to_string()));
}
