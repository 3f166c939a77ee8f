//! Call programs: a [`Placement`] turned, once, into what the assembly runs: an entry from the
//! code table and a program of ops (`asm/<arch>.S` documents every handler).
//!
//! A program is a `Box<[u64]>`: two header words (`HDR_FRAME`, `HDR_ARGC`), then ops of three
//! words each: handler address, operand A, operand B. Ops come in the order the walk runs them:
//!
//! 1. frame ops (stack arguments, private copies; the hidden result pointer or x8 last),
//! 2. `enter` (framed walks only), which runs the register ops as a subroutine,
//! 3. register ops, ending with `call` (a tail jump to the function),
//! 4. after the call: result ops and `done`, or one fused `donei` / `donev` for a scalar
//!    result (checked), or `return` (typed, framed).
//!
//! Two argument representations, one per entry family:
//!
//! - checked ([`Mode::Checked`], `CallPlan::call`): `argv[i]` points to argument `i`; the
//!   handlers read through it (`int_*`, `stk_*`, `vec_*`, ...). Signatures of up to
//!   `MAX_LINE_ARGS` `int32_t` / 64-bit integer or pointer arguments (those past the first
//!   `LINE_REG_ARGS`, x86-64's two stack words, 64-bit) returning a 4- or 8-byte integer skip
//!   the walk: a checked straight-line body (`line_*`).
//! - typed ([`Mode::Typed`], typed bindings and `call_words`): `argv[i]` is argument `i`'s word
//!   ([`CArg::word`](crate::CArg::word)); scalars are placed straight from it (`wint_*`, `wvec_*`,
//!   `wstk`), aggregates through the address it holds (the same handlers as checked). Signatures
//!   whose arguments are all integers or pointers skip the walk: a word body (`words_<n>`); on
//!   x86-64 so do those of integers, pointers, floats and doubles all in registers: a register
//!   body (`regs_<ni>_<nv>`), whose program, after the header, holds the word offset of each
//!   register's argument instead of ops.
//!
//! The builder names the code it needs by key (`Handler`, `Entry`: a family and its members,
//! `Handler::Int(0, Ext::S32)` for `int_rdi_s32`); a key finds its table slot through the member
//! lists `build.rs` generates, searched when the crate is compiled.

use crate::abi::Placement;
use crate::ctype::types::Signature;
use crate::engine::layout::*;
use crate::engine::{self, VectorCopy};

/// Which entry family a program is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `CallPlan::call`: argument pointers, null checks, result stored at `ret`, a status.
    Checked,
    /// Typed bindings and `call_words`: argument words, the result left in its registers.
    Typed,
}

/// An entry address and its program.
pub(crate) struct Built {
    pub entry: usize,
    pub program: Box<[u64]>,
}

/// The names of the pieces of code a call through `entry` with `program` runs: the entry, then,
/// for a walk, the handlers of its ops (a body's program holds no ops).
pub(crate) fn code_path(entry: usize, program: &[u64]) -> Vec<&'static str> {
    let name = |a: u64| engine::code_name(a as usize).unwrap_or("?");
    let mut path = vec![name(entry as u64)];
    if !path[0].starts_with("walk_") {
        return path;
    }
    let ops = program.get((HDR_OPS / 8) as usize..).unwrap_or(&[]);
    let mut ops = ops.chunks_exact((OP_SIZE / 8) as usize);
    while let Some(op) = ops.next() {
        path.push(name(op[0]));
        if path.last() == Some(&"enterb") {
            // The body it calls, then past the word offsets that follow it (its operand A is
            // the distance to the op after them).
            path.push(name(op[2]));
            for _ in 1..op[1] / OP_SIZE as u64 {
                ops.next();
            }
        }
    }
    path
}

/// A program with no ops: the header a straight-line body or a refusing entry is given.
pub(crate) fn header_only(argc: usize) -> Box<[u64]> {
    vec![0, argc as u64].into_boxed_slice()
}

#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
mod build;
#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
mod handlers;
#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
pub(crate) use build::build;

/// Targets without a trampoline compile no programs (`CallPlan` never asks: the table is absent).
#[cfg(not(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
)))]
pub(crate) fn build(_: &Signature, _: &Placement, _: Mode, _: VectorCopy) -> Built {
    unreachable!("no trampoline on this target: plans are never compiled")
}
