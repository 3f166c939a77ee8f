//! The TCP rendezvous's root: the listener serving the id to authenticated ranks ([`TcpRoot`])
//! within one deadline; a rank's side is `fetch`.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::ops::Range;
use std::time::{Duration, Instant};

use crate::nccl::UniqueId;

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
                        // DEBUG: anyone who can connect can make one; the totals are in
                        // `rendezvous.served` and `rendezvous.missing_ranks`.
                        trace_event!(
                            launch,
                            DEBUG,
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
                        // DEBUG, as a wrong rank: one per connection an outsider opens.
                        trace_event!(
                            launch,
                            DEBUG,
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
