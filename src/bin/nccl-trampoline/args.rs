//! The command line: what a user can type, parsed by clap, and nothing else. It names no
//! library type and touches no GPU, so the fuzz target `cli_options` (fuzz/) compiles this
//! file and perf's option modules as they are and parses arbitrary argument lists through
//! them (the command is a binary: no other crate can reach its types).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::perf::options::Args as PerfArgs;

/// Drive NVIDIA NCCL through the nccl-trampoline call core: inspect, self-test, benchmark.
#[derive(Parser, Debug)]
#[command(name = "nccl-trampoline", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Report every NCCL/RCCL candidate, the one that loads and the ones it shadows, missing
    /// symbols, NCCL environment variables, the plugin of each family NCCL would load (found,
    /// loaded and initialised in a child process), GPUs and driver.
    Doctor(DoctorArgs),
    /// Prove the call core against the built-in C oracle, then the real library if one is
    /// found, then a verified all-reduce across all local GPUs if there are any.
    Selftest(SelftestArgs),
    /// nccl-tests-compatible sweeps of one collective (all_reduce, all_gather, broadcast,
    /// reduce, reduce_scatter, alltoall, gather, scatter, sendrecv).
    // nccl-tests' -V is the device CTA count: no -V/--version here.
    #[command(disable_version_flag = true)]
    Perf(PerfArgs),
    /// A network plugin's test bench: init, devices, the non-blocking connect/accept loops,
    /// regMr, isend/irecv/test from 1 B to 64 MiB over the plugin's loopback, every byte
    /// checked, iflush, the close calls; latency and bandwidth. Every step has a deadline.
    NetBench(NetBenchArgs),
    /// Loads one candidate and prints what it is (used by `doctor`, in a fresh process).
    #[command(hide = true)]
    Probe {
        /// The library path or soname (`-` with `--plugin`).
        library: PathBuf,
        /// Find, load and describe this plugin family's plugin instead (net, gin, tuner,
        /// profiler, env), as NCCL would with this environment.
        #[arg(long, value_name = "FAMILY")]
        plugin: Option<String>,
        /// Print the library's own parameter values instead (its parameter API, NCCL 2.30.4).
        #[arg(long, conflicts_with = "plugin")]
        params: bool,
        /// With --params: these keys too (NCCL lists only its documented parameters).
        #[arg(long = "key", value_name = "KEY", requires = "params")]
        keys: Vec<String>,
    },
}

/// `doctor`'s options.
#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    /// Seconds each probe (one process per candidate library, and one per plugin family) may take
    /// before it is stopped and reported as not answering.
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = probe_limit)]
    pub probe_timeout: Duration,
    /// Print the whole report as one JSON document (keys in the README) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--probe-timeout`: a positive number of seconds, at most a day.
fn probe_limit(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!("{s} s: give more than 0 and at most 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Options of `net-bench`.
#[derive(clap::Args, Debug)]
pub struct NetBenchArgs {
    /// The plugin, as NCCL_NET_PLUGIN would name it (default: NCCL_NET_PLUGIN, else
    /// libnccl-net.so), found by NCCL's rules.
    #[arg(long, value_name = "NAME")]
    pub plugin: Option<String>,
    /// Seconds any one plugin call or loop (connect/accept, test) may take.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = probe_limit)]
    pub deadline: Duration,
    /// The first message size in bytes.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub min_bytes: u64,
    /// The last message size in bytes (sizes double from --min-bytes).
    #[arg(long, default_value_t = 64 << 20, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub max_bytes: u64,
    /// Timed messages per size (at most 3 above 1 MiB).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub iterations: u64,
    /// Call iflush after every receive, also where the plugin does not ask for it.
    #[arg(long)]
    pub flush: bool,
    /// The device to use.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i32).range(0..1024))]
    pub device: i32,
}

/// Options of `selftest`.
#[derive(clap::Args, Debug)]
pub struct SelftestArgs {
    /// The NCCL library to test (default: the discovery order, as `doctor` shows it).
    #[arg(long, value_name = "PATH")]
    pub library: Option<PathBuf>,
    /// Skip the GPU stage even if GPUs are present.
    #[arg(long)]
    pub no_gpu: bool,
    /// Elements (float32) per GPU in the verified all-reduce.
    #[arg(long, default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        // clap's own checks of the definition (conflicting names, bad defaults).
        Cli::command().debug_assert();
    }
}
