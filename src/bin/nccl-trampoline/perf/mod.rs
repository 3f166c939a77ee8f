//! `perf <collective>`: nccl-tests 2.19.6's sweeps through the call core, with its options,
//! its measurement and its output byte for byte.
//!
//! The options, the sizes swept, the buffer layouts, the timing (a warm-up per type and op,
//! then per placement: one operation waited for, `-n` iterations timed on the host clock from
//! the first enqueue to the end of every stream, each iteration a buffer-length further into
//! the buffers, then `-c` check runs), the bandwidth formulas, the table and the `-J` JSON
//! document are nccl-tests'. One process drives `-g` GPUs; or every process is one rank of a
//! job that a launcher started (mpirun, srun, torchrun, the crate's own variables:
//! `launched.rs`, for a world of any size, one included), which `--procs N` also does on one
//! host. The cputime (`-C 1`) is the host time of the enqueue loop alone: what the binding
//! adds shows there.
//!
//! `options.rs` holds the options, `plan.rs` what a sweep measures, `ranks.rs` the GPUs and
//! the timing loop, `output.rs` what is printed; `collective.rs`, `data.rs` and `report.rs`
//! the layouts, element types and formats of nccl-tests.

pub mod alltoallv;
pub mod collective;
pub mod data;
pub mod device;
pub mod launched;
pub mod options;
pub mod output;
pub mod plan;
pub mod ranks;
pub mod report;

use nccl_trampoline::launch::Launcher;
use nccl_trampoline::nccl::{Communicator, Config, Nccl, Version};

use crate::cuda::Driver;
use crate::error::{Error, Usage};
pub use options::Args;
use output::{DeviceLine, Output};
use plan::Plan;
use ranks::{MemoryUse, Ranks};
use report::Measured;

fn load(args: &Args) -> Result<Nccl, Error> {
    match &args.library {
        Some(p) => Nccl::load_from(p),
        None => Nccl::load(),
    }
    .map_err(|source| Error::NcclLoad { source: source.into() })
}

/// Checks the options (a usage error), loads NCCL and the CUDA driver, and checks that
/// `nranks` GPUs from `first` are visible (`option` names the option that asked for them).
fn prepare(args: &Args, nranks: usize, first: usize, option: &'static str) -> Result<(Plan, Nccl, Driver), Error> {
    let plan = Plan::new(args, nranks)?;
    let driver = Driver::load().map_err(|source| Error::NoCudaDriver { source: source.into() })?;
    let nccl = load(args)?;
    let visible = driver.device_count().map_err(|source| Error::DeviceCount { source: source.into() })? as usize;
    if visible < first + nranks {
        return Err(Error::TooFewGpus { option, wanted: first + nranks, visible });
    }
    let min_arch = (first..first + nranks).map(|d| arch(&driver, d as i32)).min().unwrap_or(0);
    let plan = plan.for_library(args, nccl.version().code(), min_arch)?;
    Ok((plan, nccl, driver))
}

/// Device `device`'s compute capability as nccl-tests compares it (`100 * major + 10 *
/// minor`; 0 when the driver cannot say).
fn arch(driver: &Driver, device: i32) -> i32 {
    driver.compute_capability(device).map_or(0, |(major, minor)| 100 * major + 10 * minor)
}

/// The communicators' config as nccl-tests makes it (src/common.cu:195-208): NVLink-centric
/// scheduling from NCCL 2.28, and `-x`'s CTA policy (2.27; policy 2 from 2.28). `None` when
/// the library takes neither.
fn comm_config(args: &Args, version: Version) -> Result<Option<Config>, Usage> {
    let v = |major, minor| version >= Version::new(major, minor, 0);
    let mut config = None;
    if v(2, 28) {
        config = Some(Config::new().field("nvlinkCentricSched", 1));
    }
    if let Some(policy) = args.cta_policy {
        let needs = if policy > 1 { (28, "2.28") } else { (27, "2.27") };
        if !v(2, needs.0) {
            return Err(Usage::CtaPolicyVersion { policy, needs: needs.1, version: version.to_string() });
        }
        config = Some(config.unwrap_or_default().field("CTAPolicy", policy));
    }
    Ok(config)
}

/// `args` with `-e` (and `-b`, if above) lowered to `limit` bytes.
fn limited(args: &Args, limit: u64) -> Args {
    let mut a = args.clone();
    a.max_bytes = limit;
    a.min_bytes = a.min_bytes.min(limit);
    a
}

/// The sweep: per type and op, the warm-up, then `-N` cycles of every size, both placements;
/// `row` gets each measured pair.
fn sweep(
    args: &Args,
    plan: &Plan,
    ranks: &Ranks<'_, '_, '_>,
    mut row: impl FnMut(data::Elem, Option<data::Op>, usize, Measured, Measured) -> Result<(), Error>,
) -> Result<(), Error> {
    for &(elem, op) in &plan.cases {
        ranks.warm_up(args, plan, elem, op)?;
        let mut cycle = 0u32;
        while args.run_cycles == 0 || cycle < args.run_cycles {
            for &size in &plan.sizes {
                let o = ranks.measure(args, plan, elem, op, size, false)?;
                let i = ranks.measure(args, plan, elem, op, size, true)?;
                row(elem, op, size, o, i)?;
            }
            cycle = cycle.saturating_add(1);
        }
    }
    Ok(())
}

/// The free memory of each of `devices` when `-M 1` asks for it (zeros otherwise).
fn free_memory(driver: &Driver, devices: &[i32], wanted: bool) -> Result<Vec<i64>, Error> {
    devices
        .iter()
        .map(|&device| match wanted {
            false => Ok(0),
            true => device::free_memory(driver, device).map_err(|e| Error::Gpu {
                rank: 0,
                device,
                step: crate::error::GpuStep::Memory,
                source: e.into(),
            }),
        })
        .collect()
}

/// `(before - after)`, the maximum over GPUs: what was taken between two readings.
fn taken(before: &[i64], after: &[i64]) -> i64 {
    before.iter().zip(after).map(|(b, a)| b - a).max().unwrap_or(0)
}

/// `perf`: a sweep over this process's GPUs, or one rank of a launched job.
pub fn run(args: &Args) -> Result<bool, Error> {
    output::start_environment();
    // A rank of a job: started by a launcher (a world of one included: the launcher's word,
    // not the size, tells), or by --procs.
    let world = nccl_trampoline::launch::World::from_env().map_err(|source| Error::World { source: source.into() })?;
    if world.launcher() != Launcher::Standalone || args.procs_rank {
        return launched::rank(args, &world);
    }
    if args.procs > 1 {
        return launched::start_procs(args);
    }
    let nranks = args.ngpus as usize;
    // NCCL_TESTS_DEVICE: the first GPU (src/common.cu:1570).
    let first = std::env::var("NCCL_TESTS_DEVICE").ok().and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(0);
    if args.cta_policy.is_some() && nranks > 1 {
        return Err(Usage::CtaPolicyWithGpus.into());
    }
    let (plan, nccl, driver) = prepare(args, nranks, first, "-g")?;
    let devices: Vec<i32> = (first..first + nranks).map(|d| d as i32).collect();
    let config = comm_config(args, nccl.version())?;
    let before_init = free_memory(&driver, &devices, args.memory == 1)?;
    let comms: Vec<(Communicator, i32, usize)> = match (&config, nranks) {
        (Some(config), 1) => {
            driver.activate(devices[0]).map_err(|e| Error::InitAll { source: e.into() })?;
            let id = nccl.unique_id().map_err(|e| Error::InitAll { source: e.into() })?;
            let c = Communicator::init_rank_config(&nccl, 1, &id, 0, config)
                .map_err(|e| Error::InitAll { source: e.into() })?;
            vec![(c, devices[0], 0)]
        }
        _ => Communicator::init_all(&nccl, &devices)
            .map_err(|source| Error::InitAll { source: source.into() })?
            .into_iter()
            .zip(&devices)
            .enumerate()
            .map(|(g, (c, d))| (c, *d, g))
            .collect(),
    };
    let after_init = free_memory(&driver, &devices, args.memory == 1)?;
    let host = output::short_hostname(&launched::hostname());
    let lines: Vec<DeviceLine> = devices
        .iter()
        .enumerate()
        .map(|(rank, &device)| {
            let d = driver.device_info(device).ok();
            let (name, bus) = d.map_or(("?".to_string(), "?".to_string()), |d| (d.name, d.pci_bus_id));
            DeviceLine { rank, pid: std::process::id(), host: host.clone(), device, name, bus }
        })
        .collect();
    let min_total = devices.iter().filter_map(|&d| driver.device_info(d).ok()).map(|i| i.memory).min().unwrap_or(0);
    let limit = output::memory_limit(min_total, args.max_bytes, args.check > 0);
    let plan = match limit {
        Some(l) => {
            let min_arch = devices.iter().map(|&d| arch(&driver, d)).min().unwrap_or(0);
            Plan::new(&limited(args, l), nranks)?.for_library(args, nccl.version().code(), min_arch)?
        }
        None => plan,
    };
    let ranks = Ranks::new(&nccl, &driver, &comms, &plan, args, 1)?;
    let after_buffers = if args.memory == 1 { ranks.free_memory()? } else { vec![0; nranks] };
    let mut out = Output::new(args, &plan, &nccl, &lines, limit);
    sweep(args, &plan, &ranks, |elem, op, size, o, i| {
        out.row(plan.row(elem, op, size, o, i));
        Ok(())
    })?;
    let memory = (args.memory == 1)
        .then(|| -> Result<MemoryUse, Error> {
            Ok(MemoryUse {
                init: taken(&before_init, &after_init),
                buffers: taken(&after_init, &after_buffers),
                collective: taken(&after_buffers, &ranks.free_memory()?),
            })
        })
        .transpose()?;
    drop(ranks);
    out.finish(&nccl, memory)
}
