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
//! # Ok::<(), nccl_trampoline::nccl::Error>(())
//! ```
//!
//! What happens when a peer dies, and what the facade promises then (deadlines, abort from any
//! thread, the watchdog, `Drop`), is docs/adr/0009-fault-model.md.

mod bounded;
mod buffers;
mod collective_config;
mod collectives;
mod communicator;
mod config;
mod coverage;
mod create;
#[cfg(feature = "cudarc")]
pub mod cudarc;
mod device_api;
mod discovery;
mod encryption;
mod error;
mod functions;
mod group;
mod library;
mod memory;
mod one_sided;
mod params;
mod properties;
pub mod rendezvous;
mod shared;
mod simulate;
mod state;
mod suspend;
mod team;
mod types;
mod version;
mod versioned;
mod wait;
mod watchdog;

pub use buffers::{DeviceBuffer, DeviceBufferMut, Stream};
pub use collective_config::{coll_config_fields, coll_config_size, CollConfig, CollConfigBuffer};
pub use communicator::{AbortHandle, Communicator};
pub use config::{config_size, Config, ConfigBuffer};
pub use coverage::Coverage;
pub use create::{CommOptions, Pending, ShrinkMode};
pub use device_api::{
    DevResourceRequirements, GinBarrierHandle, LeInfo, LlA2aHandle, LsaBarrierHandle, MultimemHandle,
    ResourceRequirement,
};
pub use discovery::{Candidate, PythonWheel, Source, LIBRARY_ENV};
pub use encryption::{Encryption, PreSharedKey};
pub use error::{Error, OsError};
pub use functions::Sym;
pub use group::{Group, GroupScope};
pub use library::{Discovery, Nccl};
pub use memory::{CustomRedOp, DeviceAllocation, Registration};
pub use one_sided::WaitSignalDesc;
pub use params::{Param, ParamValue};
pub use properties::{CommProperties, GinType};
pub use simulate::{SimInfo, SIM_INFO_MAGIC};
pub use state::{Cause, CommState, Timeouts};
pub use suspend::SuspendFlags;
pub use team::{CftTeamMode, Team};
pub use types::{DataType, MemStat, NcclResult, NcclScalar, RedOp, ScalarResidence, UniqueId, UNIQUE_ID_BYTES};
pub use version::{Flavor, Version};
pub use watchdog::{Problem, WatchdogAction, WatchdogConfig, WatchdogReport};
// The field tables the config encoders write from, for the fuzz targets (crate::fuzzing).
#[cfg(fuzzing)]
pub(crate) use {
    collective_config::FIELDS as COLL_CONFIG_FIELDS,
    config::FIELDS as CONFIG_FIELDS,
    versioned::{FieldInfo, Kind},
};

// The thread-safety choices of docs/adr/0007-facade-safety-model.md and 0009, kept true at
// compile time.
static_assertions::assert_impl_all!(Nccl: Send, Sync, Clone);
static_assertions::assert_impl_all!(Communicator: Send);
static_assertions::assert_not_impl_any!(Communicator: Sync);
static_assertions::assert_impl_all!(AbortHandle: Send, Sync, Clone);
static_assertions::assert_not_impl_any!(Group<'static>: Send, Sync);
static_assertions::assert_impl_all!(DeviceAllocation<'static>: Send);
static_assertions::assert_impl_all!(UniqueId: Send, Sync);
