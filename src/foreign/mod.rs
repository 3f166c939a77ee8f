//! C libraries loaded at run time: the one table mechanism every library's functions are
//! declared with (`symbols`, public as `nccl_trampoline::symbols`), a bounded reader that
//! checks a library file before the system loader maps it (`elf`), the system loader's search
//! for a bare name (`search`, with its cache `ld_cache`), loading the checked file by
//! descriptor (`loader`), and the layer's error (`error`). The CUDA driver, NCCL and MPI are
//! declared with it in `crate::cuda`, `crate::nccl` and `crate::launch`.

pub(crate) mod elf;
pub(crate) mod error;
pub(crate) mod file;
pub(crate) mod ld_cache;
pub(crate) mod loader;
pub(crate) mod search;
pub mod symbols;
