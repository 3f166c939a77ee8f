//! System V AMD64 psABI (version 1.0), section 3.2.3 "Parameter Passing".
//!
//! The rules implemented here:
//! - Integers and pointers take the next of rdi, rsi, rdx, rcx, r8, r9 (INTEGER class), floats
//!   and doubles the next of xmm0..xmm7 (SSE class), else an 8-byte stack slot each.
//! - An aggregate larger than 16 bytes, or with an unaligned field, is MEMORY class: it is
//!   copied verbatim into the outgoing argument area at an offset aligned to max(8, alignment)
//!   and takes no register.
//! - An aggregate of at most 16 bytes is split into eightbytes; each eightbyte is INTEGER if
//!   any scalar in it is an integer or pointer, SSE if all are floating point, NO_CLASS if it
//!   holds only padding (it then takes no register). If the registers left cannot hold every
//!   eightbyte, the whole aggregate goes to memory (3.2.3 rule 4 of the classification
//!   post-merger: "If there are no registers available for any eightbyte of an argument, the
//!   whole argument is passed on the stack"), and later arguments may still use registers.
//! - A MEMORY-class result is written through a hidden pointer passed as the first integer
//!   argument; INTEGER eightbytes return in rax then rdx, SSE eightbytes in xmm0 then xmm1.
//! - %al carries the number of vector registers used (3.5.7, read by variadic callees).
//! - `__int128` is two INTEGER eightbytes: a register pair, or wholly in memory (16-aligned)
//!   when fewer than two registers are left; returned in rax:rdx.
//! - `long double` is X87 (mantissa) + X87UP (exponent, padding): passed in memory at a
//!   16-aligned offset, returned in `%st(0)`. A 16-byte aggregate holding exactly one `long
//!   double` classifies the same way (X87, X87UP): memory as an argument, `%st(0)` as a result
//!   (3.2.3, "Returning of Values", rule 5). Any other aggregate with a `long double` is larger
//!   than 16 bytes, so MEMORY.
//! - `_Complex float` / `_Complex double` are structs of two floats / doubles (one SSE
//!   eightbyte / two); `_Complex long double` is COMPLEX_X87: memory as an argument, `%st(0)`
//!   (real) and `%st(1)` (imaginary) as a result.

use super::{arg_index, offset32, IndirectResult, Loc, Move, NextArg, Placement, ResultPlace, RetPiece, RetReg};
use crate::ctype::error::Error;
use crate::ctype::types::{Signature, Type};

/// Integer argument registers.
pub const INT_REGS: u8 = 6;
/// Vector argument registers.
pub const VEC_REGS: u8 = 8;

/// The class of one eightbyte of an aggregate (psABI 3.2.3). Not every class of the psABI has a
/// variant yet (SSEUP, of the vector types, which [`Type`] lacks), hence `#[non_exhaustive]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Class {
    /// Only padding.
    NoClass,
    /// Goes in a general-purpose register.
    Integer,
    /// Goes in the low 8 bytes of a vector register.
    Sse,
    /// The 64-bit mantissa of a `long double`: passed in memory, returned in `%st(0)`.
    X87,
    /// The exponent and padding of a `long double`, after [`Class::X87`].
    X87Up,
    /// A `_Complex long double` (the whole 32 bytes): passed in memory, returned in `%st(0)`
    /// and `%st(1)`.
    ComplexX87,
}

/// Classifies an aggregate or scalar: `None` for MEMORY class, else one class per eightbyte
/// (`[ComplexX87]` for a `_Complex long double`).
pub fn classify(ty: &Type) -> Option<Vec<Class>> {
    if *ty == Type::ComplexLongDouble {
        return Some(vec![Class::ComplexX87]);
    }
    let size = ty.size();
    if size > 16 {
        return None;
    }
    let mut classes = vec![Class::NoClass; size.div_ceil(8)];
    let mut memory = false;
    ty.for_each_scalar(0, &mut |off, scalar| {
        let n = scalar.size();
        if off % scalar.align() != 0 {
            memory = true;
            return;
        }
        // One class per eightbyte the scalar covers (two for __int128 and long double).
        let parts: &[Class] = match scalar {
            Type::I128 | Type::U128 => &[Class::Integer, Class::Integer],
            Type::LongDouble => &[Class::X87, Class::X87Up],
            t if t.is_float() => &[Class::Sse],
            _ => &[Class::Integer],
        };
        if parts.len() == 1 && off / 8 != (off + n - 1) / 8 {
            memory = true;
            return;
        }
        for (k, class) in parts.iter().enumerate() {
            let slot = &mut classes[off / 8 + k];
            // 3.2.3 merging: equal classes stay; MEMORY if either is X87, X87UP or
            // COMPLEX_X87; INTEGER if either is INTEGER; else SSE.
            *slot = match (*slot, *class) {
                (Class::NoClass, c) => c,
                (a, b) if a == b && a != Class::X87 && a != Class::X87Up => a,
                (Class::X87 | Class::X87Up | Class::ComplexX87, _) | (_, Class::X87 | Class::X87Up) => {
                    memory = true;
                    *slot
                }
                (Class::Integer, _) | (_, Class::Integer) => Class::Integer,
                _ => Class::Sse,
            };
        }
    });
    if memory {
        None
    } else {
        Some(classes)
    }
}

/// True for classes that are passed in memory whatever registers are left.
fn x87(classes: &[Class]) -> bool {
    classes.iter().any(|c| matches!(c, Class::X87 | Class::X87Up | Class::ComplexX87))
}

struct State {
    int: u8,
    vec: u8,
    stack: usize,
    moves: Vec<Move>,
}

impl State {
    fn stack_slot(&mut self, size: usize, align: usize) -> Loc {
        self.stack = self.stack.next_multiple_of(align.max(8));
        let at = Loc::Stack(offset32(self.stack));
        self.stack += size.next_multiple_of(8);
        at
    }
}

/// Places `sig` by the System V AMD64 rules.
pub fn place(sig: &Signature) -> Result<Placement, Error> {
    let mut st = State { int: 0, vec: 0, stack: 0, moves: Vec::new() };

    let result = match sig.ret() {
        None => ResultPlace::Void,
        Some(ty) => match classify(ty) {
            None => {
                // The hidden result pointer is the first integer argument.
                st.moves.push(Move::ResultAddress { to: Loc::Int(0) });
                st.int = 1;
                ResultPlace::Indirect(IndirectResult::HiddenArgument)
            }
            Some(classes) => ResultPlace::Regs(result_pieces(ty, &classes)),
        },
    };

    for (i, ty) in sig.args().iter().enumerate() {
        let arg = arg_index(i);
        match ty {
            Type::F32 | Type::F64 => {
                let len = offset32(ty.size());
                let to = if st.vec < VEC_REGS {
                    st.vec += 1;
                    Loc::Vec(st.vec - 1)
                } else {
                    st.stack_slot(8, 8)
                };
                st.moves.push(Move::Bytes { arg, src: 0, len, to });
            }
            _ if !ty.is_word() => {
                // Aggregates, __int128, long double and the complex types: by eightbyte class.
                let classes = classify(ty);
                let fits = classes.as_ref().is_some_and(|c| {
                    let ints = c.iter().filter(|k| **k == Class::Integer).count() as u8;
                    let vecs = c.iter().filter(|k| **k == Class::Sse).count() as u8;
                    !x87(c) && st.int + ints <= INT_REGS && st.vec + vecs <= VEC_REGS
                });
                let (size, align) = (ty.size(), ty.align());
                match classes {
                    Some(classes) if fits => {
                        for (k, class) in classes.iter().enumerate() {
                            let src = 8 * k;
                            let len = offset32((size - src).min(8));
                            let to = match class {
                                Class::NoClass => continue,
                                Class::X87 | Class::X87Up | Class::ComplexX87 => {
                                    unreachable!("x87 classes are passed in memory")
                                }
                                Class::Integer => {
                                    st.int += 1;
                                    Loc::Int(st.int - 1)
                                }
                                Class::Sse => {
                                    st.vec += 1;
                                    Loc::Vec(st.vec - 1)
                                }
                            };
                            st.moves.push(Move::Bytes { arg, src: offset32(src), len, to });
                        }
                    }
                    _ => {
                        // MEMORY or an x87 class, or not enough registers left: the whole
                        // value goes to the outgoing area, verbatim (never split between the
                        // last registers and the stack), at max(8, its alignment).
                        let to = st.stack_slot(size, align);
                        st.moves.push(Move::Bytes { arg, src: 0, len: offset32(size), to });
                    }
                }
            }
            _ => {
                let to = if st.int < INT_REGS {
                    st.int += 1;
                    Loc::Int(st.int - 1)
                } else {
                    st.stack_slot(8, 8)
                };
                st.moves.push(Move::Int { arg, len: ty.size() as u8, signed: ty.is_signed(), to });
            }
        }
    }

    let next = NextArg { int: st.int, vec: st.vec, stack: offset32(st.stack) };
    Ok(Placement {
        next,
        moves: st.moves,
        stack_len: st.stack.next_multiple_of(16),
        copy_len: 0,
        vector_count: st.vec,
        result,
    })
}

fn result_pieces(ty: &Type, classes: &[Class]) -> Vec<RetPiece> {
    let size = ty.size();
    if x87(classes) {
        // The 10 value bytes of each long double: st(0), then st(1) for a complex one's
        // imaginary part (16 bytes further).
        let parts = if classes == [Class::ComplexX87] { 2 } else { 1 };
        return (0..parts).map(|k| RetPiece { from: RetReg::X87(k), dst: 16 * u32::from(k), len: 10 }).collect();
    }
    let (mut int, mut vec) = (0u8, 0u8);
    let mut pieces = Vec::new();
    for (k, class) in classes.iter().enumerate() {
        let from = match class {
            Class::NoClass => continue,
            Class::X87 | Class::X87Up | Class::ComplexX87 => unreachable!("handled above"),
            Class::Integer => {
                int += 1;
                RetReg::Int(int - 1)
            }
            Class::Sse => {
                vec += 1;
                RetReg::Vec(vec - 1)
            }
        };
        pieces.push(RetPiece { from, dst: offset32(8 * k), len: offset32((size - 8 * k).min(8)) });
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctype::types::Aggregate;

    fn unique_id() -> Type {
        Type::Aggregate(Aggregate::builder().array(Type::I8, 128).build().unwrap())
    }

    #[test]
    fn comm_init_rank_puts_the_id_on_the_stack_and_rank_in_edx() {
        let sig = Signature::new(vec![Type::Pointer, Type::I32, unique_id(), Type::I32], Some(Type::I32)).unwrap();
        let p = place(&sig).unwrap();
        assert_eq!(
            p.moves,
            vec![
                Move::Int { arg: 0, len: 8, signed: false, to: Loc::Int(0) },
                Move::Int { arg: 1, len: 4, signed: true, to: Loc::Int(1) },
                Move::Bytes { arg: 2, src: 0, len: 128, to: Loc::Stack(0) },
                Move::Int { arg: 3, len: 4, signed: true, to: Loc::Int(2) },
            ]
        );
        assert_eq!(p.stack_len, 128);
        assert_eq!(p.vector_count, 0);
    }

    #[test]
    fn mixed_struct_classifies_per_eightbyte() {
        let s = Aggregate::builder().field(Type::F32).field(Type::I32).field(Type::F64).build().unwrap();
        assert_eq!(classify(&Type::Aggregate(s)), Some(vec![Class::Integer, Class::Sse]));
        let d = Aggregate::builder().field(Type::F32).field(Type::F32).build().unwrap();
        assert_eq!(classify(&Type::Aggregate(d)), Some(vec![Class::Sse]));
    }

    #[test]
    fn padding_only_eightbyte_takes_no_register() {
        let s = Aggregate::builder().field(Type::I64).align(16).build().unwrap();
        assert_eq!(classify(&Type::Aggregate(s)), Some(vec![Class::Integer, Class::NoClass]));
    }

    #[test]
    fn aggregate_falls_back_whole_to_memory_and_later_args_still_use_registers() {
        let pair = Type::Aggregate(Aggregate::builder().field(Type::I64).field(Type::I64).build().unwrap());
        let mut args = vec![Type::I64; 5];
        args.push(pair);
        args.push(Type::I32);
        let p = place(&Signature::new(args, None).unwrap()).unwrap();
        assert_eq!(p.moves[5], Move::Bytes { arg: 5, src: 0, len: 16, to: Loc::Stack(0) });
        assert_eq!(p.moves[6], Move::Int { arg: 6, len: 4, signed: true, to: Loc::Int(5) });
    }

    #[test]
    fn sixteen_aligned_memory_argument_is_aligned_on_the_stack() {
        let a16 = Type::Aggregate(Aggregate::builder().field_aligned(Type::I64, 16).field(Type::I64).build().unwrap());
        let mut args = vec![Type::I64; 7];
        args.push(a16);
        let p = place(&Signature::new(args, None).unwrap()).unwrap();
        assert_eq!(p.moves[6], Move::Int { arg: 6, len: 8, signed: true, to: Loc::Stack(0) });
        assert_eq!(p.moves[7], Move::Bytes { arg: 7, src: 0, len: 16, to: Loc::Stack(16) });
        assert_eq!(p.stack_len, 32);
    }

    #[test]
    fn large_result_uses_hidden_pointer_in_rdi() {
        let big = Type::Aggregate(Aggregate::builder().array(Type::I64, 3).build().unwrap());
        let p = place(&Signature::new(vec![Type::I32], Some(big)).unwrap()).unwrap();
        assert_eq!(p.moves[0], Move::ResultAddress { to: Loc::Int(0) });
        assert_eq!(p.moves[1], Move::Int { arg: 0, len: 4, signed: true, to: Loc::Int(1) });
        assert_eq!(p.result, ResultPlace::Indirect(IndirectResult::HiddenArgument));
    }

    #[test]
    fn small_mixed_result_comes_from_xmm0_then_rax() {
        let s = Type::Aggregate(Aggregate::builder().field(Type::F64).field(Type::I64).build().unwrap());
        let p = place(&Signature::new(vec![], Some(s)).unwrap()).unwrap();
        assert_eq!(
            p.result,
            ResultPlace::Regs(vec![
                RetPiece { from: RetReg::Vec(0), dst: 0, len: 8 },
                RetPiece { from: RetReg::Int(0), dst: 8, len: 8 },
            ])
        );
    }

    #[test]
    fn vector_count_counts_sse_registers() {
        let p =
            place(&Signature::variadic(1, vec![Type::I32, Type::F64, Type::F64], Some(Type::F64)).unwrap()).unwrap();
        assert_eq!(p.vector_count, 2);
    }

    #[test]
    fn int128_takes_a_register_pair_or_goes_whole_to_memory() {
        let p = place(&Signature::new(vec![Type::I32, Type::I128], Some(Type::U128)).unwrap()).unwrap();
        assert_eq!(p.moves[1], Move::Bytes { arg: 1, src: 0, len: 8, to: Loc::Int(1) });
        assert_eq!(p.moves[2], Move::Bytes { arg: 1, src: 8, len: 8, to: Loc::Int(2) });
        assert_eq!(
            p.result,
            ResultPlace::Regs(vec![
                RetPiece { from: RetReg::Int(0), dst: 0, len: 8 },
                RetPiece { from: RetReg::Int(1), dst: 8, len: 8 },
            ])
        );
        // One register left: never split; the next integer still takes r9.
        let mut args = vec![Type::I64; 5];
        args.extend([Type::I128, Type::I64]);
        let p = place(&Signature::new(args, None).unwrap()).unwrap();
        assert_eq!(p.moves[5], Move::Bytes { arg: 5, src: 0, len: 16, to: Loc::Stack(0) });
        assert_eq!(p.moves[6], Move::Int { arg: 6, len: 8, signed: true, to: Loc::Int(5) });
    }

    #[test]
    fn long_double_goes_to_memory_and_returns_in_st0() {
        let p = place(
            &Signature::new(vec![Type::I64; 7].into_iter().chain([Type::LongDouble]).collect(), Some(Type::LongDouble))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(p.moves[7], Move::Bytes { arg: 7, src: 0, len: 16, to: Loc::Stack(16) }, "16-aligned");
        assert_eq!(p.result, ResultPlace::Regs(vec![RetPiece { from: RetReg::X87(0), dst: 0, len: 10 }]));
        let one = Type::Aggregate(Aggregate::builder().field(Type::LongDouble).build().unwrap());
        assert_eq!(classify(&one), Some(vec![Class::X87, Class::X87Up]));
        let p = place(&Signature::new(vec![one], Some(one)).unwrap()).unwrap();
        assert_eq!(p.moves[0], Move::Bytes { arg: 0, src: 0, len: 16, to: Loc::Stack(0) });
        assert_eq!(p.result, ResultPlace::Regs(vec![RetPiece { from: RetReg::X87(0), dst: 0, len: 10 }]));
    }

    #[test]
    fn complex_types_are_sse_pairs_or_complex_x87() {
        let p =
            place(&Signature::new(vec![Type::ComplexF32, Type::ComplexF64], Some(Type::ComplexLongDouble)).unwrap())
                .unwrap();
        assert_eq!(p.moves[0], Move::Bytes { arg: 0, src: 0, len: 8, to: Loc::Vec(0) });
        assert_eq!(p.moves[1], Move::Bytes { arg: 1, src: 0, len: 8, to: Loc::Vec(1) });
        assert_eq!(p.moves[2], Move::Bytes { arg: 1, src: 8, len: 8, to: Loc::Vec(2) });
        assert_eq!(
            p.result,
            ResultPlace::Regs(vec![
                RetPiece { from: RetReg::X87(0), dst: 0, len: 10 },
                RetPiece { from: RetReg::X87(1), dst: 16, len: 10 },
            ])
        );
        let p = place(&Signature::new(vec![Type::ComplexLongDouble], Some(Type::ComplexF64)).unwrap()).unwrap();
        assert_eq!(p.moves[0], Move::Bytes { arg: 0, src: 0, len: 32, to: Loc::Stack(0) });
        assert_eq!(p.vector_count, 0);
    }
}
