//! The rendezvous's error: the unique-id exchange over TCP or a file, below the launchers
//! (which wrap it in [`launch::Error::Rendezvous`](crate::launch::Error::Rendezvous)) and beside
//! the facade (whose unique id it carries).

use std::net::SocketAddr;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

/// What can fail while handing a unique id to the ranks, one variant per failure site. An
/// operating-system failure keeps its `io::Error` as the `source()`.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A socket or file operation failed.
    #[error("rendezvous: {what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A file operation on `path` failed.
    #[error("rendezvous: {what}: {}: {source}", path.display())]
    FileIo {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The root's address cannot be bound (in use by another job, not an address of this host).
    #[error("rendezvous: cannot bind the rendezvous address: {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The operating system's random source failed (the nonces cannot be made). getrandom's
    /// error is not a `std::error::Error` without its `std` feature: it is shown, not chained.
    #[error("rendezvous: no random numbers: {0}")]
    Random(getrandom::Error),
    /// The peer broke the protocol or refused this rank.
    #[error("rendezvous: {what}: {detail}")]
    Protocol {
        /// What went wrong.
        what: &'static str,
        /// Where and how.
        detail: String,
    },
    /// A rank's deadline passed after at least one failed attempt; the last failure is the
    /// `source()`.
    #[error("rendezvous: no unique id before the deadline; last failure: {last}")]
    LastFailure {
        /// The last attempt's failure.
        #[source]
        last: Box<Error>,
    },
    /// The deadline passed before the unique id arrived.
    #[error("rendezvous timed out after {waited:?} waiting for {waiting_for}")]
    Timeout {
        /// How long it waited.
        waited: Duration,
        /// What it was waiting for.
        waiting_for: &'static str,
    },
    /// The TCP rendezvous root's deadline passed before every rank had the id.
    #[error(
        "rendezvous timed out after {waited:?}: {} rank(s) never fetched the unique id ({})",
        count(missing),
        shown(missing)
    )]
    MissingRanks {
        /// How long the root waited.
        waited: Duration,
        /// The ranks that did not fetch the id, as ranges in order (at most one more range
        /// than ranks served, whatever the number of ranks missing).
        missing: Vec<Range<u32>>,
    },
    /// A range of ranks to serve that holds something other than ranks: `start > end`, or
    /// past `i32::MAX - 1` (NCCL's largest rank).
    #[error("rendezvous: {start}..{end} is not a range of ranks (ranks run from 0 to 2147483646)")]
    InvalidRanks {
        /// The range's start.
        start: u32,
        /// The range's end.
        end: u32,
    },
    /// A rank to fetch for past `i32::MAX - 1` (NCCL's largest rank).
    #[error("rendezvous: {rank} is not a rank (ranks run from 0 to 2147483646)")]
    InvalidRank {
        /// The rank given.
        rank: u32,
    },
    /// A rendezvous peer failed to prove the per-job secret (a wrong secret, another job, or
    /// someone else's listener at the root's address).
    #[error("rendezvous: {who} failed authentication")]
    Auth {
        /// Which side failed: "the root" (seen by a rank) or "a client".
        who: &'static str,
    },
    /// A rendezvous file that is refused (not a regular file, another owner, writable by
    /// others).
    #[error("rendezvous file {}: {reason}", path.display())]
    File {
        /// The path.
        path: PathBuf,
        /// Why it is refused.
        reason: String,
    },
}

/// How many ranks `missing` holds.
fn count(missing: &[Range<u32>]) -> u64 {
    missing.iter().map(|r| u64::from(r.end - r.start)).sum()
}

/// The first missing ranks, ranges as `a-b`: `1, 3-9, 12, ...`.
fn shown(missing: &[Range<u32>]) -> String {
    let mut parts: Vec<String> = missing
        .iter()
        .take(8)
        .map(|r| if r.end - r.start == 1 { r.start.to_string() } else { format!("{}-{}", r.start, r.end - 1) })
        .collect();
    if missing.len() > 8 {
        parts.push("...".into());
    }
    parts.join(", ")
}
