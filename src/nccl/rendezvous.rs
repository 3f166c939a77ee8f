//! Handing a [`UniqueId`] from the root rank to the others: over TCP (loopback by default, or
//! an explicit address) or through a file on a shared filesystem, with deadlines and clear
//! errors. The id is a secret (it holds the root's bootstrap address): nothing here logs or
//! prints it, and the file is created readable by its owner only.
//!
//! Wire format (TCP and file alike): the 8-byte magic `NTRVID01`, then the 128 id bytes.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::nccl::types::{UniqueId, UNIQUE_ID_BYTES};
use crate::Error;

const MAGIC: &[u8; 8] = b"NTRVID01";
const MESSAGE: usize = 8 + UNIQUE_ID_BYTES;
const POLL: Duration = Duration::from_millis(20);

fn io_err(what: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |e| Error::Rendezvous { what, detail: e.to_string() }
}

fn message(id: &UniqueId) -> [u8; MESSAGE] {
    let mut m = [0u8; MESSAGE];
    m[..8].copy_from_slice(MAGIC);
    m[8..].copy_from_slice(id.as_bytes());
    m
}

fn parse(m: &[u8]) -> Result<UniqueId, Error> {
    if m.len() != MESSAGE || &m[..8] != MAGIC {
        return Err(Error::Rendezvous {
            what: "bad rendezvous message",
            detail: format!("{} bytes, wrong magic or length", m.len()),
        });
    }
    UniqueId::from_bytes(&m[8..])
}

/// The root's side of a TCP rendezvous: a bound listener.
#[derive(Debug)]
pub struct TcpRoot {
    listener: TcpListener,
}

impl TcpRoot {
    /// Binds `127.0.0.1` on a free port (single-node jobs).
    pub fn bind_loopback() -> Result<Self, Error> {
        Self::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
    }

    /// Binds an explicit address (multi-node jobs: an address the other ranks can reach).
    pub fn bind(addr: SocketAddr) -> Result<Self, Error> {
        let listener = TcpListener::bind(addr).map_err(io_err("cannot bind the rendezvous address"))?;
        Ok(TcpRoot { listener })
    }

    /// The address to give the other ranks.
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        self.listener.local_addr().map_err(io_err("cannot read the rendezvous address"))
    }

    /// Sends `id` to `peers` connecting ranks, waiting at most `timeout` for all of them.
    pub fn serve(&self, id: &UniqueId, peers: usize, timeout: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + timeout;
        self.listener.set_nonblocking(true).map_err(io_err("cannot configure the listener"))?;
        let msg = message(id);
        let mut served = 0;
        while served < peers {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false).map_err(io_err("cannot configure a rendezvous connection"))?;
                    stream
                        .set_write_timeout(Some(remaining(deadline)?))
                        .map_err(io_err("cannot configure a rendezvous connection"))?;
                    stream.write_all(&msg).map_err(io_err("cannot send the unique id"))?;
                    served += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    remaining(deadline).map_err(|_| Error::RendezvousTimeout {
                        waited: timeout,
                        waiting_for: "ranks to fetch the unique id",
                    })?;
                    std::thread::sleep(POLL);
                }
                Err(e) => return Err(io_err("accepting a rendezvous connection failed")(e)),
            }
        }
        Ok(())
    }
}

fn remaining(deadline: Instant) -> Result<Duration, Error> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Error::RendezvousTimeout { waited: Duration::ZERO, waiting_for: "the deadline" });
    }
    Ok(left)
}

/// A non-root rank's side: connects to `root` (retrying until it listens) and reads the id,
/// all within `timeout`.
pub fn fetch_tcp(root: SocketAddr, timeout: Duration) -> Result<UniqueId, Error> {
    let deadline = Instant::now() + timeout;
    let timed_out = || Error::RendezvousTimeout { waited: timeout, waiting_for: "the root's unique id over TCP" };
    loop {
        let left = remaining(deadline).map_err(|_| timed_out())?;
        match TcpStream::connect_timeout(&root, left) {
            Ok(mut stream) => {
                stream
                    .set_read_timeout(Some(remaining(deadline).map_err(|_| timed_out())?))
                    .map_err(io_err("cannot configure the connection"))?;
                let mut m = Vec::with_capacity(MESSAGE);
                (&mut stream).take(MESSAGE as u64 + 1).read_to_end(&mut m).map_err(|e| {
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
                        timed_out()
                    } else {
                        io_err("cannot read the unique id")(e)
                    }
                })?;
                return parse(&m);
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::TimedOut) => {
                std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
            }
            Err(e) => return Err(io_err("cannot connect to the rendezvous root")(e)),
        }
    }
}

/// Writes `id` to `path` for the other ranks: created with owner-only permissions under a
/// temporary name, then renamed into place, so a reader never sees a partial file.
pub fn publish_file(path: &Path, id: &UniqueId) -> Result<(), Error> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(&tmp).map_err(io_err("cannot create the rendezvous file"))?;
    f.write_all(&message(id)).and_then(|_| f.sync_all()).map_err(io_err("cannot write the rendezvous file"))?;
    std::fs::rename(&tmp, path).map_err(io_err("cannot move the rendezvous file into place"))
}

/// Waits for `path` to hold a complete id (polling), at most `timeout`.
pub fn wait_file(path: &Path, timeout: Duration) -> Result<UniqueId, Error> {
    let deadline = Instant::now() + timeout;
    loop {
        match std::fs::read(path) {
            Ok(m) if m.len() >= MESSAGE => return parse(&m),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("cannot read the rendezvous file")(e)),
        }
        if remaining(deadline).is_err() {
            return Err(Error::RendezvousTimeout { waited: timeout, waiting_for: "the rendezvous file" });
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(b: u8) -> UniqueId {
        UniqueId::from_bytes(&[b; 128]).unwrap()
    }

    #[test]
    fn tcp_root_serves_every_peer_even_those_that_come_first() {
        let root = TcpRoot::bind_loopback().unwrap();
        let addr = root.local_addr().unwrap();
        assert!(addr.ip().is_loopback());
        let peers: Vec<_> =
            (0..3).map(|_| std::thread::spawn(move || fetch_tcp(addr, Duration::from_secs(10)))).collect();
        root.serve(&id(7), 3, Duration::from_secs(10)).unwrap();
        for p in peers {
            assert_eq!(p.join().unwrap().unwrap(), id(7));
        }
    }

    #[test]
    fn tcp_fetch_retries_until_the_root_listens_and_times_out_without_one() {
        // A port that nothing listens on (bound then closed).
        let addr = TcpRoot::bind_loopback().unwrap().local_addr().unwrap();
        let err = fetch_tcp(addr, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, Error::RendezvousTimeout { .. }), "{err}");
        let root = TcpRoot::bind_loopback().unwrap();
        let err = root.serve(&id(1), 1, Duration::from_millis(100)).unwrap_err();
        assert!(matches!(err, Error::RendezvousTimeout { .. }), "{err}");
    }

    #[test]
    fn a_wrong_message_is_an_error_not_an_id() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
        });
        let err = fetch_tcp(addr, Duration::from_secs(5)).unwrap_err();
        t.join().unwrap();
        assert!(matches!(err, Error::Rendezvous { .. }), "{err}");
    }

    #[test]
    fn file_rendezvous_publishes_atomically_and_waits_with_a_deadline() {
        let dir = std::env::temp_dir().join(format!("nccl-trampoline-rv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("id");
        let _ = std::fs::remove_file(&path);
        let err = wait_file(&path, Duration::from_millis(100)).unwrap_err();
        assert!(matches!(err, Error::RendezvousTimeout { .. }), "{err}");
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || wait_file(&path, Duration::from_secs(10)))
        };
        std::thread::sleep(Duration::from_millis(50));
        publish_file(&path, &id(9)).unwrap();
        assert_eq!(waiter.join().unwrap().unwrap(), id(9));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::write(&path, b"short").unwrap();
        assert!(wait_file(&path, Duration::from_millis(60)).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
