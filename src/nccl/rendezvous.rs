//! Handing a [`UniqueId`] from the root rank to the others: over TCP or through a file on a
//! shared filesystem, authenticated by a per-job key and bounded by one deadline each.
//!
//! The id is a secret: it begins with a random magic and the root's bootstrap address, and
//! whoever holds it can join (or disturb) the communicator. Nothing here logs or prints it.
//!
//! # TCP
//!
//! The root serves the ranks it expects (a range) and returns once each has acknowledged the
//! id, or reports the ranks that never did when the deadline passes. Every message has a fixed
//! size; no length comes from the peer. One connection, in order:
//!
//! | from | bytes | content |
//! | --- | --- | --- |
//! | rank | 44 | `NTRV0002`, rank nonce (32), rank (u32, big-endian) |
//! | root | 40 | `NTRVCHAL` and a root nonce (32), or `NTRVRANK` (rank not served) |
//! | rank | 32 | `HMAC(key, "client" ‖ nonces ‖ rank)` |
//! | root | 168 | `NTRVIDOK`, the id (128), `HMAC(key, "root" ‖ nonces ‖ rank ‖ id)`; or only `NTRVDENY` |
//! | rank | 32 | `HMAC(key, "ack" ‖ nonces ‖ rank)`: the root counts the rank as served |
//!
//! The root sends nothing derived from the id before the rank's proof checks out, so a client
//! without the key gets nothing and takes no slot; the rank checks the root's proof, so a
//! listener that is not the root cannot hand it a forged id. Connections that stall are
//! dropped after [`HANDSHAKE_LIMIT`]; a reset, an idle or a trickling client costs the root one
//! connection slot for at most that long, never the others. The nonces make every proof
//! single-use. The id itself crosses the wire in the clear, as NCCL's own bootstrap traffic
//! does: the model is an attacker who can connect, not one who can read the network
//! (docs/adr/0010-launchers-and-rendezvous.md).
//!
//! # File
//!
//! `NTRVFIL2`, the publication time (u64 nanoseconds since the Unix epoch, big-endian), the id
//! (128) and `HMAC(key, "file" ‖ time ‖ id)`: 176 bytes, written under an unguessable
//! temporary name with owner-only permissions and renamed into place. A reader refuses
//! anything but a regular file of its own user that others cannot write, opens without
//! following links or blocking, reads at most one byte more than a message, and waits on
//! (until its deadline) while the file there is older than the job or made with another key.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::ops::Range;
#[cfg(unix)]
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
#[cfg(unix)]
use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::nccl::types::{UniqueId, UNIQUE_ID_BYTES};

mod error;
pub use error::Error;

type HmacSha256 = Hmac<Sha256>;

const PROTOCOL: &[u8; 8] = b"NTRV0002";
const CHALLENGE: &[u8; 8] = b"NTRVCHAL";
const WRONG_RANK: &[u8; 8] = b"NTRVRANK";
const ID_OK: &[u8; 8] = b"NTRVIDOK";
const DENIED: &[u8; 8] = b"NTRVDENY";
#[cfg(unix)]
const FILE_MAGIC: &[u8; 8] = b"NTRVFIL2";

const NONCE: usize = 32;
const TAG: usize = 32;
const HELLO: usize = 8 + NONCE + 4;
const CHALLENGE_LEN: usize = 8 + NONCE;
const ID_MESSAGE: usize = 8 + UNIQUE_ID_BYTES + TAG;
/// Bytes of a rendezvous file.
pub const FILE_MESSAGE: usize = 8 + 8 + UNIQUE_ID_BYTES + TAG;

/// The longest one connection may take to complete its exchange with the root; a slower one
/// (idle, trickling, half-open) is dropped and may connect again.
pub const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);
/// The most connections the root holds at once; past it, the oldest unfinished one is dropped.
pub const MAX_CONNECTIONS: usize = 1024;
/// How long one connection attempt may take when there is no overall deadline.
const CONNECT_ATTEMPT: Duration = Duration::from_secs(10);
/// Pause between retries of a rank whose root is not listening yet.
const RETRY: Duration = Duration::from_millis(20);

fn io_err(what: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |source| Error::Io { what, source }
}

/// A point in time that may be "never" (a timeout too large to represent, as
/// `Duration::MAX` is: "no timeout").
#[derive(Clone, Copy, Debug)]
struct Deadline {
    at: Option<Instant>,
    timeout: Duration,
}

impl Deadline {
    fn after(timeout: Duration) -> Self {
        Deadline { at: Instant::now().checked_add(timeout), timeout }
    }

    /// Time left: `None` when there is no deadline, `Some(ZERO)` once it has passed.
    fn remaining(&self) -> Option<Duration> {
        self.at.map(|at| at.saturating_duration_since(Instant::now()))
    }

    fn passed(&self) -> bool {
        self.remaining().is_some_and(|r| r.is_zero())
    }

    /// The earlier of this deadline and `limit` from now.
    fn capped(&self, limit: Duration) -> Instant {
        let now = Instant::now();
        let by_limit = now.checked_add(limit).unwrap_or(now);
        self.at.map_or(by_limit, |at| at.min(by_limit))
    }
}

/// The per-job key of the rendezvous: both sides prove they hold it. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct RendezvousKey([u8; 32]);

impl core::fmt::Debug for RendezvousKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("RendezvousKey(<redacted>)")
    }
}

impl RendezvousKey {
    /// The key of a secret shared by every rank (`NCCL_TRAMPOLINE_SECRET`, a job id): HMAC-SHA256
    /// keyed with a fixed label, so that any length of secret gives a 32-byte key.
    pub fn from_secret(secret: &[u8]) -> Self {
        let mut m =
            <HmacSha256 as Mac>::new_from_slice(b"nccl-trampoline rendezvous key v2").expect("HMAC takes any key");
        m.update(secret);
        RendezvousKey(m.finalize().into_bytes().into())
    }

    /// A fresh random secret (64 hex digits) for a job whose ranks this process starts itself;
    /// give it to them (for example in `NCCL_TRAMPOLINE_SECRET`) and use
    /// [`from_secret`](Self::from_secret) on its bytes on both sides.
    pub fn random_secret() -> Result<String, Error> {
        let mut b = [0u8; 32];
        random(&mut b)?;
        Ok(b.iter().map(|x| format!("{x:02x}")).collect())
    }

    fn mac(&self, label: &[u8], parts: &[&[u8]]) -> [u8; TAG] {
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.0).expect("HMAC takes any key");
        m.update(label);
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes().into()
    }

    /// Constant-time comparison of `tag` with the MAC of `parts`.
    fn verify(&self, label: &[u8], parts: &[&[u8]], tag: &[u8]) -> bool {
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.0).expect("HMAC takes any key");
        m.update(label);
        for p in parts {
            m.update(p);
        }
        m.verify_slice(tag).is_ok()
    }

    /// A TCP port every rank derives alike from the key, in 20000-32767 (below Linux's
    /// ephemeral range, so no outgoing connection holds it by chance), never `avoid` (a
    /// launcher's own port).
    pub fn derived_port(&self, avoid: Option<u16>) -> u16 {
        let t = self.mac(b"port", &[]);
        let span = 32768 - 20000;
        let mut p = 20000 + (u16::from_be_bytes([t[0], t[1]]) % span);
        if Some(p) == avoid {
            p = 20000 + ((p - 20000 + 1) % span);
        }
        p
    }
}

/// Fills `buf` from the operating system's random source.
fn random(buf: &mut [u8]) -> Result<(), Error> {
    getrandom::getrandom(buf).map_err(Error::Random)
}

/// What the root's [`TcpRoot::serve`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
enum Stage {
    ReadHello,
    WriteChallenge,
    ReadProof,
    WriteId,
    ReadAck,
    /// Writing a refusal, then closing.
    WriteRefusal,
}

/// One connection to the root, with fixed-size buffers.
struct Conn {
    stream: TcpStream,
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
    served: bool,
}

enum Step {
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
    /// `timeout` passes first; `Duration::MAX` waits for ever.
    pub fn serve(&self, id: &UniqueId, ranks: Range<u32>, timeout: Duration) -> Result<ServeReport, Error> {
        let deadline = Deadline::after(timeout);
        let want = ranks.end.saturating_sub(ranks.start) as usize;
        let mut served = vec![false; want];
        let mut count = 0usize;
        let mut report = ServeReport::default();
        let mut conns: Vec<Conn> = Vec::new();
        let mut pause = Duration::from_micros(200);
        while count < want {
            if deadline.passed() {
                let missing = served.iter().enumerate().filter(|(_, s)| !**s).map(|(i, _)| ranks.start + i as u32);
                return Err(Error::MissingRanks { waited: timeout, missing: missing.collect() });
            }
            let mut progress = false;
            loop {
                match self.listener.accept() {
                    Ok((stream, _)) => {
                        progress = true;
                        if stream.set_nonblocking(true).is_err() {
                            report.dropped += 1;
                            continue;
                        }
                        let _ = stream.set_nodelay(true);
                        if conns.len() >= MAX_CONNECTIONS {
                            // Make room: the oldest connection that has not proven the key.
                            let victim = conns.iter().position(|c| !c.authenticated).unwrap_or(0);
                            let _ = conns.swap_remove(victim).stream.shutdown(Shutdown::Both);
                            report.dropped += 1;
                        }
                        conns.push(Conn::new(stream, deadline.capped(self.handshake_limit)));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    // A connection that failed between SYN and accept (ECONNABORTED), or
                    // descriptors running out: that client may retry; the others go on.
                    Err(_) => {
                        report.dropped += 1;
                        break;
                    }
                }
            }
            let now = Instant::now();
            let mut i = 0;
            while i < conns.len() {
                let step = if now >= conns[i].until {
                    report.dropped += 1;
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
                            let slot = (c.rank - ranks.start) as usize;
                            if !served[slot] {
                                served[slot] = true;
                                count += 1;
                            }
                            report.served += 1;
                        }
                        let _ = c.stream.shutdown(Shutdown::Both);
                    }
                }
            }
            if progress {
                pause = Duration::from_micros(200);
            } else {
                let left = deadline.remaining().unwrap_or(Duration::MAX);
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).min(Duration::from_millis(10));
            }
        }
        // Duplicates of a served rank were counted once.
        report.served = count as u32;
        Ok(report)
    }
}

impl Conn {
    fn new(stream: TcpStream, until: Instant) -> Self {
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
    fn advance(&mut self, key: &RendezvousKey, id: &UniqueId, ranks: &Range<u32>, report: &mut ServeReport) -> Step {
        let before = (self.stage, self.done);
        let result = self.advance_inner(key, id, ranks, report);
        match result {
            Ok(true) => Step::Close,
            Ok(false) if (self.stage, self.done) != before => Step::Progress,
            Ok(false) => Step::Idle,
            Err(()) => {
                report.dropped += 1;
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
                        report.wrong_rank += 1;
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
                        report.refused += 1;
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
enum Attempt {
    Retry(Error),
    Fail(Error),
}

/// Reads exactly `buf.len()` bytes before `deadline`, however the peer splits them.
fn read_full(stream: &mut TcpStream, buf: &mut [u8], deadline: &Deadline) -> Result<(), Attempt> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.remaining();
        if left.is_some_and(|l| l.is_zero()) {
            return Err(Attempt::Fail(timed_out(deadline)));
        }
        stream.set_read_timeout(left).map_err(|e| Attempt::Retry(io_err("cannot configure the connection")(e)))?;
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

fn write_all(stream: &mut TcpStream, buf: &[u8], deadline: &Deadline) -> Result<(), Attempt> {
    let left = deadline.remaining();
    if left.is_some_and(|l| l.is_zero()) {
        return Err(Attempt::Fail(timed_out(deadline)));
    }
    stream.set_write_timeout(left).map_err(|e| Attempt::Retry(io_err("cannot configure the connection")(e)))?;
    stream.write_all(buf).map_err(|e| {
        if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
            Attempt::Fail(timed_out(deadline))
        } else {
            Attempt::Retry(io_err("writing to the root failed")(e))
        }
    })
}

fn timed_out(deadline: &Deadline) -> Error {
    Error::Timeout { waited: deadline.timeout, waiting_for: "the root's unique id over TCP" }
}

/// One exchange with the root.
fn attempt(stream: &mut TcpStream, key: &RendezvousKey, rank: u32, deadline: &Deadline) -> Result<UniqueId, Attempt> {
    let _ = stream.set_nodelay(true);
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
/// one `timeout` (`Duration::MAX`: none). It reads exactly the messages of the protocol.
pub fn fetch_tcp(root: SocketAddr, key: &RendezvousKey, rank: u32, timeout: Duration) -> Result<UniqueId, Error> {
    let deadline = Deadline::after(timeout);
    let mut last: Option<Error> = None;
    loop {
        let left = deadline.remaining();
        if left.is_some_and(|l| l.is_zero()) {
            return Err(match last {
                Some(e) => Error::LastFailure { last: Box::new(e) },
                None => timed_out(&deadline),
            });
        }
        let connect_for = left.unwrap_or(CONNECT_ATTEMPT).min(CONNECT_ATTEMPT);
        match TcpStream::connect_timeout(&root, connect_for) {
            Ok(mut stream) => match attempt(&mut stream, key, rank, &deadline) {
                Ok(id) => return Ok(id),
                Err(Attempt::Fail(e)) => return Err(e),
                Err(Attempt::Retry(e)) => last = Some(e),
            },
            // Not listening yet: the usual case while the root starts.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => last = None,
            // Unreachable, timed out, reset: the root's host may still be coming up; the
            // last such failure is reported if the deadline passes.
            Err(e) => last = Some(io_err("cannot connect to the rendezvous root")(e)),
        }
        std::thread::sleep(RETRY.min(deadline.remaining().unwrap_or(RETRY)));
    }
}

#[cfg(unix)]
fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(unix)]
fn file_message(id: &UniqueId, key: &RendezvousKey, at: SystemTime) -> [u8; FILE_MESSAGE] {
    let time = unix_nanos(at).to_be_bytes();
    let tag = key.mac(b"file", &[&time, id.as_bytes()]);
    let mut m = [0u8; FILE_MESSAGE];
    m[..8].copy_from_slice(FILE_MAGIC);
    m[8..16].copy_from_slice(&time);
    m[16..16 + UNIQUE_ID_BYTES].copy_from_slice(id.as_bytes());
    m[16 + UNIQUE_ID_BYTES..].copy_from_slice(&tag);
    m
}

/// Removes a temporary file unless disarmed (a failed publication leaves nothing behind).
#[cfg(unix)]
struct TempFile {
    path: Option<PathBuf>,
}

#[cfg(unix)]
impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Writes `id` to `path` for the other ranks: created under an unguessable temporary name in
/// the same directory (owner-only, exclusive, not through a link), synced, then renamed into
/// place, so a reader never sees a partial file; on any failure the temporary file is removed.
#[cfg(unix)]
pub fn publish_file(path: &Path, id: &UniqueId, key: &RendezvousKey) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path
        .file_name()
        .ok_or_else(|| Error::File { path: path.to_path_buf(), reason: "the path names no file".into() })?;
    let mut suffix = [0u8; 16];
    random(&mut suffix)?;
    let hex: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = path.with_file_name(format!(".{}.{hex}.tmp", name.to_string_lossy()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .map_err(|source| Error::FileIo { what: "cannot create the rendezvous file", path: tmp.clone(), source })?;
    let mut guard = TempFile { path: Some(tmp.clone()) };
    f.write_all(&file_message(id, key, SystemTime::now()))
        .and_then(|()| f.sync_all())
        .map_err(io_err("cannot write the rendezvous file"))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|source| Error::FileIo {
        what: "cannot move the rendezvous file into place",
        path: path.to_path_buf(),
        source,
    })?;
    guard.path = None;
    Ok(())
}

/// Removes the file [`publish_file`] wrote for `id`, if it is still that file (the root calls
/// this once every rank has joined, so no later job finds it).
#[cfg(unix)]
pub fn remove_file(path: &Path, id: &UniqueId, key: &RendezvousKey) -> Result<(), Error> {
    match read_checked(path)? {
        Some(m) if parse_file(&m, key).is_some_and(|(got, _)| &got == id) => {
            std::fs::remove_file(path).map_err(io_err("cannot remove the rendezvous file"))
        }
        _ => Ok(()),
    }
}

#[cfg(unix)]
/// The id and publication time of a file message made with `key`.
fn parse_file(m: &[u8], key: &RendezvousKey) -> Option<(UniqueId, SystemTime)> {
    if m.len() != FILE_MESSAGE || &m[..8] != FILE_MAGIC {
        return None;
    }
    let (time, rest) = m[8..].split_at(8);
    let (id, tag) = rest.split_at(UNIQUE_ID_BYTES);
    if !key.verify(b"file", &[time, id], tag) {
        return None;
    }
    let nanos = u64::from_be_bytes(time.try_into().expect("8 bytes"));
    Some((UniqueId::from_bytes(id).ok()?, UNIX_EPOCH + Duration::from_nanos(nanos)))
}

/// Opens `path` as a rendezvous file may be opened and reads at most one message and one
/// byte: `None` when it does not exist (yet). Refuses, as [`Error::File`], a path
/// that is a link, not a regular file, another user's, or writable by group or others.
#[cfg(unix)]
fn read_checked(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let refuse = |reason: String| Error::File { path: path.to_path_buf(), reason };
    // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(refuse("a symbolic link; refused".into())),
        Err(e) => return Err(io_err("cannot open the rendezvous file")(e)),
    };
    let meta = f.metadata().map_err(io_err("cannot inspect the rendezvous file"))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if let Some(reason) = refusal(kind(&meta), meta.uid(), meta.mode(), me) {
        return Err(refuse(reason));
    }
    let mut m = Vec::with_capacity(FILE_MESSAGE + 1);
    f.take(FILE_MESSAGE as u64 + 1).read_to_end(&mut m).map_err(io_err("cannot read the rendezvous file"))?;
    Ok(Some(m))
}

/// Why a file of this kind, owner and mode is refused as a rendezvous file, if it is: only a
/// regular file of this user (`me`) that neither group nor others may write is taken.
#[cfg(unix)]
fn refusal(kind: &str, uid: u32, mode: u32, me: u32) -> Option<String> {
    if kind != "a regular file" {
        return Some(format!("not a regular file ({kind}); refused"));
    }
    if uid != me {
        return Some(format!("owned by uid {uid}, not by this user (uid {me}); refused"));
    }
    if mode & 0o022 != 0 {
        return Some(format!("mode {:o} lets group or others write it; refused", mode & 0o777));
    }
    None
}

#[cfg(unix)]
fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// Waits for `path` to hold an id published with `key` at or after `not_before` (the job's
/// start), at most `timeout` (`Duration::MAX`: no limit). A file that is missing, of another
/// key (another job) or older than the job is waited past (the root will replace it); a file
/// that is refused (see [`publish_file`]) is an error at once.
#[cfg(unix)]
pub fn wait_file(
    path: &Path,
    key: &RendezvousKey,
    not_before: SystemTime,
    timeout: Duration,
) -> Result<UniqueId, Error> {
    let deadline = Deadline::after(timeout);
    let mut seen = "no file";
    loop {
        if let Some(m) = read_checked(path)? {
            match parse_file(&m, key) {
                Some((id, at)) if at >= not_before => return Ok(id),
                Some(_) => seen = "a file older than the job",
                None => seen = "a file of another job or format",
            }
        }
        if deadline.passed() {
            return Err(Error::Protocol {
                what: "no unique id in the rendezvous file before the deadline",
                detail: format!("{} after {:?}: {seen}", path.display(), timeout),
            });
        }
        std::thread::sleep(RETRY.min(deadline.remaining().unwrap_or(RETRY)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(b: u8) -> UniqueId {
        UniqueId::from_bytes(&[b; 128]).unwrap()
    }

    fn key() -> RendezvousKey {
        RendezvousKey::from_secret(b"job 7")
    }

    #[test]
    fn keys_and_ports_are_derived_alike_and_never_printed() {
        assert_eq!(key(), RendezvousKey::from_secret(b"job 7"));
        assert_ne!(key(), RendezvousKey::from_secret(b"job 8"));
        assert_eq!(format!("{:?}", key()), "RendezvousKey(<redacted>)");
        let p = key().derived_port(None);
        assert!((20000..32768).contains(&p));
        assert_ne!(key().derived_port(Some(p)), p);
        let s = RendezvousKey::random_secret().unwrap();
        assert_eq!(s.len(), 64);
        assert_ne!(s, RendezvousKey::random_secret().unwrap());
    }

    #[test]
    fn tcp_root_serves_every_rank_even_those_that_come_first() {
        let root = TcpRoot::bind_loopback(key()).unwrap();
        let addr = root.local_addr().unwrap();
        assert!(addr.ip().is_loopback());
        let peers: Vec<_> =
            (1..4).map(|r| std::thread::spawn(move || fetch_tcp(addr, &key(), r, Duration::from_secs(10)))).collect();
        let report = root.serve(&id(7), 1..4, Duration::from_secs(10)).unwrap();
        assert_eq!(report, ServeReport { served: 3, ..Default::default() });
        for p in peers {
            assert_eq!(p.join().unwrap().unwrap(), id(7));
        }
    }

    #[test]
    fn no_timeout_means_no_deadline_and_no_panic() {
        assert!(Deadline::after(Duration::MAX).remaining().is_none());
        let root = TcpRoot::bind_loopback(key()).unwrap();
        let addr = root.local_addr().unwrap();
        let peer = std::thread::spawn(move || fetch_tcp(addr, &key(), 1, Duration::MAX));
        root.serve(&id(3), 1..2, Duration::MAX).unwrap();
        assert_eq!(peer.join().unwrap().unwrap(), id(3));
    }

    #[test]
    fn tcp_fetch_retries_until_the_root_listens_and_times_out_without_one() {
        // A port that nothing listens on (bound then closed).
        let addr = TcpRoot::bind_loopback(key()).unwrap().local_addr().unwrap();
        let start = Instant::now();
        let err = fetch_tcp(addr, &key(), 1, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
        assert!(start.elapsed() < Duration::from_secs(5));
        let root = TcpRoot::bind_loopback(key()).unwrap();
        let err = root.serve(&id(1), 1..3, Duration::from_millis(100)).unwrap_err();
        assert!(
            matches!(&err, Error::MissingRanks { waited, missing } if *waited == Duration::from_millis(100) && missing == &[1, 2]),
            "{err}"
        );
    }

    #[test]
    fn a_peer_speaking_another_protocol_is_an_error_not_an_id() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut hello = [0u8; HELLO];
            s.read_exact(&mut hello).unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
        });
        let err = fetch_tcp(addr, &key(), 1, Duration::from_secs(5)).unwrap_err();
        t.join().unwrap();
        assert!(err.to_string().contains("does not speak the rendezvous protocol"), "{err}");
    }

    #[test]
    fn file_rendezvous_publishes_atomically_and_waits_with_a_deadline() {
        let dir = std::env::temp_dir().join(format!("nccl-trampoline-rv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("id");
        let _ = std::fs::remove_file(&path);
        let start = SystemTime::now() - Duration::from_secs(1);
        let err = wait_file(&path, &key(), start, Duration::from_millis(100)).unwrap_err();
        assert!(err.to_string().contains("no file"), "{err}");
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || wait_file(&path, &key(), start, Duration::from_secs(10)))
        };
        std::thread::sleep(Duration::from_millis(50));
        publish_file(&path, &id(9), &key()).unwrap();
        assert_eq!(waiter.join().unwrap().unwrap(), id(9));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), FILE_MESSAGE as u64);
        // Only the file itself is left: no temporary.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // Removal takes only our own file.
        remove_file(&path, &id(8), &key()).unwrap();
        assert!(path.exists());
        remove_file(&path, &id(9), &key()).unwrap();
        assert!(!path.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(all(test, unix))]
#[path = "rendezvous_attacks.rs"]
mod attacks;
