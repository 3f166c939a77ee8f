//! A communicator's vocabulary of time and state: its timeouts, where it is in its life
//! ([`CommState`]), why it stopped being usable ([`Cause`]), and what the watchdog reports when
//! it acts ([`WatchdogReport`]). The fault model is docs/adr/0009-fault-model.md.

use core::fmt;
use std::time::Duration;

use crate::nccl::types::enums::{DataType, NcclResult};

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
    /// Given back to its owner: a communicator adopted as
    /// [`Ownership::Borrowed`](crate::nccl::Ownership::Borrowed) whose `Communicator` was
    /// dropped. NCCL's object lives on with its owner; nothing here calls NCCL on it again.
    Released,
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
            CommState::Released => f.write_str("released to its owner (borrowed, and its Communicator dropped)"),
        }
    }
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// The operation's work did not finish within the timeout.
    NotFinished,
    /// NCCL reported this error asynchronously (`ncclRemoteError` when a network peer died).
    AsyncError(NcclResult),
    /// CUDA reported an error for the operation's event.
    Cuda {
        /// The `CUresult`.
        code: i32,
    },
}

/// Which operation the watchdog acted on, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchdogReport {
    /// The NCCL function (`ncclAllReduce`), or `None` if no operation was outstanding.
    pub operation: Option<&'static str>,
    /// Its sequence number on this communicator (1 for the first operation watched).
    pub sequence: u64,
    /// How many operations enqueued after it on its stream, within a hundredth of the timeout
    /// (at most 10 ms), one event tracked with it: one of them (or it) did not finish, the
    /// watchdog cannot tell which.
    pub later: u64,
    /// Its element count.
    pub count: usize,
    /// Its element type.
    pub data_type: Option<DataType>,
    /// Its root or peer, if it has one.
    pub peer: Option<i32>,
    /// How long after its enqueue the watchdog acted.
    pub waited: Duration,
    /// What went wrong.
    pub problem: Problem,
}

impl fmt::Display for WatchdogReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.operation {
            Some(op) => {
                write!(f, "{op} #{} ({} elements", self.sequence, self.count)?;
                if let Some(t) = self.data_type {
                    write!(f, " of type {}", t.0)?;
                }
                if let Some(p) = self.peer {
                    write!(f, ", root/peer {p}")?;
                }
                f.write_str(")")?;
                match self.later {
                    0 => {}
                    1 => f.write_str(" or the operation after it on its stream")?,
                    n => write!(f, " or one of the {n} operations after it on its stream")?,
                }
            }
            None => f.write_str("the communicator")?,
        }
        match &self.problem {
            Problem::NotFinished => write!(f, " did not finish within {:.1?}", self.waited),
            Problem::AsyncError(r) => write!(f, ": NCCL reported {r:?} after {:.1?}", self.waited),
            Problem::Cuda { code } => write!(f, ": CUDA error {code} on its event after {:.1?}", self.waited),
        }
    }
}
