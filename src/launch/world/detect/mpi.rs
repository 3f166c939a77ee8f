//! The MPI launchers, whose four variables come as a set: Open MPI's `mpirun`
//! (`OMPI_COMM_WORLD_*`), MVAPICH2's (`MV2_COMM_WORLD_*`), and MPICH's or Intel MPI's Hydra
//! (`PMI_RANK`, `PMI_SIZE`, `MPI_LOCALRANKID`, `MPI_LOCALNRANKS`). None of them names a root
//! host: the id travels through MPI or the crate's own variables.

use crate::launch::error::Error;
use crate::launch::world::detect::{require_all, Found};
use crate::launch::world::reader::Reader;
use crate::launch::world::Launcher;

/// One MPI launcher's variables.
struct MpiSet {
    launcher: Launcher,
    /// Rank, size, local rank and local size.
    set: [&'static str; 4],
    /// The variables that name the job, the first one set used.
    job_vars: &'static [&'static str],
}

const OPEN_MPI: MpiSet = MpiSet {
    launcher: Launcher::OpenMpi,
    set: ["OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"],
    job_vars: &["OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"],
};

const MVAPICH2: MpiSet = MpiSet {
    launcher: Launcher::Mvapich2,
    set: ["MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"],
    job_vars: &["MPIRUN_ID"],
};

const MPICH: MpiSet = MpiSet {
    launcher: Launcher::Mpich,
    set: ["PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"],
    job_vars: &["PMI_KVSNAME"],
};

/// Open MPI's variables, when any of its four is set.
pub(super) fn open_mpi(r: &Reader<'_>) -> Result<Option<Found>, Error> {
    OPEN_MPI.detect(r)
}

/// MVAPICH2's variables, when any of its four is set (under Hydra it sets `PMI_*` too: its
/// own set is the more specific, so it is asked before MPICH).
pub(super) fn mvapich2(r: &Reader<'_>) -> Result<Option<Found>, Error> {
    MVAPICH2.detect(r)
}

/// MPICH's or Intel MPI's variables, when any of its four is set.
pub(super) fn mpich(r: &Reader<'_>) -> Result<Option<Found>, Error> {
    MPICH.detect(r)
}

impl MpiSet {
    fn detect(&self, r: &Reader<'_>) -> Result<Option<Found>, Error> {
        let (l, set) = (self.launcher, self.set);
        if !set.iter().any(|v| r.has(v)) {
            return Ok(None);
        }
        require_all(l, r, &set)?;
        let job = self.job_vars.iter().find_map(|v| r.raw(v)).map(|j| format!("{}:{j}", l.name()));
        Ok(Some(Found {
            launcher: l,
            rank: r.number(set[0])?,
            size: r.number(set[1])?,
            local_rank: r.number(set[2])?,
            local_size: r.number(set[3])?,
            root_host: None,
            reserved_port: None,
            job,
            names: set,
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::launch::world::fixtures::{place, world};
    use crate::launch::world::Launcher;

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
}
