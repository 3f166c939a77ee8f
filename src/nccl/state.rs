//! A communicator's vocabulary of time and state: its timeouts and deadlines, where it is in its
//! life ([`CommState`]), why it stopped being usable ([`Cause`]), which states an operation
//! accepts, and the rank facts read when it is made. The fault model is
//! docs/adr/0009-fault-model.md.

use core::fmt;
use std::time::Duration;

use crate::nccl::types::NcclResult;
use crate::nccl::watchdog::WatchdogReport;

/// How long a communicator's operations may take. `None` waits without limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Creation: init, split, shrink (every peer must arrive). Default 10 minutes.
    pub create: Option<Duration>,
    /// An operation NCCL finishes in the background: a non-blocking collective until it is
    /// enqueued, a group's end, finalize, revoke. Default 10 minutes.
    pub operation: Option<Duration>,
    /// What `Drop` may spend finalizing and destroying before it aborts, and how long an abort
    /// waits for an NCCL call in progress on the communicator. Default 30 seconds.
    pub teardown: Option<Duration>,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            create: Some(Duration::from_secs(600)),
            operation: Some(Duration::from_secs(600)),
            teardown: Some(Duration::from_secs(30)),
        }
    }
}

/// How long a query of NCCL's state (on another thread) issued at, or just before, its deadline
/// may take before it counts as stuck inside NCCL.
pub(crate) const QUERY_GRACE: Duration = Duration::from_millis(50);

/// Why a communicator stopped being usable.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cause {
    /// [`Communicator::abort`](crate::nccl::Communicator::abort) or an [`AbortHandle`](crate::nccl::AbortHandle).
    Requested,
    /// The watchdog found an operation that did not finish in time, or an asynchronous error.
    Watchdog(Box<WatchdogReport>),
    /// An operation passed its deadline.
    Timeout {
        /// The NCCL function waited for.
        operation: &'static str,
        /// How long it was waited for.
        waited: Duration,
    },
    /// NCCL reported a fatal error, from a call or asynchronously.
    Nccl {
        /// The NCCL function that reported it (`ncclCommGetAsyncError` for an asynchronous one).
        function: &'static str,
        /// The result.
        code: NcclResult,
    },
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Requested => f.write_str("by request"),
            Cause::Watchdog(r) => write!(f, "by the watchdog: {r}"),
            Cause::Timeout { operation, waited } => write!(f, "after {operation} timed out ({waited:.1?})"),
            Cause::Nccl { function, code } => write!(f, "after {function} reported {code:?}"),
        }
    }
}

/// Where a communicator is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommState {
    /// Being created (init, split or shrink not finished).
    Creating,
    /// Usable.
    Ready,
    /// An operation failed with a fatal error or timed out. NCCL's object still exists: only
    /// abort, revoke, shrink and drop remain (drop aborts).
    Failed(Cause),
    /// `ncclCommRevoke` ran: in-flight work was stopped; only shrink, abort and drop remain.
    Revoked,
    /// `ncclCommAbort` ran: the handle is gone.
    Aborted(Cause),
    /// An NCCL call on it was abandoned at its deadline and may still be running inside NCCL:
    /// the handle is never used or freed again by the caller (the thread running that call
    /// aborts it if the call ever returns).
    Lost(Cause),
    /// `ncclCommDestroy` ran.
    Destroyed,
}

impl fmt::Display for CommState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommState::Creating => f.write_str("still being created"),
            CommState::Ready => f.write_str("ready"),
            CommState::Failed(c) => write!(f, "failed ({c}); abort, revoke, shrink or drop it"),
            CommState::Revoked => f.write_str("revoked; shrink, abort or drop it"),
            CommState::Aborted(c) => write!(f, "aborted ({c})"),
            CommState::Lost(c) => write!(f, "lost ({c}): an NCCL call on it never returned"),
            CommState::Destroyed => f.write_str("destroyed"),
        }
    }
}

/// Which states an operation accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allow {
    /// Only a ready communicator (collectives, queries, registration).
    Ready,
    /// Also a failed or revoked one (shrink, revoke, the async-error poll).
    Recovery,
    /// Also one being created (polling its creation).
    Creating,
}

/// Rank facts, read once when creation completes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RankInfo {
    pub(crate) nranks: i32,
    pub(crate) rank: i32,
    pub(crate) device: i32,
}
