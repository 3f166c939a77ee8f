//! Starting the way real jobs start: which rank this process is, found in the variables of
//! the launcher that started it (torchrun, Slurm, Open MPI, MPICH, MVAPICH2, Kubeflow, or the
//! crate's own), and MPI loaded at run time and called through the call core.
//!
//! ```
//! use nccl_trampoline::launch::{Launcher, World};
//!
//! let world = World::from_vars(|name| match name {
//!     "OMPI_COMM_WORLD_RANK" => Some("3".into()),
//!     "OMPI_COMM_WORLD_SIZE" => Some("4".into()),
//!     "OMPI_COMM_WORLD_LOCAL_RANK" => Some("1".into()),
//!     "OMPI_COMM_WORLD_LOCAL_SIZE" => Some("2".into()),
//!     _ => None,
//! })?;
//! assert_eq!((world.rank(), world.size(), world.launcher()), (3, 4, Launcher::OpenMpi));
//! # Ok::<(), nccl_trampoline::Error>(())
//! ```

pub mod hostlist;
mod mpi;
mod world;

pub use mpi::{candidates as mpi_candidates, Mpi, MpiAbi, MpiSession};
pub use world::{vars, Launcher, Secret, World};
