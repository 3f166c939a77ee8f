//! What one sweep measures: the options checked against each other, the sizes, the (type,
//! op) cases, and the row each step fills.

use super::alltoallv;
use super::collective::Collective;
use super::data::{self, Elem, Op};
use super::options::Args;
use super::report::{Measured, Row};
use crate::error::Usage;

/// Every (type, op) pair, in nccl-tests' order; one op-less case per type for collectives
/// without a reduction.
fn cases(args: &Args, types: Vec<Elem>, ops: Vec<Op>) -> Vec<(Elem, Option<Op>)> {
    let ops: Vec<Option<Op>> =
        if args.collective.takes_op() { ops.into_iter().map(Some).collect() } else { vec![None] };
    types.into_iter().flat_map(|e| ops.iter().map(move |o| (e, *o))).collect()
}

/// What one sweep measures, in order: every (type, op) pair, then every size.
#[derive(Clone, Debug)]
pub struct Plan {
    pub collective: Collective,
    pub sizes: Vec<usize>,
    pub cases: Vec<(Elem, Option<Op>)>,
    pub nranks: usize,
    pub root: usize,
}

/// At most this many sizes per sweep (a typo in -i should not start a day-long run).
const MAX_SIZES: usize = 100_000;

/// The most ranks alltoallv's traffic table (one count per pair of ranks) is made for: 16
/// million entries.
pub const MAX_ALLTOALLV_RANKS: usize = 4096;

/// The largest size a sweep measures: 2^48 bytes (256 TiB), past the memory of any GPU, and
/// small enough that no buffer length of any layout (at most twice the size, times the
/// element size at most) overflows.
pub const MAX_BYTES: u64 = 1 << 48;

impl Plan {
    /// Checks the options against each other and lists the sizes.
    pub fn new(args: &Args, nranks: usize) -> Result<Plan, Usage> {
        args.check()?;
        if args.procs > 1 && args.ngpus != 1 {
            return Err(Usage::ProcsWithGpus);
        }
        if args.max_bytes < args.min_bytes {
            return Err(Usage::MaxBelowMin { max: args.max_bytes, min: args.min_bytes });
        }
        if args.max_bytes > MAX_BYTES {
            return Err(Usage::SizeTooLarge { max: args.max_bytes, limit: MAX_BYTES });
        }
        if args.step_factor == 1 && args.step_bytes == 0 && args.max_bytes > args.min_bytes {
            return Err(Usage::StepNeverReaches);
        }
        if args.step_factor > 1 && args.min_bytes == 0 {
            return Err(Usage::FactorFromZero);
        }
        if args.root as u64 >= nranks as u64 && args.collective.rooted() {
            return Err(Usage::RootOutOfRange { root: args.root, nranks });
        }
        let mut sizes = Vec::new();
        let mut s = args.min_bytes;
        while s <= args.max_bytes {
            if sizes.len() == MAX_SIZES {
                return Err(Usage::TooManySizes { limit: MAX_SIZES });
            }
            let Ok(size) = usize::try_from(s) else { return Err(Usage::SizeBeyondMachine(s)) };
            sizes.push(size);
            // A next size past u64 is past -e too: the sweep ends there.
            let next = if args.step_factor > 1 {
                s.checked_mul(args.step_factor)
            } else {
                s.checked_add(args.step_bytes.max(1))
            };
            match next {
                Some(n) => s = n,
                None => break,
            }
        }
        if args.collective == Collective::AllToAllV && nranks > MAX_ALLTOALLV_RANKS {
            return Err(Usage::AlltoallvRanks { nranks, limit: MAX_ALLTOALLV_RANKS });
        }
        if args.collective == Collective::AllToAllV {
            alltoallv::pattern().as_ref().map_err(Clone::clone)?.check(nranks, args.min_bytes, args.max_bytes)?;
        }
        let cases = cases(args, args.dtype.list(), args.op.list());
        Ok(Plan { collective: args.collective, sizes, cases, nranks, root: args.root as usize })
    }

    /// The cases for the loaded library (version code `code`) on GPUs of compute capability
    /// `min_arch` at least (`100 * major + 10 * minor`, the job's smallest): `all` lists what
    /// they have, as nccl-tests, and a type or op named that they lack is refused.
    pub fn for_library(mut self, args: &Args, code: i32, min_arch: i32) -> Result<Plan, Usage> {
        self.cases = cases(args, args.dtype.list_for(code, min_arch), args.op.list_for(code));
        for &(elem, op) in &self.cases {
            data::check_supported(elem, op, code)?;
        }
        Ok(self)
    }

    /// The measurements in order, each (type, op, size).
    pub fn steps(&self) -> impl Iterator<Item = (Elem, Option<Op>, usize)> + '_ {
        self.cases.iter().flat_map(move |&(e, o)| self.sizes.iter().map(move |&s| (e, o, s)))
    }

    /// The table row for a step, without measurements.
    pub fn row(&self, elem: Elem, op: Option<Op>, size: usize, out: Measured, inp: Measured) -> Row {
        let l = self.collective.sized_layout(size / elem.size(), elem.size(), self.nranks);
        let bytes = l.send.max(l.recv) * elem.size();
        let bw = |m: Measured| {
            let (algbw, busbw) = self.collective.bandwidth(l.param, elem.size(), m.time, self.nranks);
            Measured { algbw, busbw, ..m }
        };
        Row {
            size: bytes,
            count: l.param,
            dtype: elem.name(),
            redop: op.map_or("none", Op::name),
            root: if self.collective.rooted() { self.root as i32 } else { -1 },
            out_of_place: bw(out),
            in_place: bw(inp),
            timestamp: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::report::Measured;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: Args,
    }

    fn args(line: &str) -> Result<Args, clap::Error> {
        Wrapper::try_parse_from(std::iter::once("perf").chain(line.split_whitespace())).map(|w| w.args)
    }

    #[test]
    fn sizes_follow_factor_and_step() {
        let a = args("all_reduce -b 8 -e 1G -f 2").unwrap();
        let p = Plan::new(&a, 2).unwrap();
        assert_eq!(p.sizes.len(), 28);
        assert_eq!((p.sizes[0], p.sizes[27]), (8, 1 << 30));
        let a = args("all_reduce -b 1K -e 4K -i 1K").unwrap();
        assert_eq!(Plan::new(&a, 2).unwrap().sizes, [1024, 2048, 3072, 4096]);
        // The defaults are nccl-tests': 32M once.
        assert_eq!(Plan::new(&args("broadcast").unwrap(), 2).unwrap().sizes, [32 << 20]);
    }

    #[test]
    fn bad_combinations_are_refused() {
        for (line, nranks) in [
            ("all_reduce -b 1G -e 8", 2),
            ("all_reduce -b 0 -e 8 -f 2", 2),
            ("all_reduce -G 1", 2),
            ("all_reduce -D 1", 2),
            ("all_reduce -y 1", 2),
            ("all_reduce -n 4 -I 1 -K 4", 2),
            ("all_reduce -K 1", 2),
            ("all_reduce -V 0", 2),
            ("alltoallv", 4097),
            ("broadcast -r 2", 2),
            ("all_reduce --procs 2 -g 2", 2),
            ("all_reduce -b 1 -e 1G -i 1", 2),
            // Past MAX_BYTES: a panic (an overflowing step) or an absurd allocation before.
            ("all_reduce -b 18446744073709551615 -e 18446744073709551615", 2),
            ("all_reduce -b 1 -e 18446744073709551615 -f 2", 2),
            ("all_gather -b 1T -e 1024T -d int8", 2),
        ] {
            assert!(Plan::new(&args(line).unwrap(), nranks).is_err(), "{line}");
        }
        for line in ["all_reduce -b x", "all_reduce -d float7", "all_reduce -o mean", "nothing", "all_reduce -z 4"] {
            assert!(args(line).is_err(), "{line}");
        }
    }

    #[test]
    fn sweeps_end_where_the_next_size_would_overflow() {
        // Steps past u64 (a debug-build panic, a wrapped size in release): the sweep ends.
        let huge = u64::MAX.to_string();
        let a = args(&format!("all_reduce -b 1 -e 256T -i {huge}")).unwrap();
        assert_eq!(Plan::new(&a, 2).unwrap().sizes, [1]);
        let a = args(&format!("all_reduce -b 256T -e 256T -f {huge}")).unwrap();
        assert_eq!(Plan::new(&a, 2).unwrap().sizes, [1 << 48]);
        let a = args("all_reduce -b 64T -e 256T -f 2").unwrap();
        assert_eq!(Plan::new(&a, 2).unwrap().sizes, [1 << 46, 1 << 47, 1 << 48]);
        // The largest size: the buffer arithmetic of every layout stays far from overflow.
        let a = args("all_gather -b 256T -e 256T -d int8").unwrap();
        let p = Plan::new(&a, 1024).unwrap();
        let l = p.collective.sized_layout(p.sizes[0], 1, p.nranks);
        assert!(l.send_offset.checked_mul(p.nranks).and_then(|b| b.checked_add(l.send)).is_some());
        assert_eq!(
            Plan::new(&args("all_reduce -b 1 -e 262145G").unwrap(), 2).unwrap_err(),
            Usage::SizeTooLarge { max: 262145 << 30, limit: MAX_BYTES }
        );
    }

    #[test]
    fn types_and_ops_expand_all() {
        let p = Plan::new(&args("all_reduce -d all -o all").unwrap(), 2).unwrap();
        assert_eq!(p.cases.len(), 50);
        // Collectives without a reduction run once per type, whatever -o says.
        let p = Plan::new(&args("all_gather -d all -o all").unwrap(), 2).unwrap();
        assert_eq!(p.cases.len(), 10);
        let row = p.row(Elem::Float, None, 1024, Measured::new(1e-6, 0.0, None), Measured::new(1e-6, 0.0, None));
        assert_eq!((row.size, row.count, row.redop, row.root), (1024, 128, "none", -1));
    }
}
