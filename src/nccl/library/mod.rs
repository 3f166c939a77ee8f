//! The library: where NCCL is found (`discovery`), loading it and checking it is NCCL (`load`),
//! the one already loaded in this process (`in_process`), its C functions declared once each
//! (`functions`), and what is called on the library rather than on a communicator: its
//! coverage, its runtime parameters, socket encryption.

pub(crate) mod coverage;
pub(crate) mod discovery;
pub(crate) mod encryption;
pub(crate) mod functions;
pub(crate) mod in_process;
pub(crate) mod load;
pub(crate) mod params;
