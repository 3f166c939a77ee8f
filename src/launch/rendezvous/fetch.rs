//! The TCP rendezvous's rank side: fetching the id from the root ([`fetch_tcp`]), retried while
//! the root is not listening yet, within one deadline for the whole fetch.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::nccl::{UniqueId, UNIQUE_ID_BYTES};

use super::tcp::MAX_RANK;
use super::*;
use crate::trace::trace_event;

/// Why one attempt of a rank failed: worth retrying (the root is not there yet, or dropped
/// this connection) or final.
pub(super) enum Attempt {
    Retry(Error),
    Fail(Error),
}

/// A rank's connection to the root: a TCP stream, or the fuzz targets' scripted root.
pub(super) trait RankWire: Read + Write {
    /// How long one read may block (`None`: no limit).
    fn read_timeout(&mut self, limit: Option<Duration>) -> std::io::Result<()>;
    /// How long one write may block (`None`: no limit).
    fn write_timeout(&mut self, limit: Option<Duration>) -> std::io::Result<()>;
}

impl RankWire for TcpStream {
    fn read_timeout(&mut self, limit: Option<Duration>) -> std::io::Result<()> {
        self.set_read_timeout(limit)
    }
    fn write_timeout(&mut self, limit: Option<Duration>) -> std::io::Result<()> {
        self.set_write_timeout(limit)
    }
}

/// Reads exactly `buf.len()` bytes before `deadline`, however the peer splits them.
pub(super) fn read_full(stream: &mut impl RankWire, buf: &mut [u8], deadline: &Deadline) -> Result<(), Attempt> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.left();
        if left.is_some_and(|l| l.is_zero()) {
            return Err(Attempt::Fail(timed_out(deadline)));
        }
        stream.read_timeout(left).map_err(|e| Attempt::Retry(io_err("cannot configure the connection")(e)))?;
        match stream.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(Attempt::Retry(Error::Protocol {
                    what: "the root closed the connection",
                    detail: format!("after {got} of {} bytes", buf.len()),
                }))
            }
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Attempt::Retry(io_err("reading from the root failed")(e))),
        }
    }
    Ok(())
}

pub(super) fn write_all(stream: &mut impl RankWire, buf: &[u8], deadline: &Deadline) -> Result<(), Attempt> {
    let left = deadline.left();
    if left.is_some_and(|l| l.is_zero()) {
        return Err(Attempt::Fail(timed_out(deadline)));
    }
    stream.write_timeout(left).map_err(|e| Attempt::Retry(io_err("cannot configure the connection")(e)))?;
    stream.write_all(buf).map_err(|e| {
        if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
            Attempt::Fail(timed_out(deadline))
        } else {
            Attempt::Retry(io_err("writing to the root failed")(e))
        }
    })
}

pub(super) fn timed_out(deadline: &Deadline) -> Error {
    Error::Timeout {
        waited: deadline.limit().unwrap_or_else(|| deadline.waited()),
        waiting_for: "the root's unique id over TCP",
    }
}

/// One exchange with the root.
pub(super) fn attempt(
    stream: &mut impl RankWire,
    key: &RendezvousKey,
    rank: u32,
    deadline: &Deadline,
) -> Result<UniqueId, Attempt> {
    let mut nonce = [0u8; NONCE];
    random(&mut nonce).map_err(Attempt::Fail)?;
    let rank_bytes = rank.to_be_bytes();
    let mut hello = [0u8; HELLO];
    hello[..8].copy_from_slice(PROTOCOL);
    hello[8..8 + NONCE].copy_from_slice(&nonce);
    hello[8 + NONCE..].copy_from_slice(&rank_bytes);
    write_all(stream, &hello, deadline)?;

    let mut challenge = [0u8; CHALLENGE_LEN];
    read_full(stream, &mut challenge[..8], deadline)?;
    if &challenge[..8] == WRONG_RANK {
        return Err(Attempt::Fail(Error::Protocol {
            what: "the root does not serve this rank",
            detail: format!("rank {rank}"),
        }));
    }
    if &challenge[..8] != CHALLENGE {
        return Err(Attempt::Fail(Error::Protocol {
            what: "the peer at the root's address does not speak the rendezvous protocol",
            detail: "unexpected first bytes (another service on that port?)".into(),
        }));
    }
    read_full(stream, &mut challenge[8..], deadline)?;
    let root_nonce = &challenge[8..];
    let proof = key.mac(b"client", &[&nonce, root_nonce, &rank_bytes]);
    write_all(stream, &proof, deadline)?;

    let mut reply = [0u8; ID_MESSAGE];
    read_full(stream, &mut reply[..8], deadline)?;
    if &reply[..8] == DENIED {
        return Err(Attempt::Fail(Error::Auth { who: "this rank (the root refused its proof: another secret?)" }));
    }
    if &reply[..8] != ID_OK {
        return Err(Attempt::Fail(Error::Protocol {
            what: "malformed reply from the root",
            detail: "unexpected status bytes".into(),
        }));
    }
    read_full(stream, &mut reply[8..], deadline)?;
    let (id_bytes, tag) = reply[8..].split_at(UNIQUE_ID_BYTES);
    if !key.verify(b"root", &[&nonce, root_nonce, &rank_bytes, id_bytes], tag) {
        return Err(Attempt::Fail(Error::Auth { who: "the root" }));
    }
    let id = UniqueId::from_bytes(id_bytes).map_err(|e| {
        Attempt::Fail(Error::Protocol { what: "malformed unique id from the root", detail: e.to_string() })
    })?;
    let ack = key.mac(b"ack", &[&nonce, root_nonce, &rank_bytes]);
    write_all(stream, &ack, deadline)?;
    Ok(id)
}

/// A rank's side: connects to `root` (retrying while it is not listening yet, or drops the
/// connection), proves the key, checks the root's proof and acknowledges the id, all within
/// one `timeout` (`Duration::MAX`: none). It reads exactly the messages of the protocol. A
/// `rank` past [`i32::MAX`]` - 1` (NCCL's largest) is [`Error::InvalidRank`].
pub fn fetch_tcp(root: SocketAddr, key: &RendezvousKey, rank: u32, timeout: Duration) -> Result<UniqueId, Error> {
    if rank > MAX_RANK {
        return Err(Error::InvalidRank { rank });
    }
    let deadline = Deadline::within(timeout);
    trace_event!(launch, INFO, "rendezvous.fetching", root = %root, rank,
        timeout = %crate::trace::limit(deadline.limit()),
        "fetching the unique id from the rendezvous root");
    let mut last: Option<Error> = None;
    loop {
        let left = deadline.left();
        if left.is_some_and(|l| l.is_zero()) {
            let err = match last {
                Some(e) => Error::LastFailure { last: Box::new(e) },
                None => timed_out(&deadline),
            };
            trace_event!(launch, WARN, "rendezvous.fetch_timed_out", root = %root, rank,
                waited_ms = crate::trace::ms(deadline.waited()), error = %err, "no unique id before the deadline");
            return Err(err);
        }
        let connect_for = left.unwrap_or(CONNECT_ATTEMPT).min(CONNECT_ATTEMPT);
        match TcpStream::connect_timeout(&root, connect_for) {
            Ok(mut stream) => {
                let _ = stream.set_nodelay(true);
                match attempt(&mut stream, key, rank, &deadline) {
                    Ok(id) => {
                        trace_event!(launch, INFO, "rendezvous.fetched", root = %root, rank,
                            took_ms = crate::trace::ms(deadline.waited()), "this rank has the unique id");
                        return Ok(id);
                    }
                    Err(Attempt::Fail(e)) => {
                        trace_event!(launch, WARN, "rendezvous.fetch_failed", root = %root, rank, error = %e,
                            "fetching the unique id failed");
                        return Err(e);
                    }
                    Err(Attempt::Retry(e)) => {
                        trace_event!(launch, DEBUG, "rendezvous.retry", root = %root, rank, error = %e,
                            "an exchange with the rendezvous root failed; retrying");
                        last = Some(e)
                    }
                }
            }
            // Not listening yet: the usual case while the root starts.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                trace_event!(launch, TRACE, "rendezvous.connect_refused", root = %root, rank,
                    "the rendezvous root is not listening yet; retrying");
                last = None
            }
            // Unreachable, timed out, reset: the root's host may still be coming up; the
            // last such failure is reported if the deadline passes.
            Err(e) => {
                let e = io_err("cannot connect to the rendezvous root")(e);
                trace_event!(launch, DEBUG, "rendezvous.connect_failed", root = %root, rank, error = %e,
                    "cannot connect to the rendezvous root; retrying");
                last = Some(e)
            }
        }
        std::thread::sleep(RETRY.min(deadline.left().unwrap_or(RETRY)));
    }
}
