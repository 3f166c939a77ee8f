//! The rendezvous's parsers driven from scripts, for the fuzz targets (`fuzz/`, through
//! `crate::fuzzing`) and this module's regression tests: the root's connection over an
//! in-memory stream whose rank plays a script, a rank's exchange against a scripted root, and
//! the file record. A script step can be hostile bytes or the honest message, the proofs
//! computed from the nonces actually exchanged, so that a fuzzer reaches every stage.
//!
//! Each driver reports what the real code did (bytes written, outcome, counters), and
//! `check` says whether that keeps the protocol's promises: the fuzz targets assert it on
//! every input, the regression tests on the inputs that once broke one.
#![cfg_attr(not(fuzzing), allow(dead_code))]

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::ops::Range;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::nccl::{UniqueId, UNIQUE_ID_BYTES};

use super::fetch::{attempt, Attempt, RankWire};
use super::tcp::{bump, Conn, ServeReport, Step};
use super::*;

/// The key every script is played with.
pub fn key() -> RendezvousKey {
    RendezvousKey::from_secret(b"nccl-trampoline harness")
}

/// The id the scripted root serves.
pub fn served_id() -> UniqueId {
    let bytes: [u8; UNIQUE_ID_BYTES] = core::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0x5a);
    UniqueId::from_bytes(&bytes).expect("128 bytes")
}

/// One step of a rank talking to the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RankStep {
    /// These bytes, as they are.
    Bytes(Vec<u8>),
    /// A well-formed hello for this rank (the protocol's tag, a nonce, the rank).
    Hello(u32),
    /// The proof of the key over the nonces and rank exchanged so far; `valid: false` flips
    /// one bit of it.
    Proof {
        /// Whether the proof is right.
        valid: bool,
    },
    /// The acknowledgement of the id over the same; `valid: false` flips one bit.
    Ack {
        /// Whether the acknowledgement is right.
        valid: bool,
    },
    /// Nothing until the root has run (its next read would block).
    Pause,
}

/// One step of the root answering a rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootStep {
    /// These bytes, as they are.
    Bytes(Vec<u8>),
    /// A well-formed challenge (its tag and a nonce).
    Challenge,
    /// The root does not serve this rank.
    WrongRank,
    /// The root refused the rank's proof.
    Deny,
    /// The id message with the root's proof over the nonces and rank exchanged so far;
    /// `valid: false` flips one bit of the proof.
    Id {
        /// Whether the proof is right.
        valid: bool,
    },
}

/// The nonce scripted peers use.
const SCRIPT_NONCE: [u8; NONCE] = [0x6e; NONCE];

/// A MAC, right or with one bit flipped.
fn mac(valid: bool, label: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut m = key().mac(label, parts).to_vec();
    if !valid {
        m[0] ^= 1;
    }
    m
}

/// `bytes[at..at + N]`, zeros where `bytes` is shorter.
fn slice_at<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    for (i, b) in out.iter_mut().enumerate() {
        *b = bytes.get(at + i).copied().unwrap_or(0);
    }
    out
}

/// The rank's side of a connection to the root, played from a script: what the root reads is
/// made step by step when it gets there (a proof from the nonces seen by then); what it
/// writes is kept, at most `write_chunk` bytes per write (0: any number).
struct ScriptedRank {
    steps: VecDeque<RankStep>,
    pending: VecDeque<u8>,
    /// Every byte the root has read.
    read: Vec<u8>,
    written: Vec<u8>,
    write_chunk: usize,
    /// A right proof was read by the root (with the nonces it had then).
    valid_proof_read: bool,
    valid_ack_read: bool,
}

impl ScriptedRank {
    /// The exchanged facts a proof covers: the rank's nonce and rank (from what the root
    /// read), the root's nonce (from its challenge).
    fn facts(&self) -> ([u8; NONCE], [u8; NONCE], [u8; 4]) {
        (slice_at(&self.read, 8), slice_at(&self.written, 8), slice_at(&self.read, 8 + NONCE))
    }
}

impl Read for ScriptedRank {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pending.is_empty() {
            let Some(step) = self.steps.pop_front() else { return Ok(0) };
            let bytes = match step {
                RankStep::Bytes(b) => b,
                RankStep::Hello(rank) => [&PROTOCOL[..], &SCRIPT_NONCE, &rank.to_be_bytes()].concat(),
                RankStep::Proof { valid } => {
                    let (client, root, rank) = self.facts();
                    self.valid_proof_read |= valid;
                    mac(valid, b"client", &[&client, &root, &rank])
                }
                RankStep::Ack { valid } => {
                    let (client, root, rank) = self.facts();
                    self.valid_ack_read |= valid;
                    mac(valid, b"ack", &[&client, &root, &rank])
                }
                RankStep::Pause => return Err(ErrorKind::WouldBlock.into()),
            };
            self.pending.extend(bytes);
        }
        let n = buf.len().min(self.pending.len());
        for (b, p) in buf.iter_mut().zip(self.pending.drain(..n)) {
            *b = p;
        }
        self.read.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl Write for ScriptedRank {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = if self.write_chunk == 0 { buf.len() } else { buf.len().min(self.write_chunk) };
        self.written.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What the root's connection did with a scripted rank.
#[derive(Clone, Debug, Default)]
pub struct RootOutcome {
    /// The counters the connection moved ([`ServeReport::served`] when the rank acknowledged).
    pub report: ServeReport,
    /// The connection ended (served, refused, wrong rank or dropped).
    pub closed: bool,
    /// Every byte the root wrote.
    pub written: Vec<u8>,
    /// A right proof, and a right acknowledgement, were among what the root read.
    pub valid_proof_read: bool,
    /// See `valid_proof_read`.
    pub valid_ack_read: bool,
    /// How many times the connection was advanced.
    pub rounds: usize,
    /// Every byte the root read.
    pub read: Vec<u8>,
}

impl RootOutcome {
    /// The root's promises for one connection serving `ranks`: it ends (no script keeps it
    /// going), counted once; it writes only the protocol's messages, a refusal or the id, and
    /// the id only after a right proof from a rank it serves; a rank counts as served only
    /// after a right acknowledgement.
    pub fn check(&self, ranks: &Range<u32>) -> Result<(), String> {
        let r = &self.report;
        if !self.closed {
            return Err(format!("the connection did not end in {} rounds", self.rounds));
        }
        if r.served + r.refused + r.wrong_rank + r.dropped != 1 {
            return Err(format!("one connection counted as {r:?}"));
        }
        let w = &self.written;
        let rank = (self.read.len() >= HELLO && self.read[..8] == PROTOCOL[..])
            .then(|| u32::from_be_bytes(slice_at(&self.read, 8 + NONCE)));
        let challenge = w.len() >= CHALLENGE_LEN && w[..8] == CHALLENGE[..];
        let after = if challenge { &w[CHALLENGE_LEN..] } else { &[][..] };
        let legal = w.is_empty()
            || (w[..] == WRONG_RANK[..] && r.wrong_rank == 1 && rank.is_some_and(|k| !ranks.contains(&k)))
            || (challenge && after.is_empty())
            || (challenge && after == DENIED && r.refused == 1)
            || (challenge && after.len() == ID_MESSAGE && after[..8] == ID_OK[..]);
        if !legal {
            return Err(format!("the root wrote {} bytes that are not the protocol's: {w:02x?}", w.len()));
        }
        if challenge && !rank.is_some_and(|k| ranks.contains(&k)) {
            return Err("a challenge to a rank the root does not serve".into());
        }
        let id_sent = challenge && after.len() == ID_MESSAGE;
        if id_sent && (!self.valid_proof_read || after[8..8 + UNIQUE_ID_BYTES] != served_id().as_bytes()[..]) {
            return Err("the id went to a rank without a right proof".into());
        }
        if r.served == 1 && !(id_sent && self.valid_ack_read) {
            return Err("served without the id sent and a right acknowledgement".into());
        }
        Ok(())
    }
}

/// Runs the root's side of one connection (the code `TcpRoot::serve` runs for each) with
/// the rank played by `steps`, serving `ranks`, until it closes or the script is spent.
pub fn drive_root(steps: &[RankStep], ranks: Range<u32>, write_chunk: usize) -> RootOutcome {
    let rank = ScriptedRank {
        steps: steps.iter().cloned().collect(),
        pending: VecDeque::new(),
        read: Vec::new(),
        written: Vec::new(),
        write_chunk,
        valid_proof_read: false,
        valid_ack_read: false,
    };
    let (key, id) = (key(), served_id());
    let mut conn = Conn::new(rank, Instant::now() + Duration::from_secs(3600));
    let mut out = RootOutcome::default();
    // Each round reads or writes at least one byte, or takes a pause or the end of the
    // script: the bound is never reached by a connection that terminates.
    let limit = 64
        + 4 * steps.len()
        + steps.iter().map(|s| if let RankStep::Bytes(b) = s { b.len() } else { 0 }).sum::<usize>();
    while out.rounds < limit {
        out.rounds += 1;
        match conn.advance(&key, &id, &ranks, &mut out.report) {
            Step::Close => {
                out.closed = true;
                if conn.served {
                    bump(&mut out.report.served);
                }
                break;
            }
            Step::Progress | Step::Idle => {}
        }
    }
    let stream = conn.into_stream();
    out.read = stream.read;
    out.written = stream.written;
    out.valid_proof_read = stream.valid_proof_read;
    out.valid_ack_read = stream.valid_ack_read;
    out
}

/// The root's side of a rank's connection, played from a script (see [`ScriptedRank`]).
struct ScriptedRoot {
    steps: VecDeque<RootStep>,
    pending: VecDeque<u8>,
    /// Every byte the rank wrote.
    written: Vec<u8>,
    /// Every byte the rank read.
    read: Vec<u8>,
    valid_id_read: bool,
}

impl Read for ScriptedRoot {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pending.is_empty() {
            let Some(step) = self.steps.pop_front() else { return Ok(0) };
            let bytes = match step {
                RootStep::Bytes(b) => b,
                RootStep::Challenge => [&CHALLENGE[..], &SCRIPT_NONCE].concat(),
                RootStep::WrongRank => WRONG_RANK.to_vec(),
                RootStep::Deny => DENIED.to_vec(),
                RootStep::Id { valid } => {
                    let client: [u8; NONCE] = slice_at(&self.written, 8);
                    let rank: [u8; 4] = slice_at(&self.written, 8 + NONCE);
                    let root: [u8; NONCE] = slice_at(&self.read, 8);
                    let id = served_id();
                    self.valid_id_read |= valid;
                    [&ID_OK[..], id.as_bytes(), &mac(valid, b"root", &[&client, &root, &rank, id.as_bytes()])].concat()
                }
            };
            self.pending.extend(bytes);
        }
        let n = buf.len().min(self.pending.len());
        for (b, p) in buf.iter_mut().zip(self.pending.drain(..n)) {
            *b = p;
        }
        self.read.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl Write for ScriptedRoot {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl RankWire for ScriptedRoot {
    fn read_timeout(&mut self, _: Option<Duration>) -> std::io::Result<()> {
        Ok(())
    }
    fn write_timeout(&mut self, _: Option<Duration>) -> std::io::Result<()> {
        Ok(())
    }
}

/// How a rank's exchange with a scripted root ended.
#[derive(Debug)]
pub enum RankResult {
    /// The rank took this id (and acknowledged it).
    Id(UniqueId),
    /// A failure the rank retries (a new connection).
    Retry(Error),
    /// A failure that ends the fetch.
    Fail(Error),
}

/// What a rank did against a scripted root.
#[derive(Debug)]
pub struct RankOutcome {
    /// How the exchange ended.
    pub result: RankResult,
    /// Every byte the rank wrote.
    pub written: Vec<u8>,
    /// A right id message (the root's proof over what was exchanged) was among what it read.
    pub valid_id_read: bool,
}

impl RankOutcome {
    /// A rank's promises for one exchange as `rank`: it sends its hello, then its proof only
    /// after a challenge, and acknowledges only an id the root proved; it takes no other id;
    /// a failure is the protocol's (never a deadline: the script answers at once).
    pub fn check(&self, rank: u32) -> Result<(), String> {
        let w = &self.written;
        if w.len() < HELLO || w[..8] != PROTOCOL[..] || w[8 + NONCE..HELLO] != rank.to_be_bytes() {
            return Err(format!("not a hello for rank {rank}: {w:02x?}"));
        }
        match &self.result {
            RankResult::Id(id) => {
                if !self.valid_id_read || *id != served_id() || w.len() != HELLO + TAG + TAG {
                    return Err(format!("took an id without the root's proof ({} bytes written)", w.len()));
                }
            }
            RankResult::Retry(e) | RankResult::Fail(e) => {
                if w.len() > HELLO + TAG {
                    return Err(format!("acknowledged, then failed: {e}"));
                }
                if !matches!(e, Error::Protocol { .. } | Error::Auth { .. }) {
                    return Err(format!("a failure that is not the protocol's: {e}"));
                }
            }
        }
        Ok(())
    }
}

/// Runs one exchange of rank `rank` (the code `fetch_tcp` runs per connection) against a
/// root played by `steps`.
pub fn drive_rank(steps: &[RootStep], rank: u32) -> RankOutcome {
    let mut root = ScriptedRoot {
        steps: steps.iter().cloned().collect(),
        pending: VecDeque::new(),
        written: Vec::new(),
        read: Vec::new(),
        valid_id_read: false,
    };
    let deadline = Deadline::within(Duration::from_secs(3600));
    let result = match attempt(&mut root, &key(), rank, &deadline) {
        Ok(id) => RankResult::Id(id),
        Err(Attempt::Retry(e)) => RankResult::Retry(e),
        Err(Attempt::Fail(e)) => RankResult::Fail(e),
    };
    RankOutcome { result, written: root.written, valid_id_read: root.valid_id_read }
}

/// The id and time of a file record made with the harness key, if `bytes` is one.
#[cfg(unix)]
pub fn parse_file_record(bytes: &[u8]) -> Option<(UniqueId, SystemTime)> {
    file::parse_file(bytes, &key())
}

/// The file record of `id` published `nanos` after the Unix epoch, with the harness key.
#[cfg(unix)]
pub fn file_record(id: &UniqueId, nanos: u64) -> [u8; FILE_MESSAGE] {
    file::file_message(id, &key(), UNIX_EPOCH + Duration::from_nanos(nanos))
}

/// What a rank waiting on a rendezvous file (without waiting: a zero timeout) makes of a file
/// holding `bytes`, written owner-only to `path`, for a job started `not_before` nanoseconds
/// after the epoch.
#[cfg(unix)]
pub fn read_file_record(path: &std::path::Path, bytes: &[u8], not_before: u64) -> Result<UniqueId, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io_err("cannot create the harness file"))?;
    f.write_all(bytes).map_err(io_err("cannot write the harness file"))?;
    drop(f);
    file::wait_file(path, &key(), UNIX_EPOCH + Duration::from_nanos(not_before), Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn honest_rank(rank: u32) -> Vec<RankStep> {
        vec![
            RankStep::Hello(rank),
            RankStep::Pause,
            RankStep::Proof { valid: true },
            RankStep::Pause,
            RankStep::Ack { valid: true },
        ]
    }

    #[test]
    fn an_honest_rank_is_served_through_the_scripted_stream() {
        for chunk in [0, 1, 7] {
            let o = drive_root(&honest_rank(3), 1..4, chunk);
            assert!(o.closed && o.report.served == 1, "{o:?}");
            o.check(&(1..4)).unwrap();
            assert_eq!(o.written.len(), CHALLENGE_LEN + ID_MESSAGE);
            assert_eq!(&o.written[CHALLENGE_LEN + 8..CHALLENGE_LEN + 8 + UNIQUE_ID_BYTES], served_id().as_bytes());
        }
        let o = drive_rank(&[RootStep::Challenge, RootStep::Id { valid: true }], 5);
        assert!(matches!(&o.result, RankResult::Id(id) if *id == served_id()), "{o:?}");
        assert_eq!(o.written.len(), HELLO + TAG + TAG);
        o.check(5).unwrap();
    }

    #[test]
    fn a_wrong_proof_or_rank_gets_nothing_and_counts_once() {
        let mut steps = honest_rank(3);
        steps[2] = RankStep::Proof { valid: false };
        let o = drive_root(&steps, 1..4, 0);
        assert_eq!((o.closed, o.report), (true, ServeReport { refused: 1, ..Default::default() }));
        assert_eq!(&o.written[CHALLENGE_LEN..], DENIED);
        let o = drive_root(&honest_rank(9), 1..4, 0);
        assert_eq!(
            (o.closed, o.report, o.written.as_slice()),
            (true, ServeReport { wrong_rank: 1, ..Default::default() }, &WRONG_RANK[..])
        );
        let o = drive_rank(&[RootStep::Challenge, RootStep::Id { valid: false }], 5);
        assert!(matches!(o.result, RankResult::Fail(Error::Auth { who: "the root" })), "{o:?}");
        assert_eq!(o.written.len(), HELLO + TAG, "no acknowledgement");
    }

    #[test]
    fn the_counters_saturate_instead_of_overflowing() {
        // A root waiting for ever can count more than u32::MAX dropped connections (an
        // overflow: a panic in a debug build, a count back at 0 in release).
        let rank = ScriptedRank {
            steps: [RankStep::Bytes(b"not the protocol at all, and long enough".repeat(2))].into(),
            pending: VecDeque::new(),
            read: Vec::new(),
            written: Vec::new(),
            write_chunk: 0,
            valid_proof_read: false,
            valid_ack_read: false,
        };
        let mut conn = Conn::new(rank, Instant::now() + Duration::from_secs(60));
        let mut report = ServeReport { dropped: u32::MAX, ..Default::default() };
        assert!(matches!(conn.advance(&key(), &served_id(), &(0..1), &mut report), Step::Close));
        assert_eq!(report.dropped, u32::MAX);
    }

    #[cfg(unix)]
    #[test]
    fn file_records_round_trip() {
        let m = file_record(&served_id(), 1_700_000_000_123_456_789);
        let (id, at) = parse_file_record(&m).unwrap();
        assert_eq!((id, at), (served_id(), UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789)));
        assert!(parse_file_record(&m[1..]).is_none());
    }
}
