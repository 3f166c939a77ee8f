//! How the unique id reaches every rank, chosen from the world, and the one call from a world
//! to an initialised communicator.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;
#[cfg(unix)]
use std::time::SystemTime;

use crate::launch::device::{self, DeviceChoice};
use crate::launch::error::Error;
use crate::launch::mpi::Mpi;
use crate::launch::rendezvous::{self, RendezvousKey};
use crate::launch::world::{vars, World};
use crate::nccl::{CommOptions, Communicator, Nccl, UniqueId};
use crate::time::Deadline;
use crate::trace::trace_event;

/// How far before this process read its world a rendezvous file may have been published and
/// still be taken: ranks of one job start at different times, but not this far apart.
pub const FILE_SLACK: Duration = Duration::from_secs(300);

/// The way the unique id travels from the root rank to the others.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdRoute {
    /// One rank: nothing to hand over.
    Local,
    /// The authenticated TCP rendezvous: the root listens on `bind`, the ranks connect to
    /// `host:port`.
    Tcp {
        /// The address the root binds (loopback when every rank is on its host, else the
        /// unspecified address).
        bind: SocketAddr,
        /// The root's host as the ranks reach it.
        host: String,
        /// The port.
        port: u16,
    },
    /// `MPI_Bcast` over `MPI_COMM_WORLD` of the launcher's MPI.
    Mpi,
    /// NCCL's own `NCCL_COMM_ID=host:port`: every rank's `ncclGetUniqueId` returns the same id,
    /// and rank 0's init listens there.
    NcclCommId(String),
    /// A file on a filesystem every rank sees.
    File(PathBuf),
}

impl IdRoute {
    /// A short name for messages (`tcp`, `mpi`, `nccl-comm-id`, `file`, `local`).
    pub fn name(&self) -> &'static str {
        match self {
            IdRoute::Local => "local",
            IdRoute::Tcp { .. } => "tcp",
            IdRoute::Mpi => "mpi",
            IdRoute::NcclCommId(_) => "nccl-comm-id",
            IdRoute::File(_) => "file",
        }
    }
}

/// How a world becomes a communicator: the deadline over all of it, the GPU, the route
/// (default: chosen from the world) and the communicator's options.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The deadline of the whole call, the creation included (`Duration::MAX`: none).
    pub timeout: Duration,
    /// The GPU each rank takes.
    pub device: DeviceChoice,
    /// The route, or `None` for [`World::id_route`].
    pub route: Option<IdRoute>,
    /// The communicator's config and timeouts; its creation timeout is what is left of
    /// `timeout` once the id has arrived.
    pub options: CommOptions,
}

impl Setup {
    /// One GPU per local rank, the route chosen from the world, NCCL's defaults, everything
    /// within `timeout`.
    pub fn within(timeout: Duration) -> Self {
        Setup { timeout, device: DeviceChoice::default(), route: None, options: CommOptions::new() }
    }

    /// A config or timeouts for the communicator.
    pub fn options(mut self, options: CommOptions) -> Self {
        self.options = options;
        self
    }

    /// Another GPU choice.
    pub fn device(mut self, device: DeviceChoice) -> Self {
        self.device = device;
        self
    }

    /// Another route.
    pub fn route(mut self, route: IdRoute) -> Self {
        self.route = Some(route);
        self
    }
}

/// What the root must undo once every rank has joined.
enum Cleanup {
    None,
    #[cfg(unix)]
    File(PathBuf, RendezvousKey),
}

impl World {
    /// The key of this job's rendezvous: from `NCCL_TRAMPOLINE_SECRET` when set, else from the
    /// launcher's job identity, else `None`. A key from a job id is only as secret as the job
    /// id (docs/adr/0010-launchers-and-rendezvous.md).
    pub fn rendezvous_key(&self) -> Option<RendezvousKey> {
        match (self.secret(), self.job()) {
            (Some(s), _) => Some(RendezvousKey::from_secret(&s.0)),
            (None, Some(job)) => Some(RendezvousKey::from_secret(format!("job:{job}").as_bytes())),
            (None, None) => None,
        }
    }

    /// The route this world allows, in this order: `NCCL_TRAMPOLINE_ID_ROUTE` (or
    /// `NCCL_TRAMPOLINE_ID_FILE`); `NCCL_COMM_ID` when set; `local` for one rank; `mpi` under
    /// an MPI launcher; `tcp` when the root's host is known or every rank is on this host.
    pub fn id_route(&self) -> Result<IdRoute, Error> {
        let requested = match (self.route_request(), self.id_file()) {
            (Some(r), _) => Some(r.to_ascii_lowercase()),
            (None, Some(_)) => Some("file".to_string()),
            (None, None) => None,
        };
        match requested.as_deref() {
            Some("tcp") => return self.tcp_route(),
            Some("mpi") => return Ok(IdRoute::Mpi),
            Some("local") if self.size() == 1 => return Ok(IdRoute::Local),
            Some("local") => {
                return Err(Error::IdRoute {
                    detail: format!("{}=local but the job has {} ranks", vars::ID_ROUTE, self.size()),
                })
            }
            Some("nccl-comm-id") => {
                return match self.nccl_comm_id() {
                    Some(a) => Ok(IdRoute::NcclCommId(a.to_string())),
                    None => Err(Error::IdRoute {
                        detail: format!("{}=nccl-comm-id needs NCCL_COMM_ID=host:port", vars::ID_ROUTE),
                    }),
                }
            }
            Some("file") => {
                return match self.id_file() {
                    Some(p) => Ok(IdRoute::File(PathBuf::from(p))),
                    None => Err(Error::IdRoute {
                        detail: format!("the file route needs {}=PATH on a filesystem every rank sees", vars::ID_FILE),
                    }),
                }
            }
            Some(other) => {
                return Err(Error::LauncherVariable {
                    variable: vars::ID_ROUTE.into(),
                    value: other.into(),
                    expected: "tcp, mpi, nccl-comm-id, file or local",
                })
            }
            None => {}
        }
        if let Some(a) = self.nccl_comm_id() {
            return Ok(IdRoute::NcclCommId(a.to_string()));
        }
        if self.size() == 1 {
            return Ok(IdRoute::Local);
        }
        if self.launcher().is_mpi() {
            return Ok(IdRoute::Mpi);
        }
        self.tcp_route()
    }

    fn tcp_route(&self) -> Result<IdRoute, Error> {
        let key = self.rendezvous_key().ok_or_else(|| Error::IdRoute {
            detail: format!(
                "the TCP rendezvous needs a per-job secret: the {} launcher gives no job id; set {}",
                self.launcher(),
                vars::SECRET
            ),
        })?;
        let port = self.port().unwrap_or_else(|| key.derived_port(self.reserved_port()));
        if self.is_single_host() {
            let lo = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            return Ok(IdRoute::Tcp { bind: lo, host: "127.0.0.1".into(), port });
        }
        let host = self.root_host().ok_or_else(|| Error::IdRoute {
            detail: format!(
                "the ranks span hosts and the {} launcher names no root host: set {}=host[:port]",
                self.launcher(),
                vars::ROOT
            ),
        })?;
        // The root listens on every interface of its host: the ranks reach it by the name the
        // launcher gave, which may resolve differently on each host (to an IPv4 address when
        // it has one; an IPv6 literal makes the root listen on IPv6).
        let unspecified: IpAddr = match host.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => Ipv6Addr::UNSPECIFIED.into(),
            _ => Ipv4Addr::UNSPECIFIED.into(),
        };
        Ok(IdRoute::Tcp { bind: SocketAddr::new(unspecified, port), host: host.to_string(), port })
    }

    /// The unique id of a new communicator of this world, handed from rank 0 to every rank
    /// along `route`, within `timeout` (`Duration::MAX`: none). Every rank calls it.
    pub fn unique_id(&self, nccl: &Nccl, route: &IdRoute, timeout: Duration) -> Result<UniqueId, Error> {
        self.exchange(nccl, route, Deadline::within(timeout), timeout).map(|(id, _)| id)
    }

    fn exchange(
        &self,
        nccl: &Nccl,
        route: &IdRoute,
        deadline: Deadline,
        timeout: Duration,
    ) -> Result<(UniqueId, Cleanup), Error> {
        let left = || deadline.left().unwrap_or(Duration::MAX);
        // NCCL_COMM_ID's address is not shown: with it, the id is the constant magic and that address.
        trace_event!(
            launch,
            INFO,
            "launch.route",
            route = route.name(),
            rank = self.rank(),
            size = self.size(),
            root = self.is_root(),
            bind = match route {
                IdRoute::Tcp { bind, .. } => Some(bind.to_string()),
                _ => None,
            },
            to = match route {
                IdRoute::Tcp { host, port, .. } => Some(format!("{host}:{port}")),
                IdRoute::File(path) => Some(path.display().to_string()),
                _ => None,
            },
            timeout_ms = crate::trace::ms(timeout),
            "the unique id travels along this route"
        );
        match route {
            IdRoute::Local => {
                if self.size() != 1 {
                    return Err(Error::IdRoute { detail: format!("route local with {} ranks", self.size()) });
                }
                Ok((nccl.unique_id()?, Cleanup::None))
            }
            // NCCL reads NCCL_COMM_ID itself: every rank's id names that address.
            IdRoute::NcclCommId(_) => Ok((nccl.unique_id()?, Cleanup::None)),
            IdRoute::Tcp { bind, host, port } => {
                let key = self.rendezvous_key().ok_or_else(|| Error::IdRoute {
                    detail: format!("the TCP rendezvous needs a per-job secret: set {}", vars::SECRET),
                })?;
                if self.is_root() {
                    let id = nccl.unique_id()?;
                    let root = rendezvous::TcpRoot::bind(*bind, key).map_err(|e| match e {
                        e @ rendezvous::Error::Bind { .. } => Error::RendezvousPort { source: e },
                        e => e.into(),
                    })?;
                    root.serve(&id, 1..self.size(), left())?;
                    Ok((id, Cleanup::None))
                } else {
                    let addr = resolve(host, *port)?;
                    Ok((rendezvous::fetch_tcp(addr, &key, self.rank(), left())?, Cleanup::None))
                }
            }
            IdRoute::Mpi => {
                let mpi = Mpi::load(self.launcher())?;
                let mut session = mpi.session()?;
                let (rank, size) = (session.rank()?, session.size()?);
                if u32::try_from(size).ok() != Some(self.size()) {
                    return Err(Error::MpiMismatch { what: "size", mpi: size, launcher: self.size() });
                }
                if u32::try_from(rank).ok() != Some(self.rank()) {
                    return Err(Error::MpiMismatch { what: "rank", mpi: rank, launcher: self.rank() });
                }
                // The root makes the id; an error there ends the root, and the launcher the job.
                let mut bytes = if self.is_root() { *nccl.unique_id()?.as_bytes() } else { [0u8; 128] };
                session.broadcast(&mut bytes, 0, left())?;
                session.finalize()?;
                Ok((UniqueId::from_bytes(&bytes)?, Cleanup::None))
            }
            #[cfg(unix)]
            IdRoute::File(path) => {
                let key = self.rendezvous_key().unwrap_or_else(|| RendezvousKey::from_secret(b"no job identity"));
                if self.is_root() {
                    let id = nccl.unique_id()?;
                    rendezvous::publish_file(path, &id, &key)?;
                    Ok((id, Cleanup::File(path.clone(), key)))
                } else {
                    let not_before = self.found_at().checked_sub(FILE_SLACK).unwrap_or(SystemTime::UNIX_EPOCH);
                    Ok((rendezvous::wait_file(path, &key, not_before, left())?, Cleanup::None))
                }
            }
            #[cfg(not(unix))]
            IdRoute::File(_) => {
                let _ = timeout;
                Err(Error::IdRoute { detail: "the file route needs a Unix system".into() })
            }
        }
        .map_err(|e| match e {
            // The overall deadline is what the caller set.
            Error::RendezvousTimeout { waiting_for, .. } => Error::RendezvousTimeout { waited: timeout, waiting_for },
            e => e,
        })
    }

    /// Makes the GPU `choice` names for this rank current on the calling thread (what
    /// [`communicator`](Self::communicator) does first); returns its ordinal, or `None` when
    /// the device was left alone.
    pub fn select_device(&self, nccl: &Nccl, choice: DeviceChoice) -> Result<Option<i32>, Error> {
        device::select(nccl, choice, self.local_rank())
    }

    /// This rank's communicator, with the defaults of [`Setup::within`]: one call from the
    /// launcher's world to an initialised communicator, within `timeout`.
    pub fn communicator(&self, nccl: &Nccl, timeout: Duration) -> Result<Communicator, Error> {
        self.communicator_with(nccl, &Setup::within(timeout))
    }

    /// This rank's communicator: selects the GPU, gets the unique id along the route, and
    /// joins with `ncclCommInitRank` (`Communicator::init_rank_with`, its creation deadline
    /// what is left), all within `setup.timeout`.
    pub fn communicator_with(&self, nccl: &Nccl, setup: &Setup) -> Result<Communicator, Error> {
        let deadline = Deadline::within(setup.timeout);
        device::select(nccl, setup.device, self.local_rank())?;
        let route = match &setup.route {
            Some(r) => r.clone(),
            None => self.id_route()?,
        };
        let (id, cleanup) = self.exchange(nccl, &route, deadline, setup.timeout)?;
        let size = i32::try_from(self.size()).expect("checked when the world was read");
        let rank = i32::try_from(self.rank()).expect("below the size");
        let left = deadline.left();
        let comm = Communicator::init_rank_with(nccl, size, &id, rank, &setup.options.clone().create_timeout(left));
        match cleanup {
            Cleanup::None => {}
            // Every rank has read the file once init has returned on the root (init waits for
            // all of them), or init failed: either way no later job should find it.
            #[cfg(unix)]
            Cleanup::File(path, key) => {
                let _ = rendezvous::remove_file(&path, &id, &key);
            }
        }
        Ok(comm?)
    }
}

/// `host:port` to an address, once: a name that does not resolve is an error naming it. An
/// IPv4 address is preferred, as the root of a named host listens on IPv4's unspecified
/// address.
fn resolve(host: &str, port: u16) -> Result<SocketAddr, Error> {
    let all: Vec<SocketAddr> = (host, port).to_socket_addrs().map(Iterator::collect).unwrap_or_default();
    all.iter()
        .find(|a| a.is_ipv4())
        .or(all.first())
        .copied()
        .ok_or_else(|| Error::Resolve { host: host.to_string(), port })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn world(vars: &[(&str, &str)]) -> World {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        World::from_vars(|k| map.get(k).cloned()).unwrap()
    }

    const TORCHRUN_2X4: &[(&str, &str)] = &[
        ("RANK", "5"),
        ("WORLD_SIZE", "8"),
        ("LOCAL_RANK", "1"),
        ("LOCAL_WORLD_SIZE", "4"),
        ("MASTER_ADDR", "node01"),
        ("MASTER_PORT", "29500"),
        ("TORCHELASTIC_RUN_ID", "job7"),
    ];

    #[test]
    fn routes_follow_the_launcher() {
        assert_eq!(world(&[]).id_route().unwrap(), IdRoute::Local);
        let w = world(&[("PMI_RANK", "1"), ("PMI_SIZE", "2"), ("MPI_LOCALRANKID", "1"), ("MPI_LOCALNRANKS", "2")]);
        assert_eq!(w.id_route().unwrap(), IdRoute::Mpi);
        // torchrun across hosts: every interface of the root, on a port derived from the job,
        // never torchrun's own.
        let w = world(TORCHRUN_2X4);
        let IdRoute::Tcp { bind, host, port } = w.id_route().unwrap() else { panic!() };
        assert!(bind.ip().is_unspecified() && host == "node01" && port != 29500 && bind.port() == port);
        assert_eq!(world(TORCHRUN_2X4).id_route().unwrap(), w.id_route().unwrap(), "every rank derives the same");
        // One host: loopback only.
        let w = world(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "2"),
            ("MASTER_ADDR", "h"),
            ("MASTER_PORT", "1234"),
        ]);
        let IdRoute::Tcp { bind, host, .. } = w.id_route().unwrap() else { panic!() };
        assert!(bind.ip().is_loopback() && host == "127.0.0.1");
        // NCCL_COMM_ID, then the explicit choice, win.
        let mut v = TORCHRUN_2X4.to_vec();
        v.push(("NCCL_COMM_ID", "node01:6000"));
        assert_eq!(world(&v).id_route().unwrap(), IdRoute::NcclCommId("node01:6000".into()));
        v.push((vars::ID_FILE, "/shared/id"));
        assert_eq!(world(&v).id_route().unwrap(), IdRoute::File("/shared/id".into()));
        v.push((vars::ID_ROUTE, "MPI"));
        assert_eq!(world(&v).id_route().unwrap(), IdRoute::Mpi);
    }

    #[test]
    fn routes_that_cannot_work_say_what_to_set() {
        // Explicit ranks across hosts without a root or a secret.
        let base = [(vars::RANK, "1"), (vars::WORLD_SIZE, "2"), (vars::LOCAL_RANK, "0"), (vars::LOCAL_SIZE, "1")];
        let e = world(&base).id_route().unwrap_err();
        assert!(e.to_string().contains(vars::SECRET), "{e}");
        let mut v = base.to_vec();
        v.push((vars::SECRET, "x"));
        let e = world(&v).id_route().unwrap_err();
        assert!(e.to_string().contains(vars::ROOT), "{e}");
        v.push((vars::ROOT, "10.1.2.3:4567"));
        assert_eq!(
            world(&v).id_route().unwrap(),
            IdRoute::Tcp { bind: "0.0.0.0:4567".parse().unwrap(), host: "10.1.2.3".into(), port: 4567 }
        );
        for (route, needle) in [
            ("local", "2 ranks"),
            ("nccl-comm-id", "NCCL_COMM_ID"),
            ("file", vars::ID_FILE),
            ("carrier-pigeon", "tcp, mpi"),
        ] {
            let mut v = v.clone();
            v.push((vars::ID_ROUTE, route));
            let e = world(&v).id_route().unwrap_err();
            assert!(e.to_string().contains(needle), "{route}: {e}");
        }
    }

    #[test]
    fn the_key_comes_from_the_secret_else_the_job() {
        let w = world(TORCHRUN_2X4);
        let mut v = TORCHRUN_2X4.to_vec();
        v.push((vars::SECRET, "abc"));
        assert_ne!(world(&v).rendezvous_key(), w.rendezvous_key());
        assert_eq!(world(&v).rendezvous_key(), Some(RendezvousKey::from_secret(b"abc")));
        let mut other = TORCHRUN_2X4.to_vec();
        other.retain(|(k, _)| *k != "TORCHELASTIC_RUN_ID");
        other.push(("TORCHELASTIC_RUN_ID", "job8"));
        assert_ne!(world(&other).rendezvous_key(), w.rendezvous_key(), "another job, another key");
        let w = world(&[("PMI_RANK", "1"), ("PMI_SIZE", "2"), ("MPI_LOCALRANKID", "1"), ("MPI_LOCALNRANKS", "2")]);
        assert_eq!(w.rendezvous_key(), None);
    }
}
