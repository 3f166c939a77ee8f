//! `perf`'s options, named and defaulted as nccl-tests', and their value parsers.

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
    /// Smallest size in bytes (suffixes K, M, G, T: powers of 1024).
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
    /// GPUs driven by each process.
    #[arg(short = 'g', long = "ngpus", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub ngpus: u32,
    /// Threads per process (only 1: use --procs for one process per GPU).
    #[arg(short = 't', long = "nthreads", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1))]
    pub threads: u32,
    /// Timed iterations per size.
    #[arg(short = 'n', long = "iters", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// Warm-up iterations per size (not timed).
    #[arg(short = 'w', long = "warmup_iters", default_value_t = 5)]
    pub warmup: u32,
    /// Operations aggregated into one group per iteration.
    #[arg(short = 'm', long = "agg_iters", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub agg: u32,
    /// Check results (0/1): one more run per size, every element compared.
    #[arg(short = 'c', long = "check", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub check: u8,
    /// Reduction: sum, prod, max, min, avg or all.
    #[arg(short = 'o', long = "op", default_value = "sum", value_parser = data::parse_op)]
    pub op: OpChoice,
    /// Element type: int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16
    /// or all.
    #[arg(short = 'd', long = "datatype", default_value = "float", value_parser = data::parse_type)]
    pub dtype: TypeChoice,
    /// Root rank of broadcast, reduce, gather and scatter.
    #[arg(short = 'r', long = "root", default_value_t = 0)]
    pub root: u32,
    /// Wait for completion after every iteration (0/1).
    #[arg(short = 'z', long = "blocking", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub blocking: u8,
    /// With --procs: report rank 0's time (0), the average (1), minimum (2) or maximum (3).
    #[arg(short = 'a', long = "average", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub average: u8,
    /// Report the host time of the enqueue loop instead of the wall time (0/1).
    #[arg(short = 'C', long = "report_cputime", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub cputime: u8,
    /// CUDA graph launches (not supported: must be 0).
    #[arg(short = 'G', long = "cudagraph", default_value_t = 0)]
    pub cudagraph: u32,
    /// Also write the results as JSON to this file.
    #[arg(short = 'J', long = "output_file", value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// Print JSON on stdout instead of the table.
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

/// Parses `8`, `64K`, `1M`, `1G` (powers of 1024, as nccl-tests).
pub fn parse_size(s: &str) -> Result<u64, Usage> {
    let s = s.trim();
    let (digits, shift) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 30),
        Some('T' | 't') => (&s[..s.len() - 1], 40),
        _ => (s, 0),
    };
    let number = digits.strip_prefix('+').unwrap_or(digits);
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Usage::NotASize(s.to_owned()));
    }
    // Only digits: a number that does not parse is past 2^64.
    let n = number.parse::<u64>().map_err(|_| Usage::SizeOverflow(s.to_owned()))?;
    n.checked_mul(1u64 << shift).ok_or(Usage::SizeOverflow(s.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("8"), Ok(8));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("1.5M").is_err());
        assert!(parse_size("99999999999G").is_err());
        // A number past 2^64 is too large, not "not a size" (said so before).
        assert_eq!(parse_size("18446744073709551616"), Err(Usage::SizeOverflow("18446744073709551616".into())));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_size("+8"), Ok(8));
        for s in ["", "K", "+", "-1", "8 K", "0x10", "++8"] {
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
