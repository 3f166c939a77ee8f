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
//!
//! The builder names the code it needs by key (`Handler`, `Entry`: a family and its members,
//! `Handler::Int(0, Ext::S32)` for `int_rdi_s32`); a key finds its table slot through the member
//! lists `build.rs` generates, searched when the crate is compiled.

use crate::abi::Placement;
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
pub(crate) use native::build;

/// Targets without a trampoline compile no programs (`CallPlan` never asks: the table is absent).
#[cfg(not(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
)))]
pub(crate) fn build(_: &Signature, _: &Placement, _: Mode, _: VectorCopy) -> Built {
    unreachable!("no trampoline on this target: plans are never compiled")
}

/// The builder, where the target has a trampoline: `build`, then its parts in the order it
/// runs them (straight-line shapes, argument ops, ops after the call, the program's assembly),
/// then the keys of the code table and how they find their slots.
#[cfg(any(
    nccl_trampoline_asm = "x86_64_sysv",
    nccl_trampoline_asm = "aarch64_aapcs64",
    nccl_trampoline_asm = "riscv64_lp64d"
))]
mod native {
    use core::fmt;

    use super::{header_only, Built, Mode, Placement, Signature, VectorCopy};
    use crate::abi::{Loc, Move, ResultPlace, RetPiece, RetReg};
    use crate::engine;
    use crate::engine::layout::*;

    /// Where a call of `sig` (placed as `p` for the native ABI) goes: the entry and its program.
    pub(crate) fn build(sig: &Signature, p: &Placement, mode: Mode, copy: VectorCopy) -> Built {
        let argc = sig.args().len();
        // A straight-line body places the arguments itself: no program to walk.
        let body = match mode {
            Mode::Checked => line_shape(sig, p),
            Mode::Typed => words_shape(sig, p),
        };
        if let Some(body) = body {
            return Built { entry: body.address(), program: header_only(argc) };
        }
        let mut ops = ArgumentOps::default();
        let arguments = Arguments { sig, mode, copy, copies: p.stack_len as u64 };
        for m in &p.moves {
            arguments.place(m, &mut ops);
        }
        if matches!(p.result, ResultPlace::Indirect { via_x8: true }) {
            // AAPCS64 6.9: the address of the result goes in x8, not in an argument register.
            ops.late.push(Handler::X8, 0, 0);
        }
        ops.regs.push(Handler::Call, u64::from(p.vector_count), 0);
        assemble(argc, p, mode, ops, after_call(mode, &p.result))
    }

    /// The checked straight-line body of a placement, if it has one: every argument an `int32_t`
    /// (sign-extended) or a 64-bit integer or pointer in integer register `i`, a 4- or 8-byte
    /// integer result.
    fn line_shape(sig: &Signature, p: &Placement) -> Option<Entry> {
        let n = sig.args().len();
        if n > MAX_LINE_ARGS as usize
            || p.moves.len() != n
            || p.stack_len != 0
            || p.copy_len != 0
            || p.vector_count != 0
        {
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
                    Some(Entry::Line { n, mask, kind: (piece.len / 8) as usize })
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// The word-body shape of a placement: every argument an integer or pointer, word `i` in
    /// integer register `i` or, once those are taken, in the next 8-byte stack slot in order.
    fn words_shape(sig: &Signature, p: &Placement) -> Option<Entry> {
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
        Some(Entry::Words(n))
    }

    /// The ops that place the arguments, by the phase that runs them.
    #[derive(Default)]
    struct ArgumentOps {
        /// Frame ops: stack arguments and private copies.
        frame: Ops,
        /// The hidden result pointer (SysV, LP64D) or x8 (AAPCS64), after the other frame ops:
        /// their copies may use argument registers as scratch (%rdi, a0).
        late: Ops,
        /// Register ops, `call` last.
        regs: Ops,
    }

    /// What placing an argument needs besides its move.
    struct Arguments<'a> {
        sig: &'a Signature,
        mode: Mode,
        copy: VectorCopy,
        /// Where the private copies start in the frame: above the stack arguments.
        copies: u64,
    }

    impl Arguments<'_> {
        /// A word argument of a typed call is its word; everything else (aggregates, __int128,
        /// long double, complex) is read through the address its word holds, as in the checked
        /// program.
        fn word(&self, arg: u16) -> bool {
            self.mode == Mode::Typed && self.sig.args()[usize::from(arg)].is_word()
        }

        /// The ops of one move, each in the phase that runs it.
        fn place(&self, m: &Move, ops: &mut ArgumentOps) {
            match *m {
                Move::Int { arg, len, signed, to } => self.integer(arg, Ext::of(len, signed), to, ops),
                Move::Bytes { arg, src, len, to } => self.bytes(arg, src, len, to, ops),
                Move::Copy { arg, len, copy } => self.private_copy(arg, len, copy, ops),
                Move::CopyAddress { copy, to } => self.copy_address(copy, to, ops),
                Move::ResultAddress { .. } => ops.late.push(Handler::Retaddr, 0, 0),
            }
        }

        /// An integer or pointer argument, widened to 64 bits by its type.
        fn integer(&self, arg: u16, ext: Ext, to: Loc, ops: &mut ArgumentOps) {
            let a = argv_at(arg);
            match to {
                Loc::Int(r) if self.word(arg) => ops.regs.push(Handler::Wint(r), a, 0),
                Loc::Int(r) => ops.regs.push(Handler::Int(r, ext), a, 0),
                Loc::Stack(off) if self.word(arg) => ops.frame.push(Handler::Wstk, a, u64::from(off)),
                Loc::Stack(off) => ops.frame.push(Handler::Stk(ext), a, u64::from(off)),
                Loc::Vec(_) => unreachable!("an integer argument goes in an integer register or on the stack"),
            }
        }

        /// Bytes `src..src + len` of an argument: a float, or a piece of an aggregate or of a
        /// wide scalar.
        fn bytes(&self, arg: u16, src: u32, len: u32, to: Loc, ops: &mut ArgumentOps) {
            let (a, src) = (argv_at(arg), u64::from(src));
            match to {
                Loc::Vec(r) if self.word(arg) => ops.regs.push(Handler::Wvec(r, len), a, 0),
                // A whole q register (AArch64): a long double (binary128) or a member of an HFA of them.
                Loc::Vec(r) if len == 16 => ops.regs.push(Handler::Vecq(r), a, src),
                Loc::Vec(r) => ops.regs.push(Handler::Vec(r, len), a, src),
                // A float passed by the integer convention (LP64D): its word.
                Loc::Int(r) if self.word(arg) => ops.regs.push(Handler::Wint(r), a, 0),
                Loc::Int(r) => {
                    ops.regs.push(Handler::Load(len), a, src);
                    ops.regs.push(Handler::Movi(r), 0, 0);
                }
                Loc::Stack(off) if self.word(arg) => ops.frame.push(Handler::Wstk, a, u64::from(off)),
                // The rest of an aggregate split between a7 and the stack (LP64D), from the
                // register phase: a load and a store at the bottom of the outgoing area.
                Loc::Stack(off) if src != 0 => {
                    ops.regs.push(Handler::Load(len), a, src);
                    ops.regs.push(Handler::Movstk, u64::from(off), 0);
                }
                Loc::Stack(off) => self.stack_value(arg, len, off, ops),
            }
        }

        /// A whole value of `len` bytes on the stack at `off` (stack arguments are never pieces):
        /// 8 or 4 bytes by a `stk` handler, anything else copied.
        fn stack_value(&self, arg: u16, len: u32, off: u32, ops: &mut ArgumentOps) {
            let (a, off) = (argv_at(arg), u64::from(off));
            match len {
                8 => ops.frame.push(Handler::Stk(Ext::Q64), a, off),
                4 => ops.frame.push(Handler::Stk(RAW4), a, off),
                _ => ops.frame.push(Handler::Copy(self.copy), a, span(off, len)),
            }
        }

        /// The callee's own copy of a large aggregate (AAPCS64 B.4, LP64D: passed by
        /// reference), in the copy area at `at`.
        fn private_copy(&self, arg: u16, len: u32, at: u32, ops: &mut ArgumentOps) {
            ops.frame.push(Handler::Copy(self.copy), argv_at(arg), span(self.copies + u64::from(at), len));
        }

        /// The address of the private copy at `at`, as the pointer argument that passes it.
        fn copy_address(&self, at: u32, to: Loc, ops: &mut ArgumentOps) {
            let at = self.copies + u64::from(at);
            match to {
                Loc::Int(r) => ops.regs.push(Handler::Caddr(r), at, 0),
                Loc::Stack(off) => ops.frame.push(Handler::Stkcaddr, at, u64::from(off)),
                Loc::Vec(_) => unreachable!("a copy's address is an integer argument"),
            }
        }
    }

    /// The ops after the call. Typed: `return`, the result left in its registers. Checked: each
    /// piece of the result stored at its offset, then `done`; one piece at offset 0 (every
    /// scalar result) is stored and done in one op.
    fn after_call(mode: Mode, result: &ResultPlace) -> Ops {
        let mut after = Ops::default();
        match (mode, result) {
            (Mode::Typed, _) => after.push(Handler::Return, 0, 0),
            (Mode::Checked, ResultPlace::Regs(pieces)) => match pieces.as_slice() {
                [RetPiece { from: RetReg::Int(0), dst: 0, len }] => after.push(Handler::Donei(*len), 0, 0),
                [RetPiece { from: RetReg::Vec(0), dst: 0, len }] if *len <= 8 => after.push(Handler::Donev(*len), 0, 0),
                pieces => {
                    for piece in pieces {
                        after.push(result_piece(piece), u64::from(piece.dst), 0);
                    }
                    after.push(Handler::Done, 0, 0);
                }
            },
            (Mode::Checked, ResultPlace::Void | ResultPlace::Indirect { .. }) => after.push(Handler::Done, 0, 0),
        }
        after
    }

    /// The handler that stores one piece of a result returned in registers.
    fn result_piece(piece: &RetPiece) -> Handler {
        match piece.from {
            // The first of two result registers: the sizes each ABI puts there (build.rs).
            RetReg::Int(0) => Handler::Resa(piece.len),
            RetReg::Int(_) => Handler::Resd(piece.len),
            // A whole q register (AArch64): a long double or a member of an HFA of them.
            RetReg::Vec(r) if piece.len == 16 => Handler::Resq(r),
            RetReg::Vec(r) => Handler::Resv(r, piece.len),
            // A long double (X87, COMPLEX_X87 on x86-64): %st(0) stored and popped.
            RetReg::X87(_) => Handler::Resx,
        }
    }

    /// The program, in the order the walk runs it, and the walk that runs it.
    fn assemble(argc: usize, p: &Placement, mode: Mode, ops: ArgumentOps, after: Ops) -> Built {
        let frame_bytes = (p.stack_len + p.copy_len) as u64;
        let mut program = vec![frame_bytes, argc as u64];
        // A frame for stack arguments and copies (LP64D's split aggregate stores its stack half
        // from the register phase: no frame op, but a frame all the same).
        let framed = mode == Mode::Checked || frame_bytes != 0 || ops.frame.count() != 0 || ops.late.count() != 0;
        let entry = if framed {
            // `enter` calls the register ops and continues `link` bytes after itself: after them.
            let link = (1 + ops.regs.count()) as u64 * OP_SIZE as u64;
            let mut enter = Ops::default();
            enter.push(Handler::Enter, link, 0);
            for phase in [ops.frame, ops.late, enter, ops.regs, after] {
                program.extend(phase.0);
            }
            if mode == Mode::Checked {
                Entry::WalkChecked
            } else {
                Entry::WalkFramed
            }
        } else {
            // Nothing before the register ops: `call` tail-jumps to the function, which returns
            // straight to the typed caller.
            program.extend(ops.regs.0);
            Entry::WalkTail
        };
        Built { entry: entry.address(), program: program.into_boxed_slice() }
    }

    /// Ops of one phase, three words each: the handler's address, operand A, operand B.
    #[derive(Default)]
    struct Ops(Vec<u64>);

    impl Ops {
        fn push(&mut self, handler: Handler, a: u64, b: u64) {
            self.0.extend([handler.address() as u64, a, b]);
        }

        /// How many ops.
        fn count(&self) -> usize {
            self.0.len() / 3
        }
    }

    /// Operand A of an argument's op: the byte offset of its `argv` entry.
    fn argv_at(arg: u16) -> u64 {
        8 * u64::from(arg)
    }

    /// Operand B of a `copy` op: the destination in the frame, the length in the high half.
    fn span(at: u64, len: u32) -> u64 {
        at | u64::from(len) << 32
    }

    /// A key of the code table: a handler or an entry.
    trait Key: Copy + fmt::Debug {
        /// The key's slot, `None` where this architecture's table has no such code.
        fn slot(self) -> Option<i64>;

        /// The address of the key's slot. A key without one asks for code this architecture
        /// does not have: only a placement bug can, and this is where it is found.
        fn address(self) -> usize {
            match self.slot() {
                Some(slot) => engine::code(slot),
                None => {
                    unreachable!(
                        "the native placement asked for {self:?}: no such code in the {} table",
                        engine::TARGET
                    )
                }
            }
        }
    }

    /// A handler of the code table, by family (the variant: `int`, `vec`, ...) and members
    /// (registers by number, byte counts, extensions, copy widths).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Handler {
        /// `int_<reg>_<ext>`: an integer argument, widened, into an integer register.
        Int(u8, Ext),
        /// `vec_<reg>_<len>`: 4 or 8 bytes of an argument into a vector register.
        Vec(u8, u32),
        /// `vecq_<reg>`: 16 bytes into a whole q register (AArch64).
        Vecq(u8),
        /// `load_<len>`: `len` bytes of an argument into the scratch register.
        Load(u32),
        /// `movi_<reg>`: the scratch register into an integer register.
        Movi(u8),
        /// `movstk`: the scratch register to the bottom of the outgoing area (riscv64).
        Movstk,
        /// `caddr_<reg>`: a private copy's address into an integer register.
        Caddr(u8),
        /// `wint_<reg>`: an argument word into an integer register.
        Wint(u8),
        /// `wvec_<reg>_<len>`: the low 4 or 8 bytes of an argument word into a vector register.
        Wvec(u8, u32),
        /// `call`: the end of the register ops, a tail jump to the function.
        Call,
        /// `stk_<ext>`: an integer argument, widened, into an 8-byte stack slot.
        Stk(Ext),
        /// `wstk`: an argument word into an 8-byte stack slot.
        Wstk,
        /// `copy_<width>`: bytes of an argument copied into the frame.
        Copy(VectorCopy),
        /// `stkcaddr`: a private copy's address into a stack slot.
        Stkcaddr,
        /// `retaddr`: the caller's result buffer as the hidden first argument (SysV, LP64D).
        Retaddr,
        /// `x8`: the caller's result buffer into x8 (AAPCS64).
        X8,
        /// `enter`: runs the register ops as a subroutine.
        Enter,
        /// `resa_<len>`: `len` bytes of the first integer result register.
        Resa(u32),
        /// `resd_<len>`: `len` bytes of the second integer result register.
        Resd(u32),
        /// `resv_<reg>_<len>`: 4 or 8 bytes of a vector result register.
        Resv(u8, u32),
        /// `resq_<reg>`: a whole q result register (AArch64).
        Resq(u8),
        /// `resx`: a long double result, stored from `%st(0)` and popped (x86-64).
        Resx,
        /// `donei_<len>`: a one-piece integer result stored, then `done`.
        Donei(u32),
        /// `donev_<len>`: a one-piece float result stored, then `done`.
        Donev(u32),
        /// `return`: back to the typed caller, the result left in its registers.
        Return,
        /// `done`: back to the checked caller with `STATUS_OK`.
        Done,
    }

    /// How an `int` or `stk` handler widens an integer argument to 64 bits: a member of
    /// build.rs's `EXT`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Ext {
        S8,
        S16,
        S32,
        Z8,
        Z16,
        Z32,
        Q64,
    }

    impl Ext {
        /// The member names, in declaration order (`ext as usize` indexes them).
        const NAMES: [&'static str; 7] = ["s8", "s16", "s32", "z8", "z16", "z32", "q64"];

        /// The extension of an integer of `len` bytes: sign- or zero-extended below 8 bytes.
        fn of(len: u8, signed: bool) -> Ext {
            match (len, signed) {
                (1, true) => Ext::S8,
                (2, true) => Ext::S16,
                (4, true) => Ext::S32,
                (1, false) => Ext::Z8,
                (2, false) => Ext::Z16,
                (4, false) => Ext::Z32,
                _ => Ext::Q64,
            }
        }
    }

    /// The `stk` handler that stores 4 raw bytes (a `float`, a 4-byte aggregate) in an 8-byte
    /// slot: any 4-byte kind will do, the bits above are undefined on every ABI. `z32`, or `s32`
    /// on riscv64 (LP64D has no `z32`: a `uint32_t` is sign-extended like an `int32_t`).
    const RAW4: Ext = if STK_EXT[Ext::Z32 as usize].is_some() { Ext::Z32 } else { Ext::S32 };

    /// Where a call jumps first: a walk of the program, or a body that needs none.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Entry {
        /// `walk_tail`: typed, nothing before the register ops; they end in a tail jump.
        WalkTail,
        /// `walk_framed`: typed, with a frame for stack arguments and copies.
        WalkFramed,
        /// `walk_checked`: checked, always with a frame (the result buffer is kept in it).
        WalkChecked,
        /// `words_<n>`: typed, `n` words in argument order.
        Words(usize),
        /// `line_<widths>_<kind>`: checked, `n` arguments of the widths in `mask` (argument 0
        /// most significant, 1 = 64-bit) and a result of kind `kind` (0: 4 bytes, 1: 8 bytes).
        Line { n: usize, mask: usize, kind: usize },
    }

    impl Key for Handler {
        fn slot(self) -> Option<i64> {
            match self {
                Handler::Int(r, ext) => member(H_INT, &[(L_INT_0, reg(r)), (L_INT_1, INT_EXT[ext as usize])]),
                Handler::Vec(r, len) => member(H_VEC, &[(L_VEC_0, reg(r)), (L_VEC_1, by_len(VEC_LEN, len))]),
                #[cfg(nccl_trampoline_asm = "aarch64_aapcs64")]
                Handler::Vecq(r) => member(H_VECQ, &[(L_VECQ_0, reg(r))]),
                Handler::Load(len) => member(H_LOAD, &[(L_LOAD_0, by_len(LOAD_LEN, len))]),
                Handler::Movi(r) => member(H_MOVI, &[(L_MOVI_0, reg(r))]),
                #[cfg(nccl_trampoline_asm = "riscv64_lp64d")]
                Handler::Movstk => Some(H_MOVSTK),
                #[cfg(any(nccl_trampoline_asm = "aarch64_aapcs64", nccl_trampoline_asm = "riscv64_lp64d"))]
                Handler::Caddr(r) => member(H_CADDR, &[(L_CADDR_0, reg(r))]),
                Handler::Wint(r) => member(H_WINT, &[(L_WINT_0, reg(r))]),
                Handler::Wvec(r, len) => member(H_WVEC, &[(L_WVEC_0, reg(r)), (L_WVEC_1, by_len(WVEC_LEN, len))]),
                Handler::Call => Some(H_CALL),
                Handler::Stk(ext) => member(H_STK, &[(L_STK_0, STK_EXT[ext as usize])]),
                Handler::Wstk => Some(H_WSTK),
                Handler::Copy(width) => {
                    let at = VectorCopy::ALL.iter().position(|&w| w == width).and_then(|i| COPY_WIDTH[i]);
                    member(H_COPY, &[(L_COPY_0, at)])
                }
                #[cfg(any(nccl_trampoline_asm = "aarch64_aapcs64", nccl_trampoline_asm = "riscv64_lp64d"))]
                Handler::Stkcaddr => Some(H_STKCADDR),
                #[cfg(any(nccl_trampoline_asm = "x86_64_sysv", nccl_trampoline_asm = "riscv64_lp64d"))]
                Handler::Retaddr => Some(H_RETADDR),
                #[cfg(nccl_trampoline_asm = "aarch64_aapcs64")]
                Handler::X8 => Some(H_X8),
                Handler::Enter => Some(H_ENTER),
                Handler::Resa(len) => member(H_RESA, &[(L_RESA_0, by_len(RESA_LEN, len))]),
                Handler::Resd(len) => member(H_RESD, &[(L_RESD_0, by_len(RESD_LEN, len))]),
                Handler::Resv(r, len) => member(H_RESV, &[(L_RESV_0, reg(r)), (L_RESV_1, by_len(RESV_LEN, len))]),
                #[cfg(nccl_trampoline_asm = "aarch64_aapcs64")]
                Handler::Resq(r) => member(H_RESQ, &[(L_RESQ_0, reg(r))]),
                #[cfg(nccl_trampoline_asm = "x86_64_sysv")]
                Handler::Resx => Some(H_RESX),
                Handler::Donei(len) => member(H_DONEI, &[(L_DONEI_0, by_len(DONEI_LEN, len))]),
                Handler::Donev(len) => member(H_DONEV, &[(L_DONEV_0, by_len(DONEV_LEN, len))]),
                Handler::Return => Some(H_RETURN),
                Handler::Done => Some(H_DONE),
                // The families of the other architectures.
                _ => None,
            }
        }
    }

    impl Key for Entry {
        fn slot(self) -> Option<i64> {
            match self {
                Entry::WalkTail => Some(T_WALK),
                Entry::WalkFramed => Some(T_WALK + 1),
                Entry::WalkChecked => Some(T_WALK + 2),
                Entry::Words(n) => (n as i64 <= MAX_WORD_ARGS).then_some(T_WORDS + n as i64),
                // build.rs's `line_names`: for n = 0, 1, ..., the 2^n masks of n arguments (the
                // 2^n - 1 of fewer arguments come first), each with both result kinds.
                Entry::Line { n, mask, kind } => (n as i64 <= MAX_LINE_ARGS && mask < 1 << n && kind < 2)
                    .then_some(T_LINE + 2 * ((1 << n) - 1 + mask as i64) + kind as i64),
            }
        }
    }

    /// Byte counts as build.rs names them in member lists, indexed by the count.
    const BYTES: [&str; 9] = ["0", "1", "2", "3", "4", "5", "6", "7", "8"];

    /// The copy widths as build.rs names them in member lists, in `VectorCopy::ALL` order.
    const COPY_NAMES: [&str; VectorCopy::ALL.len()] = {
        let mut names = [""; VectorCopy::ALL.len()];
        let mut i = 0;
        while i < names.len() {
            names[i] = VectorCopy::ALL[i].name();
            i += 1;
        }
        names
    };

    // Where each named member sits in its family's list, by key (`Ext`, byte count, copy
    // width), `None` where the family has no such member. Searched when the crate is compiled:
    // a plan indexes these, it never compares names.
    const INT_EXT: [Option<usize>; 7] = positions(L_INT_1, Ext::NAMES);
    const STK_EXT: [Option<usize>; 7] = positions(L_STK_0, Ext::NAMES);
    const VEC_LEN: [Option<usize>; 9] = positions(L_VEC_1, BYTES);
    const WVEC_LEN: [Option<usize>; 9] = positions(L_WVEC_1, BYTES);
    const LOAD_LEN: [Option<usize>; 9] = positions(L_LOAD_0, BYTES);
    const RESA_LEN: [Option<usize>; 9] = positions(L_RESA_0, BYTES);
    const RESD_LEN: [Option<usize>; 9] = positions(L_RESD_0, BYTES);
    const RESV_LEN: [Option<usize>; 9] = positions(L_RESV_1, BYTES);
    const DONEI_LEN: [Option<usize>; 9] = positions(L_DONEI_0, BYTES);
    const DONEV_LEN: [Option<usize>; 9] = positions(L_DONEV_0, BYTES);
    const COPY_WIDTH: [Option<usize>; VectorCopy::ALL.len()] = positions(L_COPY_0, COPY_NAMES);

    /// The position of each of `names` in `list`.
    const fn positions<const N: usize>(list: &[&str], names: [&str; N]) -> [Option<usize>; N] {
        let mut at = [None; N];
        let mut n = 0;
        while n < N {
            let mut i = 0;
            while i < list.len() {
                if same(list[i], names[n]) {
                    at[n] = Some(i);
                }
                i += 1;
            }
            n += 1;
        }
        at
    }

    const fn same(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }

    /// The member of a family that starts at slot `first`, at the given position of each of its
    /// member lists: build.rs's `members` order, the last list varying fastest. `None` if a
    /// position is missing or past its list.
    fn member(first: i64, places: &[(&[&str], Option<usize>)]) -> Option<i64> {
        let mut index = 0;
        for &(list, at) in places {
            index = index * list.len() + at.filter(|&at| at < list.len())?;
        }
        Some(first + index as i64)
    }

    /// A register's position in its family's list: its number.
    fn reg(r: u8) -> Option<usize> {
        Some(usize::from(r))
    }

    /// A byte count's position, from its family's `*_LEN`.
    fn by_len(positions: [Option<usize>; 9], len: u32) -> Option<usize> {
        positions.get(len as usize).copied().flatten()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// Every handler key with every member a placement could name: registers 0 to 8, byte
        /// counts 0 to 16, every extension and copy width.
        fn handlers() -> Vec<Handler> {
            const EXTS: [Ext; 7] = [Ext::S8, Ext::S16, Ext::S32, Ext::Z8, Ext::Z16, Ext::Z32, Ext::Q64];
            let (regs, lens) = (0..=8u8, 0..=16u32);
            let mut keys = vec![
                Handler::Movstk,
                Handler::Call,
                Handler::Wstk,
                Handler::Stkcaddr,
                Handler::Retaddr,
                Handler::X8,
                Handler::Enter,
                Handler::Resx,
                Handler::Return,
                Handler::Done,
            ];
            keys.extend(EXTS.map(Handler::Stk));
            keys.extend(VectorCopy::ALL.map(Handler::Copy));
            for r in regs {
                keys.extend(EXTS.map(|e| Handler::Int(r, e)));
                keys.extend([Handler::Vecq, Handler::Movi, Handler::Caddr, Handler::Wint, Handler::Resq].map(|h| h(r)));
                for len in lens.clone() {
                    keys.extend([Handler::Vec(r, len), Handler::Wvec(r, len), Handler::Resv(r, len)]);
                }
            }
            for len in lens {
                keys.extend(
                    [Handler::Load, Handler::Resa, Handler::Resd, Handler::Donei, Handler::Donev].map(|h| h(len)),
                );
            }
            keys
        }

        /// The table name of the handler `key` stands for: build.rs's `members`, the family then
        /// each member.
        fn name(key: Handler) -> String {
            let int = |r: u8| INT_REGS[usize::from(r)];
            let vec = |r: u8| VEC_REGS[usize::from(r)];
            let ext = |e: Ext| Ext::NAMES[e as usize];
            match key {
                Handler::Int(r, e) => format!("int_{}_{}", int(r), ext(e)),
                Handler::Vec(r, len) => format!("vec_{}_{len}", vec(r)),
                Handler::Vecq(r) => format!("vecq_{}", vec(r)),
                Handler::Load(len) => format!("load_{len}"),
                Handler::Movi(r) => format!("movi_{}", int(r)),
                Handler::Movstk => "movstk".into(),
                Handler::Caddr(r) => format!("caddr_{}", int(r)),
                Handler::Wint(r) => format!("wint_{}", int(r)),
                Handler::Wvec(r, len) => format!("wvec_{}_{len}", vec(r)),
                Handler::Call => "call".into(),
                Handler::Stk(e) => format!("stk_{}", ext(e)),
                Handler::Wstk => "wstk".into(),
                Handler::Copy(width) => format!("copy_{}", width.name()),
                Handler::Stkcaddr => "stkcaddr".into(),
                Handler::Retaddr => "retaddr".into(),
                Handler::X8 => "x8".into(),
                Handler::Enter => "enter".into(),
                Handler::Resa(len) => format!("resa_{len}"),
                Handler::Resd(len) => format!("resd_{len}"),
                Handler::Resv(r, len) => format!("resv_{}_{len}", vec(r)),
                Handler::Resq(r) => format!("resq_{}", vec(r)),
                Handler::Resx => "resx".into(),
                Handler::Donei(len) => format!("donei_{len}"),
                Handler::Donev(len) => format!("donev_{len}"),
                Handler::Return => "return".into(),
                Handler::Done => "done".into(),
            }
        }

        #[test]
        fn every_handler_has_one_key_and_the_key_finds_it_by_name() {
            let mut keyed = vec![None; H_COUNT as usize];
            for key in handlers() {
                let Some(slot) = key.slot() else { continue };
                let slot = usize::try_from(slot).unwrap();
                assert_eq!(TABLE_NAMES[slot], name(key), "{key:?}");
                assert_eq!(keyed[slot].replace(key), None, "{key:?}: slot {slot} has another key");
            }
            let unkeyed: Vec<_> = (0..keyed.len()).filter(|&i| keyed[i].is_none()).map(|i| TABLE_NAMES[i]).collect();
            assert!(unkeyed.is_empty(), "handlers no key finds: {unkeyed:?}");
        }

        #[test]
        fn every_entry_key_finds_its_body_by_name() {
            assert_eq!(TABLE_NAMES[Entry::WalkTail.slot().unwrap() as usize], "walk_tail");
            assert_eq!(TABLE_NAMES[Entry::WalkFramed.slot().unwrap() as usize], "walk_framed");
            assert_eq!(TABLE_NAMES[Entry::WalkChecked.slot().unwrap() as usize], "walk_checked");
            for n in 0..=MAX_WORD_ARGS as usize {
                assert_eq!(TABLE_NAMES[Entry::Words(n).slot().unwrap() as usize], format!("words_{n}"));
            }
            assert_eq!(Entry::Words(MAX_WORD_ARGS as usize + 1).slot(), None);
            for n in 0..=MAX_LINE_ARGS as usize {
                for mask in 0..1 << n {
                    let widths: String = (0..n).map(|k| if mask >> (n - 1 - k) & 1 == 1 { 'q' } else { 'i' }).collect();
                    let widths = if n == 0 { "none".to_string() } else { widths };
                    for (kind, result) in ["r4", "r8"].iter().enumerate() {
                        let slot = Entry::Line { n, mask, kind }.slot().unwrap() as usize;
                        assert_eq!(TABLE_NAMES[slot], format!("line_{widths}_{result}"));
                    }
                }
                assert_eq!(Entry::Line { n, mask: 1 << n, kind: 0 }.slot(), None);
            }
            assert_eq!(Entry::Line { n: MAX_LINE_ARGS as usize + 1, mask: 0, kind: 0 }.slot(), None);
        }
    }
}
