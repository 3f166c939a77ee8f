//! Starting the way real jobs start: which rank this process is, found in the variables of
//! the launcher that started it (torchrun, Slurm, Open MPI, MPICH, MVAPICH2, Kubeflow, or the
//! crate's own), and the unique id handed to every rank along the route that world allows
//! (an authenticated TCP rendezvous, MPI, NCCL's `NCCL_COMM_ID`, or a file), then one call to
//! an initialised communicator.
//!
//! ```no_run
//! use std::time::Duration;
//! use nccl_trampoline::launch::World;
//! use nccl_trampoline::nccl::Nccl;
//!
//! // Unchanged under `torchrun --nproc_per_node 8`, `srun -n 16`, `mpirun -np 4`, ...
//! let world = World::from_env()?;
//! let nccl = Nccl::load()?;
//! let comm = world.communicator(&nccl, Duration::from_secs(120))?;
//! println!("rank {} of {} ({}), route {}", world.rank(), world.size(), world.launcher(), world.id_route()?.name());
//! # drop(comm);
//! # Ok::<(), nccl_trampoline::launch::Error>(())
//! ```
//!
//! How the world is found, how the id travels and the security model of the rendezvous:
//! `docs/adr/0010-launchers-and-rendezvous.md`.

mod device;
mod error;
pub mod hostlist;
mod mpi;
pub mod rendezvous;
mod route;
mod world;

pub use device::DeviceChoice;
pub use error::Error;
pub use mpi::{candidates as mpi_candidates, Mpi, MpiAbi, MpiSession};
pub use route::{IdRoute, Setup, FILE_SLACK};
pub use world::{vars, Launcher, Secret, World};
