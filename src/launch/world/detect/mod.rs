//! Which launcher started this process: one detector per launcher, asked innermost first.
//!
//! Each detector looks for its launcher's variables: `None` when none of them is set, else
//! what they say, or why they cannot describe a job (half a set, a malformed value, values
//! that contradict each other). The first launcher whose variables are present decides, even
//! when they are wrong: a later one is never asked.

mod kubeflow;
mod mpi;
mod slurm;
mod torchrun;

use crate::launch::error::Error;
use crate::launch::world::reader::{Field, Reader};
use crate::launch::world::Launcher;

/// The variables one launcher sets, read from the environment.
pub(super) struct Found {
    pub(super) launcher: Launcher,
    pub(super) rank: Option<Field>,
    pub(super) size: Option<Field>,
    pub(super) local_rank: Option<Field>,
    pub(super) local_size: Option<Field>,
    pub(super) root_host: Option<String>,
    pub(super) reserved_port: Option<(&'static str, u16)>,
    pub(super) job: Option<String>,
    /// The launcher's names for rank, size, local rank and local size.
    pub(super) names: [&'static str; 4],
}

impl Found {
    /// No launcher's variables: one process, unless the crate's own say otherwise.
    fn standalone() -> Found {
        Found {
            launcher: Launcher::Standalone,
            rank: None,
            size: None,
            local_rank: None,
            local_size: None,
            root_host: None,
            reserved_port: None,
            job: None,
            names: [""; 4],
        }
    }
}

/// One launcher's detector: `None` when none of its variables is set.
type Detector = fn(&Reader<'_>) -> Result<Option<Found>, Error>;

/// The detectors in the order of the precedence in `world`'s documentation: the innermost
/// launcher first (torchrun started by srun, mpirun inside a Slurm allocation).
const INNERMOST_FIRST: [Detector; 6] =
    [torchrun::detect, mpi::open_mpi, mpi::mvapich2, mpi::mpich, slurm::detect, kubeflow::detect];

/// The innermost launcher whose variables are present, and what they say.
pub(super) fn innermost(r: &Reader<'_>) -> Result<Found, Error> {
    for detect in INNERMOST_FIRST {
        if let Some(found) = detect(r)? {
            return Ok(found);
        }
    }
    Ok(Found::standalone())
}

/// A complete launcher set or an error naming what is missing: `vars` are the set's variables
/// in order; none of them set is no error (the caller decides what that means).
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

#[cfg(test)]
mod tests {
    use crate::launch::error::Error;
    use crate::launch::world::fixtures::{place, slurm, world};
    use crate::launch::world::{vars, Launcher};

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
}
