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

// The layers of the facade, from the bottom: each imports only from those before it
// (tests/layering.rs keeps it so).
mod comm;
#[cfg(feature = "cudarc")]
pub mod cudarc;
mod host_api;
mod library;
mod ops;
mod types;

pub use comm::adopt::Ownership;
pub use comm::communicator::{AbortHandle, Communicator};
pub use comm::create::{CommOptions, Pending, ShrinkMode};
pub use comm::watchdog::{WatchdogAction, WatchdogConfig};
pub use host_api::device_api::{
    DevResourceRequirements, GinBarrierHandle, LeInfo, LlA2aHandle, LsaBarrierHandle, ResourceRequirement,
};
pub use host_api::properties::{CommProperties, GinType};
pub use host_api::suspend::SuspendFlags;
pub use library::coverage::Coverage;
pub use library::discovery::{Candidate, PythonWheel, Source, LIBRARY_ENV};
pub use library::encryption::{Encryption, PreSharedKey};
pub use library::functions::Sym;
pub use library::load::{Discovery, Nccl};
pub use library::params::{Param, ParamValue};
pub use ops::buffers::{DeviceBuffer, DeviceBufferMut, Stream};
pub use ops::group::{Group, GroupScope};
pub use ops::memory::{CustomRedOp, DeviceAllocation, Registration};
pub use ops::simulate::{SimInfo, SIM_INFO_MAGIC};
pub use types::coll_config::{coll_config_fields, coll_config_size, CollConfig, CollConfigBuffer};
pub use types::config::{config_size, Config, ConfigBuffer};
pub use types::device_api::{CftTeamMode, MultimemHandle, Team, WaitSignalDesc};
pub use types::enums::{DataType, MemStat, NcclResult, NcclScalar, RedOp, ScalarResidence};
pub use types::error::{Error, OsError};
pub use types::state::{Cause, CommState, Problem, Timeouts, WatchdogReport};
pub use types::unique_id::{UniqueId, UNIQUE_ID_BYTES};
pub use types::version::{Flavor, Version};
// The field tables the config encoders write from, for the fuzz targets (crate::fuzzing).
#[cfg(fuzzing)]
pub(crate) use types::{
    coll_config::FIELDS as COLL_CONFIG_FIELDS,
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
