//! `perf`'s options: nccl-tests 2.19.6's, with its names, defaults and meanings
//! (src/common.cu:88-121 for the defaults, 1167-1362 for the parsing; v2.19.6), plus
//! `--procs`, `--library`, `--watchdog` and `--json` of our own. Options nccl-tests has and
//! `perf` cannot honour are refused by [`Args::check`] with the reason.

use std::path::PathBuf;

use super::collective::Collective;
use super::data::{self, OpChoice, TypeChoice};
use crate::error::Usage;

/// Options, named and defaulted as nccl-tests' (`all_reduce_perf -b 8 -e 1G -f 2 -g 2`).
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The collective.
    #[arg(value_enum)]
    pub collective: Collective,
    /// Threads per process (only 1: use --procs or a launcher for one process per GPU).
    #[arg(short = 't', long = "nthreads", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1))]
    pub threads: u32,
    /// GPUs driven by each process.
    #[arg(short = 'g', long = "ngpus", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub ngpus: u32,
    /// Smallest size in bytes (a decimal number, suffixes K, M, G, T: powers of 1024).
    #[arg(short = 'b', long = "minbytes", default_value = "32M", value_parser = parse_size)]
    pub min_bytes: u64,
    /// Largest size in bytes.
    #[arg(short = 'e', long = "maxbytes", default_value = "32M", value_parser = parse_size)]
    pub max_bytes: u64,
    /// Size increment when the step factor is 1.
    #[arg(short = 'i', long = "stepbytes", default_value = "1M", value_parser = parse_size)]
    pub step_bytes: u64,
    /// Size multiplication factor between sizes.
    #[arg(short = 'f', long = "stepfactor", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub step_factor: u64,
    /// Timed iterations per size.
    #[arg(short = 'n', long = "iters", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// Operations aggregated into one group per iteration.
    #[arg(short = 'm', long = "agg_iters", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub agg: u32,
    /// Warm-up iterations (not timed), once per type and op, for sizes from -b doubling to -e.
    #[arg(short = 'w', long = "warmup_iters", default_value_t = 1)]
    pub warmup: u32,
    /// Run the sweep this many times, printing every cycle (0: until stopped).
    #[arg(short = 'N', long = "run_cycles", default_value_t = 1)]
    pub run_cycles: u32,
    /// Threads call the communicator's init concurrently (0/1; with one thread per process
    /// the one thread does either way).
    #[arg(short = 'p', long = "parallel_init", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub parallel_init: u8,
    /// Check runs per placement after the timed ones (0: none); the first wrong one stops.
    #[arg(short = 'c', long = "check", default_value_t = 1)]
    pub check: u32,
    /// Reduction: sum, prod, max, min, avg, mulsum or all.
    #[arg(short = 'o', long = "op", default_value = "sum", value_parser = data::parse_op)]
    pub op: OpChoice,
    /// Element type: int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16,
    /// f8e4m3, f8e5m2 or all.
    #[arg(short = 'd', long = "datatype", default_value = "float", value_parser = data::parse_type)]
    pub dtype: TypeChoice,
    /// Root rank of broadcast, reduce, gather and scatter (nccl-tests' -1, every root in
    /// turn, is refused).
    #[arg(short = 'r', long = "root", default_value_t = 0, allow_negative_numbers = true)]
    pub root: i64,
    /// 0: no wait; 1: wait and barrier after each operation; 2: wait after each operation;
    /// 3: wait and barrier after each iteration, the barrier left out of the time.
    #[arg(short = 'z', long = "blocking", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub blocking: u8,
    /// Run on the legacy NULL stream (0/1; only 0: every rank has its own non-blocking stream).
    #[arg(short = 'y', long = "stream_null", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub stream_null: u8,
    /// Abort every communicator when an operation has not completed after this many seconds
    /// (0: never).
    #[arg(short = 'T', long = "timeout", default_value_t = 0)]
    pub timeout: u32,
    /// CUDA graph launches (only 0).
    #[arg(short = 'G', long = "cudagraph", default_value_t = 0)]
    pub cudagraph: u32,
    /// Report the host time of the enqueue loop instead of the wall time (0/1).
    #[arg(short = 'C', long = "report_cputime", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub cputime: u8,
    /// Print when each row finished (0/1).
    #[arg(short = 'S', long = "report_timestamps", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub timestamps: u8,
    /// Write nccl-tests' JSON document to this file, when its name ends in `.json` (an
    /// existing file is kept: `FILE.0`, `FILE.1`, ... are tried).
    #[arg(short = 'J', long = "output_file", value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// Across ranks: rank 0's time (0), the average (1), minimum (2) or maximum (3).
    #[arg(short = 'a', long = "average", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub average: u8,
    /// Register the buffers: 0 no, 1 locally (`ncclCommRegister`), 2 as symmetric windows
    /// (`ncclCommWindowRegister`, NCCL 2.27).
    #[arg(short = 'R', long = "local_register", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub register: u8,
    /// The communicators' CTA policy (`NCCL_CTA_POLICY_*`: 0 default, 1 efficiency, 2 zero
    /// from NCCL 2.28); not set when left out.
    #[arg(short = 'x', long = "cta_policy", value_parser = clap::value_parser!(i32).range(0..=2))]
    pub cta_policy: Option<i32>,
    /// nccl-tests' own device kernels (only 0: perf calls NCCL's host API).
    #[arg(short = 'D', long = "device_implementation", default_value_t = 0)]
    pub device_impl: u32,
    /// CTAs of a device implementation (1 to 128; meaningful with -D only).
    #[arg(short = 'V', long = "device_cta_count", default_value_t = 16)]
    pub device_ctas: i32,
    /// Report the GPU memory taken by initialisation, buffers and collectives (0/1).
    #[arg(short = 'M', long = "memory", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub memory: u8,
    /// Misalign the buffers by this many elements.
    #[arg(short = 'u', long = "unalign", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=4096))]
    pub unalign: u32,
    /// Time every iteration with CUDA events and report their spread (0/1).
    #[arg(short = 'I', long = "per_iter_timing", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub per_iter: u8,
    /// Leading iterations left out of -I's statistics.
    #[arg(short = 'K', long = "per_iter_skip", default_value_t = 0)]
    pub per_iter_skip: u32,
    /// Print nccl-tests' JSON document on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// One process per GPU on this host: start N processes, each one rank driving one GPU
    /// (as a launcher would).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub procs: u32,
    /// The NCCL library (default: the discovery order).
    #[arg(long, value_name = "PATH")]
    pub library: Option<PathBuf>,
    /// Internal: this process is a rank that --procs started.
    #[arg(long, hide = true)]
    pub procs_rank: bool,
    /// Run every communicator's watchdog with this timeout in seconds (to measure its cost per
    /// operation with -C 1).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub watchdog: Option<std::time::Duration>,
}

impl Args {
    /// Refuses what nccl-tests accepts and `perf` cannot do, each with its reason, and what
    /// nccl-tests itself refuses (src/common.cu:1363-1391).
    pub fn check(&self) -> Result<(), Usage> {
        if self.cudagraph != 0 {
            return Err(Usage::Unsupported { option: "-G", why: "CUDA graph capture is not implemented" });
        }
        if self.device_impl != 0 {
            return Err(Usage::Unsupported {
                option: "-D",
                why: "device implementations are nccl-tests' own CUDA kernels; perf calls NCCL's host API",
            });
        }
        if self.stream_null != 0 {
            return Err(Usage::Unsupported {
                option: "-y 1",
                why: "every rank runs on its own non-blocking stream, never the legacy NULL stream",
            });
        }
        if self.root < 0 {
            return Err(Usage::Unsupported {
                option: "a negative -r",
                why: "nccl-tests' -r -1 (every root in turn) is not implemented: run once per root",
            });
        }
        if self.per_iter_skip >= self.iters {
            return Err(Usage::SkipPastIterations { skip: self.per_iter_skip, iters: self.iters });
        }
        if self.per_iter_skip > 0 && self.per_iter == 0 {
            return Err(Usage::SkipWithoutPerIteration);
        }
        if !(1..=128).contains(&self.device_ctas) {
            return Err(Usage::DeviceCtas(self.device_ctas));
        }
        Ok(())
    }

    /// The name nccl-tests' binary for the collective has (`all_reduce_perf`).
    pub fn program(&self) -> String {
        format!("{}_perf", self.collective.name())
    }
}

/// Parses a positive number of seconds that is a duration: at least a nanosecond (a smaller
/// one would be a zero timeout), below 2^64 seconds.
pub fn parse_seconds(s: &str) -> Result<std::time::Duration, Usage> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 => match std::time::Duration::try_from_secs_f64(v) {
            Ok(d) if !d.is_zero() => Ok(d),
            _ => Err(Usage::SecondsOutOfRange(s.to_owned())),
        },
        _ => Err(Usage::NotSeconds(s.to_owned())),
    }
}

/// Parses a size as nccl-tests' `parsesize` (src/common.cu:216-249): a decimal number
/// (`1.5M` is 1,572,864), optional spaces, an optional K, M or G (powers of 1024; T too,
/// ours), optionally followed by `B` or `iB`; fractions of a byte are dropped, as C's cast.
pub fn parse_size(s: &str) -> Result<u64, Usage> {
    let t = s.trim();
    let end = t.find(|c: char| !(c.is_ascii_digit() || ".+eE-".contains(c))).unwrap_or(t.len());
    let (number, rest) = t.split_at(end);
    // A number: digits with an optional fraction and exponent, no sign but `+`.
    let plain = number.strip_prefix('+').unwrap_or(number);
    let value = match plain.parse::<f64>() {
        Ok(v) if plain.starts_with(|c: char| c.is_ascii_digit() || c == '.') && v.is_finite() && v >= 0.0 => v,
        _ => return Err(Usage::NotASize(t.to_owned())),
    };
    let rest = rest.trim_start();
    let (shift, unit) = match rest.chars().next() {
        None => (0, ""),
        Some('K' | 'k') => (10, &rest[1..]),
        Some('M' | 'm') => (20, &rest[1..]),
        Some('G' | 'g') => (30, &rest[1..]),
        Some('T' | 't') => (40, &rest[1..]),
        Some(_) => return Err(Usage::NotASize(t.to_owned())),
    };
    if !matches!(unit, "" | "B" | "b" | "iB" | "ib") {
        return Err(Usage::NotASize(t.to_owned()));
    }
    // A plain integer is taken exactly (f64 is exact only up to 2^53).
    if plain.bytes().all(|b| b.is_ascii_digit()) {
        let n = plain.parse::<u64>().map_err(|_| Usage::SizeOverflow(t.to_owned()))?;
        return n.checked_mul(1 << shift).ok_or(Usage::SizeOverflow(t.to_owned()));
    }
    let bytes = value * (1u64 << shift) as f64;
    // 2^64 as a float: a size from there up does not fit.
    if bytes >= 18_446_744_073_709_551_616.0 {
        return Err(Usage::SizeOverflow(t.to_owned()));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_nccl_tests_parsesize() {
        assert_eq!(parse_size("8"), Ok(8));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1GB"), Ok(1 << 30));
        assert_eq!(parse_size("8 K"), Ok(8192));
        assert_eq!(parse_size("1.5M"), Ok(1_572_864));
        assert_eq!(parse_size("0.5"), Ok(0));
        assert_eq!(parse_size("1e3"), Ok(1000));
        assert_eq!(parse_size("+8"), Ok(8));
        assert!(parse_size("99999999999G").is_err());
        assert_eq!(parse_size("18446744073709551616"), Err(Usage::SizeOverflow("18446744073709551616".into())));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        for s in ["", "K", "+", "-1", "0x10", "++8", "8Q", "8KX", "inf", "nan", ".", "e5"] {
            assert_eq!(parse_size(s), Err(Usage::NotASize(s.trim().into())), "{s:?}");
        }
    }

    #[test]
    fn watchdog_seconds_are_durations_or_usage_errors() {
        use std::time::Duration;
        assert_eq!(parse_seconds("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_seconds(" 1e-9 "), Ok(Duration::from_nanos(1)));
        // Past Duration's range: a panic in Duration::from_secs_f64 before.
        for s in ["1e300", "1.8446744073709552e19", "inf", "1e-300"] {
            assert_eq!(parse_seconds(s), Err(Usage::SecondsOutOfRange(s.into())), "{s}");
        }
        for s in ["0", "-1", "NaN", "-inf", "soon", ""] {
            assert_eq!(parse_seconds(s), Err(Usage::NotSeconds(s.into())), "{s}");
        }
    }
}
