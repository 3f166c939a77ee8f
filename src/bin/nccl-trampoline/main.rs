//! `nccl-trampoline`: look at this machine's NCCL (`doctor`), prove the call core and the
//! library on it (`selftest`), and measure collectives the way nccl-tests does (`perf`).
//!
//! Exit status: 0 when everything asked for passed; 1 when a check failed, a measurement found
//! wrong values, or the command stopped on an error (one line on stderr: `error.rs`); 2 for
//! bad arguments and options that cannot run together (clap's usage errors).
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

mod args;
mod checks;
mod cuda;
mod doctor;
mod error;
mod json;
mod perf;
mod plugins;
mod probe;
mod secrets;
mod selftest;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use args::{Cli, Command};
use error::Error;

fn main() -> ExitCode {
    restore_sigpipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Doctor(args) => doctor::run(&args),
        Command::Selftest(args) => selftest::run(&args),
        Command::Perf(args) => perf::run(&args),
        Command::NetBench(args) => plugins::net_bench(&args),
        Command::Probe { plugin: Some(family), .. } => plugins::probe(&family),
        Command::Probe { library, params: true, keys, .. } => probe::probe_params(&library, &keys),
        Command::Probe { library, .. } => probe::probe(&library),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        // Reported the way clap reports a bad option: usage on stderr, exit status 2.
        Err(Error::Usage(u)) => Cli::command().error(clap::error::ErrorKind::ArgumentConflict, u).exit(),
        Err(e) => {
            // One write: a launcher forwards each rank's output in the chunks written, and
            // eprintln! writes a line in pieces.
            use std::io::Write;
            let _ = std::io::stderr().write_all(format!("nccl-trampoline: {e}\n").as_bytes());
            ExitCode::from(e.exit_code())
        }
    }
}

/// Restores the default SIGPIPE action (Rust ignores it), so that `nccl-trampoline doctor |
/// head` ends quietly like any other command instead of failing on its next write.
fn restore_sigpipe() {
    #[cfg(unix)]
    {
        extern "C" {
            fn signal(signum: i32, handler: usize) -> usize;
        }
        const SIGPIPE: i32 = 13;
        const SIG_DFL: usize = 0;
        // SAFETY: signal(2) with SIG_DFL installs no handler; nothing else in this program
        // changes SIGPIPE's disposition.
        unsafe { signal(SIGPIPE, SIG_DFL) };
    }
}
