//! Which rank is this, and does the unique id reach every rank? Run it under any launcher:
//!
//! ```sh
//! mpirun -np 4 target/release/examples/world
//! srun -n 8 target/release/examples/world
//! torchrun --nproc_per_node 2 --no-python target/release/examples/world
//! ```
//!
//! Each rank prints its place in the world, the route of the unique id, the GPU it took and a
//! digest of the id (never the id: it is a secret), then joins the communicator and says how
//! that went. On a machine without a GPU the join fails with NCCL's own CUDA error, after every
//! rank has printed the same digest. Exit status 0 when the communicator initialised.

use std::process::ExitCode;
use std::time::Duration;

use nccl_trampoline::launch::{DeviceChoice, World};
use nccl_trampoline::nccl::{CommOptions, Communicator, Nccl};

fn main() -> ExitCode {
    let timeout = std::env::args()
        .skip_while(|a| a != "--timeout")
        .nth(1)
        .and_then(|s| s.parse().ok())
        .map_or(Duration::from_secs(120), Duration::from_secs);
    match run(timeout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One write per line: launchers forward each rank's output in the chunks written.
            use std::io::Write;
            let _ = std::io::stderr().write_all(format!("{e}\n").as_bytes());
            ExitCode::FAILURE
        }
    }
}

fn run(timeout: Duration) -> Result<(), String> {
    let world = World::from_env().map_err(|e| e.to_string())?;
    let me = format!("rank {}/{}", world.rank(), world.size());
    let nccl = Nccl::load().map_err(|e| format!("{me}: {e}"))?;
    let route = world.id_route().map_err(|e| format!("{me}: {e}"))?;
    let gpu = world.select_device(&nccl, DeviceChoice::PerLocalRank).map_err(|e| format!("{me}: {e}"))?;
    let id = world.unique_id(&nccl, &route, timeout).map_err(|e| format!("{me}: {e}"))?;
    println!(
        "{me} local {}/{} launcher {} route {} gpu {} nccl {} id-digest {}",
        world.local_rank(),
        world.local_size(),
        world.launcher(),
        route.name(),
        gpu.map_or("none".to_string(), |g| g.to_string()),
        nccl.version(),
        id.fingerprint()
    );
    // The creation deadline: NCCL's init on a thread of its own, abandoned when it passes.
    let options = CommOptions::new().create_timeout(Some(timeout));
    let comm = Communicator::init_rank_with(&nccl, world.size() as i32, &id, world.rank() as i32, &options)
        .map_err(|e| format!("{me}: init failed: {e}"))?;
    println!(
        "{me}: communicator of {} ranks on GPU {}",
        comm.count().map_err(|e| e.to_string())?,
        comm.cu_device().map_err(|e| e.to_string())?
    );
    comm.destroy().map_err(|e| e.to_string())
}
