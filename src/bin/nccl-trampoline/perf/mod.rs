//! `perf <collective>`: nccl-tests-compatible sweeps through the call core.
//!
//! The options, the sizes swept, the buffer layouts, the timing loop (warm-up, then `-n`
//! iterations timed on the host clock from the first enqueue to the end of every stream), the
//! bandwidth formulas and the table are nccl-tests'. One process drives `-g` GPUs
//! (`ncclCommInitAll`, one group per iteration); or every process is one rank of a job that a
//! launcher started (mpirun, srun, torchrun, the crate's own variables: `launched.rs`, for a
//! world of any size, one included), which `--procs N` also does on one host. The cputime (`-C 1`) is the host time of the enqueue loop alone: what the binding
//! adds shows there.
//!
//! `options.rs` holds the options, `plan.rs` what a sweep measures, `ranks.rs` the GPUs and
//! the timing loop, `output.rs` what is printed; `collective.rs`, `data.rs` and `report.rs`
//! the layouts, element types and formats of nccl-tests.

pub mod alltoallv;
pub mod collective;
pub mod data;
pub mod launched;
pub mod options;
pub mod output;
pub mod plan;
pub mod ranks;
pub mod report;

use nccl_trampoline::launch::Launcher;
use nccl_trampoline::nccl::{Communicator, Nccl};

use crate::cuda::Driver;
use crate::error::Error;
pub use options::Args;
use output::{DeviceLine, Output};
use plan::Plan;
use ranks::Ranks;

fn load(args: &Args) -> Result<Nccl, Error> {
    match &args.library {
        Some(p) => Nccl::load_from(p),
        None => Nccl::load(),
    }
    .map_err(|source| Error::NcclLoad { source: source.into() })
}

/// Checks the options (a usage error), loads NCCL and the CUDA driver, and checks that
/// `nranks` GPUs are visible (`option` names the option that asked for them).
fn prepare(args: &Args, nranks: usize, option: &'static str) -> Result<(Plan, Nccl, Driver), Error> {
    let plan = Plan::new(args, nranks)?;
    let driver = Driver::load().map_err(|source| Error::NoCudaDriver { source: source.into() })?;
    let nccl = load(args)?;
    let visible = driver.device_count().map_err(|source| Error::DeviceCount { source: source.into() })? as usize;
    if visible < nranks {
        return Err(Error::TooFewGpus { option, wanted: nranks, visible });
    }
    Ok((plan, nccl, driver))
}

/// `perf`: a sweep over this process's GPUs, or one rank of a launched job.
pub fn run(args: &Args) -> Result<bool, Error> {
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
    let (plan, nccl, driver) = prepare(args, nranks, "-g")?;
    let devices: Vec<i32> = (0..nranks as i32).collect();
    let comms = Communicator::init_all(&nccl, &devices).map_err(|source| Error::InitAll { source: source.into() })?;
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
