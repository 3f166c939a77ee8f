//! The launch layer's error: finding the job in the launcher's variables, choosing the route of
//! the unique id and the GPU, MPI. The layers below keep their own errors and are this one's
//! `source()`: the facade's [`nccl::Error`](crate::nccl::Error), the rendezvous's
//! [`rendezvous::Error`](crate::launch::rendezvous::Error), the CUDA driver's
//! [`cuda::Error`](crate::cuda::Error) and the call core's [`crate::Error`].
//! docs/adr/0019-errors-per-layer.md says why.

use std::time::Duration;

use crate::launch::world::vars;

/// Everything the launch layer can fail with, one variant per failure site: the launch layer's
/// error (launcher variables, the unique id's route, the GPU choice, MPI), the top of the
/// crate's errors per layer (docs/adr/0019-errors-per-layer.md). The layers below are kept whole
/// as the `source()`: the NCCL facade's [`nccl::Error`](crate::nccl::Error), the rendezvous's
/// [`rendezvous::Error`](crate::launch::rendezvous::Error), the CUDA driver's
/// [`cuda::Error`](crate::cuda::Error) and the call core's [`crate::Error`]. The plugins' error,
/// beside this layer, is [`plugin::PluginError`](crate::plugin::PluginError).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The NCCL facade failed (loading NCCL, making the id, creating the communicator); it is
    /// the `source()`.
    #[error("{0}")]
    Nccl(#[source] crate::nccl::Error),
    /// The unique-id rendezvous failed; it is the `source()`.
    #[error("{0}")]
    Rendezvous(#[source] crate::launch::rendezvous::Error),
    /// The TCP rendezvous root cannot bind its port; the rendezvous error is the `source()`.
    #[error("{source} (another job on this port? set {})", vars::PORT)]
    RendezvousPort {
        /// The bind failure.
        source: crate::launch::rendezvous::Error,
    },
    /// The root's host name does not resolve.
    #[error("rendezvous: cannot resolve the root's host: {host}:{port}")]
    Resolve {
        /// The host name.
        host: String,
        /// The port.
        port: u16,
    },
    /// The route's overall deadline passed (TCP, file or MPI) before the unique id arrived.
    #[error("rendezvous timed out after {waited:?} waiting for {waiting_for}")]
    RendezvousTimeout {
        /// How long it waited.
        waited: Duration,
        /// What it was waiting for.
        waiting_for: &'static str,
    },
    /// The call core refused a plan or a call of the MPI library; it is the `source()`.
    #[error("{0}")]
    Core(#[source] crate::Error),
    /// A launcher variable whose value does not parse.
    #[error("launcher variable {variable}={value:?}: expected {expected}")]
    LauncherVariable {
        /// The variable.
        variable: String,
        /// Its value (never a secret's: those are not echoed).
        value: String,
        /// What it should hold.
        expected: &'static str,
    },
    /// A Slurm host list or task count list that does not parse; the reason says where.
    #[error("launcher variable {variable}={value:?}: {reason}")]
    LauncherList {
        /// The variable.
        variable: String,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: crate::launch::hostlist::ParseError,
    },
    /// Part of a launcher's variable set without the rest ("half a set").
    #[error("{launcher} variables incomplete: {} set but {} missing", present.join(", "), missing.join(", "))]
    LauncherIncomplete {
        /// The launcher whose variables were found.
        launcher: &'static str,
        /// The variables that are set.
        present: Vec<String>,
        /// The variables that would complete the set.
        missing: Vec<String>,
    },
    /// Launcher variables that contradict each other (a rank not below the size, ...).
    #[error("launcher variables contradict each other: {detail} ({})", variables.join(", "))]
    LauncherContradiction {
        /// The variables involved, each as `NAME=value`.
        variables: Vec<String>,
        /// What is wrong.
        detail: String,
    },
    /// No way to hand the unique id to every rank could be chosen, or the chosen one is not
    /// usable in this world.
    #[error("unique-id route: {detail}")]
    IdRoute {
        /// What is missing and what to set.
        detail: String,
    },
    /// No MPI library could be loaded; every candidate tried, with why it failed.
    #[error("no MPI library could be loaded; tried: {}", tried.join("; "))]
    MpiNotFound {
        /// `path: reason` for each candidate.
        tried: Vec<String>,
    },
    /// The loaded MPI library cannot be used: an ABI this crate does not know, a missing
    /// function, or MPI already finalized in this process.
    #[error("MPI library {library}: {detail}")]
    MpiLibrary {
        /// The library.
        library: String,
        /// What was found.
        detail: String,
    },
    /// An MPI call returned an error code.
    #[error("{function} failed: MPI error {code}{}", if text.is_empty() { String::new() } else { format!(" ({text})") })]
    Mpi {
        /// The MPI function.
        function: &'static str,
        /// Its return code.
        code: i32,
        /// `MPI_Error_string`'s text.
        text: String,
    },
    /// A value too large for MPI's `int` arguments.
    #[error("{function}: the {what} does not fit an MPI int")]
    MpiTooLarge {
        /// The MPI function.
        function: &'static str,
        /// Which argument ("count", "root rank").
        what: &'static str,
    },
    /// What MPI reports about the job disagrees with the launcher's variables.
    #[error("MPI reports {what} {mpi}, the launcher's variables say {launcher}")]
    MpiMismatch {
        /// "rank" or "size".
        what: &'static str,
        /// MPI's value.
        mpi: i32,
        /// The world's value.
        launcher: u32,
    },
    /// A CUDA driver call made to choose this rank's GPU failed; it is the `source()`.
    #[error("selecting the GPU of local rank {local_rank}: {source}")]
    Device {
        /// The local rank.
        local_rank: u32,
        /// The driver's failure.
        source: crate::cuda::Error,
    },
    /// The GPU this rank needs is not visible.
    #[error("selecting the GPU of local rank {local_rank}: GPU {ordinal} is needed but {count} are visible (CUDA_VISIBLE_DEVICES={visible})")]
    DeviceNotVisible {
        /// The local rank.
        local_rank: u32,
        /// The ordinal needed.
        ordinal: i32,
        /// GPUs visible.
        count: i32,
        /// `CUDA_VISIBLE_DEVICES`, or "unset".
        visible: String,
    },
}

impl From<crate::nccl::Error> for Error {
    fn from(e: crate::nccl::Error) -> Self {
        Error::Nccl(e)
    }
}

impl From<crate::launch::rendezvous::Error> for Error {
    fn from(e: crate::launch::rendezvous::Error) -> Self {
        match e {
            crate::launch::rendezvous::Error::Timeout { waited, waiting_for } => {
                Error::RendezvousTimeout { waited, waiting_for }
            }
            e => Error::Rendezvous(e),
        }
    }
}

impl From<crate::Error> for Error {
    fn from(e: crate::Error) -> Self {
        Error::Core(e)
    }
}
