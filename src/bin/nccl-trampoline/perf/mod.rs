//! `perf <collective>`: nccl-tests-compatible sweeps through the call core.
//!
//! The options, the sizes swept, the buffer layouts, the timing loop (warm-up, then `-n`
//! iterations timed on the host clock from the first enqueue to the end of every stream), the
//! bandwidth formulas and the table are nccl-tests'. One process drives `-g` GPUs
//! (`ncclCommInitAll`, one group per iteration); or every process is one rank of a job that a
//! launcher started (mpirun, srun, torchrun: `launched.rs`), which `--procs N` also does on
//! one host. The cputime (`-C 1`) is the host time of the enqueue loop alone: what the binding
//! adds shows there.

pub mod collective;
pub mod data;
pub mod launched;
pub mod report;

use std::ffi::c_void;
use std::path::PathBuf;
use std::time::Instant;

use nccl_trampoline::nccl::{Communicator, DataType, Nccl, WatchdogConfig};

use crate::cuda::{DeviceMemory, DeviceStream, Driver};
use collective::{Collective, Layout};
use data::{Elem, Op, OpChoice, TypeChoice};
use report::{Measured, Progress, Row};

/// Options, named and defaulted as nccl-tests' (`all_reduce_perf -b 8 -e 1G -f 2 -g 2`).
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The collective.
    #[arg(value_enum)]
    pub collective: Collective,
    /// Smallest size in bytes (suffixes K, M, G: powers of 1024).
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

/// Parses a positive number of seconds.
fn parse_seconds(s: &str) -> Result<std::time::Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(std::time::Duration::from_secs_f64(v)),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

/// Parses `8`, `64K`, `1M`, `1G` (powers of 1024, as nccl-tests).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (digits, shift) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 30),
        Some('T' | 't') => (&s[..s.len() - 1], 40),
        _ => (s, 0),
    };
    let n: u64 = digits.parse().map_err(|_| format!("`{s}` is not a size (a number, optionally with K, M or G)"))?;
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("`{s}` is too large"))
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

impl Plan {
    /// Checks the options against each other and lists the sizes.
    pub fn new(args: &Args, nranks: usize) -> Result<Plan, String> {
        if args.cudagraph != 0 {
            return Err("-G (CUDA graphs) is not supported".into());
        }
        if args.procs > 1 && args.ngpus != 1 {
            return Err("--procs starts one process per GPU: -g must be 1".into());
        }
        if args.max_bytes < args.min_bytes {
            return Err(format!("-e {} is smaller than -b {}", args.max_bytes, args.min_bytes));
        }
        if args.step_factor == 1 && args.step_bytes == 0 && args.max_bytes > args.min_bytes {
            return Err("-i 0 with -f 1 never reaches -e".into());
        }
        if args.step_factor > 1 && args.min_bytes == 0 {
            return Err("-b 0 with -f > 1 never grows".into());
        }
        if args.root as usize >= nranks && args.collective.rooted() {
            return Err(format!("-r {}: there are only {nranks} ranks", args.root));
        }
        let mut sizes = Vec::new();
        let mut s = args.min_bytes;
        while s <= args.max_bytes {
            if sizes.len() == MAX_SIZES {
                return Err(format!("more than {MAX_SIZES} sizes: raise -i or -f"));
            }
            sizes.push(usize::try_from(s).map_err(|_| "size does not fit this machine".to_string())?);
            s = if args.step_factor > 1 { s.saturating_mul(args.step_factor) } else { s + args.step_bytes.max(1) };
        }
        let ops: Vec<Option<Op>> =
            if args.collective.reduces() { args.op.list().into_iter().map(Some).collect() } else { vec![None] };
        let cases = args.dtype.list().into_iter().flat_map(|e| ops.iter().map(move |o| (e, *o))).collect();
        Ok(Plan { collective: args.collective, sizes, cases, nranks, root: args.root as usize })
    }

    /// The measurements in order, each (type, op, size).
    pub fn steps(&self) -> impl Iterator<Item = (Elem, Option<Op>, usize)> + '_ {
        self.cases.iter().flat_map(move |&(e, o)| self.sizes.iter().map(move |&s| (e, o, s)))
    }

    /// The table row for a step, without measurements.
    pub fn row(&self, elem: Elem, op: Option<Op>, size: usize, out: Measured, inp: Measured) -> Row {
        let l = self.collective.layout(size / elem.size(), self.nranks);
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
        }
    }
}

/// The ranks this process drives and the memory they use.
pub struct Ranks<'d, 'n> {
    nccl: &'n Nccl,
    driver: &'d Driver,
    ranks: Vec<Rank<'d>>,
    nranks: usize,
    /// [`Collective::native_in`] for the sweep's collective.
    native: bool,
}

struct Rank<'d> {
    comm: Communicator,
    device: i32,
    global: usize,
    send: DeviceMemory<'d>,
    recv: DeviceMemory<'d>,
    stream: DeviceStream<'d>,
}

impl<'d, 'n> Ranks<'d, 'n> {
    /// The ranks of `comms` (communicator, device, global rank), each with buffers for the
    /// largest step of `plan` and a stream.
    pub fn new(
        nccl: &'n Nccl,
        driver: &'d Driver,
        comms: Vec<(Communicator, i32, usize)>,
        plan: &Plan,
        watchdog: Option<std::time::Duration>,
    ) -> Result<Self, String> {
        let bytes = buffer_bytes(plan);
        let mut ranks = Vec::new();
        for (comm, device, global) in comms {
            driver.activate(device).map_err(|e| e.to_string())?;
            if let Some(timeout) = watchdog {
                comm.start_watchdog(WatchdogConfig::new(timeout)).map_err(|e| e.to_string())?;
            }
            let send = driver.alloc(bytes).map_err(|e| e.to_string())?;
            let recv = driver.alloc(bytes).map_err(|e| e.to_string())?;
            let stream = driver.stream().map_err(|e| e.to_string())?;
            ranks.push(Rank { comm, device, global, send, recv, stream });
        }
        Ok(Ranks { nccl, driver, ranks, nranks: plan.nranks, native: plan.collective.native_in(nccl) })
    }

    /// One operation on every local rank (in one group when there are several).
    fn launch(
        &self,
        c: Collective,
        l: &Layout,
        elem: Elem,
        op: Option<Op>,
        root: usize,
        in_place: bool,
    ) -> Result<(), String> {
        let group = if self.ranks.len() > 1 { Some(self.nccl.group().map_err(|e| e.to_string())?) } else { None };
        for r in &self.ranks {
            let (send, recv) = buffers(r, l, elem, in_place);
            // SAFETY: both buffers were allocated for the largest size of the sweep, which
            // bounds every layout; they live until the world is dropped, after the streams
            // are synchronised.
            unsafe {
                c.enqueue(
                    self.nccl,
                    self.native,
                    &r.comm,
                    send,
                    recv,
                    l,
                    elem.nccl(),
                    op.unwrap_or(Op::Sum).nccl(),
                    root as i32,
                    r.global,
                    self.nranks,
                    r.stream.raw(),
                )
            }
            .map_err(|e| e.to_string())?;
        }
        if let Some(g) = group {
            g.end().map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn synchronize(&self) -> Result<(), String> {
        for r in &self.ranks {
            r.stream.synchronize().map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Every rank's `mine` (all of the same length), in rank order, through NCCL itself (an
    /// all-gather of bytes): how ranks in separate processes share what they measured, under
    /// any launcher. One local rank only.
    pub fn gather(&self, mine: &[u8]) -> Result<Vec<u8>, String> {
        let [r] = &self.ranks[..] else { return Err("gather drives one local rank".into()) };
        self.driver.activate(r.device).map_err(|e| e.to_string())?;
        let send = self.driver.alloc(mine.len()).map_err(|e| e.to_string())?;
        let recv = self.driver.alloc(mine.len() * self.nranks).map_err(|e| e.to_string())?;
        send.upload(mine).map_err(|e| e.to_string())?;
        // SAFETY: both buffers were just allocated on the rank's device with the sizes an
        // all-gather of `mine.len()` bytes per rank needs; the stream is synchronised before
        // they are read or freed.
        unsafe { r.comm.all_gather_raw(send.ptr(), recv.ptr(), mine.len(), DataType::INT8, r.stream.raw()) }
            .map_err(|e| e.to_string())?;
        r.stream.synchronize().map_err(|e| e.to_string())?;
        let mut all = vec![0u8; mine.len() * self.nranks];
        recv.download(&mut all).map_err(|e| e.to_string())?;
        Ok(all)
    }

    /// Warm-up, the timed loop, and the check run of one placement.
    pub fn measure(
        &self,
        args: &Args,
        plan: &Plan,
        elem: Elem,
        op: Option<Op>,
        size: usize,
        in_place: bool,
    ) -> Result<Measured, String> {
        let c = plan.collective;
        let l = c.layout(size / elem.size(), plan.nranks);
        if args.check == 1 {
            // Defined data for the timed runs too (the check run re-initialises).
            self.initialise(plan, &l, elem, op, in_place)?;
        }
        for _ in 0..args.warmup {
            self.launch(c, &l, elem, op, plan.root, in_place)?;
        }
        self.synchronize()?;
        let start = Instant::now();
        for _ in 0..args.iters {
            if args.agg > 1 {
                let g = self.nccl.group().map_err(|e| e.to_string())?;
                for _ in 0..args.agg {
                    self.launch(c, &l, elem, op, plan.root, in_place)?;
                }
                g.end().map_err(|e| e.to_string())?;
            } else {
                self.launch(c, &l, elem, op, plan.root, in_place)?;
            }
            if args.blocking == 1 {
                self.synchronize()?;
            }
        }
        let cpu = start.elapsed();
        self.synchronize()?;
        let time = start.elapsed();
        let n = f64::from(args.iters) * f64::from(args.agg);
        let wrong = if args.check == 1 && (!in_place || c.checks_in_place()) {
            self.initialise(plan, &l, elem, op, in_place)?;
            self.launch(c, &l, elem, op, plan.root, in_place)?;
            self.synchronize()?;
            Some(self.count_wrong(plan, &l, elem, op, in_place)?)
        } else {
            None
        };
        Ok(Measured { time: time.as_secs_f64() / n, cpu: cpu.as_secs_f64() / n, algbw: 0.0, busbw: 0.0, wrong })
    }

    /// Writes every rank's send data (into the receive buffer, in place) and fills the rest of
    /// the receive buffer with a byte pattern no result matches.
    fn initialise(&self, plan: &Plan, l: &Layout, elem: Elem, op: Option<Op>, in_place: bool) -> Result<(), String> {
        let op = op.unwrap_or(Op::Sum);
        let size = elem.size();
        for r in &self.ranks {
            self.driver.activate(r.device).map_err(|e| e.to_string())?;
            let mut recv = vec![0xa5u8; l.recv.max(l.send_offset * plan.nranks) * size];
            let mut send = vec![0u8; l.send * size];
            for (j, chunk) in send.chunks_exact_mut(size).enumerate() {
                elem.encode(op.send_value(r.global, j), chunk);
            }
            if in_place {
                let at = l.send_offset * r.global * size;
                if recv.len() < at + send.len() {
                    recv.resize(at + send.len(), 0xa5);
                }
                recv[at..at + send.len()].copy_from_slice(&send);
            } else {
                r.send.upload(&send).map_err(|e| e.to_string())?;
            }
            r.recv.upload(&recv).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn count_wrong(&self, plan: &Plan, l: &Layout, elem: Elem, op: Option<Op>, in_place: bool) -> Result<u64, String> {
        let c = plan.collective;
        let op = op.unwrap_or(Op::Sum);
        let size = elem.size();
        let mut wrong = 0u64;
        for r in &self.ranks {
            let Some((offset, len)) = c.result_region(l, r.global, plan.root, in_place) else { continue };
            self.driver.activate(r.device).map_err(|e| e.to_string())?;
            let mut host = vec![0u8; (offset + len) * size];
            r.recv.download(&mut host).map_err(|e| e.to_string())?;
            let send = |rank: usize, j: usize| op.send_value(rank, j);
            let reduce = |it: &mut dyn Iterator<Item = i64>| op.reduce(elem, it);
            for (i, bytes) in host[offset * size..].chunks_exact(size).enumerate() {
                let want = c.expected(l, r.global, plan.nranks, plan.root, i, &send, &reduce);
                if !elem.matches(bytes, want) {
                    wrong += 1;
                }
            }
        }
        Ok(wrong)
    }
}

fn buffers(r: &Rank<'_>, l: &Layout, elem: Elem, in_place: bool) -> (*mut c_void, *mut c_void) {
    let base = r.recv.ptr().cast::<u8>();
    if in_place {
        let s = base.wrapping_add(l.send_offset * r.global * elem.size());
        let d = base.wrapping_add(l.recv_offset * r.global * elem.size());
        (s.cast(), d.cast())
    } else {
        (r.send.ptr(), r.recv.ptr())
    }
}

fn load(args: &Args) -> Result<Nccl, String> {
    match &args.library {
        Some(p) => Nccl::load_from(p),
        None => Nccl::load(),
    }
    .map_err(|e| e.to_string())
}

/// Checks the options (a usage error exits with status 2), loads NCCL and the CUDA driver, and
/// checks that `nranks` GPUs are visible (`option` names the option that asked for them).
fn prepare(args: &Args, nranks: usize, option: &str) -> Result<(Plan, Nccl, Driver), String> {
    let plan = Plan::new(args, nranks).unwrap_or_else(|e| crate::usage_error(&e));
    let driver = Driver::load().map_err(|e| {
        format!("perf needs GPUs: {e} (`nccl-trampoline selftest` checks the core and NCCL without one)")
    })?;
    let nccl = load(args)?;
    let visible = driver.device_count().map_err(|e| e.to_string())? as usize;
    if visible < nranks {
        return Err(format!("{option} {nranks}: only {visible} GPUs are visible"));
    }
    Ok((plan, nccl, driver))
}

/// The largest buffer any step needs on one rank.
fn buffer_bytes(plan: &Plan) -> usize {
    plan.steps()
        .map(|(e, _, s)| {
            let l = plan.collective.layout(s / e.size(), plan.nranks);
            l.send.max(l.recv).max(l.send_offset * plan.nranks + l.send) * e.size()
        })
        .max()
        .unwrap_or(0)
}

pub fn run(args: &Args) -> Result<bool, String> {
    // A rank of a job: started by a launcher, or by --procs.
    let world = nccl_trampoline::launch::World::from_env().map_err(|e| e.to_string())?;
    if world.size() > 1 || args.procs_rank {
        return launched::rank(args, &world);
    }
    if args.procs > 1 {
        return launched::start_procs(args);
    }
    let nranks = args.ngpus as usize;
    let (plan, nccl, driver) = prepare(args, nranks, "-g")?;
    let devices: Vec<i32> = (0..nranks as i32).collect();
    let comms = Communicator::init_all(&nccl, &devices).map_err(|e| e.to_string())?;
    let comms = comms.into_iter().zip(devices.iter()).enumerate().map(|(g, (c, d))| (c, *d, g)).collect();
    let ranks = Ranks::new(&nccl, &driver, comms, &plan, args.watchdog)?;
    let host = launched::hostname();
    let lines: Vec<DeviceLine> = (0..nranks)
        .map(|rank| {
            let d = driver.device_info(rank as i32).ok();
            let (name, bus) = d.map_or(("?".to_string(), "?".to_string()), |d| (d.name, d.pci_bus_id));
            DeviceLine { rank, pid: std::process::id(), host: host.clone(), device: rank as i32, name, bus }
        })
        .collect();
    let mut out = Output::new(args, &plan, &nccl, &lines);
    for (elem, op, size) in plan.steps() {
        let o = ranks.measure(args, &plan, elem, op, size, false)?;
        let i = ranks.measure(args, &plan, elem, op, size, true)?;
        out.row(plan.row(elem, op, size, o, i));
    }
    drop(ranks);
    out.finish()
}

/// Where one rank runs, for the "Using devices" lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceLine {
    pub rank: usize,
    pub pid: u32,
    pub host: String,
    pub device: i32,
    pub name: String,
    pub bus: String,
}

/// Prints rows as they come (or collects them for JSON) and writes the JSON file.
pub struct Output<'a> {
    args: &'a Args,
    rows: Vec<Row>,
    progress: Progress,
    fields: Vec<(&'static str, String)>,
}

impl<'a> Output<'a> {
    /// `devices`: where each rank runs.
    pub fn new(args: &'a Args, plan: &Plan, nccl: &Nccl, devices: &[DeviceLine]) -> Self {
        let procs = devices.iter().map(|d| (&d.host, d.pid)).collect::<std::collections::BTreeSet<_>>().len();
        use report::json_str;
        let gpus_per_proc = plan.nranks / procs;
        let step = if args.step_factor > 1 {
            format!("{}(factor)", args.step_factor)
        } else {
            format!("{}(bytes)", args.step_bytes)
        };
        if !args.json {
            println!(
                "# nccl-trampoline perf {}: nProcs {procs} nGpus {gpus_per_proc} minBytes {} maxBytes {} step: {step} warmup iters: {} iters: {} agg iters: {} validation: {} blocking: {}",
                plan.collective.name(),
                args.min_bytes,
                args.max_bytes,
                args.warmup,
                args.iters,
                args.agg,
                args.check,
                args.blocking
            );
            println!("# {} {} at {}", nccl.flavor(), nccl.version(), nccl.path().display());
            println!("#\n# Using devices");
            for d in devices {
                println!(
                    "#  Rank {:>2} Pid {:>6} on {:>10} device {:>2} [{}] {}",
                    d.rank, d.pid, d.host, d.device, d.bus, d.name
                );
            }
            println!("#");
            print!("{}", report::table_header(args.cputime == 1));
        }
        let device_list: Vec<String> = devices
            .iter()
            .map(|d| {
                format!(
                    "{{\"rank\": {}, \"pid\": {}, \"host\": {}, \"device\": {}, \"name\": {}, \"pci_bus_id\": {}}}",
                    d.rank,
                    d.pid,
                    json_str(&d.host),
                    d.device,
                    json_str(&d.name),
                    json_str(&d.bus)
                )
            })
            .collect();
        let fields = vec![
            ("tool", json_str("nccl-trampoline perf")),
            ("collective", json_str(plan.collective.name())),
            ("nccl_version", json_str(&nccl.version().to_string())),
            ("nccl_path", json_str(&nccl.path().display().to_string())),
            ("nranks", plan.nranks.to_string()),
            ("procs", procs.to_string()),
            ("iters", args.iters.to_string()),
            ("warmup_iters", args.warmup.to_string()),
            ("agg_iters", args.agg.to_string()),
            ("check", args.check.to_string()),
            ("blocking", args.blocking.to_string()),
            ("devices", format!("[{}]", device_list.join(", "))),
        ];
        let progress = Progress::new(plan.sizes.len() * plan.cases.len(), true);
        Output { args, rows: Vec::new(), progress, fields }
    }

    pub fn row(&mut self, row: Row) {
        self.progress.advance(&format!("{} B", row.size));
        if !self.args.json {
            self.progress.clear();
            println!("{}", report::table_row(&row, self.args.cputime == 1));
        }
        self.rows.push(row);
    }

    pub fn finish(self) -> Result<bool, String> {
        self.progress.clear();
        let doc = report::json_document(&self.fields, &self.rows);
        if self.args.json {
            print!("{doc}");
        } else {
            print!("{}", report::table_footer(&self.rows));
        }
        if let Some(path) = &self.args.output_file {
            std::fs::write(path, &doc).map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
        Ok(report::total_wrong(&self.rows) == 0)
    }
}

/// nccl-tests' `-a`: rank 0's time, or the average, minimum or maximum over ranks; wrong
/// elements are summed.
pub fn aggregate(per_rank: &[Measured], mode: u8) -> Measured {
    let pick = |f: fn(&Measured) -> f64| -> f64 {
        let v = per_rank.iter().map(f);
        match mode {
            0 => f(&per_rank[0]),
            2 => v.fold(f64::INFINITY, f64::min),
            3 => v.fold(0.0, f64::max),
            _ => v.sum::<f64>() / per_rank.len() as f64,
        }
    };
    let wrong = per_rank.iter().map(|m| m.wrong).try_fold(0u64, |acc, w| w.map(|w| acc + w));
    Measured { time: pick(|m| m.time), cpu: pick(|m| m.cpu), algbw: 0.0, busbw: 0.0, wrong }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            ("broadcast -r 2", 2),
            ("all_reduce --procs 2 -g 2", 2),
            ("all_reduce -b 1 -e 1G -i 1", 2),
        ] {
            assert!(Plan::new(&args(line).unwrap(), nranks).is_err(), "{line}");
        }
        for line in ["all_reduce -b x", "all_reduce -d float7", "all_reduce -o mean", "nothing", "all_reduce -c 2"] {
            assert!(args(line).is_err(), "{line}");
        }
    }

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("8"), Ok(8));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("1.5M").is_err());
        assert!(parse_size("99999999999G").is_err());
    }

    #[test]
    fn types_and_ops_expand_all() {
        let p = Plan::new(&args("all_reduce -d all -o all").unwrap(), 2).unwrap();
        assert_eq!(p.cases.len(), 50);
        // Collectives without a reduction run once per type, whatever -o says.
        let p = Plan::new(&args("all_gather -d all -o all").unwrap(), 2).unwrap();
        assert_eq!(p.cases.len(), 10);
        let row = p.row(
            Elem::Float,
            None,
            1024,
            Measured { time: 1e-6, cpu: 0.0, algbw: 0.0, busbw: 0.0, wrong: None },
            Measured { time: 1e-6, cpu: 0.0, algbw: 0.0, busbw: 0.0, wrong: None },
        );
        assert_eq!((row.size, row.count, row.redop, row.root), (1024, 128, "none", -1));
    }

    #[test]
    fn ranks_aggregate_like_nccl_tests() {
        let m = |t: f64, w: Option<u64>| Measured { time: t, cpu: t / 2.0, algbw: 0.0, busbw: 0.0, wrong: w };
        let per = [m(1.0, Some(1)), m(3.0, Some(2))];
        assert_eq!(aggregate(&per, 0).time, 1.0);
        assert_eq!(aggregate(&per, 1).time, 2.0);
        assert_eq!(aggregate(&per, 2).time, 1.0);
        assert_eq!(aggregate(&per, 3).time, 3.0);
        assert_eq!(aggregate(&per, 1).wrong, Some(3));
        assert_eq!(aggregate(&[m(1.0, None), m(1.0, Some(0))], 1).wrong, None);
    }
}
