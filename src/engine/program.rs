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
//!   `MAX_LINE_ARGS` `int32_t` / 64-bit integer or pointer arguments returning a 4- or 8-byte
//!   integer skip the walk: a checked straight-line body (`line_*`).
//! - typed ([`Mode::Typed`], typed bindings and `call_words`): `argv[i]` is argument `i`'s word
//!   ([`CArg::word`](crate::CArg::word)); scalars are placed straight from it (`wint_*`, `wvec_*`,
//!   `wstk`), aggregates through the address it holds (the same handlers as checked). Signatures
//!   whose arguments are all integers or pointers skip the walk: a word body (`words_<n>`).

use crate::abi::Placement;
#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
use crate::abi::{Loc, Move, ResultPlace, RetReg};
use crate::engine::layout::*;
use crate::ctype::types::Signature;
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

/// The names of the pieces of code a call through `entry` with `program` runs.
pub(crate) fn code_path(entry: usize, program: &[u64]) -> Vec<&'static str> {
    let name = |a: u64| engine::code_name(a as usize).unwrap_or("?");
    let mut path = vec![name(entry as u64)];
    let ops = program.get((HDR_OPS / 8) as usize..).unwrap_or(&[]);
    path.extend(ops.chunks_exact((OP_SIZE / 8) as usize).map(|op| name(op[0])));
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
/// The checked straight-line shape of a placement, if it has one: argument count, width mask
/// (argument 0 most significant, 1 = 64-bit) and result kind (0: 4 bytes, 1: 8 bytes).
fn line_shape(sig: &Signature, p: &Placement) -> Option<(usize, usize, usize)> {
    let n = sig.args().len();
    if n > MAX_LINE_ARGS as usize || p.moves.len() != n || p.stack_len != 0 || p.copy_len != 0 || p.vector_count != 0 {
        return None;
    }
    let mut mask = 0usize;
    for (i, m) in p.moves.iter().enumerate() {
        match *m {
            Move::Int { arg, len: 4, signed: true, to: Loc::Int(r) }
                if usize::from(arg) == i && usize::from(r) == i =>
            {
                mask <<= 1
            }
            Move::Int { arg, len: 8, to: Loc::Int(r), .. } if usize::from(arg) == i && usize::from(r) == i => {
                mask = (mask << 1) | 1
            }
            _ => return None,
        }
    }
    match &p.result {
        ResultPlace::Regs(pieces) => match pieces.as_slice() {
            [piece] if piece.from == RetReg::Int(0) && piece.dst == 0 && matches!(piece.len, 4 | 8) => {
                Some((n, mask, (piece.len / 8) as usize))
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
/// The word-body shape of a placement: every argument an integer or pointer, word `i` in
/// integer register `i` or, once those are taken, in the next 8-byte stack slot in order.
fn words_shape(sig: &Signature, p: &Placement) -> Option<usize> {
    let n = sig.args().len();
    if n > MAX_WORD_ARGS as usize || p.moves.len() != n || p.copy_len != 0 || p.vector_count != 0 {
        return None;
    }
    let regs = INT_REGS.len();
    for (i, (m, ty)) in p.moves.iter().zip(sig.args()).enumerate() {
        if ty.is_float() || !ty.is_word() {
            return None;
        }
        let identity = match *m {
            Move::Int { arg, to: Loc::Int(r), .. } => usize::from(arg) == i && usize::from(r) == i,
            Move::Int { arg, to: Loc::Stack(off), .. } => usize::from(arg) == i && off as usize == 8 * (i - regs),
            _ => false,
        };
        if !identity {
            return None;
        }
    }
    Some(n)
}

#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
fn ext_index(len: u8, signed: bool) -> i64 {
    let name = match (len, signed) {
        (1, true) => "s8",
        (2, true) => "s16",
        (4, true) => "s32",
        (1, false) => "z8",
        (2, false) => "z16",
        (4, false) => "z32",
        _ => "q64",
    };
    // build.rs's EXT for this architecture (riscv64 has no z32: the placement never asks).
    EXT.iter().position(|e| *e == name).unwrap_or_else(|| unreachable!("no {name} handler on this architecture")) as i64
}

#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
/// The stack handler that stores 4 raw bytes (a `float`, a 4-byte aggregate) in an 8-byte slot:
/// any 4-byte kind, the bits above are undefined on every ABI.
fn raw4_index() -> i64 {
    EXT.iter().position(|e| *e == "z32").unwrap_or_else(|| ext_index(4, true) as usize) as i64
}

#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
fn float_index(len: u32) -> i64 {
    match len {
        4 => 0,
        8 => 1,
        _ => unreachable!("the placement gives vector registers pieces of 4 or 8 bytes, not {len}"),
    }
}

#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
fn copy_index(copy: VectorCopy) -> i64 {
    match copy {
        VectorCopy::Sse | VectorCopy::Neon | VectorCopy::Xlen => 0,
        VectorCopy::Avx => 1,
        VectorCopy::Avx512Vl => 2,
    }
}

#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
struct Ops(Vec<u64>);

#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
impl Ops {
    fn push(&mut self, handler: i64, a: u64, b: u64) {
        self.0.extend([engine::code(handler) as u64, a, b]);
    }
}

#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
/// Where a call of `sig` (placed as `p` for the native ABI) goes: the entry and its program.
pub(crate) fn build(sig: &Signature, p: &Placement, mode: Mode, copy: VectorCopy) -> Built {
    let argc = sig.args().len();
    match mode {
        Mode::Checked => {
            if let Some((n, mask, kind)) = line_shape(sig, p) {
                let index = T_LINE + 2 * ((1 << n) - 1 + mask as i64) + kind as i64;
                return Built { entry: engine::code(index), program: header_only(argc) };
            }
        }
        Mode::Typed => {
            if let Some(n) = words_shape(sig, p) {
                return Built { entry: engine::code(T_WORDS + n as i64), program: header_only(argc) };
            }
        }
    }

    // A word argument of a typed call is its word; everything else (aggregates, __int128, long
    // double, complex) is read through the address its word holds, as in the checked program.
    let word = |a: u16| mode == Mode::Typed && sig.args()[usize::from(a)].is_word();
    let arg = |a: u16| 8 * u64::from(a);
    let mut frame = Ops(Vec::new());
    let mut late = Ops(Vec::new());
    let mut regs = Ops(Vec::new());
    for m in &p.moves {
        match *m {
            Move::Int { arg: a, to: Loc::Int(r), .. } if word(a) => regs.push(H_WINT + i64::from(r), arg(a), 0),
            Move::Int { arg: a, len, signed, to: Loc::Int(r) } => {
                regs.push(H_INT + i64::from(r) * EXT.len() as i64 + ext_index(len, signed), arg(a), 0)
            }
            Move::Int { arg: a, to: Loc::Stack(off), .. } if word(a) => frame.push(H_WSTK, arg(a), u64::from(off)),
            Move::Int { arg: a, len, signed, to: Loc::Stack(off) } => {
                frame.push(H_STK + ext_index(len, signed), arg(a), u64::from(off))
            }
            Move::Bytes { arg: a, len, to: Loc::Vec(r), .. } if word(a) => {
                regs.push(H_WVEC + i64::from(r) * 2 + float_index(len), arg(a), 0)
            }
            #[cfg(nccl_trampoline_asm = "aarch64_aapcs64")]
            Move::Bytes { arg: a, src, len: 16, to: Loc::Vec(r) } => {
                regs.push(H_VECQ + i64::from(r), arg(a), u64::from(src))
            }
            Move::Bytes { arg: a, src, len, to: Loc::Vec(r) } => {
                regs.push(H_VEC + i64::from(r) * 2 + float_index(len), arg(a), u64::from(src))
            }
            // A float passed by the integer convention (LP64D): its word.
            Move::Bytes { arg: a, to: Loc::Int(r), .. } if word(a) => regs.push(H_WINT + i64::from(r), arg(a), 0),
            Move::Bytes { arg: a, src, len, to: Loc::Int(r) } => {
                regs.push(H_LOAD + i64::from(len) - 1, arg(a), u64::from(src));
                regs.push(H_MOVI + i64::from(r), 0, 0);
            }
            Move::Bytes { arg: a, to: Loc::Stack(off), .. } if word(a) => frame.push(H_WSTK, arg(a), u64::from(off)),
            // The rest of an aggregate split between a7 and the stack (LP64D), from the register
            // phase: a load and a store at the bottom of the outgoing area.
            #[cfg(nccl_trampoline_asm = "riscv64_lp64d")]
            Move::Bytes { arg: a, src, len, to: Loc::Stack(off) } if src != 0 => {
                regs.push(H_LOAD + i64::from(len) - 1, arg(a), u64::from(src));
                regs.push(H_MOVSTK, u64::from(off), 0);
            }
            Move::Bytes { arg: a, src, len, to: Loc::Stack(off) } => {
                debug_assert_eq!(src, 0, "stack arguments are whole values");
                match len {
                    8 => frame.push(H_STK + ext_index(8, false), arg(a), u64::from(off)),
                    4 => frame.push(H_STK + raw4_index(), arg(a), u64::from(off)),
                    _ => frame.push(H_COPY + copy_index(copy), arg(a), u64::from(off) | u64::from(len) << 32),
                }
            }
            #[cfg(any(nccl_trampoline_asm = "aarch64_aapcs64", nccl_trampoline_asm = "riscv64_lp64d"))]
            Move::Copy { arg: a, len, copy: at } => {
                let dst = p.stack_len as u64 + u64::from(at);
                frame.push(H_COPY + copy_index(copy), arg(a), dst | u64::from(len) << 32);
            }
            #[cfg(any(nccl_trampoline_asm = "aarch64_aapcs64", nccl_trampoline_asm = "riscv64_lp64d"))]
            Move::CopyAddress { copy: at, to } => {
                let at = p.stack_len as u64 + u64::from(at);
                match to {
                    Loc::Int(r) => regs.push(H_CADDR + i64::from(r), at, 0),
                    Loc::Stack(off) => frame.push(H_STKCADDR, at, u64::from(off)),
                    Loc::Vec(_) => unreachable!("a copy's address is an integer argument"),
                }
            }
            #[cfg(any(nccl_trampoline_asm = "x86_64_sysv", nccl_trampoline_asm = "riscv64_lp64d"))]
            Move::ResultAddress { .. } => late.push(H_RETADDR, 0, 0),
            _ => unreachable!("the native placement produced a move this architecture has no handler for: {m:?}"),
        }
    }
    #[cfg(nccl_trampoline_asm = "aarch64_aapcs64")]
    if matches!(p.result, ResultPlace::Indirect(crate::abi::IndirectResult::DedicatedRegister)) {
        late.push(H_X8, 0, 0);
    }
    regs.push(H_CALL, u64::from(p.vector_count), 0);

    let mut after = Ops(Vec::new());
    match mode {
        Mode::Typed => after.push(H_RETURN, 0, 0),
        Mode::Checked => match &p.result {
            // One piece at offset 0 (every scalar result): stored and done in one op.
            ResultPlace::Regs(pieces)
                if pieces.len() == 1 && pieces[0].dst == 0 && pieces[0].from == RetReg::Int(0) =>
            {
                after.push(H_DONEI + i64::from(pieces[0].len) - 1, 0, 0)
            }
            ResultPlace::Regs(pieces)
                if pieces.len() == 1
                    && pieces[0].dst == 0
                    && pieces[0].from == RetReg::Vec(0)
                    && pieces[0].len <= 8 =>
            {
                after.push(H_DONEV + float_index(pieces[0].len), 0, 0)
            }
            result => {
                if let ResultPlace::Regs(pieces) = result {
                    for piece in pieces {
                        let handler = match piece.from {
                            RetReg::Int(0) => {
                                let len = piece.len.to_string();
                                let at = L_RESA_0.iter().position(|l| *l == len).unwrap_or_else(|| {
                                    unreachable!(
                                        "the first of two result registers holds {L_RESA_0:?} bytes, not {len}"
                                    )
                                });
                                H_RESA + at as i64
                            }
                            RetReg::Int(_) => H_RESD + i64::from(piece.len) - 1,
                            #[cfg(nccl_trampoline_asm = "aarch64_aapcs64")]
                            RetReg::Vec(r) if piece.len == 16 => H_RESQ + i64::from(r),
                            RetReg::Vec(r) => H_RESV + i64::from(r) * 2 + float_index(piece.len),
                            #[cfg(nccl_trampoline_asm = "x86_64_sysv")]
                            RetReg::X87(_) => H_RESX,
                            #[cfg(not(nccl_trampoline_asm = "x86_64_sysv"))]
                            RetReg::X87(_) => unreachable!("only the x86-64 placement returns in x87 registers"),
                        };
                        after.push(handler, u64::from(piece.dst), 0);
                    }
                }
                after.push(H_DONE, 0, 0);
            }
        },
    }

    let frame_bytes = (p.stack_len + p.copy_len) as u64;
    let mut words = vec![frame_bytes, argc as u64];
    // A frame for stack arguments and copies (LP64D's split aggregate stores its stack half
    // from the register phase: no frame op, but a frame all the same).
    let framed = mode == Mode::Checked || frame_bytes != 0 || !frame.0.is_empty() || !late.0.is_empty();
    let entry = if !framed {
        words.extend(regs.0);
        engine::code(T_WALK)
    } else {
        words.extend(frame.0);
        words.extend(late.0);
        let link = (1 + regs.0.len() / 3) as u64 * OP_SIZE as u64;
        words.extend([engine::code(H_ENTER) as u64, link, 0]);
        words.extend(regs.0);
        words.extend(after.0);
        engine::code(T_WALK + if mode == Mode::Checked { 2 } else { 1 })
    };
    Built { entry, program: words.into_boxed_slice() }
}

/// Targets without a trampoline compile no programs (`CallPlan` never asks: the table is absent).
#[cfg(not(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
)))]
pub(crate) fn build(_: &Signature, _: &Placement, _: Mode, _: VectorCopy) -> Built {
    unreachable!("no trampoline on this target: plans are never compiled")
}
