//! One process per GPU: an all-reduce of `rank + 1`, verified on the host, the same program
//! under every launcher. Each process finds its rank in the launcher's variables and joins the
//! communicator in one call (`World::communicator`: its GPU, the unique id along the route
//! the launcher allows, `ncclCommInitRank`).
//!
//! ```sh
//! cargo build --release --features cudarc --example allreduce
//! torchrun --nproc_per_node 2 --no-python target/release/examples/allreduce
//! mpirun -np 2 target/release/examples/allreduce
//! srun -n 2 --gpus-per-task 1 target/release/examples/allreduce
//! target/release/examples/allreduce   # alone: one rank per visible GPU (see below)
//! ```
//!
//! Under a launcher (or the crate's `NCCL_TRAMPOLINE_*` variables) the process is one rank of
//! the launcher's world, whatever its size: `torchrun --nproc_per_node 1` is a world of one,
//! run here. Alone, with one visible GPU it is a world of one too, run in this process; with
//! more, it starts one rank per GPU itself, with the crate's variables, which those ranks read
//! as a launcher's. `launch::World::launcher` tells the two apart (`Launcher::Standalone`: no
//! launcher), never the size.

use std::process::ExitCode;
use std::time::Duration;

use cudarc::driver::CudaContext;
use nccl_trampoline::cuda::Driver;
use nccl_trampoline::launch::rendezvous::RendezvousKey;
use nccl_trampoline::launch::{vars, Launcher, World};
use nccl_trampoline::nccl::{Nccl, RedOp};

const NAME: &str = "allreduce";
const COUNT: usize = 1 << 20;
const TIMEOUT: Duration = Duration::from_secs(120);

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The visible GPUs, through the crate's own CUDA loader: cudarc panics when it cannot load
/// the driver, so it is asked only once this says there is one.
fn visible_gpus() -> Result<usize, Box<dyn std::error::Error>> {
    let driver = Driver::load().map_err(|e| format!("this example needs NVIDIA GPUs and their driver: {e}"))?;
    match driver.device_count()? {
        0 => Err("this example needs NVIDIA GPUs: the CUDA driver sees none (CUDA_VISIBLE_DEVICES?)".into()),
        n => Ok(n as usize),
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let world = World::from_env()?;
    // Started by a launcher (or given the crate's own variables): one rank of its world, of
    // whatever size, one included.
    if world.launcher() != Launcher::Standalone {
        return rank(&world);
    }
    // No launcher: one rank per visible GPU. One GPU is a world of one, run here.
    let nranks = visible_gpus()?;
    if nranks == 1 {
        return rank(&world);
    }
    // Several: be their launcher, with the crate's own variables. NCCL is found here, before
    // any rank starts, so that a missing NCCL is one line.
    Nccl::load()?;
    let secret = RendezvousKey::random_secret()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port().to_string();
    let exe = std::env::current_exe()?;
    let workers: Vec<_> = (0..nranks)
        .map(|r| {
            std::process::Command::new(&exe)
                .env(vars::RANK, r.to_string())
                .env(vars::WORLD_SIZE, nranks.to_string())
                .env(vars::LOCAL_RANK, r.to_string())
                .env(vars::LOCAL_SIZE, nranks.to_string())
                .env(vars::SECRET, &secret)
                .env(vars::PORT, &port)
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut failed = 0;
    for (r, mut w) in workers.into_iter().enumerate() {
        let status = w.wait()?;
        if !status.success() {
            eprintln!("rank {r} failed: {status}");
            failed += 1;
        }
    }
    if failed > 0 {
        return Err(format!("{failed} of {nranks} ranks failed").into());
    }
    println!("all-reduce over {nranks} processes: every rank verified");
    Ok(())
}

fn rank(world: &World) -> Result<(), Box<dyn std::error::Error>> {
    let nccl = Nccl::load()?;
    let (rank, nranks) = (world.rank() as usize, world.size() as usize);
    // The GPU of this local rank, the id along the launcher's route, ncclCommInitRank.
    let comm = world.communicator(&nccl, TIMEOUT)?;
    // cudarc on the same device (its primary context, which NCCL uses too).
    let ctx = CudaContext::new(comm.cu_device()? as usize)?;
    ctx.bind_to_thread()?;
    let stream = ctx.default_stream();

    let mut buf = stream.clone_htod(&vec![(rank + 1) as f32; COUNT])?;
    comm.all_reduce_in_place(&mut buf, RedOp::SUM, &stream)?;
    let out: Vec<f32> = stream.clone_dtoh(&buf)?;
    let want = (nranks * (nranks + 1) / 2) as f32;
    if let Some(i) = out.iter().position(|v| *v != want) {
        return Err(format!("rank {rank}: element {i} is {}, expected {want}", out[i]).into());
    }
    println!(
        "rank {rank}/{nranks} ({}, route {}, GPU {}, NCCL {}): {COUNT} floats all-reduced, every element = {want}: verified",
        world.launcher(),
        world.id_route()?.name(),
        comm.cu_device()?,
        nccl.version()
    );
    comm.destroy()?;
    Ok(())
}
