//! NCCL's vocabulary, with no library behind it: the C enums and the unique id, the version, the
//! versioned structs NCCL reads by size and version (`ncclConfig_t`, `ncclCollConfig_t`), the
//! device API's structs the host passes by value, a communicator's states, and the facade's
//! error. Everything above (the library, communicators, operations) speaks in these types.

pub(crate) mod coll_config;
pub(crate) mod config;
pub(crate) mod device_api;
pub(crate) mod enums;
pub(crate) mod error;
pub(crate) mod state;
pub(crate) mod unique_id;
pub(crate) mod version;
pub(crate) mod versioned;
