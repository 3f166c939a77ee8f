//! The launchers a world can come from.

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
