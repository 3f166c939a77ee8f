//! Handing a [`UniqueId`](crate::nccl::UniqueId) from the root rank to the others: over TCP or through a file on a
//! shared filesystem, authenticated by a per-job key and bounded by one deadline each.
//!
//! The id is a secret: it begins with a random magic and the root's bootstrap address, and
//! whoever holds it can join (or disturb) the communicator. Nothing here logs or prints it.
//!
//! # TCP
//!
//! The root serves the ranks it expects (a range of NCCL ranks, `0..=i32::MAX - 1`) and
//! returns once each has acknowledged the id, or reports the ranks that never did (as ranges)
//! when the deadline passes; what it holds grows with the ranks served and the connections
//! open (at most [`MAX_CONNECTIONS`]), never with the size of the range. Every message has a fixed
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

use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::nccl::UNIQUE_ID_BYTES;
use crate::time::Deadline;

mod error;
mod fetch;
#[cfg(unix)]
mod file;
#[cfg(any(test, fuzzing))]
pub(crate) mod harness;
mod tcp;

pub use error::Error;
pub use fetch::fetch_tcp;
#[cfg(unix)]
pub use file::{publish_file, remove_file, wait_file};
pub use tcp::{ServeReport, TcpRoot};

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

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, TcpListener};

    use std::time::{Duration, Instant, SystemTime};

    use crate::nccl::UniqueId;

    use super::fetch::*;
    use super::tcp::*;
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
        assert!(Deadline::within(Duration::MAX).left().is_none());
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
            matches!(&err, Error::MissingRanks { waited, missing } if *waited == Duration::from_millis(100) && missing.iter().map(|r| (r.start, r.end)).eq([(1, 3)])),
            "{err}"
        );
    }

    #[test]
    fn what_the_root_holds_grows_with_the_ranks_served_not_the_range() {
        let root = TcpRoot::bind_loopback(key()).unwrap();
        // Not ranges of ranks: refused before anything is held (4 GiB of flags before).
        for (start, end) in [(0, u32::MAX), (5, 3), (0, i32::MAX as u32 + 1), (u32::MAX, u32::MAX)] {
            let err = root.serve(&id(1), start..end, Duration::from_secs(60)).unwrap_err();
            assert!(matches!(err, Error::InvalidRanks { start: s, end: e } if (s, e) == (start, end)), "{err}");
        }
        // Every rank NCCL can count, none connecting: one range missing, reported at once
        // (2 GiB of flags and an 8 GiB list of the missing ranks before).
        let start = Instant::now();
        let err = root.serve(&id(1), 0..i32::MAX as u32, Duration::from_millis(50)).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
        assert!(
            matches!(&err, Error::MissingRanks { missing, .. } if missing.iter().map(|r| (r.start, r.end)).eq([(0, i32::MAX as u32)])),
            "{err}"
        );
        assert!(err.to_string().contains("2147483647 rank(s) never fetched the unique id (0-2147483646)"), "{err}");
        let err = fetch_tcp(root.local_addr().unwrap(), &key(), i32::MAX as u32, Duration::from_secs(60)).unwrap_err();
        assert!(matches!(err, Error::InvalidRank { rank } if rank == i32::MAX as u32), "{err}");
    }

    #[test]
    fn missing_ranks_are_the_gaps_between_the_served_ones() {
        let served: std::collections::BTreeSet<u32> = [0, 3, 4, 7, 9, 40].into();
        assert_eq!(missing_ranks(&(0..10), &served), [1..3, 5..7, 8..9]);
        assert_eq!(missing_ranks(&(2..12), &served), [2..3, 5..7, 8..9, 10..12]);
        assert_eq!(missing_ranks(&(5..5), &served), []);
        let all = Error::MissingRanks { waited: Duration::from_secs(1), missing: missing_ranks(&(1..12), &served) };
        assert_eq!(
            all.to_string(),
            "rendezvous timed out after 1s: 7 rank(s) never fetched the unique id (1-2, 5-6, 8, 10-11)"
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
mod attacks;
