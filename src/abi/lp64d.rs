//! RISC-V LP64D (riscv64 Linux): RISC-V ELF psABI 1.0, `riscv-cc.adoc`, "Integer Calling
//! Convention" and "Hardware Floating-point Calling Convention" with XLEN = FLEN = 64, as GCC
//! implements it (`riscv_get_arg_info` in `gcc/config/riscv/riscv.cc`), checked against GCC by
//! the conformance suite under qemu-riscv64.
//!
//! The rules implemented here:
//! - Integers and pointers take the next of a0..a7, else an 8-byte stack slot. Integers
//!   narrower than 64 bits are widened by the sign of their type to 32 bits, then
//!   sign-extended: a `uint32_t` is sign-extended like an `int32_t` (`Move::Int { signed: true }`).
//! - Named `float`/`double` take the next of fa0..fa7; once those are used up, the integer
//!   convention (the next a register, then the stack), with the upper bits of a `float` there
//!   undefined. A `float` in an f register is NaN-boxed (the `flw` of the handlers does that).
//! - FP flattening (named arguments only): a struct whose members, flattened through nested
//!   structs and arrays, are one floating-point real, two, or one and one integer of at most 8
//!   bytes, whatever its size (padding from an aligned member can make it larger than 16
//!   bytes: GCC looks at the members only) (not a pointer: GCC's `riscv_flatten_aggregate_field` takes integral types
//!   only) goes member by member in fa (and a) registers if enough are free; otherwise it
//!   follows the integer convention.
//! - Other aggregates of at most 16 bytes: one or two a registers (as laid out in memory);
//!   with only a7 left, the first 8 bytes go in a7 and the rest on the stack; with none, the
//!   stack.
//! - Aggregates larger than 16 bytes are passed by reference: replaced by the address of a
//!   copy the callee owns (a fresh, 16-aligned copy per call, as AAPCS64 B.4).
//! - Variadic arguments: the integer convention only (no f registers, no flattening); one
//!   with 16-byte alignment starts at an even a register (an aligned pair), and once that
//!   skips a7 everything after it is on the stack.
//! - On the stack, arguments are aligned to max(8, alignment), at most 16, and take a multiple
//!   of 8 bytes.
//! - `__int128`, `unsigned __int128` and `long double` (IEEE binary128, wider than FLEN) are
//!   2 x XLEN scalars: a register pair (an even-numbered one only when variadic), split between
//!   a7 and the stack, or a 16-aligned stack slot; never f registers, and a struct holding a
//!   `long double` is not flattened. `_Complex float` / `_Complex double` are placed like a
//!   struct of two FP reals (fa registers when named and two are free, else the integer
//!   convention); `_Complex long double` (32 bytes) by reference.
//! - Results as the first named argument would be passed: a0/a1, fa0, fa0/fa1 or fa0 + a0 for
//!   a flattened struct; larger than 16 bytes through a caller buffer whose address is an
//!   implicit first argument in a0.

use super::{arg_index, offset32, IndirectResult, Loc, Move, NextArg, Placement, ResultPlace, RetPiece, RetReg};
use crate::ctype::error::Error;
use crate::ctype::types::{Aggregate, Signature, Type};

/// Integer argument registers a0..a7.
pub const INT_REGS: u8 = 8;
/// Floating-point argument registers fa0..fa7.
pub const FP_REGS: u8 = 8;

/// The members of `agg` for FP flattening, if it qualifies: one or two `(offset, type)`, at
/// least one of them floating point, any other an integer of at most 8 bytes.
pub fn flatten(agg: &Aggregate) -> Option<Vec<(usize, Type)>> {
    // No size limit: padding (an aligned member) can make a flattened struct larger than 16
    // bytes, and GCC still passes it in registers (`riscv_flatten_aggregate_argument` looks at
    // the members only).
    let members = agg.scalars();
    let fp = members.iter().filter(|(_, t)| is_fp_real(t)).count();
    let int = members.iter().filter(|(_, t)| is_integer(t)).count();
    match (members.len(), fp, int) {
        (1, 1, 0) | (2, 2, 0) | (2, 1, 1) => Some(members),
        _ => None,
    }
}

/// A floating-point real no wider than FLEN (a `long double`, 16 bytes, is not: it takes the
/// integer convention, and a struct holding one is not flattened).
fn is_fp_real(t: &Type) -> bool {
    matches!(t, Type::F32 | Type::F64)
}

/// An integer no wider than XLEN (not `__int128`, not a pointer).
fn is_integer(t: &Type) -> bool {
    matches!(t, Type::I8 | Type::U8 | Type::I16 | Type::U16 | Type::I32 | Type::U32 | Type::I64 | Type::U64)
}

struct State {
    ngr: u8,
    nfr: u8,
    nsaa: usize,
    copies: usize,
    moves: Vec<Move>,
}

impl State {
    fn stack_slot(&mut self, size: usize, align: usize) -> Loc {
        self.nsaa = self.nsaa.next_multiple_of(align.clamp(8, 16));
        let at = Loc::Stack(offset32(self.nsaa));
        self.nsaa += size.next_multiple_of(8);
        at
    }

    fn int_or_stack(&mut self) -> Loc {
        if self.ngr < INT_REGS {
            self.ngr += 1;
            Loc::Int(self.ngr - 1)
        } else {
            self.stack_slot(8, 8)
        }
    }
}

/// Places `sig` by the LP64D rules.
pub fn place(sig: &Signature) -> Result<Placement, Error> {
    let mut st = State { ngr: 0, nfr: 0, nsaa: 0, copies: 0, moves: Vec::new() };

    let result = match sig.ret() {
        None => ResultPlace::Void,
        // `_Complex float` / `_Complex double`: like a struct of two FP reals (fa0, fa1).
        Some(t @ (Type::ComplexF32 | Type::ComplexF64)) => {
            let half = offset32(t.size() / 2);
            ResultPlace::Regs(vec![
                RetPiece { from: RetReg::Vec(0), dst: 0, len: half },
                RetPiece { from: RetReg::Vec(1), dst: half, len: half },
            ])
        }
        // 2 x XLEN scalars (`__int128`, `long double` as binary128) in a0:a1.
        Some(Type::I128 | Type::U128 | Type::LongDouble) => ResultPlace::Regs(vec![
            RetPiece { from: RetReg::Int(0), dst: 0, len: 8 },
            RetPiece { from: RetReg::Int(1), dst: 8, len: 8 },
        ]),
        // `_Complex long double`: 32 bytes, through the caller's buffer.
        Some(Type::ComplexLongDouble) => {
            st.moves.push(Move::ResultAddress { to: Loc::Int(0) });
            st.ngr = 1;
            ResultPlace::Indirect(IndirectResult::HiddenArgument)
        }
        Some(Type::Aggregate(agg)) => match flatten(agg) {
            Some(members) => {
                let mut fp = 0u8;
                ResultPlace::Regs(
                    members
                        .iter()
                        .map(|(off, t)| {
                            let from = if is_fp_real(t) {
                                fp += 1;
                                RetReg::Vec(fp - 1)
                            } else {
                                RetReg::Int(0)
                            };
                            RetPiece { from, dst: offset32(*off), len: offset32(t.size()) }
                        })
                        .collect(),
                )
            }
            None if agg.size() > 16 => {
                // The caller's buffer, as an implicit first argument.
                st.moves.push(Move::ResultAddress { to: Loc::Int(0) });
                st.ngr = 1;
                ResultPlace::Indirect(IndirectResult::HiddenArgument)
            }
            None => ResultPlace::Regs(
                (0..agg.size().div_ceil(8))
                    .map(|k| RetPiece {
                        from: RetReg::Int(k as u8),
                        dst: offset32(8 * k),
                        len: offset32((agg.size() - 8 * k).min(8)),
                    })
                    .collect(),
            ),
        },
        Some(ty) => {
            let from = if ty.is_float() { RetReg::Vec(0) } else { RetReg::Int(0) };
            ResultPlace::Regs(vec![RetPiece { from, dst: 0, len: offset32(ty.size()) }])
        }
    };

    let named = sig.fixed_args().unwrap_or(sig.args().len());
    for (i, ty) in sig.args().iter().enumerate() {
        let arg = arg_index(i);
        let variadic = i >= named;
        match ty {
            Type::F32 | Type::F64 => {
                let to = if !variadic && st.nfr < FP_REGS {
                    st.nfr += 1;
                    Loc::Vec(st.nfr - 1)
                } else {
                    // The integer convention: raw bytes, the upper bits undefined.
                    st.int_or_stack()
                };
                st.moves.push(Move::Bytes { arg, src: 0, len: offset32(ty.size()), to });
            }
            Type::Aggregate(agg) => place_aggregate(&mut st, arg, agg, variadic),
            Type::ComplexF32 | Type::ComplexF64 => {
                let half = ty.size() / 2;
                if !variadic && st.nfr + 2 <= FP_REGS {
                    // Like a struct of two FP reals: fa registers, real part first.
                    for k in 0..2 {
                        let src = offset32(k * half);
                        st.moves.push(Move::Bytes { arg, src, len: offset32(half), to: Loc::Vec(st.nfr) });
                        st.nfr += 1;
                    }
                } else {
                    place_in_integer_registers(&mut st, arg, ty.size(), ty.align(), variadic);
                }
            }
            // 2 x XLEN scalars: a register pair (an even one when variadic), split between a7 and
            // the stack, or the stack; never FP registers (binary128 is wider than FLEN).
            Type::I128 | Type::U128 | Type::LongDouble => place_in_integer_registers(&mut st, arg, 16, 16, variadic),
            Type::ComplexLongDouble => place_by_reference(&mut st, arg, ty.size()),
            Type::I8
            | Type::U8
            | Type::I16
            | Type::U16
            | Type::I32
            | Type::U32
            | Type::I64
            | Type::U64
            | Type::Pointer => {
                let to = st.int_or_stack();
                // Widened by signedness to 32 bits, then sign-extended: uint32_t too.
                let signed = ty.is_signed() || *ty == Type::U32;
                st.moves.push(Move::Int { arg, len: ty.size() as u8, signed, to });
            }
        }
    }

    let next = NextArg { int: st.ngr, vec: st.nfr, stack: offset32(st.nsaa) };
    Ok(Placement {
        next,
        moves: st.moves,
        stack_len: st.nsaa.next_multiple_of(16),
        copy_len: st.copies,
        vector_count: st.nfr,
        result,
    })
}

fn place_aggregate(st: &mut State, arg: u16, agg: &Aggregate, variadic: bool) {
    let size = agg.size();
    if !variadic {
        if let Some(members) = flatten(agg) {
            let fp = members.iter().filter(|(_, t)| is_fp_real(t)).count() as u8;
            let int = members.len() as u8 - fp;
            if st.nfr + fp <= FP_REGS && st.ngr + int <= INT_REGS {
                for (off, t) in members {
                    let to = if is_fp_real(&t) {
                        st.nfr += 1;
                        Loc::Vec(st.nfr - 1)
                    } else {
                        st.ngr += 1;
                        Loc::Int(st.ngr - 1)
                    };
                    st.moves.push(Move::Bytes { arg, src: offset32(off), len: offset32(t.size()), to });
                }
                return;
            }
        }
    }

    if size > 16 {
        place_by_reference(st, arg, size);
    } else {
        place_in_integer_registers(st, arg, size, agg.align(), variadic);
    }
}

/// Larger than 2 x XLEN: a private, 16-aligned copy for this call, its address an integer.
fn place_by_reference(st: &mut State, arg: u16, size: usize) {
    let copy = offset32(st.copies);
    st.copies += size.next_multiple_of(16);
    st.moves.push(Move::Copy { arg, len: offset32(size), copy });
    let to = st.int_or_stack();
    st.moves.push(Move::CopyAddress { copy, to });
}

/// The integer convention for a value of at most 2 x XLEN bytes (an aggregate, a 2 x XLEN
/// scalar, a complex number without FP registers): one or two a registers, split between a7
/// and the stack, or the stack.
fn place_in_integer_registers(st: &mut State, arg: u16, size: usize, align: usize, variadic: bool) {
    let words = size.div_ceil(8) as u8;
    if variadic && align >= 16 {
        // An aligned register pair; skipping a7 sends everything after it to the stack.
        st.ngr = st.ngr.next_multiple_of(2).min(INT_REGS);
    }
    if st.ngr + words <= INT_REGS {
        for k in 0..words {
            let src = 8 * usize::from(k);
            let len = offset32((size - src).min(8));
            st.moves.push(Move::Bytes { arg, src: offset32(src), len, to: Loc::Int(st.ngr) });
            st.ngr += 1;
        }
    } else if st.ngr < INT_REGS {
        // Only a7 left for two XLEN words: the first in a7, the rest at the stack's bottom.
        st.moves.push(Move::Bytes { arg, src: 0, len: 8, to: Loc::Int(st.ngr) });
        st.ngr = INT_REGS;
        let to = st.stack_slot(size - 8, 8);
        st.moves.push(Move::Bytes { arg, src: 8, len: offset32(size - 8), to });
    } else {
        let to = st.stack_slot(size, align);
        st.moves.push(Move::Bytes { arg, src: 0, len: offset32(size), to });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique_id() -> Type {
        Type::Aggregate(Aggregate::builder().array(Type::I8, 128).build().unwrap())
    }

    #[test]
    fn comm_init_rank_passes_a_private_copy_in_a2_and_rank_in_a3() {
        let sig =
            Signature::new(vec![Type::Pointer, Type::I32, unique_id(), Type::I32, Type::Pointer], Some(Type::I32))
                .unwrap();
        let p = place(&sig).unwrap();
        assert_eq!(
            p.moves,
            vec![
                Move::Int { arg: 0, len: 8, signed: false, to: Loc::Int(0) },
                Move::Int { arg: 1, len: 4, signed: true, to: Loc::Int(1) },
                Move::Copy { arg: 2, len: 128, copy: 0 },
                Move::CopyAddress { copy: 0, to: Loc::Int(2) },
                Move::Int { arg: 3, len: 4, signed: true, to: Loc::Int(3) },
                Move::Int { arg: 4, len: 8, signed: false, to: Loc::Int(4) },
            ]
        );
        assert_eq!((p.copy_len, p.stack_len), (128, 0));
    }

    #[test]
    fn uint32_is_sign_extended() {
        let p = place(&Signature::new(vec![Type::U32, Type::U16], None).unwrap()).unwrap();
        assert_eq!(p.moves[0], Move::Int { arg: 0, len: 4, signed: true, to: Loc::Int(0) });
        assert_eq!(p.moves[1], Move::Int { arg: 1, len: 2, signed: false, to: Loc::Int(1) });
    }

    #[test]
    fn a_double_after_fa7_takes_an_integer_register_then_the_stack() {
        let mut args = vec![Type::F64; 9];
        args.extend(vec![Type::I64; 7]);
        args.push(Type::F32);
        let p = place(&Signature::new(args, None).unwrap()).unwrap();
        assert_eq!(p.moves[8], Move::Bytes { arg: 8, src: 0, len: 8, to: Loc::Int(0) });
        assert_eq!(p.moves[16], Move::Bytes { arg: 16, src: 0, len: 4, to: Loc::Stack(0) });
    }

    #[test]
    fn an_aggregate_with_only_a7_left_is_split() {
        let pair = Type::Aggregate(Aggregate::builder().field(Type::I64).field(Type::I32).build().unwrap());
        let mut args = vec![Type::I64; 7];
        args.push(pair);
        args.push(Type::I32);
        let p = place(&Signature::new(args, None).unwrap()).unwrap();
        assert_eq!(p.moves[7], Move::Bytes { arg: 7, src: 0, len: 8, to: Loc::Int(7) });
        assert_eq!(p.moves[8], Move::Bytes { arg: 7, src: 8, len: 8, to: Loc::Stack(0) });
        assert_eq!(p.moves[9], Move::Int { arg: 8, len: 4, signed: true, to: Loc::Stack(8) });
    }

    #[test]
    fn float_and_integer_structs_are_flattened_when_named() {
        let fi = Type::Aggregate(Aggregate::builder().field(Type::F32).field(Type::I8).build().unwrap());
        let p = place(&Signature::new(vec![Type::I32, fi], Some(fi)).unwrap()).unwrap();
        assert_eq!(p.moves[1], Move::Bytes { arg: 1, src: 0, len: 4, to: Loc::Vec(0) });
        assert_eq!(p.moves[2], Move::Bytes { arg: 1, src: 4, len: 1, to: Loc::Int(1) });
        assert_eq!(
            p.result,
            ResultPlace::Regs(vec![
                RetPiece { from: RetReg::Vec(0), dst: 0, len: 4 },
                RetPiece { from: RetReg::Int(0), dst: 4, len: 1 },
            ])
        );
        // Variadic: the integer convention, the whole struct in one a register.
        let p = place(&Signature::variadic(1, vec![Type::I32, fi], None).unwrap()).unwrap();
        assert_eq!(p.moves[1], Move::Bytes { arg: 1, src: 0, len: 8, to: Loc::Int(1) });
    }

    #[test]
    fn a_padded_struct_of_two_floats_is_flattened_whatever_its_size() {
        let inner = Aggregate::builder().field(Type::F32).align(16).build().unwrap();
        let padded = Aggregate::builder().field(Type::F64).field(Type::Aggregate(inner)).build().unwrap();
        assert_eq!(padded.size(), 32);
        let p = place(&Signature::new(vec![Type::Aggregate(padded)], None).unwrap()).unwrap();
        assert_eq!(p.moves[1], Move::Bytes { arg: 0, src: 16, len: 4, to: Loc::Vec(1) });
        assert_eq!(p.copy_len, 0);
    }

    #[test]
    fn a_pointer_member_is_not_flattened() {
        let fp = Aggregate::builder().field(Type::F64).field(Type::Pointer).build().unwrap();
        assert_eq!(flatten(&fp), None);
        let three = Aggregate::builder().array(Type::F32, 3).build().unwrap();
        assert_eq!(flatten(&three), None);
    }

    #[test]
    fn aligned_variadic_pairs_start_at_an_even_register() {
        let a16 = Type::Aggregate(Aggregate::builder().field_aligned(Type::I64, 16).field(Type::I64).build().unwrap());
        let p = place(&Signature::variadic(1, vec![Type::I32, a16], None).unwrap()).unwrap();
        assert_eq!(p.moves[1], Move::Bytes { arg: 1, src: 0, len: 8, to: Loc::Int(2) });
        // Named: no skipping.
        let p = place(&Signature::new(vec![Type::I32, a16], None).unwrap()).unwrap();
        assert_eq!(p.moves[1], Move::Bytes { arg: 1, src: 0, len: 8, to: Loc::Int(1) });
    }

    #[test]
    fn wide_scalars_take_a_pair_an_even_one_only_when_variadic() {
        for wide in [Type::I128, Type::U128, Type::LongDouble] {
            let p = place(&Signature::new(vec![Type::I32, wide, Type::F64], Some(wide)).unwrap()).unwrap();
            assert_eq!(p.moves[1], Move::Bytes { arg: 1, src: 0, len: 8, to: Loc::Int(1) }, "{wide:?}");
            assert_eq!(p.moves[2], Move::Bytes { arg: 1, src: 8, len: 8, to: Loc::Int(2) });
            assert_eq!(p.moves[3], Move::Bytes { arg: 2, src: 0, len: 8, to: Loc::Vec(0) });
            assert_eq!(
                p.result,
                ResultPlace::Regs(vec![
                    RetPiece { from: RetReg::Int(0), dst: 0, len: 8 },
                    RetPiece { from: RetReg::Int(1), dst: 8, len: 8 },
                ])
            );
            let p = place(&Signature::variadic(1, vec![Type::I32, wide], None).unwrap()).unwrap();
            assert_eq!(p.moves[1], Move::Bytes { arg: 1, src: 0, len: 8, to: Loc::Int(2) }, "{wide:?}");
        }
        // A long double member is wider than FLEN: no flattening.
        let s = Aggregate::builder().field(Type::LongDouble).build().unwrap();
        assert_eq!(flatten(&s), None);
    }

    #[test]
    fn complex_numbers_are_two_fp_reals_or_by_reference() {
        let p = place(
            &Signature::new(
                vec![Type::ComplexF32, Type::ComplexF64, Type::ComplexLongDouble],
                Some(Type::ComplexLongDouble),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(p.moves[0], Move::ResultAddress { to: Loc::Int(0) });
        assert_eq!(p.moves[2], Move::Bytes { arg: 0, src: 4, len: 4, to: Loc::Vec(1) });
        assert_eq!(p.moves[4], Move::Bytes { arg: 1, src: 8, len: 8, to: Loc::Vec(3) });
        assert_eq!(p.moves[5], Move::Copy { arg: 2, len: 32, copy: 0 });
        assert_eq!(p.moves[6], Move::CopyAddress { copy: 0, to: Loc::Int(1) });
        // Variadic: the integer convention.
        let p = place(&Signature::variadic(1, vec![Type::I32, Type::ComplexF64], None).unwrap()).unwrap();
        assert_eq!(p.moves[1], Move::Bytes { arg: 1, src: 0, len: 8, to: Loc::Int(1) });
    }

    #[test]
    fn large_result_takes_a0_as_the_hidden_first_argument() {
        let big = Type::Aggregate(Aggregate::builder().array(Type::I64, 3).build().unwrap());
        let p = place(&Signature::new(vec![Type::I32], Some(big)).unwrap()).unwrap();
        assert_eq!(p.moves[0], Move::ResultAddress { to: Loc::Int(0) });
        assert_eq!(p.moves[1], Move::Int { arg: 0, len: 4, signed: true, to: Loc::Int(1) });
        assert_eq!(p.result, ResultPlace::Indirect(IndirectResult::HiddenArgument));
    }
}
