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
//!    (`slurm_consistency`).
//! 7. Kubeflow (`PET_NNODES`, `PET_NODE_RANK`, `PET_NPROC_PER_NODE`, `PET_MASTER_ADDR`): one
//!    process per node; more per node need torchrun, which reads `PET_*` itself.
//! 8. Nothing: a single process (launcher "standalone").
//!
//! torchrun started by srun, or mpirun inside a Slurm allocation, set several of these sets:
//! the innermost launcher is the one that started this process, so it wins.

use std::time::SystemTime;

use crate::launch::error::Error;
use crate::launch::hostlist;

/// The launcher that started this process, as far as its variables tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Launcher {
    /// No launcher: one process.
    Standalone,
    /// Only the crate's own `NCCL_TRAMPOLINE_*` variables.
    Explicit,
    /// torchrun / torch elastic.
    Torchrun,
    /// Open MPI's `mpirun`.
    OpenMpi,
    /// MVAPICH2's `mpirun_rsh` or `mpiexec`.
    Mvapich2,
    /// MPICH's or Intel MPI's Hydra `mpiexec`.
    Mpich,
    /// Slurm's `srun`.
    Slurm,
    /// The Kubeflow training operator (`PET_*`), one process per node.
    Kubeflow,
}

impl Launcher {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Standalone => "standalone",
            Launcher::Explicit => "explicit",
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "Open MPI",
            Launcher::Mvapich2 => "MVAPICH2",
            Launcher::Mpich => "MPICH/Hydra",
            Launcher::Slurm => "Slurm",
            Launcher::Kubeflow => "Kubeflow",
        }
    }

    /// Whether an MPI library started this process (and can broadcast the id).
    pub fn is_mpi(self) -> bool {
        matches!(self, Launcher::OpenMpi | Launcher::Mvapich2 | Launcher::Mpich)
    }
}

impl core::fmt::Display for Launcher {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// The crate's own variables (prefix `NCCL_TRAMPOLINE_`).
pub mod vars {
    /// This process's rank.
    pub const RANK: &str = "NCCL_TRAMPOLINE_RANK";
    /// The number of ranks.
    pub const WORLD_SIZE: &str = "NCCL_TRAMPOLINE_WORLD_SIZE";
    /// The rank among the ranks on this host.
    pub const LOCAL_RANK: &str = "NCCL_TRAMPOLINE_LOCAL_RANK";
    /// The number of ranks on this host.
    pub const LOCAL_SIZE: &str = "NCCL_TRAMPOLINE_LOCAL_SIZE";
    /// The root rank's host, or `host:port` (`[v6]:port`).
    pub const ROOT: &str = "NCCL_TRAMPOLINE_ROOT";
    /// The TCP rendezvous port (default: derived from the job's key).
    pub const PORT: &str = "NCCL_TRAMPOLINE_PORT";
    /// The per-job secret of the TCP and file rendezvous (default: derived from the job id).
    pub const SECRET: &str = "NCCL_TRAMPOLINE_SECRET";
    /// How the unique id travels: `tcp`, `mpi`, `nccl-comm-id`, `file` or `local`.
    pub const ID_ROUTE: &str = "NCCL_TRAMPOLINE_ID_ROUTE";
    /// The file of the file route (implies it when `ID_ROUTE` is unset).
    pub const ID_FILE: &str = "NCCL_TRAMPOLINE_ID_FILE";
    /// The MPI library to load for the MPI route.
    pub const MPI_LIBRARY: &str = "NCCL_TRAMPOLINE_MPI_LIBRARY";
}

/// A secret, never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub(crate) Vec<u8>);

impl core::fmt::Debug for Secret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// One field and the variable it came from, for error messages.
#[derive(Clone, Debug)]
struct Field {
    value: u32,
    var: &'static str,
    /// How an error shows a value derived from a variable rather than read from it (Slurm's
    /// tasks on this node, from the task count list): `VAR=value (what was derived)`.
    derived: Option<String>,
}

impl Field {
    fn new(value: u32, var: &'static str) -> Self {
        Field { value, var, derived: None }
    }

    fn shown(&self) -> String {
        match &self.derived {
            Some(d) => d.clone(),
            None => format!("{}={}", self.var, self.value),
        }
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

/// The variables one launcher sets, read from the environment.
#[derive(Default)]
struct Found {
    rank: Option<Field>,
    size: Option<Field>,
    local_rank: Option<Field>,
    local_size: Option<Field>,
    root_host: Option<String>,
    reserved_port: Option<u16>,
    job: Option<String>,
    /// The launcher's names for rank, size, local rank and local size.
    names: [&'static str; 4],
}

/// Reads variables through `get`, turning a malformed value into a typed error.
struct Reader<'a> {
    get: &'a dyn Fn(&str) -> Option<String>,
}

impl Reader<'_> {
    fn raw(&self, var: &str) -> Option<String> {
        (self.get)(var).filter(|v| !v.is_empty())
    }

    fn has(&self, var: &str) -> bool {
        self.raw(var).is_some()
    }

    fn number(&self, var: &'static str) -> Result<Option<Field>, Error> {
        let Some(v) = self.raw(var) else { return Ok(None) };
        let value = v.trim().parse::<u32>().map_err(|_| Error::LauncherVariable {
            variable: var.into(),
            value: v.clone(),
            expected: "a non-negative integer",
        })?;
        Ok(Some(Field::new(value, var)))
    }

    /// A launcher's root address (`MASTER_ADDR`): a host name or address, `[v6]` allowed; one
    /// that names no host (blank, `[]`) is an error, not a root host of "".
    fn host(&self, var: &'static str) -> Result<Option<String>, Error> {
        let Some(v) = self.raw(var) else { return Ok(None) };
        match host_of(&v) {
            h if h.is_empty() => {
                Err(Error::LauncherVariable { variable: var.into(), value: v, expected: "a host name or address" })
            }
            h => Ok(Some(h)),
        }
    }

    fn port(&self, var: &'static str) -> Result<Option<u16>, Error> {
        let Some(v) = self.raw(var) else { return Ok(None) };
        match v.trim().parse::<u16>() {
            Ok(p) if p > 0 => Ok(Some(p)),
            _ => Err(Error::LauncherVariable { variable: var.into(), value: v, expected: "a TCP port (1-65535)" }),
        }
    }
}

/// A complete launcher set or an error naming what is missing: `vars` are the set's variables
/// in order, `got` whether each is present.
fn require_all(launcher: Launcher, r: &Reader<'_>, vars: &[&'static str]) -> Result<(), Error> {
    let (present, missing): (Vec<&str>, Vec<&str>) = vars.iter().partition(|v| r.has(v));
    if !present.is_empty() && !missing.is_empty() {
        return Err(Error::LauncherIncomplete {
            launcher: launcher.name(),
            present: present.into_iter().map(String::from).collect(),
            missing: missing.into_iter().map(String::from).collect(),
        });
    }
    Ok(())
}

/// `VAR=value` for an error message, the value's control characters escaped (`\n`, `\u{0}`):
/// a message stays on one line whatever a variable holds.
fn shown(var: &str, value: &str) -> String {
    format!("{var}={}", value.escape_debug())
}

fn host_of(addr: &str) -> String {
    let a = addr.trim();
    a.strip_prefix('[').and_then(|a| a.strip_suffix(']')).unwrap_or(a).to_string()
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
        let (launcher, found) = detect(&r)?;

        let explicit = [
            r.number(vars::RANK)?,
            r.number(vars::WORLD_SIZE)?,
            r.number(vars::LOCAL_RANK)?,
            r.number(vars::LOCAL_SIZE)?,
        ];
        let any_explicit = explicit.iter().any(Option::is_some);
        let [e_rank, e_size, e_local_rank, e_local_size] = explicit;
        let launcher = if launcher == Launcher::Standalone && any_explicit { Launcher::Explicit } else { launcher };

        let (rank, size, local_rank, local_size) = if launcher == Launcher::Standalone {
            let f = |value, var| Some(Field::new(value, var));
            (f(0, "(standalone)"), f(1, "(standalone)"), f(0, "(standalone)"), f(1, "(standalone)"))
        } else {
            (
                e_rank.or(found.rank),
                e_size.or(found.size),
                e_local_rank.or(found.local_rank),
                e_local_size.or(found.local_size),
            )
        };
        let explicit_names = [vars::RANK, vars::WORLD_SIZE, vars::LOCAL_RANK, vars::LOCAL_SIZE];
        let missing: Vec<String> = [rank.is_none(), size.is_none(), local_rank.is_none(), local_size.is_none()]
            .iter()
            .zip(found.names.iter().zip(explicit_names))
            .filter(|(m, _)| **m)
            .map(|(_, (l, e))| if l.is_empty() || *l == e { e.to_string() } else { format!("{l} or {e}") })
            .collect();
        let (Some(rank), Some(size), Some(local_rank), Some(local_size)) = (rank, size, local_rank, local_size) else {
            let present =
                explicit_names.iter().chain(found.names.iter()).filter(|v| r.has(v)).map(|v| v.to_string()).collect();
            return Err(Error::LauncherIncomplete { launcher: launcher.name(), present, missing });
        };
        check(&rank, &size, &local_rank, &local_size)?;

        // NCCL_TRAMPOLINE_ROOT: `host`, `host:port` or `[v6]:port`.
        let (mut root_host, mut port) = (found.root_host, r.port(vars::PORT)?);
        if let Some(root) = r.raw(vars::ROOT) {
            let (host, p) = split_host_port(&root).ok_or_else(|| Error::LauncherVariable {
                variable: vars::ROOT.into(),
                value: root.clone(),
                expected: "a host, host:port or [IPv6]:port",
            })?;
            root_host = Some(host);
            if let Some(p) = p {
                if port.is_some_and(|q| q != p) {
                    return Err(Error::LauncherContradiction {
                        variables: vec![shown(vars::ROOT, &root), format!("{}={}", vars::PORT, port.unwrap())],
                        detail: "two different rendezvous ports".into(),
                    });
                }
                port = Some(p);
            }
        }
        if let (Some(p), Some(q)) = (port, found.reserved_port) {
            if p == q {
                return Err(Error::LauncherContradiction {
                    variables: vec![format!("{}={p}", vars::PORT), format!("MASTER_PORT={q}")],
                    detail: "the rendezvous port is torchrun's own store port".into(),
                });
            }
        }
        let secret = (get)(vars::SECRET).filter(|s| !s.is_empty()).map(|s| Secret(s.into_bytes()));
        Ok(World {
            rank: rank.value,
            size: size.value,
            local_rank: local_rank.value,
            local_size: local_size.value,
            launcher,
            root_host,
            port,
            reserved_port: found.reserved_port,
            job: found.job,
            secret,
            route: r.raw(vars::ID_ROUTE),
            id_file: r.raw(vars::ID_FILE),
            nccl_comm_id: r.raw("NCCL_COMM_ID"),
            found_at: SystemTime::now(),
        })
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

/// `host`, `host:port`, `[v6]` or `[v6]:port`; a bare IPv6 address has no port.
fn split_host_port(s: &str) -> Option<(String, Option<u16>)> {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse::<u16>().ok().filter(|p| *p > 0)?),
        };
        return (!host.is_empty()).then(|| (host.to_string(), port));
    }
    match s.matches(':').count() {
        0 => (!s.is_empty()).then(|| (s.to_string(), None)),
        1 => {
            let (h, p) = s.split_once(':')?;
            let p = p.parse::<u16>().ok().filter(|p| *p > 0)?;
            (!h.is_empty()).then(|| (h.to_string(), Some(p)))
        }
        _ => s.parse::<std::net::Ipv6Addr>().ok().map(|_| (s.to_string(), None)),
    }
}

fn check(rank: &Field, size: &Field, local_rank: &Field, local_size: &Field) -> Result<(), Error> {
    let bad = |fields: &[&Field], detail: &str| Error::LauncherContradiction {
        variables: fields.iter().map(|f| f.shown()).collect(),
        detail: detail.into(),
    };
    if size.value == 0 {
        return Err(bad(&[size], "a job of zero ranks"));
    }
    if size.value > i32::MAX as u32 {
        return Err(bad(&[size], "more ranks than NCCL counts (an int)"));
    }
    if rank.value >= size.value {
        return Err(bad(&[rank, size], "the rank is not below the size"));
    }
    if local_size.value == 0 {
        return Err(bad(&[local_size], "zero ranks on this host"));
    }
    if local_rank.value >= local_size.value {
        return Err(bad(&[local_rank, local_size], "the local rank is not below the local size"));
    }
    if local_size.value > size.value {
        return Err(bad(&[local_size, size], "more ranks on this host than in the job"));
    }
    Ok(())
}

/// Slurm's variables against each other, beyond what [`check`] sees in rank and size: what
/// one `srun` step sets describes one step (`env_array_for_step`, Slurm's src/common/env.c),
/// so its node list, node count, task count list and task count agree, and this task's rank
/// and node lie inside them. Compared only where both sides are the step's own (the job-level
/// fallbacks of older Slurm may describe the allocation, not the step). `SLURM_NTASKS` and
/// `SLURM_NNODES` are the step's too, unless `srun --preserve-env` kept the job's: a rank is
/// below the first, the step's nodes are at most the second.
fn slurm_consistency(
    r: &Reader<'_>,
    ntasks: &'static str,
    per_node: &'static str,
    nodes: &'static str,
) -> Result<(), Error> {
    let shown = |var: &str| shown(var, &r.raw(var).unwrap_or_default());
    let contradiction = |vars: &[&str], detail: String| Error::LauncherContradiction {
        variables: vars.iter().map(|v| shown(v)).collect(),
        detail,
    };
    let step = ntasks == "SLURM_STEP_NUM_TASKS";
    let (procid, node) = (r.number("SLURM_PROCID")?, r.number("SLURM_NODEID")?);
    if let (true, Some(rank), Some(all)) = (step, &procid, r.number("SLURM_NTASKS")?) {
        if rank.value >= all.value {
            return Err(contradiction(&["SLURM_PROCID", "SLURM_NTASKS"], "the rank is not below the size".into()));
        }
    }
    let Some(list) = r.raw(nodes) else { return Ok(()) };
    let hosts = hostlist::len(&list).map_err(|reason| Error::LauncherList {
        variable: nodes.into(),
        value: list.clone(),
        reason,
    })?;
    if let Some(node) = &node {
        if u64::from(node.value) >= hosts {
            return Err(contradiction(
                &["SLURM_NODEID", nodes],
                format!("the node id is not below the {hosts} nodes of the node list"),
            ));
        }
    }
    if nodes != "SLURM_STEP_NODELIST" {
        return Ok(());
    }
    if let Some(count) = r.number("SLURM_STEP_NUM_NODES")? {
        if u64::from(count.value) != hosts {
            return Err(contradiction(&["SLURM_STEP_NUM_NODES", nodes], format!("the node list has {hosts} nodes")));
        }
    }
    if let Some(job_nodes) = r.number("SLURM_NNODES")? {
        if u64::from(job_nodes.value) < hosts {
            return Err(contradiction(
                &["SLURM_NNODES", nodes],
                format!("the step's node list has {hosts} nodes, more than the job"),
            ));
        }
    }
    if per_node != "SLURM_STEP_TASKS_PER_NODE" {
        return Ok(());
    }
    let Some(counts) = r.raw(per_node) else { return Ok(()) };
    let (covered, tasks) = hostlist::task_totals(&counts).map_err(|reason| Error::LauncherList {
        variable: per_node.into(),
        value: counts.clone(),
        reason,
    })?;
    if covered != hosts {
        return Err(contradiction(
            &[per_node, nodes],
            format!("the task counts cover {covered} nodes, the node list has {hosts}"),
        ));
    }
    if let (true, Some(size)) = (step, r.number(ntasks)?) {
        if u64::from(size.value) != tasks {
            return Err(contradiction(&[ntasks, per_node], format!("the task counts add up to {tasks}")));
        }
    }
    Ok(())
}

/// The innermost launcher whose variables are present, and what they say.
fn detect(r: &Reader<'_>) -> Result<(Launcher, Found), Error> {
    // torchrun / torch elastic (torch/distributed/elastic/agent/server/local_elastic_agent.py
    // sets these for every worker).
    if r.has("RANK") || r.has("WORLD_SIZE") || r.has("TORCHELASTIC_RUN_ID") {
        let l = Launcher::Torchrun;
        let core = ["RANK", "WORLD_SIZE"];
        require_all(l, r, &core)?;
        if !r.has("RANK") {
            return Err(Error::LauncherIncomplete {
                launcher: l.name(),
                present: vec!["TORCHELASTIC_RUN_ID".into()],
                missing: core.iter().map(|s| s.to_string()).collect(),
            });
        }
        let run = r.raw("TORCHELASTIC_RUN_ID").filter(|id| id != "none");
        let master = match (r.raw("MASTER_ADDR"), r.raw("MASTER_PORT")) {
            (Some(a), Some(p)) => Some(format!("{a}:{p}")),
            (Some(a), None) => Some(a),
            _ => None,
        };
        let restart = r.raw("TORCHELASTIC_RESTART_COUNT").unwrap_or_else(|| "0".into());
        // A restart gives the workers new ranks: it is a new job for the rendezvous.
        let job = match (run, master) {
            (Some(run), m) => Some(format!("torchrun:{run}:{restart}:{}", m.unwrap_or_default())),
            (None, Some(m)) => Some(format!("torchrun:{m}:{restart}")),
            (None, None) => None,
        };
        return Ok((
            l,
            Found {
                rank: r.number("RANK")?,
                size: r.number("WORLD_SIZE")?,
                local_rank: r.number("LOCAL_RANK")?,
                local_size: r.number("LOCAL_WORLD_SIZE")?,
                root_host: r.host("MASTER_ADDR")?,
                reserved_port: r.port("MASTER_PORT")?,
                job,
                names: ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"],
            },
        ));
    }
    // MPI launchers: the four variables of each come as a set.
    for (l, set, job_vars) in [
        (
            Launcher::OpenMpi,
            [
                "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_SIZE",
                "OMPI_COMM_WORLD_LOCAL_RANK",
                "OMPI_COMM_WORLD_LOCAL_SIZE",
            ],
            &["OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"][..],
        ),
        (
            Launcher::Mvapich2,
            ["MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"],
            &["MPIRUN_ID"][..],
        ),
        (Launcher::Mpich, ["PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"], &["PMI_KVSNAME"][..]),
    ] {
        if set.iter().any(|v| r.has(v)) {
            require_all(l, r, &set)?;
            let job = job_vars.iter().find_map(|v| r.raw(v)).map(|j| format!("{}:{j}", l.name()));
            return Ok((
                l,
                Found {
                    rank: r.number(set[0])?,
                    size: r.number(set[1])?,
                    local_rank: r.number(set[2])?,
                    local_size: r.number(set[3])?,
                    root_host: None,
                    reserved_port: None,
                    job,
                    names: set,
                },
            ));
        }
    }
    // Slurm: only inside a step. A batch script also has SLURM_PROCID=0 and the job's
    // SLURM_NTASKS, but no step: a program run there directly is one process.
    if r.has("SLURM_STEP_ID") {
        let l = Launcher::Slurm;
        let ntasks = if r.has("SLURM_STEP_NUM_TASKS") { "SLURM_STEP_NUM_TASKS" } else { "SLURM_NTASKS" };
        let per_node =
            if r.has("SLURM_STEP_TASKS_PER_NODE") { "SLURM_STEP_TASKS_PER_NODE" } else { "SLURM_TASKS_PER_NODE" };
        let nodes = if r.has("SLURM_STEP_NODELIST") { "SLURM_STEP_NODELIST" } else { "SLURM_JOB_NODELIST" };
        require_all(l, r, &["SLURM_PROCID", ntasks, "SLURM_LOCALID", "SLURM_NODEID", per_node, nodes])?;
        let list_error = |variable: &str, value: String| {
            let variable = variable.to_string();
            move |reason| Error::LauncherList { variable, value, reason }
        };
        let local_size = match (r.number("SLURM_NODEID")?, r.raw(per_node)) {
            (Some(node), Some(list)) => {
                let n = hostlist::tasks_on_node(&list, u64::from(node.value))
                    .map_err(list_error(per_node, list.clone()))?
                    .ok_or_else(|| Error::LauncherContradiction {
                        variables: vec![node.shown(), shown(per_node, &list)],
                        detail: "the node id is past the nodes of the task count list".into(),
                    })?;
                let value = u32::try_from(n).map_err(|_| Error::LauncherVariable {
                    variable: per_node.into(),
                    value: list.clone(),
                    expected: "task counts that fit 32 bits",
                })?;
                let derived = Some(format!("{} ({n} on node {})", shown(per_node, &list), node.value));
                Some(Field { value, var: per_node, derived })
            }
            _ => None,
        };
        let root_host = match r.raw(nodes) {
            Some(list) => Some(hostlist::first(&list).map_err(list_error(nodes, list.clone()))?),
            None => None,
        };
        slurm_consistency(r, ntasks, per_node, nodes)?;
        let job = r.raw("SLURM_JOB_ID").map(|j| format!("slurm:{j}.{}", r.raw("SLURM_STEP_ID").unwrap_or_default()));
        return Ok((
            l,
            Found {
                rank: r.number("SLURM_PROCID")?,
                size: r.number(ntasks)?,
                local_rank: r.number("SLURM_LOCALID")?,
                local_size,
                root_host,
                reserved_port: None,
                job,
                names: ["SLURM_PROCID", ntasks, "SLURM_LOCALID", per_node],
            },
        ));
    }
    // Kubeflow's PET_* are torchrun's arguments; without torchrun each pod is one process.
    if r.has("PET_NNODES") || r.has("PET_NODE_RANK") {
        let l = Launcher::Kubeflow;
        require_all(l, r, &["PET_NNODES", "PET_NODE_RANK"])?;
        if let Some(n) = r.raw("PET_NPROC_PER_NODE") {
            if n.trim() != "1" {
                return Err(Error::LauncherVariable {
                    variable: "PET_NPROC_PER_NODE".into(),
                    value: n,
                    expected: "1: several processes per node have no rank of their own here; start them with torchrun, which reads PET_*",
                });
            }
        }
        let master = match (r.raw("PET_MASTER_ADDR"), r.raw("PET_MASTER_PORT")) {
            (Some(a), Some(p)) => Some(format!("kubeflow:{a}:{p}")),
            _ => None,
        };
        return Ok((
            l,
            Found {
                rank: r.number("PET_NODE_RANK")?,
                size: r.number("PET_NNODES")?,
                local_rank: Some(Field::new(0, "PET_NPROC_PER_NODE")),
                local_size: Some(Field::new(1, "PET_NPROC_PER_NODE")),
                root_host: r.host("PET_MASTER_ADDR")?,
                reserved_port: r.port("PET_MASTER_PORT")?,
                job: master,
                names: ["PET_NODE_RANK", "PET_NNODES", "", ""],
            },
        ));
    }
    Ok((Launcher::Standalone, Found::default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn world(vars: &[(&str, &str)]) -> Result<World, Error> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        World::from_vars(|k| map.get(k).cloned())
    }

    fn place(w: &World) -> (u32, u32, u32, u32, Launcher) {
        (w.rank(), w.size(), w.local_rank(), w.local_size(), w.launcher())
    }

    #[test]
    fn nothing_set_is_one_standalone_process() {
        let w = world(&[]).unwrap();
        assert_eq!(place(&w), (0, 1, 0, 1, Launcher::Standalone));
        assert!(w.is_root() && w.is_single_host() && w.root_host().is_none() && w.job().is_none());
        // A Slurm batch script without a step is not a job of SLURM_NTASKS ranks.
        let w = world(&[("SLURM_JOB_ID", "77"), ("SLURM_PROCID", "0"), ("SLURM_NTASKS", "8")]).unwrap();
        assert_eq!(place(&w), (0, 1, 0, 1, Launcher::Standalone));
    }

    #[test]
    fn torchrun() {
        let w = world(&[
            ("RANK", "5"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "4"),
            ("GROUP_RANK", "1"),
            ("MASTER_ADDR", "node01"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_RUN_ID", "job7"),
            ("TORCHELASTIC_RESTART_COUNT", "2"),
        ])
        .unwrap();
        assert_eq!(place(&w), (5, 8, 1, 4, Launcher::Torchrun));
        assert_eq!((w.root_host(), w.reserved_port(), w.port()), (Some("node01"), Some(29500), None));
        assert_eq!(w.job(), Some("torchrun:job7:2:node01:29500"));
        assert!(!w.is_single_host());
        // --standalone: run id "none" is no identity; the store's address is.
        let w = world(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "0"),
            ("LOCAL_WORLD_SIZE", "2"),
            ("MASTER_ADDR", "[::1]"),
            ("MASTER_PORT", "41000"),
            ("TORCHELASTIC_RUN_ID", "none"),
        ])
        .unwrap();
        assert_eq!(w.job(), Some("torchrun:[::1]:41000:0"));
        assert_eq!(w.root_host(), Some("::1"));
        assert!(w.is_single_host());
    }

    #[test]
    fn mpi_launchers() {
        let w = world(&[
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ("OMPI_MCA_ess_base_jobid", "1207566337"),
        ])
        .unwrap();
        assert_eq!(place(&w), (3, 4, 1, 2, Launcher::OpenMpi));
        assert_eq!(w.job(), Some("Open MPI:1207566337"));
        assert!(w.launcher().is_mpi() && w.root_host().is_none());

        let w =
            world(&[("PMI_RANK", "1"), ("PMI_SIZE", "2"), ("MPI_LOCALRANKID", "1"), ("MPI_LOCALNRANKS", "2")]).unwrap();
        assert_eq!(place(&w), (1, 2, 1, 2, Launcher::Mpich));
        assert_eq!(w.job(), None);

        let w = world(&[
            ("MV2_COMM_WORLD_RANK", "2"),
            ("MV2_COMM_WORLD_SIZE", "3"),
            ("MV2_COMM_WORLD_LOCAL_RANK", "0"),
            ("MV2_COMM_WORLD_LOCAL_SIZE", "1"),
        ])
        .unwrap();
        assert_eq!(place(&w), (2, 3, 0, 1, Launcher::Mvapich2));
        // MVAPICH2 under Hydra also sets PMI_*: its own set is the more specific.
        let w = world(&[
            ("MV2_COMM_WORLD_RANK", "2"),
            ("MV2_COMM_WORLD_SIZE", "3"),
            ("MV2_COMM_WORLD_LOCAL_RANK", "0"),
            ("MV2_COMM_WORLD_LOCAL_SIZE", "1"),
            ("PMI_RANK", "2"),
            ("PMI_SIZE", "3"),
            ("MPI_LOCALRANKID", "0"),
            ("MPI_LOCALNRANKS", "1"),
        ])
        .unwrap();
        assert_eq!(w.launcher(), Launcher::Mvapich2);
    }

    fn slurm(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        let mut v = vec![
            ("SLURM_JOB_ID", "4242"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "5"),
            ("SLURM_STEP_NUM_TASKS", "7"),
            ("SLURM_NTASKS", "99"),
            ("SLURM_LOCALID", "1"),
            ("SLURM_NODEID", "2"),
            ("SLURM_STEP_TASKS_PER_NODE", "2(x3),1"),
            ("SLURM_STEP_NODELIST", "gpu[01-03],cpu9"),
        ];
        for (k, val) in extra {
            v.retain(|(kk, _)| kk != k);
            if !val.is_empty() {
                v.push((k, val));
            }
        }
        v
    }

    #[test]
    fn slurm_step_with_a_compressed_node_list() {
        let w = world(&slurm(&[])).unwrap();
        assert_eq!(place(&w), (5, 7, 1, 2, Launcher::Slurm));
        assert_eq!((w.root_host(), w.job()), (Some("gpu01"), Some("slurm:4242.0")));
        // The fourth node has one task.
        let w = world(&slurm(&[("SLURM_PROCID", "6"), ("SLURM_LOCALID", "0"), ("SLURM_NODEID", "3")])).unwrap();
        assert_eq!(place(&w), (6, 7, 0, 1, Launcher::Slurm));
        // Older Slurm: the job-level names.
        let w = world(&slurm(&[
            ("SLURM_STEP_NUM_TASKS", ""),
            ("SLURM_NTASKS", "7"),
            ("SLURM_STEP_TASKS_PER_NODE", ""),
            ("SLURM_TASKS_PER_NODE", "2(x3),1"),
            ("SLURM_STEP_NODELIST", ""),
            ("SLURM_JOB_NODELIST", "n[7-9]"),
        ]))
        .unwrap();
        assert_eq!((w.size(), w.root_host()), (7, Some("n7")));
    }

    #[test]
    fn slurm_errors_name_the_variable() {
        // The reason is the reason, not what was expected ("expected `[` without `]`" before).
        let e = world(&slurm(&[("SLURM_STEP_NODELIST", "gpu[01-")])).unwrap_err();
        assert!(matches!(&e, Error::LauncherList { variable, .. } if variable == "SLURM_STEP_NODELIST"), "{e}");
        assert_eq!(e.to_string(), r#"launcher variable SLURM_STEP_NODELIST="gpu[01-": `[` without `]`"#);
        let e = world(&slurm(&[("SLURM_STEP_TASKS_PER_NODE", "2(3),1")])).unwrap_err();
        assert_eq!(e.to_string(), r#"launcher variable SLURM_STEP_TASKS_PER_NODE="2(3),1": a repeat is not `(xN)`"#);
        let e = world(&slurm(&[("SLURM_NODEID", "9")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "launcher variables contradict each other: the node id is past the nodes of the task count list \
             (SLURM_NODEID=9, SLURM_STEP_TASKS_PER_NODE=2(x3),1)"
        );
        let e = world(&slurm(&[("SLURM_LOCALID", "")])).unwrap_err();
        match e {
            Error::LauncherIncomplete { launcher, missing, .. } => {
                assert_eq!((launcher, missing), ("Slurm", vec!["SLURM_LOCALID".to_string()]))
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn contradictory_slurm_variables_are_named_with_their_values() {
        for (extra, want) in [
            (
                &[("SLURM_NTASKS", "5")][..],
                "the rank is not below the size (SLURM_PROCID=5, SLURM_NTASKS=5)",
            ),
            (
                &[("SLURM_LOCALID", "2")],
                "the local rank is not below the local size (SLURM_LOCALID=2, SLURM_STEP_TASKS_PER_NODE=2(x3),1 (2 on node 2))",
            ),
            (
                &[("SLURM_STEP_TASKS_PER_NODE", "2(x5),1"), ("SLURM_STEP_NUM_TASKS", "11")],
                "the task counts cover 6 nodes, the node list has 4 (SLURM_STEP_TASKS_PER_NODE=2(x5),1, SLURM_STEP_NODELIST=gpu[01-03],cpu9)",
            ),
            (
                &[("SLURM_STEP_NODELIST", "gpu[01-02]")],
                "the node id is not below the 2 nodes of the node list (SLURM_NODEID=2, SLURM_STEP_NODELIST=gpu[01-02])",
            ),
            (
                &[("SLURM_STEP_NUM_NODES", "3")],
                "the node list has 4 nodes (SLURM_STEP_NUM_NODES=3, SLURM_STEP_NODELIST=gpu[01-03],cpu9)",
            ),
            (
                &[("SLURM_NNODES", "2")],
                "the step's node list has 4 nodes, more than the job (SLURM_NNODES=2, SLURM_STEP_NODELIST=gpu[01-03],cpu9)",
            ),
            (
                &[("SLURM_STEP_NUM_TASKS", "8"), ("SLURM_NTASKS", "8")],
                "the task counts add up to 7 (SLURM_STEP_NUM_TASKS=8, SLURM_STEP_TASKS_PER_NODE=2(x3),1)",
            ),
        ] {
            let e = world(&slurm(extra)).unwrap_err();
            assert!(matches!(e, Error::LauncherContradiction { .. }), "{extra:?}: {e}");
            assert!(e.to_string().contains(want), "{extra:?}: {e}");
        }
        // Consistent values, the step's counts given too, pass.
        let w = world(&slurm(&[("SLURM_STEP_NUM_NODES", "4"), ("SLURM_NNODES", "4"), ("SLURM_NTASKS", "7")])).unwrap();
        assert_eq!(place(&w), (5, 7, 1, 2, Launcher::Slurm));
        // A value with control characters is shown escaped, on one line.
        let e = world(&slurm(&[("SLURM_STEP_NODELIST", "a\r\n\u{4}b")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            r"launcher variables contradict each other: the node id is not below the 1 nodes of the node list (SLURM_NODEID=2, SLURM_STEP_NODELIST=a\r\n\u{4}b)"
        );
        // A node list of 2^64 hosts is counted, not expanded.
        let e = world(&slurm(&[("SLURM_STEP_NODELIST", "n[0-18446744073709551615]")])).unwrap_err();
        assert!(e.to_string().contains("the task counts cover 4 nodes, the node list has 18446744073709551615"), "{e}");
    }

    #[test]
    fn kubeflow_one_process_per_node() {
        let w = world(&[
            ("PET_NNODES", "4"),
            ("PET_NODE_RANK", "2"),
            ("PET_NPROC_PER_NODE", "1"),
            ("PET_MASTER_ADDR", "trainer-master-0"),
            ("PET_MASTER_PORT", "23456"),
        ])
        .unwrap();
        assert_eq!(place(&w), (2, 4, 0, 1, Launcher::Kubeflow));
        assert_eq!((w.root_host(), w.reserved_port()), (Some("trainer-master-0"), Some(23456)));
        let e = world(&[("PET_NNODES", "4"), ("PET_NODE_RANK", "2"), ("PET_NPROC_PER_NODE", "8")]).unwrap_err();
        assert!(e.to_string().contains("start them with torchrun"), "{e}");
        // Under torchrun the workers have RANK etc.: torchrun wins.
        let w = world(&[
            ("PET_NNODES", "2"),
            ("PET_NODE_RANK", "1"),
            ("PET_NPROC_PER_NODE", "8"),
            ("RANK", "9"),
            ("WORLD_SIZE", "16"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "8"),
        ])
        .unwrap();
        assert_eq!(place(&w), (9, 16, 1, 8, Launcher::Torchrun));
    }

    #[test]
    fn the_innermost_launcher_wins() {
        // torchrun started by srun: one torchrun per node, eight workers each.
        let mut v = slurm(&[("SLURM_PROCID", "1"), ("SLURM_STEP_NUM_TASKS", "2")]);
        v.extend([("RANK", "12"), ("WORLD_SIZE", "16"), ("LOCAL_RANK", "4"), ("LOCAL_WORLD_SIZE", "8")]);
        assert_eq!(place(&world(&v).unwrap()), (12, 16, 4, 8, Launcher::Torchrun));
        // mpirun inside a Slurm allocation.
        let mut v = slurm(&[]);
        v.extend([
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
        ]);
        assert_eq!(place(&world(&v).unwrap()), (0, 4, 0, 4, Launcher::OpenMpi));
    }

    #[test]
    fn explicit_variables_override_single_fields() {
        let w = world(&[
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "3"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
            (vars::LOCAL_RANK, "0"),
            (vars::LOCAL_SIZE, "1"),
            (vars::ROOT, "10.0.0.7:31000"),
        ])
        .unwrap();
        assert_eq!(place(&w), (3, 4, 0, 1, Launcher::OpenMpi));
        assert_eq!((w.root_host(), w.port()), (Some("10.0.0.7"), Some(31000)));
        let w = world(&[
            (vars::RANK, "1"),
            (vars::WORLD_SIZE, "2"),
            (vars::LOCAL_RANK, "1"),
            (vars::LOCAL_SIZE, "2"),
            (vars::ROOT, "[fe80::1]:4000"),
            (vars::SECRET, "s3cr3t"),
        ])
        .unwrap();
        assert_eq!(place(&w), (1, 2, 1, 2, Launcher::Explicit));
        assert_eq!((w.root_host(), w.port()), (Some("fe80::1"), Some(4000)));
        assert!(!format!("{w:?}").contains("s3cr3t"), "Debug must not show the secret");
        // Explicit local variables complete a launcher set that lacks them.
        let w = world(&[("RANK", "1"), ("WORLD_SIZE", "2"), (vars::LOCAL_RANK, "1"), (vars::LOCAL_SIZE, "2")]).unwrap();
        assert_eq!(place(&w), (1, 2, 1, 2, Launcher::Torchrun));
    }

    #[test]
    fn half_a_set_names_what_is_missing() {
        for (vars, missing) in [
            (&[("RANK", "0")][..], "WORLD_SIZE"),
            (&[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")][..], "OMPI_COMM_WORLD_LOCAL_RANK"),
            (&[("PMI_RANK", "0"), ("PMI_SIZE", "2"), ("MPI_LOCALRANKID", "0")][..], "MPI_LOCALNRANKS"),
            (&[("MV2_COMM_WORLD_SIZE", "2")][..], "MV2_COMM_WORLD_RANK"),
            (&[("PET_NNODES", "2")][..], "PET_NODE_RANK"),
            (&[(vars::RANK, "0")][..], vars::WORLD_SIZE),
            (&[(vars::RANK, "0"), (vars::WORLD_SIZE, "2")][..], vars::LOCAL_RANK),
            (&[("RANK", "0"), ("WORLD_SIZE", "2")][..], "LOCAL_WORLD_SIZE or NCCL_TRAMPOLINE_LOCAL_SIZE"),
        ] {
            match world(vars) {
                Err(e @ Error::LauncherIncomplete { .. }) => {
                    assert!(e.to_string().contains(missing), "{vars:?}: {e}")
                }
                other => panic!("{vars:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn contradictions_name_the_variables() {
        let base = [("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "1")];
        for (vars, needle) in [
            (vec![("RANK", "2"), ("WORLD_SIZE", "2")], "RANK=2, WORLD_SIZE=2"),
            (vec![("RANK", "0"), ("WORLD_SIZE", "0")], "WORLD_SIZE=0"),
            (vec![("RANK", "0"), ("WORLD_SIZE", "4294967295")], "WORLD_SIZE=4294967295"),
        ] {
            let mut v = vars.clone();
            v.extend(base);
            let e = world(&v).unwrap_err();
            assert!(matches!(e, Error::LauncherContradiction { .. }) && e.to_string().contains(needle), "{e}");
        }
        let e =
            world(&[("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "2"), ("LOCAL_WORLD_SIZE", "2")]).unwrap_err();
        assert!(e.to_string().contains("LOCAL_RANK=2, LOCAL_WORLD_SIZE=2"), "{e}");
        let e =
            world(&[("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "3")]).unwrap_err();
        assert!(e.to_string().contains("LOCAL_WORLD_SIZE=3, WORLD_SIZE=2"), "{e}");
        let e = world(&[("PMI_RANK", "0"), ("PMI_SIZE", "2"), ("MPI_LOCALRANKID", "1"), ("MPI_LOCALNRANKS", "4")])
            .unwrap_err();
        assert!(e.to_string().contains("MPI_LOCALNRANKS=4, PMI_SIZE=2"), "{e}");
        // An explicit override is named as such.
        let e = world(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "0"),
            ("LOCAL_WORLD_SIZE", "1"),
            (vars::RANK, "7"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("NCCL_TRAMPOLINE_RANK=7, WORLD_SIZE=2"), "{e}");
        // The rendezvous may not take torchrun's store port.
        let e = world(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "1"),
            ("LOCAL_RANK", "0"),
            ("LOCAL_WORLD_SIZE", "1"),
            ("MASTER_PORT", "29500"),
            (vars::PORT, "29500"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("torchrun's own store port"), "{e}");
        let e = world(&[(vars::PORT, "4000"), (vars::ROOT, "h:4001")]).unwrap_err();
        assert!(matches!(e, Error::LauncherContradiction { .. }), "{e}");
    }

    #[test]
    fn malformed_values_are_typed_errors() {
        for (var, value) in [
            ("RANK", "-1"),
            ("WORLD_SIZE", "two"),
            ("OMPI_COMM_WORLD_SIZE", "4x"),
            ("MASTER_PORT", "70000"),
            (vars::PORT, "0"),
            (vars::ROOT, "host:port"),
            (vars::ROOT, "[::1"),
            // A root address that names no host (a root host of "" before).
            ("MASTER_ADDR", " "),
            ("MASTER_ADDR", "[]"),
        ] {
            let mut v = vec![("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "1")];
            if var.starts_with("OMPI") {
                v = vec![
                    ("OMPI_COMM_WORLD_RANK", "0"),
                    ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
                    ("OMPI_COMM_WORLD_LOCAL_SIZE", "1"),
                ];
            }
            v.retain(|(k, _)| *k != var);
            v.push((var, value));
            match world(&v) {
                Err(Error::LauncherVariable { variable, value: got, .. }) => {
                    assert_eq!((variable.as_str(), got.as_str()), (var, value))
                }
                other => panic!("{var}={value}: {other:?}"),
            }
        }
    }

    #[test]
    fn root_addresses_parse() {
        assert_eq!(split_host_port("node1"), Some(("node1".into(), None)));
        assert_eq!(split_host_port("node1:80"), Some(("node1".into(), Some(80))));
        assert_eq!(split_host_port("[::1]:80"), Some(("::1".into(), Some(80))));
        assert_eq!(split_host_port("[::1]"), Some(("::1".into(), None)));
        assert_eq!(split_host_port("fe80::2"), Some(("fe80::2".into(), None)));
        for bad in ["", ":80", "h:0", "h:x", "[::1]x", "[]:1", "a:b:c"] {
            assert_eq!(split_host_port(bad), None, "{bad}");
        }
    }
}
