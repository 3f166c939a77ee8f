//! The command's one error type: every way a command can stop early, each a variant that says
//! in one line what failed and, where the cause alone does not, what to do next. `main` prints
//! it as `nccl-trampoline: <message>` and exits with [`Error::exit_code`].
//!
//! The library's errors are held as [`LibraryError`] (their `source()`): the one place that
//! names the library's error types, one per layer (docs/adr/0019-errors-per-layer.md).

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

/// The library's error, from whichever of its layers failed: each printed as itself, and kept
/// as the `source()` of the command's error.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    /// The call core (plans, bindings, calls).
    #[error(transparent)]
    Core(#[from] nccl_trampoline::Error),
    /// The NCCL facade.
    #[error(transparent)]
    Nccl(#[from] nccl_trampoline::nccl::Error),
    /// The CUDA driver.
    #[error(transparent)]
    Cuda(#[from] nccl_trampoline::cuda::Error),
    /// The launchers' variables, the unique id's route, MPI.
    #[error(transparent)]
    Launch(#[from] nccl_trampoline::launch::Error),
    /// The unique id's rendezvous.
    #[error(transparent)]
    Rendezvous(#[from] nccl_trampoline::launch::rendezvous::Error),
}

/// Why a command stopped before its end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Options that cannot run together: reported as clap reports a bad option, status 2.
    #[error(transparent)]
    Usage(#[from] Usage),

    /// `perf` without the CUDA driver.
    #[error("perf needs GPUs: {source} (`nccl-trampoline selftest` checks the core and NCCL without one)")]
    NoCudaDriver {
        /// Why the driver did not load.
        source: LibraryError,
    },
    /// NCCL did not load (the library's message names the candidates and the fix).
    #[error("{source}")]
    NcclLoad {
        /// The loader's error.
        source: LibraryError,
    },
    /// Fewer GPUs than ranks asked for.
    #[error("{option} {wanted}: only {visible} GPUs are visible (ask for at most {visible}, or make more visible: CUDA_VISIBLE_DEVICES)")]
    TooFewGpus {
        /// The option that asked (`-g`, `--procs`).
        option: &'static str,
        /// Ranks asked for.
        wanted: usize,
        /// GPUs the driver reports.
        visible: usize,
    },
    /// The driver could not count the GPUs.
    #[error("counting GPUs: {source}")]
    DeviceCount {
        /// The driver's error.
        source: LibraryError,
    },
    /// The launcher's variables describe no valid job.
    #[error("{source}")]
    World {
        /// What is wrong with them.
        source: LibraryError,
    },
    /// A rank of a launched job could not join its communicator or find its GPU.
    #[error("rank {rank}: {source}")]
    Join {
        /// This process's rank.
        rank: usize,
        /// The rendezvous' or NCCL's error.
        source: LibraryError,
    },
    /// `ncclCommInitAll` over this process's GPUs failed.
    #[error("{source}")]
    InitAll {
        /// NCCL's error.
        source: LibraryError,
    },
    /// A CUDA step of one rank's set-up, data movement or synchronisation failed.
    #[error("rank {rank} (GPU {device}): {step}: {source}")]
    Gpu {
        /// The rank.
        rank: usize,
        /// Its CUDA device.
        device: i32,
        /// What it was doing.
        step: GpuStep,
        /// The driver's error.
        source: LibraryError,
    },
    /// A collective, a group or a communicator's teardown failed.
    #[error("{source}")]
    Collective {
        /// NCCL's (or the facade's) error.
        source: LibraryError,
    },
    /// `-T`: an operation did not complete in time; every communicator was aborted (as
    /// nccl-tests' "Test timeout").
    #[error(
        "{host}: Test timeout ({seconds}s): rank {rank}'s operations did not complete; every communicator was aborted"
    )]
    TestTimeout {
        /// This host's name.
        host: String,
        /// `-T`.
        seconds: u32,
        /// The first rank found not done.
        rank: usize,
    },
    /// NCCL reported an asynchronous error on a communicator while perf waited for it; every
    /// communicator was aborted.
    #[error("rank {rank}: NCCL reported {code} while its operations ran; every communicator was aborted")]
    NcclAsync {
        /// The rank.
        rank: usize,
        /// NCCL's result.
        code: String,
    },
    /// The results of ranks in separate processes travel by an all-gather of one local rank.
    #[error("sharing results between processes needs one rank per process, this one drives {local}")]
    GatherLocalRanks {
        /// Ranks this process drives.
        local: usize,
    },
    /// `--procs`: no secret for the ranks' rendezvous.
    #[error("{source}")]
    Secret {
        /// The OS random source's error.
        source: LibraryError,
    },
    /// `--procs`: no port on loopback for the ranks' rendezvous.
    #[error("no free port on loopback for the ranks' rendezvous: {source}")]
    NoFreePort {
        /// The socket error.
        source: io::Error,
    },
    /// This program's own path is unknown (needed to start ranks or probes).
    #[error("cannot find this program: {source}")]
    CurrentExe {
        /// The OS error.
        source: io::Error,
    },
    /// `--procs`: a rank could not be started.
    #[error("starting rank {rank}: {source}")]
    Spawn {
        /// The rank.
        rank: u32,
        /// The OS error.
        source: io::Error,
    },
    /// `--procs`: a rank's status could not be read.
    #[error("rank {rank}: {source}")]
    Wait {
        /// The rank.
        rank: usize,
        /// The OS error.
        source: io::Error,
    },
    /// `--procs`: a rank failed while others still ran; they were stopped.
    #[error("rank {rank} exited with {status}; stopped the other ranks")]
    RankFailed {
        /// The rank.
        rank: usize,
        /// How it ended.
        status: ExitStatus,
    },
    /// `-J FILE` could not be written.
    #[error("writing {}: {source}", path.display())]
    WriteOutput {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// `doctor`: a probe process could not be started.
    #[error("cannot start a probe: {source}")]
    ProbeStart {
        /// The OS error.
        source: io::Error,
    },
    /// `doctor`: the probe loaded nothing; its reason, as the loader gave it.
    #[error("{reason}")]
    ProbeRefused {
        /// The loader's reason, on one line.
        reason: String,
    },
    /// `doctor`: the probe process ended without its report (a library that crashed on load).
    #[error("the probe died ({status}): {stderr}")]
    ProbeDied {
        /// How it ended.
        status: ExitStatus,
        /// What it wrote to stderr, on one line.
        stderr: String,
    },
    /// `doctor`: a probe process did not finish in time and was killed (a library whose
    /// loading blocks, a helper that hangs).
    #[error("no answer within {} s: the probe was stopped (raise `doctor --probe-timeout` for a slow file system)", limit.as_secs_f64())]
    ProbeTimedOut {
        /// The limit it ran under.
        limit: std::time::Duration,
    },
    /// `net-bench`: the plugin could not be found, loaded or exercised.
    #[error("{source}")]
    Plugin {
        /// The plugin layer's error.
        source: nccl_trampoline::plugin::PluginError,
    },
}

impl Error {
    /// The exit status: 2 for a usage error (as clap's own), 1 for anything else that stopped
    /// the command (a failed check exits 1 too, without an error).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => 2,
            _ => 1,
        }
    }
}

/// The CUDA step of [`Error::Gpu`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuStep {
    /// Making the device current.
    Activate,
    /// Starting the communicator's watchdog.
    Watchdog,
    /// Allocating device memory.
    Alloc,
    /// Creating a stream.
    Stream,
    /// Copying host data to the device.
    Upload,
    /// Copying device data to the host.
    Download,
    /// Waiting for the stream.
    Synchronize,
    /// Registering the buffers (`-R`).
    Register,
    /// Recording or reading the per-iteration events (`-I 1`).
    Events,
    /// Reading the free memory (`-M 1`).
    Memory,
}

impl std::fmt::Display for GpuStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GpuStep::Activate => "making the device current",
            GpuStep::Watchdog => "starting the watchdog",
            GpuStep::Alloc => "allocating device memory",
            GpuStep::Stream => "creating a stream",
            GpuStep::Upload => "copying to the device",
            GpuStep::Download => "copying from the device",
            GpuStep::Synchronize => "waiting for the stream",
            GpuStep::Register => "registering the buffers with NCCL",
            GpuStep::Events => "timing the iterations with events",
            GpuStep::Memory => "reading the free device memory",
        })
    }
}

/// An option, or a combination of options, that cannot run. The messages name the options
/// (the fix is to change them); clap adds the usage line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Usage {
    /// `-b`, `-e`, `-i`: not a number with an optional suffix.
    #[error("`{0}` is not a size (a number, optionally with K, M, G or T)")]
    NotASize(String),
    /// A size past 2^64 bytes.
    #[error("`{0}` is too large (past 2^64 bytes)")]
    SizeOverflow(String),
    /// `--watchdog`: not a number, or not above zero.
    #[error("`{0}` is not a positive number of seconds")]
    NotSeconds(String),
    /// `--watchdog`: a positive number of seconds that is not a duration (below a nanosecond,
    /// past 2^64 seconds, or infinite).
    #[error("`{0}` seconds is not a duration between 1 ns and 2^64 s")]
    SecondsOutOfRange(String),
    /// `-d`.
    #[error("unknown type `{0}` (int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2, all)")]
    UnknownType(String),
    /// `-o`.
    #[error("unknown op `{0}` (sum, prod, max, min, avg, mulsum, all)")]
    UnknownOp(String),
    /// An option of nccl-tests that `perf` cannot honour, and why.
    #[error("{option} is not supported: {why}")]
    Unsupported {
        /// The option as typed (`-G`).
        option: &'static str,
        /// Why.
        why: &'static str,
    },
    /// `-K` at or past `-n`.
    #[error("-K {skip} leaves no iteration of -n {iters} for the statistics")]
    SkipPastIterations {
        /// `-K`.
        skip: u32,
        /// `-n`.
        iters: u32,
    },
    /// alltoallv on more ranks than its traffic table is made for.
    #[error("alltoallv on {nranks} ranks: its traffic table (a count per pair of ranks) is made for at most {limit}")]
    AlltoallvRanks {
        /// Ranks of the job.
        nranks: usize,
        /// The limit.
        limit: usize,
    },
    /// `-K` without `-I 1`.
    #[error("-K needs per-iteration timing (-I 1)")]
    SkipWithoutPerIteration,
    /// `-V` out of range.
    #[error("-V {0}: the device CTA count is 1 to 128")]
    DeviceCtas(i32),
    /// `-x` with several GPUs in one process.
    #[error("-x with -g > 1: run one GPU per process (--procs or a launcher) to set a CTA policy")]
    CtaPolicyWithGpus,
    /// `-x 2` before NCCL 2.28, `-x` before 2.27.
    #[error("-x {policy} needs NCCL {needs}, this library is {version}")]
    CtaPolicyVersion {
        /// `-x`.
        policy: i32,
        /// The first NCCL that takes it.
        needs: &'static str,
        /// The loaded library's version.
        version: String,
    },
    /// `--procs` with `-g`.
    #[error("--procs starts one process per GPU: -g must be 1")]
    ProcsWithGpus,
    /// `-e` below `-b`.
    #[error("-e {max} is smaller than -b {min}")]
    MaxBelowMin {
        /// `-e`.
        max: u64,
        /// `-b`.
        min: u64,
    },
    /// `-i 0 -f 1`.
    #[error("-i 0 with -f 1 never reaches -e")]
    StepNeverReaches,
    /// `-b 0 -f >1`.
    #[error("-b 0 with -f > 1 never grows")]
    FactorFromZero,
    /// `-r` past the last rank.
    #[error("-r {root}: there are only {nranks} ranks")]
    RootOutOfRange {
        /// `-r`.
        root: i64,
        /// Ranks of the job.
        nranks: usize,
    },
    /// More sizes than a sweep may have.
    #[error("more than {limit} sizes: raise -i or -f")]
    TooManySizes {
        /// The limit.
        limit: usize,
    },
    /// `-e` past the largest size a sweep measures.
    #[error("-e {max} is larger than {limit} bytes, the largest size perf measures")]
    SizeTooLarge {
        /// `-e`.
        max: u64,
        /// The limit.
        limit: u64,
    },
    /// A size past this machine's address space.
    #[error("size {0} does not fit this machine")]
    SizeBeyondMachine(u64),
    /// `-g` in a launched job.
    #[error("-g {ngpus}: each rank of a job that {launcher} started drives one GPU (leave -g out)")]
    GpusPerLaunchedRank {
        /// `-g`.
        ngpus: u32,
        /// The launcher, by name.
        launcher: String,
    },
    /// `--procs` in a launched job.
    #[error("--procs starts its own ranks, but {launcher} already started {size} (leave --procs out)")]
    ProcsUnderLauncher {
        /// The launcher, by name.
        launcher: String,
        /// Ranks it started.
        size: u32,
    },
    /// `-d` or `-o` naming a type or op the loaded NCCL does not have.
    #[allow(dead_code)] // Until plan.rs calls perf::data::check_supported.
    #[error("{what} needs NCCL {needs} or newer, the loaded library is {loaded}")]
    NeedsNewerNccl {
        /// The option and its value (`-d f8e4m3`).
        what: String,
        /// The first version that has it.
        needs: &'static str,
        /// The loaded library's version.
        loaded: String,
    },
    /// alltoallv's variables or matrix file.
    #[error(transparent)]
    Alltoallv(#[from] crate::perf::alltoallv::AlltoallvError),
}
