//! The rendezvous's error: the unique-id exchange over TCP or a file, below the launchers
//! (which wrap it in [`launch::Error::Rendezvous`](crate::launch::Error::Rendezvous)) and beside
//! the facade (whose unique id it carries).

use std::net::SocketAddr;
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
    #[error("rendezvous timed out after {waited:?}: {} rank(s) never fetched the unique id ({}{})", missing.len(), missing.iter().take(8).map(|r| r.to_string()).collect::<Vec<_>>().join(", "), if missing.len() > 8 { ", ..." } else { "" })]
    MissingRanks {
        /// How long the root waited.
        waited: Duration,
        /// The ranks that did not fetch the id, in order.
        missing: Vec<u32>,
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
