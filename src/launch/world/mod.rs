//! Which process this is: rank, size, local rank and local size, found in the variables the
//! launcher set, with the launcher's root address and job identity.
//!
//! Precedence (the innermost launcher wins; explicit variables override single fields):
//!
//! 1. `NCCL_TRAMPOLINE_RANK`, `_WORLD_SIZE`, `_LOCAL_RANK`, `_LOCAL_SIZE`, `_ROOT`, `_PORT`:
//!    each overrides the one field it names, over whatever launcher is found below (alone,
//!    they describe the whole job: launcher "explicit").
//! 2. torchrun / torch elastic: `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`,
//!    `MASTER_ADDR` (`MASTER_PORT` is torchrun's own store: never bound here).
//! 3. Open MPI: `OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}`.
//! 4. MVAPICH2: `MV2_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}`.
//! 5. MPICH / Intel MPI (Hydra): `PMI_RANK`, `PMI_SIZE`, `MPI_LOCALRANKID`, `MPI_LOCALNRANKS`.
//! 6. Slurm, inside an `srun` step (`SLURM_STEP_ID` set): `SLURM_PROCID`,
//!    `SLURM_STEP_NUM_TASKS`, `SLURM_LOCALID`, `SLURM_NODEID` with
//!    `SLURM_STEP_TASKS_PER_NODE`, root = first host of `SLURM_STEP_NODELIST`; the step's
//!    node list, node count, task counts and task count must agree with each other
//!    (`detect::slurm::consistency`).
//! 7. Kubeflow (`PET_NNODES`, `PET_NODE_RANK`, `PET_NPROC_PER_NODE`, `PET_MASTER_ADDR`): one
//!    process per node; more per node need torchrun, which reads `PET_*` itself.
//! 8. Nothing: a single process (launcher "standalone").
//!
//! torchrun started by srun, or mpirun inside a Slurm allocation, set several of these sets:
//! the innermost launcher is the one that started this process, so it wins.
//!
//! The parts, in the order `World::from_vars` runs them: `detect` asks one detector per
//! launcher (2-7 above), innermost first, each reading its variables through `reader`;
//! `place` lays the explicit numbers (1) over what the launcher said and checks that the four
//! hold together; `root` finds the root's host and the rendezvous port.

mod detect;
#[cfg(test)]
mod fixtures;
mod launcher;
mod place;
mod reader;
mod root;
pub mod vars;

use std::time::SystemTime;

use crate::launch::error::Error;
use crate::trace::trace_event;

pub use launcher::Launcher;

use detect::Found;
use place::Place;
use reader::Reader;

/// A secret, never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub(crate) Vec<u8>);

impl core::fmt::Debug for Secret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// This process's place in the job.
#[derive(Clone, Debug)]
pub struct World {
    rank: u32,
    size: u32,
    local_rank: u32,
    local_size: u32,
    launcher: Launcher,
    root_host: Option<String>,
    port: Option<u16>,
    reserved_port: Option<u16>,
    job: Option<String>,
    secret: Option<Secret>,
    route: Option<String>,
    id_file: Option<String>,
    nccl_comm_id: Option<String>,
    #[cfg_attr(not(unix), allow(dead_code))]
    found_at: SystemTime,
}

impl World {
    /// The world of this process, from its environment.
    pub fn from_env() -> Result<World, Error> {
        Self::from_vars(|name| match std::env::var(name) {
            Ok(v) => Some(v),
            // A value that is not UTF-8 is reported as it is, not skipped.
            Err(std::env::VarError::NotUnicode(v)) => Some(v.to_string_lossy().into_owned()),
            Err(std::env::VarError::NotPresent) => None,
        })
    }

    /// The world described by the variables `get` returns (`from_env` with another source:
    /// tests, or a launcher's environment captured elsewhere). Empty values count as unset.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<World, Error> {
        let r = Reader { get: &get };
        let found = detect::innermost(&r)?;
        let Place { launcher, rank, size, local_rank, local_size } = place::resolve(&r, &found)?;
        let Found { root_host, reserved_port, job, .. } = found;
        let (root_host, port) = root::resolve(&r, root_host, reserved_port)?;
        let secret = (get)(vars::SECRET).filter(|s| !s.is_empty()).map(|s| Secret(s.into_bytes()));
        let world = World {
            rank,
            size,
            local_rank,
            local_size,
            launcher,
            root_host,
            port,
            reserved_port: reserved_port.map(|(_, p)| p),
            job,
            secret,
            route: r.raw(vars::ID_ROUTE),
            id_file: r.raw(vars::ID_FILE),
            nccl_comm_id: r.raw("NCCL_COMM_ID"),
            found_at: SystemTime::now(),
        };
        // Never the job's identity (the rendezvous key comes from it when no secret is set) nor
        // the secret: only where the key comes from.
        trace_event!(launch, INFO, "launch.world", launcher = %world.launcher, rank = world.rank, size = world.size,
            local_rank = world.local_rank, local_size = world.local_size, root_host = world.root_host.as_deref(),
            port = world.port,
            key = match (&world.secret, &world.job) {
                (Some(_), _) => "secret",
                (None, Some(_)) => "job id",
                (None, None) => "none",
            },
            route = %world.id_route().map_or_else(|e| format!("none ({e})"), |r| r.name().to_string()),
            "the launcher's world was read");
        Ok(world)
    }

    /// A single-process world (rank 0 of 1), whatever the environment says.
    pub fn single() -> World {
        World {
            rank: 0,
            size: 1,
            local_rank: 0,
            local_size: 1,
            launcher: Launcher::Standalone,
            root_host: None,
            port: None,
            reserved_port: None,
            job: None,
            secret: None,
            route: None,
            id_file: None,
            nccl_comm_id: None,
            found_at: SystemTime::now(),
        }
    }

    /// This process's rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The rank among those on this host (the GPU it takes by default).
    pub fn local_rank(&self) -> u32 {
        self.local_rank
    }

    /// The number of ranks on this host.
    pub fn local_size(&self) -> u32 {
        self.local_size
    }

    /// The launcher whose variables were used.
    pub fn launcher(&self) -> Launcher {
        self.launcher
    }

    /// The root rank's host as the launcher (or `NCCL_TRAMPOLINE_ROOT`) names it.
    pub fn root_host(&self) -> Option<&str> {
        self.root_host.as_deref()
    }

    /// The configured rendezvous port (`NCCL_TRAMPOLINE_PORT` or `NCCL_TRAMPOLINE_ROOT`).
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// The launcher's own port (torchrun's store), which the rendezvous never binds.
    pub fn reserved_port(&self) -> Option<u16> {
        self.reserved_port
    }

    /// The launcher's identity of this job (`slurm:1234.0`), when it has one.
    pub fn job(&self) -> Option<&str> {
        self.job.as_deref()
    }

    /// Whether every rank runs on this host.
    pub fn is_single_host(&self) -> bool {
        self.local_size == self.size
    }

    /// Whether this is the root rank (rank 0), which makes the unique id.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }

    pub(crate) fn secret(&self) -> Option<&Secret> {
        self.secret.as_ref()
    }

    pub(crate) fn route_request(&self) -> Option<&str> {
        self.route.as_deref()
    }

    pub(crate) fn id_file(&self) -> Option<&str> {
        self.id_file.as_deref()
    }

    pub(crate) fn nccl_comm_id(&self) -> Option<&str> {
        self.nccl_comm_id.as_deref()
    }

    /// When the world was read (the file route refuses files much older than this).
    #[cfg(unix)]
    pub(crate) fn found_at(&self) -> SystemTime {
        self.found_at
    }
}
