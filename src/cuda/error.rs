//! The CUDA driver binding's error.

use std::time::Duration;

/// What can fail in the CUDA driver's binding, one variant per failure site: the CUDA layer's
/// error, one of the crate's errors per layer (docs/adr/0019-errors-per-layer.md). Below it, the
/// call core's [`crate::Error`] is the `source()` of [`Error::Core`]; above it, the NCCL
/// facade's [`nccl::Error`](crate::nccl::Error) wraps this one in
/// [`nccl::Error::Cuda`](crate::nccl::Error::Cuda), and the launchers'
/// [`launch::Error`](crate::launch::Error) in its GPU choice. The plugins' error is
/// [`plugin::PluginError`](crate::plugin::PluginError).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The call core refused a plan or a call (a driver function the library lacks, a
    /// prototype that cannot be planned here).
    #[error("{0}")]
    Core(#[source] crate::Error),
    /// The CUDA driver could not be loaded.
    #[error("cannot load the CUDA driver {path}: {reason}")]
    Load {
        /// The library tried.
        path: String,
        /// The loader's message, or the functions it lacks.
        reason: String,
    },
    /// A CUDA driver call failed.
    #[error("{function} failed: CUDA error {code} ({text})")]
    Driver {
        /// The driver function.
        function: &'static str,
        /// The `CUresult`.
        code: i32,
        /// `cuGetErrorString`'s text.
        text: String,
    },
    /// A stream wait passed its deadline.
    #[error("{operation} timed out after {waited:.1?}")]
    Timeout {
        /// What was waited for ("stream wait").
        operation: &'static str,
        /// How long it waited.
        waited: Duration,
    },
    /// A host buffer of another size than the device memory it is copied to or from.
    #[error("{what}: need {expected} bytes, got {got}")]
    LengthMismatch {
        /// "upload" or "download".
        what: &'static str,
        /// Bytes of the device memory.
        expected: usize,
        /// Bytes of the host buffer.
        got: usize,
    },
}

impl From<crate::Error> for Error {
    fn from(e: crate::Error) -> Self {
        Error::Core(e)
    }
}
