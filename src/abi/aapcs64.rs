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
//! "Natural alignment" of a composite is the largest alignment of its members, not counting an
//! alignment attribute on the composite itself ([`Aggregate::natural_align`]).

use super::{arg_index, offset32, Loc, Move, Placement, ResultPlace, RetPiece, RetReg};
use crate::{Aggregate, Error, Signature, Type};

/// General-purpose argument registers x0..x7.
pub const INT_REGS: u8 = 8;
/// SIMD/FP argument registers v0..v7.
pub const VEC_REGS: u8 = 8;

/// If `agg` is a homogeneous floating-point aggregate, its member type and count.
pub fn hfa(agg: &Aggregate) -> Option<(Type, usize)> {
    let scalars = agg.scalars();
    let first = scalars.first()?.1.clone();
    if !first.is_float() || scalars.len() > 4 || scalars.iter().any(|(_, t)| *t != first) {
        return None;
    }
    // No padding: the members must cover the whole aggregate.
    if agg.size() != scalars.len() * first.size() {
        return None;
    }
    Some((first, scalars.len()))
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
        Some(Type::Aggregate(agg)) => match hfa(agg) {
            Some((member, n)) => ResultPlace::Regs(
                (0..n)
                    .map(|k| RetPiece {
                        from: RetReg::Vec(k as u8),
                        dst: offset32(k * member.size()),
                        len: offset32(member.size()),
                    })
                    .collect(),
            ),
            None if agg.size() > 16 => ResultPlace::Indirect { via_x8: true },
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

    for (i, ty) in sig.args().iter().enumerate() {
        let arg = arg_index(i);
        match ty {
            Type::F32 | Type::F64 => {
                // C.1, else C.4-C.6: an 8-byte slot, value in its low bytes.
                let to = if st.nsrn < VEC_REGS {
                    st.nsrn += 1;
                    Loc::Vec(st.nsrn - 1)
                } else {
                    st.stack_slot(8, 8)
                };
                st.moves.push(Move::Bytes { arg, src: 0, len: offset32(ty.size()), to });
            }
            Type::Aggregate(agg) => place_aggregate(&mut st, arg, agg),
            _ => {
                let to = st.int_or_stack();
                st.moves.push(Move::Int { arg, len: ty.size() as u8, signed: ty.is_signed(), to });
            }
        }
    }

    Ok(Placement {
        moves: st.moves,
        stack_len: st.nsaa.next_multiple_of(16),
        copy_len: st.copies,
        vector_count: st.nsrn,
        result,
    })
}

fn place_aggregate(st: &mut State, arg: u16, agg: &Aggregate) {
    let size = agg.size();
    if let Some((member, n)) = hfa(agg) {
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
            let align = if agg.natural_align() >= 16 { 16 } else { 8 };
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
    if agg.natural_align() >= 16 {
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
        let to = st.stack_slot(size, agg.natural_align());
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
        assert_eq!(p.result, ResultPlace::Indirect { via_x8: true });
    }
}
