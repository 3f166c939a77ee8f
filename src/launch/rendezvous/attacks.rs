//! The rendezvous under attack, on loopback only, each attack bounded in count and time: what
//! was found in the earlier rendezvous, and what an attacker who can connect (or plant files)
//! would try next. Every test asserts what the attacker got and that the ranks were served.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::nccl::UniqueId;

use super::fetch::*;
use super::file::*;
use super::tcp::*;
use super::*;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn id(b: u8) -> UniqueId {
    UniqueId::from_bytes(&[b; 128]).unwrap()
}

fn key() -> RendezvousKey {
    RendezvousKey::from_secret(b"the job's secret")
}

fn wrong_key() -> RendezvousKey {
    RendezvousKey::from_secret(b"a guess")
}

const LONG: Duration = Duration::from_secs(20);

/// Starts the root serving `id(42)` to `ranks` in a thread.
fn root(ranks: Range<u32>, limit: Duration) -> (SocketAddr, std::thread::JoinHandle<Result<ServeReport, Error>>) {
    let root = TcpRoot::bind_loopback(key()).unwrap().with_handshake_limit(limit);
    let addr = root.local_addr().unwrap();
    (addr, std::thread::spawn(move || root.serve(&id(42), ranks, LONG)))
}

fn rank(addr: SocketAddr, r: u32) -> std::thread::JoinHandle<Result<UniqueId, Error>> {
    std::thread::spawn(move || fetch_tcp(addr, &key(), r, LONG))
}

/// A raw client: sends a hello for `rank` and reads the challenge.
fn hello(addr: SocketAddr, rank: u32) -> (TcpStream, [u8; NONCE], [u8; CHALLENGE_LEN]) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let nonce = [7u8; NONCE];
    let mut m = Vec::from(&PROTOCOL[..]);
    m.extend_from_slice(&nonce);
    m.extend_from_slice(&rank.to_be_bytes());
    s.write_all(&m).unwrap();
    let mut c = [0u8; CHALLENGE_LEN];
    s.read_exact(&mut c).unwrap();
    (s, nonce, c)
}

/// Everything the peer sends until it closes (bounded by a read timeout).
fn rest(s: &mut TcpStream) -> Vec<u8> {
    let mut v = Vec::new();
    let _ = s.take(4096).read_to_end(&mut v);
    v
}

#[test]
fn a_client_without_the_key_gets_nothing_and_takes_no_slot() {
    let (addr, server) = root(1..2, LONG);
    // It claims rank 1 and answers the challenge with a guess.
    let (mut s, _, c) = hello(addr, 1);
    assert_eq!(&c[..8], CHALLENGE);
    s.write_all(&[0u8; TAG]).unwrap();
    let got = rest(&mut s);
    assert_eq!(got, DENIED, "only the refusal, no id bytes");
    // Rank 1's slot is still free for the real rank 1.
    assert_eq!(rank(addr, 1).join().unwrap().unwrap(), id(42));
    let report = server.join().unwrap().unwrap();
    assert_eq!((report.served, report.refused), (1, 1));
}

#[test]
fn a_wrong_secret_is_refused_at_once_on_both_sides() {
    let (addr, server) = root(1..2, LONG);
    let start = Instant::now();
    let err = fetch_tcp(addr, &wrong_key(), 1, LONG).unwrap_err();
    assert!(matches!(err, Error::Auth { .. }), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10), "refused at once, not at the 20 s deadline");
    assert_eq!(rank(addr, 1).join().unwrap().unwrap(), id(42));
    assert_eq!(server.join().unwrap().unwrap().refused, 1);
}

#[test]
fn a_listener_without_the_key_cannot_hand_a_rank_a_forged_id() {
    // Someone else's listener at the root's address, speaking the protocol with its own key.
    let impostor = TcpRoot::bind_loopback(wrong_key()).unwrap();
    let addr = impostor.local_addr().unwrap();
    let t = std::thread::spawn(move || impostor.serve(&id(66), 1..2, Duration::from_secs(5)));
    let err = fetch_tcp(addr, &key(), 1, Duration::from_secs(5)).unwrap_err();
    // The impostor refuses the rank's proof; even one that skipped that check would fail the
    // rank's check of its proof (below).
    assert!(matches!(err, Error::Auth { .. }), "{err}");
    let _ = t.join();

    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut h = [0u8; HELLO];
        s.read_exact(&mut h).unwrap();
        s.write_all(CHALLENGE).unwrap();
        s.write_all(&[1u8; NONCE]).unwrap();
        let mut proof = [0u8; TAG];
        s.read_exact(&mut proof).unwrap();
        s.write_all(ID_OK).unwrap();
        s.write_all(&[66u8; UNIQUE_ID_BYTES]).unwrap();
        s.write_all(&[0u8; TAG]).unwrap();
        let _ = rest(&mut s);
    });
    let err = fetch_tcp(addr, &key(), 1, Duration::from_secs(5)).unwrap_err();
    assert!(matches!(err, Error::Auth { who: "the root" }), "{err}");
    t.join().unwrap();
}

#[test]
fn idle_clients_do_not_hold_up_the_ranks() {
    let (addr, server) = root(1..3, LONG);
    let idle: Vec<TcpStream> = (0..20).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let start = Instant::now();
    let ranks: Vec<_> = (1..3).map(|r| rank(addr, r)).collect();
    for r in ranks {
        assert_eq!(r.join().unwrap().unwrap(), id(42));
    }
    let report = server.join().unwrap().unwrap();
    assert!(start.elapsed() < Duration::from_secs(10), "{:?} with idle clients connected", start.elapsed());
    assert_eq!(report.served, 2);
    drop(idle);
}

#[test]
fn a_stalled_or_trickling_client_is_dropped_after_the_handshake_limit() {
    let (addr, server) = root(1..2, Duration::from_secs(1));
    let stop = Arc::new(AtomicBool::new(false));
    let trickle = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            // One byte of a hello every 100 ms: it never finishes within the limit.
            let mut m = Vec::from(&PROTOCOL[..]);
            m.extend_from_slice(&[0u8; NONCE + 4]);
            let start = Instant::now();
            for b in m {
                if stop.load(Ordering::Relaxed) || s.write_all(&[b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            // Dropped by the root: reading sees the end, well before the hello was sent.
            let mut buf = [0u8; 8];
            let n = s.read(&mut buf).unwrap_or(0);
            (n, start.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(rank(addr, 1).join().unwrap().unwrap(), id(42));
    let report = server.join().unwrap().unwrap();
    stop.store(true, Ordering::Relaxed);
    let (n, took) = trickle.join().unwrap();
    assert_eq!(n, 0, "the trickling client got no bytes");
    // Its hello would take 4.4 s; the root dropped it at the 1 s limit.
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert!(report.dropped >= 1, "{report:?}");
}

#[test]
fn a_client_that_connects_and_resets_does_not_end_the_rendezvous() {
    let (addr, server) = root(1..3, LONG);
    for _ in 0..5 {
        let s = TcpStream::connect(addr).unwrap();
        // SO_LINGER with a zero timeout: close sends a reset.
        let linger = libc::linger { l_onoff: 1, l_linger: 0 };
        use std::os::unix::io::AsRawFd;
        // SAFETY: a valid socket and a properly sized linger struct.
        let r = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0);
        drop(s);
    }
    // A rank that resets in the middle, after proving the key and reading the id: not
    // counted (it never acknowledged), and its retry is served.
    {
        let (mut s, nonce, c) = hello(addr, 2);
        let proof = key().mac(b"client", &[&nonce, &c[8..], &2u32.to_be_bytes()]);
        s.write_all(&proof).unwrap();
        let mut reply = [0u8; ID_MESSAGE];
        s.read_exact(&mut reply).unwrap();
        assert_eq!(&reply[..8], ID_OK);
    }
    let ranks: Vec<_> = (1..3).map(|r| rank(addr, r)).collect();
    for r in ranks {
        assert_eq!(r.join().unwrap().unwrap(), id(42));
    }
    let report = server.join().unwrap().unwrap();
    assert_eq!(report.served, 2);
    assert!(report.dropped >= 6, "{report:?}");
}

#[test]
fn the_root_counts_ranks_not_connections() {
    let root = TcpRoot::bind_loopback(key()).unwrap();
    let addr = root.local_addr().unwrap();
    // Rank 1 fetches twice; rank 2 never comes.
    let t = std::thread::spawn(move || {
        let a = fetch_tcp(addr, &key(), 1, LONG);
        let b = fetch_tcp(addr, &key(), 1, LONG);
        (a, b)
    });
    let err = root.serve(&id(42), 1..3, Duration::from_millis(1500)).unwrap_err();
    assert!(
        matches!(&err, Error::MissingRanks { waited, missing } if *waited == Duration::from_millis(1500) && missing.iter().map(|r| (r.start, r.end)).eq([(2, 3)])),
        "{err}"
    );
    let (a, b) = t.join().unwrap();
    assert_eq!((a.unwrap(), b.unwrap()), (id(42), id(42)));
    // A rank the root does not serve is told so, not left waiting.
    let (addr, server) = root_of(1..2);
    let err = fetch_tcp(addr, &key(), 5, LONG).unwrap_err();
    assert!(err.to_string().contains("does not serve this rank"), "{err}");
    assert_eq!(rank(addr, 1).join().unwrap().unwrap(), id(42));
    assert_eq!(server.join().unwrap().unwrap().wrong_rank, 1);
}

fn root_of(ranks: Range<u32>) -> (SocketAddr, std::thread::JoinHandle<Result<ServeReport, Error>>) {
    root(ranks, LONG)
}

#[test]
fn two_hundred_concurrent_connections() {
    let (addr, server) = root(1..5, Duration::from_secs(2));
    // 200 hostile connections at once: idle, garbage, and wrong proofs, held open.
    let mut hostile = Vec::new();
    for i in 0..200u32 {
        let mut s = TcpStream::connect(addr).unwrap();
        match i % 3 {
            0 => {}
            1 => {
                let _ = s.write_all(&[0xffu8; 64]);
            }
            _ => {
                let mut m = Vec::from(&PROTOCOL[..]);
                m.extend_from_slice(&[9u8; NONCE]);
                m.extend_from_slice(&(1 + i % 4).to_be_bytes());
                let _ = s.write_all(&m);
            }
        }
        hostile.push(s);
    }
    let start = Instant::now();
    let ranks: Vec<_> = (1..5).map(|r| rank(addr, r)).collect();
    for r in ranks {
        assert_eq!(r.join().unwrap().unwrap(), id(42));
    }
    let report = server.join().unwrap().unwrap();
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    assert_eq!(report.served, 4);
    // None of the hostile connections received an id: each read ends without 168 bytes.
    let mut leaked = 0;
    for mut s in hostile {
        s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let got = rest(&mut s);
        if got.windows(8).any(|w| w == ID_OK) {
            leaked += 1;
        }
    }
    assert_eq!(leaked, 0);
}

#[test]
fn a_root_that_trickles_cannot_stretch_the_deadline() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut h = [0u8; HELLO];
        let _ = s.read_exact(&mut h);
        // One byte every 150 ms: 40 bytes of challenge would take 6 s.
        for b in CHALLENGE.iter().chain([0u8; NONCE].iter()) {
            if s.write_all(&[*b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(150));
        }
    });
    let start = Instant::now();
    let err = fetch_tcp(addr, &key(), 1, Duration::from_millis(400)).unwrap_err();
    let took = start.elapsed();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    // The per-read timeout of the old fetch let this take 6 s.
    assert!(took < Duration::from_secs(3), "a 400 ms deadline took {took:?}");
    t.join().unwrap();
}

#[test]
fn the_fetch_stops_at_the_end_of_the_message() {
    // A root that completes the exchange and then keeps the socket open.
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let (release, held) = std::sync::mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut h = [0u8; HELLO];
        s.read_exact(&mut h).unwrap();
        let root_nonce = [3u8; NONCE];
        s.write_all(CHALLENGE).unwrap();
        s.write_all(&root_nonce).unwrap();
        let mut proof = [0u8; TAG];
        s.read_exact(&mut proof).unwrap();
        let r = &h[8 + NONCE..];
        let tag = key().mac(b"root", &[&h[8..8 + NONCE], &root_nonce, r, id(5).as_bytes()]);
        s.write_all(ID_OK).unwrap();
        s.write_all(id(5).as_bytes()).unwrap();
        s.write_all(&tag).unwrap();
        let mut ack = [0u8; TAG];
        s.read_exact(&mut ack).unwrap();
        // The socket stays open until the rank has returned (or 20 s).
        let _ = held.recv_timeout(Duration::from_secs(20));
    });
    let start = Instant::now();
    assert_eq!(fetch_tcp(addr, &key(), 1, Duration::from_secs(20)).unwrap(), id(5));
    // Reading to the end of the stream would wait for the root's 20 s.
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    release.send(()).unwrap();
    t.join().unwrap();
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nccl-trampoline-attack-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn long_ago() -> SystemTime {
    SystemTime::now() - Duration::from_secs(3600)
}

#[test]
fn a_fifo_at_the_path_is_refused_without_blocking() {
    let dir = scratch("fifo");
    let path = dir.join("id");
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let start = Instant::now();
    let err = wait_file(&path, &key(), long_ago(), Duration::from_secs(30)).unwrap_err();
    // Refused at once: not after the 30 s deadline, and not blocked in open(2).
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    assert!(matches!(&err, Error::File { reason, .. } if reason.contains("a FIFO")), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_link_to_dev_zero_is_refused_and_nothing_is_read() {
    let dir = scratch("link");
    let path = dir.join("id");
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let start = Instant::now();
    let err = wait_file(&path, &key(), long_ago(), Duration::from_secs(30)).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(matches!(&err, Error::File { reason, .. } if reason.contains("symbolic link")), "{err}");
    // A device itself (no link) is refused too.
    let err = wait_file(Path::new("/dev/zero"), &key(), long_ago(), Duration::from_secs(5)).unwrap_err();
    assert!(matches!(&err, Error::File { reason, .. } if reason.contains("character device")), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_huge_file_is_read_only_as_far_as_one_message() {
    let dir = scratch("huge");
    let path = dir.join("id");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(1 << 40).unwrap(); // sparse: a terabyte that takes no disk
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let start = Instant::now();
    let err = wait_file(&path, &key(), long_ago(), Duration::from_millis(200)).unwrap_err();
    assert!(err.to_string().contains("another job or format"), "{err}");
    // Reading the terabyte would take minutes (and the memory).
    assert!(start.elapsed() < Duration::from_secs(10));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn files_others_can_write_or_own_are_refused() {
    let dir = scratch("mode");
    let path = dir.join("id");
    publish_file(&path, &id(1), &key()).unwrap();
    for mode in [0o620, 0o602, 0o666] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let err = wait_file(&path, &key(), long_ago(), Duration::from_secs(5)).unwrap_err();
        assert!(matches!(&err, Error::File { reason, .. } if reason.contains("group or others")), "{err}");
    }
    // Another user's file (planted, say, in a shared sticky directory). The decision itself:
    assert!(refusal("a regular file", 1001, 0o600, 1000).unwrap().contains("owned by uid 1001"));
    assert_eq!(refusal("a regular file", 1000, 0o640, 1000), None);
    // And for real where this test may give a file away (as root, as CI runs it).
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        let err = wait_file(&path, &key(), long_ago(), Duration::from_secs(5)).unwrap_err();
        assert!(matches!(&err, Error::File { reason, .. } if reason.contains("owned by uid 65534")), "{err}");
    } else {
        eprintln!("note: not root, so the owner check ran on the decision function only");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stale_file_or_one_of_another_job_is_not_taken() {
    let dir = scratch("stale");
    let path = dir.join("id");
    publish_file(&path, &id(1), &key()).unwrap();
    // This job started after that file was written.
    let job_start = SystemTime::now() + Duration::from_secs(1);
    let err = wait_file(&path, &key(), job_start, Duration::from_millis(150)).unwrap_err();
    assert!(err.to_string().contains("older than the job"), "{err}");
    // Another job's key.
    let err = wait_file(&path, &wrong_key(), long_ago(), Duration::from_millis(150)).unwrap_err();
    assert!(err.to_string().contains("another job"), "{err}");
    // The waiter keeps waiting past the stale file and takes the fresh one.
    let waiter = {
        let path = path.clone();
        std::thread::spawn(move || wait_file(&path, &key(), job_start, Duration::from_secs(10)))
    };
    std::thread::sleep(Duration::from_millis(1200));
    publish_file(&path, &id(2), &key()).unwrap();
    assert_eq!(waiter.join().unwrap().unwrap(), id(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_publication_leaves_nothing_and_the_next_one_works() {
    let dir = scratch("publish");
    let path = dir.join("id");
    // A directory at the path: the rename fails.
    std::fs::create_dir(&path).unwrap();
    let err = publish_file(&path, &id(1), &key()).unwrap_err();
    assert!(err.to_string().contains("cannot move the rendezvous file into place"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, [std::ffi::OsString::from("id")], "the temporary file is gone");
    std::fs::remove_dir(&path).unwrap();
    publish_file(&path, &id(1), &key()).unwrap();
    assert_eq!(wait_file(&path, &key(), long_ago(), Duration::from_secs(1)).unwrap(), id(1));
    // Temporary names are unguessable: two publications use two names (none left over).
    publish_file(&path, &id(2), &key()).unwrap();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
