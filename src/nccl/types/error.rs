//! The facade's error: what can fail between a caller and NCCL (finding and loading the
//! library, a symbol it lacks, a result it returns, a communicator that can no longer be used,
//! arguments refused before NCCL sees them). The layers below keep their own errors and are
//! this one's `source()`: the call core's [`crate::Error`] and the CUDA driver's
//! [`cuda::Error`](crate::cuda::Error). docs/adr/0019-errors-per-layer.md says why.

use core::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::state::CommState;
use crate::nccl::types::version::Version;

/// Everything the NCCL facade can fail with, one variant per failure site: the facade layer's
/// error, one of the crate's errors per layer (docs/adr/0019-errors-per-layer.md). Below it,
/// the call core's [`crate::Error`] (in [`Error::Core`]) and the CUDA driver's
/// [`cuda::Error`](crate::cuda::Error) (in [`Error::Cuda`]) are kept whole as the `source()`;
/// above it, the launchers' [`launch::Error`](crate::launch::Error) wraps this one. The
/// plugins' error is [`plugin::PluginError`](crate::plugin::PluginError).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The call core refused a plan, a binding or a call (see [`crate::Error`]); it is the
    /// `source()`.
    #[error("{0}")]
    Core(#[source] crate::Error),
    /// A CUDA driver call the facade made failed (a device check, an event, a stream wait); it
    /// is the `source()`.
    #[error("{0}")]
    Cuda(#[source] crate::cuda::Error),
    /// No candidate of the discovery order loaded; every one tried, with why it failed.
    #[error(
        "no NCCL library found ({}); install one (`pip install nvidia-nccl-cu12`, or -cu13 for CUDA 13) or set NCCL_TRAMPOLINE_LIBRARY to its path",
        tried.join("; ")
    )]
    LibraryNotFound {
        /// `path (source): reason` for each candidate, in discovery order (candidates of one
        /// source that failed for the same reason share an entry: `a, b (source): reason`).
        tried: Vec<String>,
    },
    /// The library the caller named (`Nccl::load_from`, or `NCCL_TRAMPOLINE_LIBRARY` for
    /// `Nccl::load`) cannot be loaded or is not NCCL. No other candidate is tried for it.
    #[error("{}", library_load_message(path, *variable, reason))]
    LibraryLoad {
        /// The path or soname named.
        path: String,
        /// The environment variable that named it, if one did.
        variable: Option<&'static str>,
        /// Why, in one line: "no such file", "not a regular file but a FIFO", "built for
        /// aarch64, this program runs on x86_64: use the x86_64 build", "truncated: a load
        /// segment ends at byte N, the file has M bytes", "corrupt: ...", "ncclGetVersion is a
        /// data object in this library, not a function", a missing dependency, "not an NCCL
        /// library", a version code no NCCL reports, ...
        reason: String,
    },
    /// The loaded library is older than the one that introduced `symbol` (a function, or a
    /// field of `ncclConfig_t`).
    #[error("{symbol} needs NCCL {needs}; the loaded library is {loaded}")]
    Unsupported {
        /// C symbol or config field.
        symbol: &'static str,
        /// First NCCL version that has it.
        needs: Version,
        /// Version of the loaded library.
        loaded: Version,
    },
    /// The loaded library is new enough for `symbol` but does not export it (a build that
    /// leaves it out, RCCL, a stub).
    #[error("{symbol} is not exported by the loaded NCCL {loaded} (it has been part of NCCL since {since})")]
    SymbolMissing {
        /// The C symbol.
        symbol: &'static str,
        /// First NCCL version that has it.
        since: Version,
        /// Version of the loaded library.
        loaded: Version,
    },
    /// The dynamic symbol table of a loaded library could not be read (for its coverage).
    #[error("cannot read the symbol table of {path}: {reason}")]
    SymbolTable {
        /// The file.
        path: String,
        /// Why: "not a 64-bit little-endian ELF file", "no dynamic symbol table", ...
        reason: String,
    },
    /// NCCL's parameter registry has no parameter of this name (`ncclParamBind` or
    /// `ncclParamGetParameter` refused the key).
    #[error("NCCL has no runtime parameter {key}")]
    ParamNotFound {
        /// The key asked for.
        key: String,
    },
    /// A runtime parameter was read as another type than its own (NCCL's typed getters refuse).
    #[error("NCCL's runtime parameter {key} is not {requested}")]
    ParamType {
        /// The parameter.
        key: String,
        /// The type asked for: "int32_t", "const char *", ...
        requested: &'static str,
    },
    /// An NCCL call returned an error.
    #[error("{function} failed: {name} ({}){}", result.0, if last_error.is_empty() { String::new() } else { format!(": {last_error}") })]
    Nccl {
        /// The NCCL function.
        function: &'static str,
        /// What it returned.
        result: NcclResult,
        /// Its name (`ncclInvalidArgument`), or NCCL's string for an unknown code.
        name: String,
        /// `ncclGetLastError` text, empty when NCCL had none.
        last_error: String,
        /// Version of the library that returned it.
        version: Version,
    },
    /// An NCCL call reported success but its output is impossible (a count below 1, no
    /// communicator handle).
    #[error("{function} succeeded but returned {what}")]
    ImpossibleOutput {
        /// The NCCL function.
        function: &'static str,
        /// What it returned.
        what: &'static str,
    },
    /// A unique id of the wrong length.
    #[error("a unique id has 128 bytes, got {len}")]
    InvalidUniqueId {
        /// Length given.
        len: usize,
    },
    /// A buffer too short for the collective.
    #[error("{what}: need {expected} elements, got {got}")]
    LengthMismatch {
        /// Which buffer.
        what: &'static str,
        /// Elements needed.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// A buffer length a collective needs (`count * nranks` elements) that is past `usize`.
    #[error("{what}: {count} elements for each of {nranks} ranks do not fit a usize")]
    LengthOverflow {
        /// Which buffer.
        what: &'static str,
        /// Elements per rank.
        count: usize,
        /// The communicator's ranks.
        nranks: usize,
    },
    /// A rank outside `0..nranks`, or `nranks` below 1.
    #[error("rank {rank} is not in 0..{nranks} (nranks must be at least 1)")]
    RankOutOfRange {
        /// The rank given.
        rank: i32,
        /// The number of ranks given.
        nranks: i32,
    },
    /// More items than NCCL's `int` count can hold.
    #[error("too many {what}: {count} do not fit a C int")]
    TooMany {
        /// What was counted ("devices", "ranks to exclude").
        what: &'static str,
        /// How many were given.
        count: usize,
    },
    /// An empty list where the call needs at least one item.
    #[error("{operation} needs at least one {what}")]
    Empty {
        /// The operation.
        operation: &'static str,
        /// What it needs ("device", "rank to exclude").
        what: &'static str,
    },
    /// A communicator of another loaded library than the one the call was made on.
    #[error("{operation}: every communicator must come from this library")]
    ForeignCommunicator {
        /// The operation.
        operation: &'static str,
    },
    /// `cudaStreamPerThread` given to a non-blocking communicator, which NCCL then silently
    /// corrupts data with.
    #[error(
        "{operation}: cudaStreamPerThread cannot be used with a non-blocking communicator; pass an explicit stream"
    )]
    PerThreadStream {
        /// The NCCL function refused.
        operation: &'static str,
    },
    /// A name given as an `ncclConfig_t` integer field that is not one (unknown, or a
    /// pointer field such as `netName`, which has its own setter).
    #[error("ncclConfig_t has no integer field {name:?}")]
    UnknownConfigField {
        /// The name given.
        name: String,
    },
    /// A config string (`netName`, `commName`) with a NUL byte, which C cannot see past.
    #[error("ncclConfig_t field {field} contains a NUL byte")]
    NulInConfigString {
        /// The field.
        field: &'static str,
    },
    /// A string NCCL reads as a C string (a parameter key, a pre-shared key) with a NUL byte.
    #[error("{what} must not contain a NUL byte")]
    ContainsNul {
        /// The string ("a parameter key", "a pre-shared key").
        what: &'static str,
    },
    /// Scalable init with no unique id, or more ids than ranks.
    #[error("ncclCommInitRankScalable needs between 1 and {nranks} unique ids, got {count}")]
    UniqueIdCount {
        /// The ids given.
        count: usize,
        /// The communicator's ranks.
        nranks: i32,
    },
    /// A grow to no more ranks than the communicator already has.
    #[error("ncclCommGrow needs more ranks than the communicator's {current}, got {nranks}")]
    GrowNotLarger {
        /// The size asked for.
        nranks: i32,
        /// The communicator's size.
        current: i32,
    },
    /// A window call on a buffer registration that is not a window.
    #[error("{operation} needs a window (Communicator::window_register), not a buffer registration")]
    NotAWindow {
        /// The call.
        operation: &'static str,
    },
    /// A `userProfilerTag` with the top bit set: those values are NCCL's own.
    #[error("userProfilerTag {tag:#x} has the top bit set: those values are NCCL's")]
    ReservedProfilerTag {
        /// The tag given.
        tag: u64,
    },
    /// A per-collective config carrying a raw CUDA event given to a safe collective, which
    /// cannot vouch for the event: the `*_config_raw` calls take it.
    #[error("launchCompletionEvent needs the *_config_raw calls (a raw CUDA event)")]
    RawEventInSafeCall,
    /// An argument NCCL would reject, where no variant above names the failure.
    #[error("invalid argument: {what}")]
    InvalidArgument {
        /// What is wrong.
        what: &'static str,
    },
    /// The CUDA driver of a library was set after one was already loaded or set.
    #[error("the CUDA driver of this library is already chosen")]
    DriverAlreadyChosen,
    /// `Communicator::start_watchdog` on a communicator whose watchdog already runs.
    #[error("the watchdog of this communicator is already running")]
    WatchdogRunning,
    /// A thread the facade needs could not be started; the operating system's error is the
    /// `source()`.
    #[error("cannot start the {name} thread: {source}")]
    Thread {
        /// The thread's name.
        name: &'static str,
        /// Why.
        source: OsError,
    },
    /// A creation with a zero creation timeout: it could never finish in time, so it is not
    /// started (`None` is "no limit").
    #[error("{operation} needs a creation timeout above zero (None waits without limit)")]
    ZeroTimeout {
        /// The creating function.
        operation: &'static str,
    },
    /// A deadline passed: `operation` did not finish within `waited`.
    #[error("{operation} timed out after {waited:.1?}")]
    Timeout {
        /// What was waited for (an NCCL function, or "stream wait").
        operation: &'static str,
        /// How long it waited.
        waited: Duration,
    },
    /// The communicator can no longer run `operation` (failed, revoked, aborted, lost or
    /// destroyed); the call never reached NCCL.
    #[error("{operation} refused: the communicator is {state}")]
    Unusable {
        /// The NCCL function refused.
        operation: &'static str,
        /// Why, with the cause.
        state: CommState,
    },
    /// An operation that ends or stops a communicator (`ncclCommAbort`, `ncclCommDestroy`,
    /// `ncclCommFinalize`, `ncclCommRevoke`, a shrink with `NCCL_SHRINK_ABORT`, a watchdog that
    /// aborts) on one adopted as [`Ownership::Borrowed`](crate::nccl::Ownership::Borrowed): its
    /// owner ends it, and NCCL was not called.
    #[error(
        "{operation} refused: the communicator is borrowed (Ownership::Borrowed), only its owner may end or stop it"
    )]
    NotOwned {
        /// What was refused.
        operation: &'static str,
    },
    /// `Communicator::from_raw` with a null `ncclComm_t`.
    #[error("Communicator::from_raw: the ncclComm_t is null")]
    NullCommunicator,
    /// `Nccl::loaded` found no NCCL or RCCL loaded in this process (it never loads one).
    #[error("no NCCL or RCCL library is loaded in this process (Nccl::loaded only uses one already there; a program that links NCCL statically has none to find)")]
    NotLoaded,
    /// `Nccl::loaded` found several NCCL or RCCL files loaded in this process and cannot tell
    /// which one made a handle: name one with `Nccl::loaded_from`.
    #[error("several NCCL libraries are loaded in this process ({}); name the one with Nccl::loaded_from", paths.join(", "))]
    SeveralLoaded {
        /// The files, as `/proc/self/maps` names them.
        paths: Vec<String>,
    },
    /// An abort could not run yet: a blocking NCCL call is in progress on the communicator. It
    /// runs as soon as that call returns.
    #[error(
        "abort deferred: a blocking NCCL call is still running on the communicator; it aborts when that call returns"
    )]
    AbortPending,
    /// A communicator cannot be created inside an open group.
    #[error("{operation} inside an open group: NCCL fills the handle at ncclGroupEnd; end the group first (or use Nccl::split_all)")]
    InGroup {
        /// The creating function.
        operation: &'static str,
    },
    /// A buffer or stream on another device than the communicator's.
    #[error("{what} is on device {got}, the communicator on device {expected}")]
    DeviceMismatch {
        /// Which buffer or stream.
        what: &'static str,
        /// The communicator's device.
        expected: i32,
        /// The buffer's or stream's device.
        got: i32,
    },
    /// A buffer bound to another stream than the collective's.
    #[error("{what} is bound to another stream than the collective's")]
    StreamMismatch {
        /// Which buffer.
        what: &'static str,
    },
}

impl Error {
    /// This error for an operator's log (feature `tracing`): its message, without NCCL's own
    /// last-error text, which may name the bootstrap root's address (the unique id's part that
    /// `NCCL_COMM_ID` gives away; docs/adr/0028-operator-events.md keeps it out of events).
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) fn for_events(&self) -> String {
        match self {
            Error::Nccl { function, result, name, .. } => format!("{function} failed: {name} ({})", result.0),
            e => e.to_string(),
        }
    }
}

impl From<crate::Error> for Error {
    fn from(e: crate::Error) -> Self {
        Error::Core(e)
    }
}

impl From<crate::cuda::Error> for Error {
    fn from(e: crate::cuda::Error) -> Self {
        Error::Cuda(e)
    }
}

/// An operating system's `io::Error` kept whole as a `source()` while the facade's error stays
/// `Clone` and `Eq`: shared, and compared by kind and text.
#[derive(Debug, Clone)]
pub struct OsError(Arc<std::io::Error>);

impl OsError {
    /// The operating system's error.
    pub fn io(&self) -> &std::io::Error {
        &self.0
    }
}

impl From<std::io::Error> for OsError {
    fn from(e: std::io::Error) -> Self {
        OsError(Arc::new(e))
    }
}

impl PartialEq for OsError {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string()
    }
}

impl Eq for OsError {}

impl fmt::Display for OsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for OsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

fn library_load_message(path: &str, variable: Option<&str>, reason: &str) -> String {
    match variable {
        Some(v) => format!("{v}={path} cannot be loaded: {reason} (fix {v}, or unset it to search the usual places)"),
        None => format!("cannot load {path}: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn unsupported_and_missing_say_which_is_true() {
        let old = Error::Unsupported {
            symbol: "ncclAlltoAll",
            needs: Version::new(2, 28, 3),
            loaded: Version::new(2, 27, 7),
        };
        assert_eq!(old.to_string(), "ncclAlltoAll needs NCCL 2.28.3; the loaded library is 2.27.7");
        let lacking = Error::SymbolMissing {
            symbol: "ncclAlltoAll",
            since: Version::new(2, 28, 3),
            loaded: Version::new(2, 28, 3),
        };
        assert_eq!(
            lacking.to_string(),
            "ncclAlltoAll is not exported by the loaded NCCL 2.28.3 (it has been part of NCCL since 2.28.3)"
        );
    }

    #[test]
    fn lower_layers_are_the_source() {
        let core = crate::Error::NullPointer { what: "function" };
        let e = Error::from(core);
        assert_eq!(e.to_string(), core.to_string());
        let source = e.source().and_then(|s| s.downcast_ref::<crate::Error>());
        assert_eq!(source, Some(&core));
        let io = std::io::Error::new(std::io::ErrorKind::WouldBlock, "no threads left");
        let e = Error::Thread { name: "nccl-watchdog", source: io.into() };
        let kept = e.source().and_then(|s| s.downcast_ref::<OsError>()).map(|s| s.io().kind());
        assert_eq!(kept, Some(std::io::ErrorKind::WouldBlock), "{e}");
        assert_eq!(e.clone(), e);
    }
}
