//! The command's options: arbitrary argument lists through clap (the real command line,
//! `src/bin/nccl-trampoline/args.rs`, and perf's option modules, compiled here as they are:
//! the command is a binary, so nothing else can reach its types), then, for `perf`, the
//! sweep's planning for any number of ranks. A parse is an options value or clap's error,
//! never a panic; a plan is a usage error or a sweep whose sizes ascend within -b..-e and
//! 2^48 bytes, whose every buffer length is computed without overflow, and whose table rows
//! can be made.
#![no_main]

use std::ffi::OsString;

use clap::Parser;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../src/bin/nccl-trampoline/args.rs"]
mod args;
#[allow(dead_code)]
#[path = "../../src/bin/nccl-trampoline/error.rs"]
mod error;
/// The pure part of `perf` (the options, what a sweep measures and the formats it uses); not
/// the GPU and timing modules.
#[allow(dead_code)]
#[path = "../../src/bin/nccl-trampoline/perf"]
mod perf {
    pub mod alltoallv;
    pub mod collective;
    pub mod data;
    pub mod options;
    pub mod plan;
    pub mod report;
}

use args::{Cli, Command};
use perf::plan::{Plan, MAX_BYTES};
use perf::report::Measured;

/// Words the command knows, so that the fuzzer reaches past the first one.
const WORDS: &[&str] = &[
    "perf", "doctor", "selftest", "probe", "all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter",
    "alltoall", "gather", "scatter", "sendrecv", "-b", "-e", "-i", "-f", "-g", "-t", "-n", "-w", "-m", "-c", "-o",
    "-d", "-r", "-z", "-a", "-C", "-G", "-J", "-N", "-p", "-y", "-T", "-S", "-R", "-x", "-D", "-V", "-M", "-u", "-I", "-K",
    "alltoallv", "mulsum", "f8e4m3", "f8e5m2", "3", "--json", "--procs", "--library", "--watchdog", "--procs-rank",
    "--no-gpu", "--count", "--help", "--version", "all", "float", "int8", "double", "bfloat16", "sum", "avg", "0",
    "1", "2", "8", "1K", "1M", "1G", "1T", "256T", "257T", "18446744073709551615", "1e300", "1e-9", "inf", "NaN",
];

/// What a sweep of `plan` computes for every step: the layout, every buffer length (as
/// `ranks.rs` sizes them), the bandwidth and the row. Only the ends of a long sweep.
fn steps_compute(plan: &Plan) {
    let (first, last) = (plan.sizes.first().copied(), plan.sizes.last().copied());
    for &(elem, op) in &plan.cases {
        for size in [first, last].into_iter().flatten() {
            let l = plan.collective.sized_layout(size / elem.size(), elem.size(), plan.nranks);
            let bytes = l
                .send_offset
                .checked_mul(plan.nranks)
                .and_then(|b| b.checked_add(l.send))
                .map(|b| b.max(l.send).max(l.recv))
                .and_then(|b| b.checked_mul(elem.size()));
            assert!(bytes.is_some(), "buffer length overflows for {size} bytes on {} ranks", plan.nranks);
            let m = Measured::new(1e-6, 0.0, None);
            let row = plan.row(elem, op, size, m.clone(), m);
            assert!(row.size <= size, "row of {} bytes for a size of {size}", row.size);
        }
    }
}

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let mut argv = vec![OsString::from("nccl-trampoline")];
    if u.arbitrary()? {
        argv.push("perf".into());
    }
    for _ in 0..u.int_in_range(0..=12u8)? {
        argv.push(if u.ratio(3, 4)? {
            u.choose(WORDS)?.into()
        } else {
            use std::os::unix::ffi::OsStringExt;
            let n = u.int_in_range(0..=12usize)?;
            OsString::from_vec(u.bytes(n)?.to_vec())
        });
    }
    let nranks = match u.int_in_range(0..=3u8)? {
        0 => 1,
        1 => u.int_in_range(2..=8usize)?,
        2 => 1024,
        _ => i32::MAX as usize,
    };
    let Ok(cli) = Cli::try_parse_from(&argv) else { return Ok(()) };
    let Command::Perf(args) = cli.command else { return Ok(()) };
    match Plan::new(&args, nranks) {
        Ok(plan) => {
            assert!(!plan.sizes.is_empty() && plan.sizes.len() <= 100_000, "{} sizes", plan.sizes.len());
            assert!(plan.sizes.windows(2).all(|w| w[0] < w[1]), "sizes do not ascend");
            let (lo, hi) = (plan.sizes[0] as u64, *plan.sizes.last().unwrap() as u64);
            assert!(lo == args.min_bytes && hi <= args.max_bytes && hi <= MAX_BYTES, "{lo}..{hi}");
            steps_compute(&plan);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    // The value parsers alone, on any text.
    let n = u.len().min(32);
    let text = String::from_utf8_lossy(u.bytes(n)?).into_owned();
    if let Ok(n) = perf::options::parse_size(&text) {
        // A size is at least its number (suffixes multiply, fractions of a byte are dropped).
        let number: String = text.trim().chars().take_while(|c| c.is_ascii_digit() || ".+eE-".contains(*c)).collect();
        let value = number.trim_start_matches('+').parse::<f64>().unwrap_or(f64::NAN);
        assert!(value.is_finite() && value.floor() <= n as f64 * (1.0 + 1e-12) + 1.0, "{text:?} -> {n}");
    }
    if let Ok(d) = perf::options::parse_seconds(&text) {
        assert!(!d.is_zero(), "{text:?} -> {d:?}");
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
