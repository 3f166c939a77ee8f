//! AAPCS64 (Procedure Call Standard for the Arm 64-bit Architecture, 2024Q3), section 6.8.2
//! "Parameter passing rules" (stages B and C) and 6.9 "Result return", as used on Linux.
//!
//! The rules implemented here (rule numbers of the current release; older releases number
//! the large-composite rule B.3):
//! - B.3: an HFA/HVA (1 to 4 members of one floating-point type, no padding) is used as is.
//! - B.4: any other composite larger than 16 bytes is copied to memory owned by the caller (here:
//!   the trampoline's copy area, 16-aligned, fresh for every call) and replaced by a pointer to
//!   the copy. The callee owns the copy and may write to it. x8 is never used for this.
//! - B.5: other composites are rounded up to a multiple of 8 bytes.
//! - C.1/C.2: floats and doubles take the next v register, an HFA one v register per member if
//!   all fit; C.3: otherwise NSRN becomes 8 and the HFA goes to the stack.
//! - C.4/C.5/C.6: on the stack, floating-point values and HFAs are aligned to 8 (16 if their
//!   natural alignment is 16); a float takes an 8-byte slot.
//! - C.8: integers and pointers take the next x register.
//! - C.9: an argument with (natural) alignment 16 starts at an even x register.
//! - C.11: a composite of n double-words takes n consecutive x registers if they are free;
//!   C.12: otherwise NGRN becomes 8 (later integer arguments go to the stack too).
//! - C.13..C.16: on the stack, composites are aligned to max(8, natural alignment), scalars
//!   take 8-byte slots.
//! - 6.9: results: integers in x0, floating point in v0, an HFA in v0..v3, other composites of
//!   at most 16 bytes in x0:x1, larger ones through the address passed in x8.
//!
//! - `long double` is IEEE binary128: a floating-point type of 16 bytes, in a whole `q` register
//!   (C.1), an HFA member type (up to four in q0..q3), 16-aligned on the stack (C.6); returned in
//!   q0. `_Complex T` is an HFA of two `T` (a complex type counts as a composite of two members).
//! - `__int128` (alignment 16): C.9 rounds NGRN up to even, C.10 takes `x[NGRN]`, `x[NGRN+1]` when
//!   both are free, else NGRN becomes 8 and it goes to the stack at a 16-aligned NSAA (C.13);
//!   returned in x0:x1.
//!
//! "Natural alignment" of a composite is the largest alignment of its members, not counting an
//! alignment attribute on the composite itself ([`Aggregate::natural_align`]).

use super::{arg_index, offset32, IndirectResult, Loc, Move, NextArg, Placement, ResultPlace, RetPiece, RetReg};
use crate::ctype::error::Error;
use crate::ctype::types::{Aggregate, Signature, Type};

/// General-purpose argument registers x0..x7.
pub const INT_REGS: u8 = 8;
/// SIMD/FP argument registers v0..v7.
pub const VEC_REGS: u8 = 8;

/// If `agg` is a homogeneous floating-point aggregate, its member type and count.
pub fn hfa(agg: &Aggregate) -> Option<(Type, usize)> {
    homogeneous(&Type::Aggregate(*agg))
}

/// If `ty` is an HFA (an aggregate or a complex type), its member type and count.
fn homogeneous(ty: &Type) -> Option<(Type, usize)> {
    let mut scalars = Vec::new();
    ty.for_each_scalar(0, &mut |_, t| scalars.push(*t));
    let first = *scalars.first()?;
    if !first.is_float() || scalars.len() > 4 || scalars.iter().any(|t| *t != first) {
        return None;
    }
    // No padding: the members must cover the whole aggregate.
    if ty.size() != scalars.len() * first.size() {
        return None;
    }
    Some((first, scalars.len()))
}

/// The natural alignment of a type (see the module documentation).
fn natural_align(ty: &Type) -> usize {
    match ty {
        Type::Aggregate(agg) => agg.natural_align(),
        t => t.align(),
    }
}

struct State {
    ngrn: u8,
    nsrn: u8,
    nsaa: usize,
    copies: usize,
    moves: Vec<Move>,
}

impl State {
    fn stack_slot(&mut self, size: usize, align: usize) -> Loc {
        self.nsaa = self.nsaa.next_multiple_of(align.max(8));
        let at = Loc::Stack(offset32(self.nsaa));
        self.nsaa += size.next_multiple_of(8);
        at
    }

    fn int_or_stack(&mut self) -> Loc {
        if self.ngrn < INT_REGS {
            self.ngrn += 1;
            Loc::Int(self.ngrn - 1)
        } else {
            self.stack_slot(8, 8)
        }
    }
}

/// Places `sig` by the AAPCS64 rules.
pub fn place(sig: &Signature) -> Result<Placement, Error> {
    let mut st = State { ngrn: 0, nsrn: 0, nsaa: 0, copies: 0, moves: Vec::new() };

    let result = match sig.ret() {
        None => ResultPlace::Void,
        Some(agg) if !agg.is_word() => match homogeneous(agg) {
            Some((member, n)) => ResultPlace::Regs(
                (0..n)
                    .map(|k| RetPiece {
                        from: RetReg::Vec(k as u8),
                        dst: offset32(k * member.size()),
                        len: offset32(member.size()),
                    })
                    .collect(),
            ),
            None if agg.size() > 16 => ResultPlace::Indirect(IndirectResult::DedicatedRegister),
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
            debug_assert!(ty.size() <= 8, "wider scalars are composites here");
            ResultPlace::Regs(vec![RetPiece { from, dst: 0, len: offset32(ty.size()) }])
        }
    };

    for (i, ty) in sig.args().iter().enumerate() {
        let arg = arg_index(i);
        match ty {
            Type::F32 | Type::F64 | Type::LongDouble => {
                // C.1, else C.4-C.6: an 8-byte slot (16-aligned 16 bytes for binary128),
                // value in its low bytes.
                let to = if st.nsrn < VEC_REGS {
                    st.nsrn += 1;
                    Loc::Vec(st.nsrn - 1)
                } else {
                    st.stack_slot(ty.size(), ty.align())
                };
                st.moves.push(Move::Bytes { arg, src: 0, len: offset32(ty.size()), to });
            }
            _ if !ty.is_word() => place_composite(&mut st, arg, ty),
            _ => {
                let to = st.int_or_stack();
                st.moves.push(Move::Int { arg, len: ty.size() as u8, signed: ty.is_signed(), to });
            }
        }
    }

    let next = NextArg { int: st.ngrn, vec: st.nsrn, stack: offset32(st.nsaa) };
    Ok(Placement {
        next,
        moves: st.moves,
        stack_len: st.nsaa.next_multiple_of(16),
        copy_len: st.copies,
        vector_count: st.nsrn,
        result,
    })
}

/// Aggregates, and the types placed like them: the complex types (HFAs of two) and `__int128`
/// (a 16-aligned pair of double-words: C.9, C.10, C.13 treat it as the 16-aligned composite
/// rules do).
fn place_composite(st: &mut State, arg: u16, ty: &Type) {
    let size = ty.size();
    let natural = natural_align(ty);
    if let Some((member, n)) = homogeneous(ty) {
        if usize::from(st.nsrn) + n <= usize::from(VEC_REGS) {
            // C.2: one v register per member, each member in the low bytes.
            for k in 0..n {
                let src = offset32(k * member.size());
                st.moves.push(Move::Bytes { arg, src, len: offset32(member.size()), to: Loc::Vec(st.nsrn) });
                st.nsrn += 1;
            }
        } else {
            // C.3, C.4, C.6: no more v registers for floating point; 8- or 16-aligned slot.
            st.nsrn = VEC_REGS;
            let align = if natural >= 16 { 16 } else { 8 };
            let to = st.stack_slot(size, align);
            st.moves.push(Move::Bytes { arg, src: 0, len: offset32(size), to });
        }
        return;
    }

    if size > 16 {
        // B.4: a private, 16-aligned copy for this call, passed by address like a pointer
        // (C.8 / C.16). x8 is not an argument register and is never used here.
        let copy = offset32(st.copies);
        st.copies += size.next_multiple_of(16);
        st.moves.push(Move::Copy { arg, len: offset32(size), copy });
        let to = st.int_or_stack();
        st.moves.push(Move::CopyAddress { copy, to });
        return;
    }

    // B.5, C.9, C.11: rounded to double-words; 16-aligned composites start at an even register.
    let dwords = size.div_ceil(8) as u8;
    if natural >= 16 {
        st.ngrn = st.ngrn.next_multiple_of(2);
    }
    if st.ngrn + dwords <= INT_REGS {
        for k in 0..dwords {
            let src = 8 * usize::from(k);
            let len = offset32((size - src).min(8));
            st.moves.push(Move::Bytes { arg, src: offset32(src), len, to: Loc::Int(st.ngrn) });
            st.ngrn += 1;
        }
    } else {
        // C.12-C.14: no more x registers for anything; the composite goes to the stack.
        st.ngrn = INT_REGS;
        let to = st.stack_slot(size, natural);
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
    fn comm_init_rank_passes_a_private_copy_in_x2_and_rank_in_w3() {
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
        assert_eq!(p.copy_len, 128);
        assert_eq!(p.stack_len, 0);
    }

    #[test]
    fn large_composite_address_goes_to_a_stack_slot_after_x7() {
        let big = Type::Aggregate(Aggregate::builder().array(Type::I64, 4).build().unwrap());
        let p = place(&Signature::new(vec![big; 9], None).unwrap()).unwrap();
        assert_eq!(p.moves[17], Move::CopyAddress { copy: 256, to: Loc::Stack(0) });
        assert_eq!(p.copy_len, 9 * 32);
        assert_eq!(p.stack_len, 16);
    }

    #[test]
    fn hfa_members_take_one_v_register_each() {
        let h = Aggregate::builder().array(Type::F32, 3).build().unwrap();
        assert_eq!(hfa(&h), Some((Type::F32, 3)));
        let p = place(&Signature::new(vec![Type::Aggregate(h)], None).unwrap()).unwrap();
        assert_eq!(p.moves[2], Move::Bytes { arg: 0, src: 8, len: 4, to: Loc::Vec(2) });
    }

    #[test]
    fn padded_or_mixed_aggregates_are_not_hfas() {
        let mixed = Aggregate::builder().field(Type::F32).field(Type::F64).build().unwrap();
        assert_eq!(hfa(&mixed), None);
        let five = Aggregate::builder().array(Type::F32, 5).build().unwrap();
        assert_eq!(hfa(&five), None);
    }

    #[test]
    fn sixteen_aligned_composite_starts_at_even_register() {
        let a16 = Type::Aggregate(Aggregate::builder().field_aligned(Type::I64, 16).field(Type::I64).build().unwrap());
        let p = place(&Signature::new(vec![Type::I32, a16], None).unwrap()).unwrap();
        assert_eq!(p.moves[1], Move::Bytes { arg: 1, src: 0, len: 8, to: Loc::Int(2) });
    }

    #[test]
    fn composite_that_does_not_fit_sends_later_integers_to_the_stack() {
        let pair = Type::Aggregate(Aggregate::builder().field(Type::I64).field(Type::I64).build().unwrap());
        let mut args = vec![Type::I64; 7];
        args.push(pair);
        args.push(Type::I32);
        let p = place(&Signature::new(args, None).unwrap()).unwrap();
        assert_eq!(p.moves[7], Move::Bytes { arg: 7, src: 0, len: 16, to: Loc::Stack(0) });
        assert_eq!(p.moves[8], Move::Int { arg: 8, len: 4, signed: true, to: Loc::Stack(16) });
    }

    #[test]
    fn large_result_uses_x8_and_leaves_x0_free() {
        let big = Type::Aggregate(Aggregate::builder().array(Type::I64, 3).build().unwrap());
        let p = place(&Signature::new(vec![Type::I32], Some(big)).unwrap()).unwrap();
        assert_eq!(p.moves[0], Move::Int { arg: 0, len: 4, signed: true, to: Loc::Int(0) });
        assert_eq!(p.result, ResultPlace::Indirect(IndirectResult::DedicatedRegister));
    }

    #[test]
    fn int128_takes_an_even_register_pair() {
        let p = place(&Signature::new(vec![Type::I32, Type::I128, Type::I32], Some(Type::I128)).unwrap()).unwrap();
        assert_eq!(p.moves[1], Move::Bytes { arg: 1, src: 0, len: 8, to: Loc::Int(2) });
        assert_eq!(p.moves[2], Move::Bytes { arg: 1, src: 8, len: 8, to: Loc::Int(3) });
        assert_eq!(p.moves[3], Move::Int { arg: 2, len: 4, signed: true, to: Loc::Int(4) });
        let mut args = vec![Type::I64; 7];
        args.extend([Type::U128, Type::I32]);
        let p = place(&Signature::new(args, None).unwrap()).unwrap();
        assert_eq!(p.moves[7], Move::Bytes { arg: 7, src: 0, len: 16, to: Loc::Stack(0) });
        assert_eq!(p.moves[8], Move::Int { arg: 8, len: 4, signed: true, to: Loc::Stack(16) }, "NGRN became 8");
    }

    #[test]
    fn long_double_is_a_q_register_and_an_hfa_member() {
        let h = Type::Aggregate(Aggregate::builder().array(Type::LongDouble, 3).build().unwrap());
        let p = place(&Signature::new(vec![Type::LongDouble, h], Some(h)).unwrap()).unwrap();
        assert_eq!(p.moves[0], Move::Bytes { arg: 0, src: 0, len: 16, to: Loc::Vec(0) });
        assert_eq!(p.moves[3], Move::Bytes { arg: 1, src: 32, len: 16, to: Loc::Vec(3) });
        assert_eq!(
            p.result,
            ResultPlace::Regs(
                (0..3).map(|k| RetPiece { from: RetReg::Vec(k), dst: 16 * u32::from(k), len: 16 }).collect()
            )
        );
        let p = place(
            &Signature::new(vec![Type::F64; 8].into_iter().chain([Type::F32, Type::LongDouble]).collect(), None)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(p.moves[9], Move::Bytes { arg: 9, src: 0, len: 16, to: Loc::Stack(16) }, "16-aligned");
    }

    #[test]
    fn complex_types_are_hfas_of_two() {
        let p =
            place(&Signature::new(vec![Type::ComplexF32, Type::ComplexLongDouble], Some(Type::ComplexF64)).unwrap())
                .unwrap();
        assert_eq!(p.moves[1], Move::Bytes { arg: 0, src: 4, len: 4, to: Loc::Vec(1) });
        assert_eq!(p.moves[3], Move::Bytes { arg: 1, src: 16, len: 16, to: Loc::Vec(3) });
        assert_eq!(
            p.result,
            ResultPlace::Regs(vec![
                RetPiece { from: RetReg::Vec(0), dst: 0, len: 8 },
                RetPiece { from: RetReg::Vec(1), dst: 8, len: 8 },
            ])
        );
        let s = Aggregate::builder().field(Type::ComplexF32).field(Type::F32).build().unwrap();
        assert_eq!(hfa(&s), Some((Type::F32, 3)));
    }
}
