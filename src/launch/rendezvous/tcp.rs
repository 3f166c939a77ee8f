//! The TCP rendezvous: the root's listener serving the id to authenticated ranks
//! ([`TcpRoot`]), and a rank's fetch ([`fetch_tcp`]), each within whole-operation deadlines.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::ops::Range;
use std::time::{Duration, Instant};

use crate::nccl::{UniqueId, UNIQUE_ID_BYTES};

use super::*;
use crate::trace::trace_event;

/// What the root's [`TcpRoot::serve`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeReport {
    /// Ranks that received and acknowledged the id.
    pub served: u32,
    /// Connections whose proof of the key failed (they got nothing).
    pub refused: u32,
    /// Connections that named a rank the root does not serve.
    pub wrong_rank: u32,
    /// Connections that closed, reset, stalled or spoke another protocol before finishing.
    pub dropped: u32,
}

/// The root's side of a TCP rendezvous: a bound listener and the job's key.
#[derive(Debug)]
pub struct TcpRoot {
    listener: TcpListener,
    key: RendezvousKey,
    handshake_limit: Duration,
}

/// Where a connection is in its exchange with the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    ReadHello,
    WriteChallenge,
    ReadProof,
    WriteId,
    ReadAck,
    /// Writing a refusal, then closing.
    WriteRefusal,
}

/// The largest rank a job can have: NCCL counts ranks in an `int`.
pub(super) const MAX_RANK: u32 = i32::MAX as u32 - 1;

/// One connection to the root, with fixed-size buffers: over a TCP stream, or over any byte
/// stream that reads and writes without blocking (the fuzz targets' scripted peer).
pub(super) struct Conn<S = TcpStream> {
    stream: S,
    stage: Stage,
    /// Bytes of the current message read or written so far.
    done: usize,
    input: [u8; HELLO],
    output: [u8; ID_MESSAGE],
    out_len: usize,
    client_nonce: [u8; NONCE],
    root_nonce: [u8; NONCE],
    rank: u32,
    until: Instant,
    authenticated: bool,
    /// The rank acknowledged the id with a valid proof.
    pub(super) served: bool,
}

pub(super) enum Step {
    /// Bytes moved, or the stage changed.
    Progress,
    /// Nothing to do until the peer acts.
    Idle,
    /// The connection ends (the outcome is already counted).
    Close,
}

impl TcpRoot {
    /// Binds `127.0.0.1` on a free port (every rank on this host).
    pub fn bind_loopback(key: RendezvousKey) -> Result<Self, Error> {
        Self::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), key)
    }

    /// Binds an explicit address (across hosts: one the other ranks can reach, or the
    /// unspecified address).
    pub fn bind(addr: SocketAddr, key: RendezvousKey) -> Result<Self, Error> {
        let listener = TcpListener::bind(addr).map_err(|source| Error::Bind { addr, source })?;
        listener.set_nonblocking(true).map_err(io_err("cannot configure the listener"))?;
        Ok(TcpRoot { listener, key, handshake_limit: HANDSHAKE_LIMIT })
    }

    /// Drops connections that have not finished their exchange after `limit` (default
    /// [`HANDSHAKE_LIMIT`]).
    pub fn with_handshake_limit(mut self, limit: Duration) -> Self {
        self.handshake_limit = limit;
        self
    }

    /// The address to give the other ranks.
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        self.listener.local_addr().map_err(io_err("cannot read the rendezvous address"))
    }

    /// Hands `id` to every rank in `ranks` that proves the key, and returns once each has
    /// acknowledged it. Fails with [`Error::MissingRanks`] (naming them) when
    /// `timeout` passes first; `Duration::MAX` waits for ever. A range that holds anything but
    /// ranks (`start > end`, or past [`i32::MAX`]` - 1`, NCCL's largest) is
    /// [`Error::InvalidRanks`].
    ///
    /// What it holds grows with the ranks served, never with the size of the range: the
    /// ranks served so far, at most [`MAX_CONNECTIONS`] connections of fixed size.
    pub fn serve(&self, id: &UniqueId, ranks: Range<u32>, timeout: Duration) -> Result<ServeReport, Error> {
        if ranks.start > ranks.end || ranks.end > MAX_RANK + 1 {
            return Err(Error::InvalidRanks { start: ranks.start, end: ranks.end });
        }
        let deadline = Deadline::within(timeout);
        let want = (ranks.end - ranks.start) as usize;
        trace_event!(launch, INFO, "rendezvous.listening",
            address = %self.local_addr().map_or_else(|e| e.to_string(), |a| a.to_string()), ranks = want,
            first_rank = ranks.start, timeout = %crate::trace::limit(deadline.limit()),
            "the rendezvous root serves the unique id");
        let mut served = BTreeSet::new();
        let mut report = ServeReport::default();
        let mut conns: Vec<Conn> = Vec::new();
        let mut pause = Duration::from_micros(200);
        while served.len() < want {
            if deadline.passed() {
                let err = Error::MissingRanks { waited: timeout, missing: missing_ranks(&ranks, &served) };
                trace_event!(launch, ERROR, "rendezvous.missing_ranks", served = served.len(), refused = report.refused,
                    wrong_rank = report.wrong_rank, dropped = report.dropped, error = %err,
                    "the rendezvous root's deadline passed before every rank had the unique id");
                return Err(err);
            }
            let mut progress = false;
            loop {
                match self.listener.accept() {
                    Ok((stream, _)) => {
                        trace_event!(launch, TRACE, "rendezvous.accepted", peer = ?stream.peer_addr().ok(),
                            "a connection to the rendezvous root");
                        progress = true;
                        if stream.set_nonblocking(true).is_err() {
                            bump(&mut report.dropped);
                            continue;
                        }
                        let _ = stream.set_nodelay(true);
                        if conns.len() >= MAX_CONNECTIONS {
                            // Make room: the oldest connection that has not proven the key.
                            let victim = conns.iter().position(|c| !c.authenticated).unwrap_or(0);
                            let _ = conns.swap_remove(victim).stream.shutdown(Shutdown::Both);
                            bump(&mut report.dropped);
                        }
                        conns.push(Conn::new(stream, deadline.capped(self.handshake_limit)));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    // A connection that failed between SYN and accept (ECONNABORTED), or
                    // descriptors running out: that client may retry; the others go on.
                    Err(_) => {
                        bump(&mut report.dropped);
                        break;
                    }
                }
            }
            let now = Instant::now();
            let mut i = 0;
            while i < conns.len() {
                let step = if now >= conns[i].until {
                    bump(&mut report.dropped);
                    Step::Close
                } else {
                    conns[i].advance(&self.key, id, &ranks, &mut report)
                };
                match step {
                    Step::Progress => {
                        progress = true;
                        i += 1;
                    }
                    Step::Idle => i += 1,
                    Step::Close => {
                        progress = true;
                        let c = conns.swap_remove(i);
                        if c.served {
                            trace_event!(
                                launch,
                                DEBUG,
                                "rendezvous.rank_served",
                                rank = c.rank,
                                "a rank acknowledged the unique id"
                            );
                            served.insert(c.rank);
                            bump(&mut report.served);
                        }
                        let _ = c.stream.shutdown(Shutdown::Both);
                    }
                }
            }
            if progress {
                pause = Duration::from_micros(200);
            } else {
                let left = deadline.left().unwrap_or(Duration::MAX);
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).min(Duration::from_millis(10));
            }
        }
        // Duplicates of a served rank were counted once.
        report.served = served.len() as u32;
        trace_event!(
            launch,
            INFO,
            "rendezvous.served",
            served = report.served,
            refused = report.refused,
            wrong_rank = report.wrong_rank,
            dropped = report.dropped,
            took_ms = crate::trace::ms(deadline.waited()),
            "every rank has the unique id"
        );
        Ok(report)
    }
}

/// Counts one more connection in a [`ServeReport`] counter. Saturating: a root that waits for
/// ever can see more than `u32::MAX` connections come and go (a hostile client reconnecting).
pub(super) fn bump(counter: &mut u32) {
    *counter = counter.saturating_add(1);
}

/// The ranks of `ranks` not in `served`, as ranges in order: at most one more range than
/// ranks served, however large `ranks` is.
pub(super) fn missing_ranks(ranks: &Range<u32>, served: &BTreeSet<u32>) -> Vec<Range<u32>> {
    let mut out = Vec::new();
    let mut from = ranks.start;
    for &r in served.range(ranks.clone()) {
        if r > from {
            out.push(from..r);
        }
        from = r + 1;
    }
    if from < ranks.end {
        out.push(from..ranks.end);
    }
    out
}

impl<S: Read + Write> Conn<S> {
    /// The stream, once the connection is done with.
    #[cfg(any(test, fuzzing))]
    pub(super) fn into_stream(self) -> S {
        self.stream
    }

    pub(super) fn new(stream: S, until: Instant) -> Self {
        Conn {
            stream,
            stage: Stage::ReadHello,
            done: 0,
            input: [0; HELLO],
            output: [0; ID_MESSAGE],
            out_len: 0,
            client_nonce: [0; NONCE],
            root_nonce: [0; NONCE],
            rank: 0,
            until,
            authenticated: false,
            served: false,
        }
    }

    /// Reads toward `len` bytes of input: `Some(true)` when complete.
    fn fill(&mut self, len: usize) -> Result<bool, ()> {
        while self.done < len {
            match self.stream.read(&mut self.input[self.done..len]) {
                Ok(0) => return Err(()),
                Ok(n) => self.done += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Err(()),
            }
        }
        Ok(true)
    }

    /// Writes toward the end of the output: `Some(true)` when all is sent.
    fn flush(&mut self) -> Result<bool, ()> {
        while self.done < self.out_len {
            match self.stream.write(&self.output[self.done..self.out_len]) {
                Ok(0) => return Err(()),
                Ok(n) => self.done += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Err(()),
            }
        }
        Ok(true)
    }

    fn send(&mut self, stage: Stage, parts: &[&[u8]]) {
        let mut n = 0;
        for p in parts {
            self.output[n..n + p.len()].copy_from_slice(p);
            n += p.len();
        }
        self.out_len = n;
        self.done = 0;
        self.stage = stage;
    }

    fn expect(&mut self, stage: Stage) {
        self.done = 0;
        self.stage = stage;
    }

    /// Moves the exchange on as far as the socket allows without blocking.
    pub(super) fn advance(
        &mut self,
        key: &RendezvousKey,
        id: &UniqueId,
        ranks: &Range<u32>,
        report: &mut ServeReport,
    ) -> Step {
        let before = (self.stage, self.done);
        let result = self.advance_inner(key, id, ranks, report);
        match result {
            Ok(true) => Step::Close,
            Ok(false) if (self.stage, self.done) != before => Step::Progress,
            Ok(false) => Step::Idle,
            Err(()) => {
                bump(&mut report.dropped);
                Step::Close
            }
        }
    }

    /// `Ok(true)`: the exchange is over (served, refused or a wrong rank, all counted).
    fn advance_inner(
        &mut self,
        key: &RendezvousKey,
        id: &UniqueId,
        ranks: &Range<u32>,
        report: &mut ServeReport,
    ) -> Result<bool, ()> {
        loop {
            match self.stage {
                Stage::ReadHello => {
                    if !self.fill(HELLO)? {
                        return Ok(false);
                    }
                    if &self.input[..8] != PROTOCOL {
                        return Err(());
                    }
                    self.client_nonce.copy_from_slice(&self.input[8..8 + NONCE]);
                    self.rank = u32::from_be_bytes(self.input[8 + NONCE..HELLO].try_into().expect("4 bytes"));
                    if !ranks.contains(&self.rank) {
                        trace_event!(
                            launch,
                            WARN,
                            "rendezvous.wrong_rank",
                            rank = self.rank,
                            "a connection asked for a rank the root does not serve"
                        );
                        bump(&mut report.wrong_rank);
                        self.send(Stage::WriteRefusal, &[WRONG_RANK]);
                        continue;
                    }
                    if random(&mut self.root_nonce).is_err() {
                        return Err(());
                    }
                    let nonce = self.root_nonce;
                    self.send(Stage::WriteChallenge, &[CHALLENGE, &nonce]);
                }
                Stage::WriteChallenge => {
                    if !self.flush()? {
                        return Ok(false);
                    }
                    self.expect(Stage::ReadProof);
                }
                Stage::ReadProof => {
                    if !self.fill(TAG)? {
                        return Ok(false);
                    }
                    let rank = self.rank.to_be_bytes();
                    let proof = self.input;
                    if !key.verify(b"client", &[&self.client_nonce, &self.root_nonce, &rank], &proof[..TAG]) {
                        trace_event!(
                            launch,
                            WARN,
                            "rendezvous.denied",
                            rank = self.rank,
                            "a connection failed to prove the job's key: denied"
                        );
                        bump(&mut report.refused);
                        self.send(Stage::WriteRefusal, &[DENIED]);
                        continue;
                    }
                    self.authenticated = true;
                    let tag = key.mac(b"root", &[&self.client_nonce, &self.root_nonce, &rank, id.as_bytes()]);
                    self.send(Stage::WriteId, &[ID_OK, id.as_bytes(), &tag]);
                }
                Stage::WriteId => {
                    if !self.flush()? {
                        return Ok(false);
                    }
                    self.expect(Stage::ReadAck);
                }
                Stage::ReadAck => {
                    if !self.fill(TAG)? {
                        return Ok(false);
                    }
                    let rank = self.rank.to_be_bytes();
                    if !key.verify(b"ack", &[&self.client_nonce, &self.root_nonce, &rank], &self.input[..TAG]) {
                        return Err(());
                    }
                    self.served = true;
                    return Ok(true);
                }
                Stage::WriteRefusal => {
                    // Best effort: the refusal tells an honest rank with the wrong secret why,
                    // at once; a peer that does not read it changes nothing.
                    return match self.flush() {
                        Ok(false) => Ok(false),
                        _ => Ok(true),
                    };
                }
            }
        }
    }
}

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
