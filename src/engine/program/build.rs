//! The builder, where the target has a trampoline: `build`, then its parts in the order it
//! runs them (straight-line shapes, argument ops, ops after the call, the program's assembly).

use super::{header_only, Built, Mode, Placement, Signature, VectorCopy};
use crate::abi::{Loc, Move, ResultPlace, RetPiece, RetReg};
use crate::engine::layout::*;

use super::handlers::{Entry, Ext, Handler, Key, RAW4};

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
    // A typed call whose register arguments are all words: a register body loads them (in
    // place of the register ops), called by `enterb` where the call has a frame.
    let words = if mode == Mode::Typed { register_words(sig, p) } else { None };
    if let Some((entry, offsets)) = &words {
        if p.stack_len == 0 && p.copy_len == 0 && p.moves.len() == argc && matches!(entry, Entry::Regs { nv: 1.., .. })
        {
            let mut program = header_only(argc).into_vec();
            debug_assert_eq!(program.len() as i64 * 8, HDR_OPS);
            program.extend(offsets);
            return Built { entry: entry.address(), program: program.into_boxed_slice() };
        }
    }
    let mut ops = ArgumentOps::default();
    let arguments = Arguments { sig, mode, copy, copies: p.stack_len as u64 };
    for m in &p.moves {
        arguments.place(m, &mut ops);
    }
    if matches!(p.result, ResultPlace::Indirect(crate::abi::IndirectResult::DedicatedRegister)) {
        // AAPCS64 6.9: the address of the result goes in x8, not in an argument register.
        ops.late.push(Handler::X8, 0, 0);
    }
    ops.regs.push(Handler::Call, u64::from(p.vector_count), 0);
    assemble(argc, p, mode, ops, words, after_call(mode, &p.result))
}

/// The checked straight-line body of a placement, if it has one: every argument an `int32_t`
/// (sign-extended) or a 64-bit integer or pointer in integer register `i`, or, past the
/// registers (x86-64's seventh and eighth), a 64-bit integer or pointer in stack slot `i - 6`;
/// a 4- or 8-byte integer result.
fn line_shape(sig: &Signature, p: &Placement) -> Option<Entry> {
    let n = sig.args().len();
    if n > MAX_LINE_ARGS as usize || p.moves.len() != n || p.copy_len != 0 || p.vector_count != 0 {
        return None;
    }
    let regs = INT_REGS.len();
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
            Move::Int { arg, len: 8, to: Loc::Stack(off), .. }
                if usize::from(arg) == i && i >= regs && off as usize == 8 * (i - regs) =>
            {
                mask = (mask << 1) | 1
            }
            _ => return None,
        }
    }
    // The bodies' outgoing area: two slots (build.rs, `line_args`).
    if p.stack_len > 16 {
        return None;
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

/// The register body of a typed placement (x86-64) and the word offset of each register's
/// argument (integer registers, then vector registers), where every argument that goes in a
/// register is a word in one piece (an integer, pointer, float or double); the rest go on the
/// stack or are copied there, by frame ops.
fn register_words(sig: &Signature, p: &Placement) -> Option<(Entry, Vec<u64>)> {
    let word = |arg: u16| sig.args()[usize::from(arg)].is_word();
    let (mut ints, mut vecs) = (Vec::new(), Vec::new());
    for m in &p.moves {
        match *m {
            Move::Int { arg, to: Loc::Int(r), .. } if word(arg) && usize::from(r) == ints.len() => {
                ints.push(argv_at(arg))
            }
            Move::Bytes { arg, src: 0, len: 4 | 8, to: Loc::Vec(r) } if word(arg) && usize::from(r) == vecs.len() => {
                vecs.push(argv_at(arg))
            }
            Move::Int { to: Loc::Stack(_), .. } | Move::Bytes { to: Loc::Stack(_), .. } | Move::Copy { .. } => {}
            _ => return None,
        }
    }
    if usize::from(p.vector_count) != vecs.len() {
        return None;
    }
    let entry = Entry::Regs { ni: ints.len(), nv: vecs.len() };
    entry.slot()?;
    Some((entry, ints.into_iter().chain(vecs).collect()))
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
        (Mode::Checked, ResultPlace::Void | ResultPlace::Indirect(_)) => after.push(Handler::Done, 0, 0),
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

/// The program, in the order the walk runs it, and the walk that runs it. `words`: the register
/// body and word offsets of a typed call whose register arguments are all words (a framed one
/// runs them through `enterb` in place of its register ops).
fn assemble(
    argc: usize,
    p: &Placement,
    mode: Mode,
    ops: ArgumentOps,
    words: Option<(Entry, Vec<u64>)>,
    after: Ops,
) -> Built {
    let frame_bytes = (p.stack_len + p.copy_len) as u64;
    let mut program = vec![frame_bytes, argc as u64];
    // A frame for stack arguments and copies (LP64D's split aggregate stores its stack half
    // from the register phase: no frame op, but a frame all the same).
    let framed = mode == Mode::Checked || frame_bytes != 0 || ops.frame.count() != 0 || ops.late.count() != 0;
    let entry = if framed {
        let mut enter = Ops::default();
        match words {
            Some((body, offsets)) if Handler::Enterb.slot().is_some() => {
                // `enterb` calls the body, whose offsets follow it (padded to whole ops), and
                // continues after them.
                let data = offsets.len().div_ceil(3) * 3;
                let link = (1 + data / 3) as u64 * OP_SIZE as u64;
                enter.push(Handler::Enterb, link, body.address() as u64);
                enter.0.extend(offsets.iter().copied().chain(core::iter::repeat(0)).take(data));
                for phase in [ops.frame, ops.late, enter, after] {
                    program.extend(phase.0);
                }
            }
            _ => {
                // `enter` calls the register ops and continues `link` bytes after itself: after them.
                let link = (1 + ops.regs.count()) as u64 * OP_SIZE as u64;
                enter.push(Handler::Enter, link, 0);
                for phase in [ops.frame, ops.late, enter, ops.regs, after] {
                    program.extend(phase.0);
                }
            }
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
