//! The NCCL facade: a safe, thin API over NCCL loaded at run time, every call made through the
//! call core (`crate::CallPlan`). Nothing here knows about registers.
//!
//! ```no_run
//! use nccl_trampoline::nccl::{Communicator, Nccl, UniqueId};
//!
//! let nccl = Nccl::load()?;
//! println!("{} from {}", nccl.version(), nccl.path().display());
//! // Rank 0 makes the id and sends its bytes to the other ranks.
//! let id = nccl.unique_id()?;
//! let bytes = id.as_bytes().to_vec();
//! let id = UniqueId::from_bytes(&bytes)?;
//! let comm = Communicator::init_rank(&nccl, 1, &id, 0)?;
//! assert_eq!(comm.count()?, 1);
//! comm.destroy()?;
//! # Ok::<(), nccl_trampoline::Error>(())
//! ```

mod comm;
mod config;
#[cfg(feature = "cudarc")]
pub mod cudarc;
mod library;
pub mod rendezvous;
mod types;

pub use comm::{
    Communicator, CustomRedOp, DeviceAllocation, DeviceBuffer, DeviceBufferMut, Group, Registration, Stream,
};
pub use config::{config_size, Config, ConfigBuffer};
pub use library::{Candidate, Discovery, Flavor, Nccl, Source, Version, LIBRARY_ENV};
pub use types::{DataType, NcclResult, NcclScalar, RedOp, ScalarResidence, UniqueId, UNIQUE_ID_BYTES};

// The thread-safety choices of docs/adr/0007-facade-safety-model.md, kept true at compile time.
static_assertions::assert_impl_all!(Nccl: Send, Sync);
static_assertions::assert_impl_all!(Communicator<'static>: Send);
static_assertions::assert_not_impl_any!(Communicator<'static>: Sync);
static_assertions::assert_not_impl_any!(Group<'static>: Send, Sync);
static_assertions::assert_impl_all!(DeviceAllocation<'static>: Send);
static_assertions::assert_impl_all!(UniqueId: Send, Sync);
