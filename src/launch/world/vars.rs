//! The crate's own variables (prefix `NCCL_TRAMPOLINE_`).

/// This process's rank.
pub const RANK: &str = "NCCL_TRAMPOLINE_RANK";
/// The number of ranks.
pub const WORLD_SIZE: &str = "NCCL_TRAMPOLINE_WORLD_SIZE";
/// The rank among the ranks on this host.
pub const LOCAL_RANK: &str = "NCCL_TRAMPOLINE_LOCAL_RANK";
/// The number of ranks on this host.
pub const LOCAL_SIZE: &str = "NCCL_TRAMPOLINE_LOCAL_SIZE";
/// The root rank's host, or `host:port` (`[v6]:port`).
pub const ROOT: &str = "NCCL_TRAMPOLINE_ROOT";
/// The TCP rendezvous port (default: derived from the job's key).
pub const PORT: &str = "NCCL_TRAMPOLINE_PORT";
/// The per-job secret of the TCP and file rendezvous (default: derived from the job id).
pub const SECRET: &str = "NCCL_TRAMPOLINE_SECRET";
/// How the unique id travels: `tcp`, `mpi`, `nccl-comm-id`, `file` or `local`.
pub const ID_ROUTE: &str = "NCCL_TRAMPOLINE_ID_ROUTE";
/// The file of the file route (implies it when `ID_ROUTE` is unset).
pub const ID_FILE: &str = "NCCL_TRAMPOLINE_ID_FILE";
/// The MPI library to load for the MPI route.
pub const MPI_LIBRARY: &str = "NCCL_TRAMPOLINE_MPI_LIBRARY";
