//! The launcher environment into `World` (`World::from_vars`, the map `from_env` reads):
//! arbitrary values for the variables of every launcher NCCL-ABI.md lists and the crate's
//! own. Any set is a world whose numbers hold together or a typed launch error on one line;
//! the secret is never shown, by the world or by an error.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use nccl_trampoline::launch::{vars, Error, World};

const NAMES: &[&str] = &[
    // torchrun
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_RESTART_COUNT",
    // Slurm
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_NNODES",
    "SLURM_STEP_NUM_NODES",
    "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE",
    "SLURM_STEP_NODELIST",
    "SLURM_JOB_NODELIST",
    // Open MPI
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "OMPI_MCA_ess_base_jobid",
    "PMIX_NAMESPACE",
    // MPICH / Intel MPI
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    "PMI_KVSNAME",
    // MVAPICH2
    "MV2_COMM_WORLD_RANK",
    "MV2_COMM_WORLD_SIZE",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "MV2_COMM_WORLD_LOCAL_SIZE",
    "MPIRUN_ID",
    // Kubeflow
    "PET_NNODES",
    "PET_NODE_RANK",
    "PET_NPROC_PER_NODE",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
    // the crate's own, and NCCL's
    vars::RANK,
    vars::WORLD_SIZE,
    vars::LOCAL_RANK,
    vars::LOCAL_SIZE,
    vars::ROOT,
    vars::PORT,
    vars::ID_ROUTE,
    vars::ID_FILE,
    vars::MPI_LIBRARY,
    "NCCL_COMM_ID",
];

/// Values that mean something to some variable; the rest are arbitrary text.
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "8",
    "-1",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "29500",
    "65535",
    "65536",
    "node0",
    "node0:29600",
    "[::1]:80",
    "[fe80::1]",
    "fe80::2",
    "gpu[01-03],cpu9",
    "n[0-18446744073709551615]",
    "2(x3),1",
    "1(x4)",
    "tcp",
    "file",
    "none",
];

/// Never a value of any other variable: if it shows, the secret leaked.
const SECRET: &str = "s3cr3t-marker-9f2c";

fn value(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 | 1 => u.choose(VALUES)?.to_string(),
        2 => u.int_in_range(0..=9u32)?.to_string(),
        _ => u.arbitrary::<String>()?.replace(SECRET, ""),
    })
}

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let mut env: HashMap<String, String> = HashMap::new();
    if u.arbitrary()? {
        env.insert(vars::SECRET.into(), SECRET.into());
    }
    for _ in 0..u.int_in_range(0..=24u8)? {
        let name = u.choose(NAMES)?;
        env.insert(name.to_string(), value(&mut u)?);
    }
    match World::from_vars(|k| env.get(k).cloned()) {
        Ok(w) => {
            assert!(w.size() >= 1 && w.size() <= i32::MAX as u32, "size {}", w.size());
            assert!(w.rank() < w.size(), "rank {} of {}", w.rank(), w.size());
            assert!(w.local_rank() < w.local_size() && w.local_size() <= w.size(), "{w:?}");
            assert!(w.root_host().map_or(true, |h| !h.is_empty()), "{w:?}");
            assert_ne!(w.port(), Some(0));
            assert!(!format!("{w:?}").contains(SECRET), "the world shows the secret");
        }
        Err(e) => {
            assert!(
                matches!(
                    e,
                    Error::LauncherVariable { .. }
                        | Error::LauncherIncomplete { .. }
                        | Error::LauncherContradiction { .. }
                        | Error::LauncherList { .. }
                ),
                "{e:?}"
            );
            let text = e.to_string();
            assert!(!text.contains(SECRET), "the error shows the secret: {text}");
            assert!(!text.contains(['\n', '\r']), "not one line: {text:?}");
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
