//! C libraries loaded at run time: the one table mechanism every library's functions are
//! declared with (`symbols`, public as `nccl_trampoline::symbols`), a bounded reader of a
//! library's exported functions (`elf`), and what a failed `dlopen` means (`loader`). The CUDA
//! driver, NCCL and MPI are declared with it in `crate::cuda`, `crate::nccl` and
//! `crate::launch`.

pub(crate) mod elf;
pub(crate) mod loader;
pub mod symbols;
