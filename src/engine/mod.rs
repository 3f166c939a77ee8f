//! The call core's Rust side: plans and the programs compiled from them (`plan`, `program`),
//! typed bindings (`typed`), and the reverse direction, calls from C into Rust ([`callback`]).
//! The C type model, the limits and the core's error are below it (`crate::ctype`), argument
//! placement per ABI beside it (`crate::abi`); nothing here knows NCCL.
//!
//! The face of the assembly (`asm/<arch>.S`) — the code table it exports, the layout of the
//! programs it walks, the types of its entries, and the copy width chosen from the CPU — is
//! `code`: the engine's private contract with the assembly, not public API (the crate's own
//! tests and benchmarks reach it through the doc-hidden `nccl_trampoline::__private`).

pub(crate) mod c_struct;
pub mod callback;
pub(crate) mod code;
pub(crate) mod plan;
pub(crate) mod program;
pub(crate) mod typed;

#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
pub(crate) use code::code;
pub(crate) use code::{code_name, layout, table, CheckedEntry, TypedEntry, VectorCopy};

/// `arch-os` of this build, for error messages.
pub const TARGET: &str = env!("NCCL_TRAMPOLINE_TARGET");
