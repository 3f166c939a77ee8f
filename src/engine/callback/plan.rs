//! Where a callback finds its arguments and puts its result: a forward call's placement read
//! backwards. The ABI module that tells a call where to put every byte (`crate::abi`) tells the
//! callback where that byte arrives, so the two directions cannot disagree: a callback reads
//! an argument exactly where a forward call with the same signature would have placed it.
//!
//! Pure Rust and ABI-generic: made for any [`Abi`] on any host, unit-tested everywhere; only
//! reading the pieces needs the architecture's callback record (`super::frame`).

use crate::abi::{Abi, IndirectResult, Loc, Move, NextArg, ResultPlace, RetPiece};
use crate::ctype::error::Error;
use crate::ctype::types::{Signature, Type};

/// Where a variadic callback's variable arguments begin: its ABI and the placement's state
/// after the named arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct VaStart {
    /// The callback's ABI.
    pub abi: Abi,
    /// Registers and stack bytes the named arguments took.
    pub next: NextArg,
}

/// One piece of an argument as the callee receives it: `len` bytes at byte `dst` of the
/// argument's value, found at `from` (the low bytes of a register, or an offset in the stack
/// arguments), or, when `by_reference`, behind the pointer found at `from` (the caller's private
/// copy of a large aggregate: AAPCS64 B.4, LP64D).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    /// First byte of the argument's value this piece fills.
    pub dst: u32,
    /// Bytes.
    pub len: u32,
    /// Where they are.
    pub from: Loc,
    /// `from` holds the address of the bytes, not the bytes.
    pub by_reference: bool,
}

/// How the result leaves the callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ResultSink {
    /// `void`.
    Void,
    /// In registers: each piece copies `len` bytes from byte `dst` of the result into the low
    /// bytes of its register (the rest of the register zero). `extend`: a scalar integer result
    /// narrower than 8 bytes, extended to 64 bits in the first integer register (sign-extended
    /// when true), as ADR 2 extends integer arguments: C callers that rely on an extended
    /// result (clang's) get one.
    Regs {
        /// The pieces, in the ABI's order.
        pieces: Vec<RetPiece>,
        /// Extension of a narrow scalar integer result.
        extend: Option<bool>,
    },
    /// Through memory the caller provides: its address is the hidden argument at `Some(loc)`
    /// (SysV x86-64, LP64D), or in the indirect-result register when `None` (AAPCS64 x8). The
    /// callee returns that address in the first integer result register (SysV psABI 3.2.3
    /// requires it in %rax; harmless elsewhere).
    Memory {
        /// Where the address arrives.
        from: Option<Loc>,
    },
}

/// A signature placed for the callback direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CallbackPlan {
    /// For every argument, its pieces.
    pub args: Vec<Vec<Piece>>,
    /// The result.
    pub result: ResultSink,
    /// For a variadic signature, where its variable arguments begin.
    pub va: Option<VaStart>,
}

impl CallbackPlan {
    /// Places `sig` for `abi` (the forward placement, [`Abi::place`]) and reads it backwards.
    /// A variadic signature lists its named arguments only
    /// ([`Error::VariadicCallbackArguments`] otherwise); its variable arguments begin where an
    /// argument after the last named one would go ([`VaStart`]).
    pub(crate) fn new(abi: Abi, sig: &Signature) -> Result<Self, Error> {
        if let Some(named) = sig.fixed_args() {
            if named != sig.args().len() {
                return Err(Error::VariadicCallbackArguments { named, total: sig.args().len() });
            }
        }
        let placement = abi.place(sig)?;
        let mut args: Vec<Vec<Piece>> = vec![Vec::new(); sig.args().len()];
        // Copy { arg, copy } then CopyAddress { copy, to }: the argument's bytes are behind `to`.
        let mut copies: Vec<(u32, u16, u32)> = Vec::new();
        let mut hidden = None;
        for m in &placement.moves {
            match *m {
                Move::Int { arg, len, to, .. } => {
                    args[usize::from(arg)].push(Piece { dst: 0, len: u32::from(len), from: to, by_reference: false })
                }
                Move::Bytes { arg, src, len, to } => {
                    args[usize::from(arg)].push(Piece { dst: src, len, from: to, by_reference: false })
                }
                Move::Copy { arg, len, copy } => copies.push((copy, arg, len)),
                Move::CopyAddress { copy, to } => {
                    let &(_, arg, len) = copies
                        .iter()
                        .find(|c| c.0 == copy)
                        .expect("the ABI modules emit a private copy before its address");
                    args[usize::from(arg)].push(Piece { dst: 0, len, from: to, by_reference: true });
                }
                Move::ResultAddress { to } => hidden = Some(to),
            }
        }
        let result = match (&placement.result, sig.ret()) {
            (ResultPlace::Void, _) | (_, None) => ResultSink::Void,
            (ResultPlace::Regs(pieces), Some(ty)) => {
                ResultSink::Regs { pieces: pieces.clone(), extend: narrow_integer(abi, ty) }
            }
            (ResultPlace::Indirect(IndirectResult::DedicatedRegister), Some(_)) => ResultSink::Memory { from: None },
            (ResultPlace::Indirect(IndirectResult::HiddenArgument), Some(_)) => {
                ResultSink::Memory { from: Some(hidden.expect("a hidden result address")) }
            }
        };
        let va = sig.fixed_args().map(|_| VaStart { abi, next: placement.next });
        let plan = CallbackPlan { args, result, va };
        debug_assert!(plan.covers(sig), "pieces outside their argument: {plan:?} for {sig:?}");
        Ok(plan)
    }

    /// Every piece lies inside its argument (or result).
    fn covers(&self, sig: &Signature) -> bool {
        let args_ok = self.args.iter().zip(sig.args()).all(|(pieces, ty)| {
            pieces.iter().all(|p| (p.dst as usize).checked_add(p.len as usize).is_some_and(|end| end <= ty.size()))
        });
        let ret_ok = match (&self.result, sig.ret()) {
            (ResultSink::Regs { pieces, .. }, Some(ty)) => pieces.iter().all(|p| (p.dst + p.len) as usize <= ty.size()),
            _ => true,
        };
        args_ok && ret_ok
    }
}

/// For an integer result narrower than 8 bytes, how it is extended to 64 bits: by its C type's
/// signedness, except `uint32_t` on LP64D, which is sign-extended from bit 31 like every 32-bit
/// value in a 64-bit register there (RISC-V psABI, "Integer Calling Convention").
fn narrow_integer(abi: Abi, ty: &Type) -> Option<bool> {
    match ty {
        Type::I8 | Type::I16 | Type::I32 => Some(true),
        Type::U32 if abi == Abi::Lp64d => Some(true),
        Type::U8 | Type::U16 | Type::U32 => Some(false),
        _ => None,
    }
}

/// True if `pieces` hold a result register of this kind (for tests and the record).
#[cfg(test)]
fn uses(pieces: &[RetPiece], reg: crate::abi::RetReg) -> bool {
    pieces.iter().any(|p| p.from == reg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::RetReg;
    use crate::ctype::types::Aggregate;

    fn agg(b: crate::ctype::types::AggregateBuilder) -> Type {
        Type::Aggregate(b.build().unwrap())
    }

    #[test]
    fn sysv_scalars_come_from_the_registers_a_call_fills_then_the_stack() {
        let mut args = vec![Type::I8, Type::F64, Type::U16];
        args.extend(vec![Type::I64; 5]);
        args.extend(vec![Type::F32; 8]);
        let plan = CallbackPlan::new(Abi::SysVX86_64, &Signature::new(args, Some(Type::I16)).unwrap()).unwrap();
        assert_eq!(plan.args[0], vec![Piece { dst: 0, len: 1, from: Loc::Int(0), by_reference: false }]);
        assert_eq!(plan.args[1], vec![Piece { dst: 0, len: 8, from: Loc::Vec(0), by_reference: false }]);
        assert_eq!(plan.args[2], vec![Piece { dst: 0, len: 2, from: Loc::Int(1), by_reference: false }]);
        // The fifth int64_t is the seventh integer argument: the first stack slot.
        assert_eq!(plan.args[7], vec![Piece { dst: 0, len: 8, from: Loc::Stack(0), by_reference: false }]);
        // xmm0 went to the double: the seventh float is xmm7, the eighth the next stack slot.
        assert_eq!(plan.args[14][0].from, Loc::Vec(7));
        assert_eq!(plan.args[15], vec![Piece { dst: 0, len: 4, from: Loc::Stack(8), by_reference: false }]);
        assert_eq!(
            plan.result,
            ResultSink::Regs { pieces: vec![RetPiece { from: RetReg::Int(0), dst: 0, len: 2 }], extend: Some(true) }
        );
    }

    #[test]
    fn sysv_memory_result_comes_through_the_hidden_address_in_rdi() {
        let big = agg(Aggregate::builder().array(Type::I64, 3));
        let plan = CallbackPlan::new(Abi::SysVX86_64, &Signature::new(vec![Type::I32], Some(big)).unwrap()).unwrap();
        assert_eq!(plan.result, ResultSink::Memory { from: Some(Loc::Int(0)) });
        assert_eq!(plan.args[0][0].from, Loc::Int(1), "the first argument after the hidden one");
    }

    #[test]
    fn sysv_small_struct_arrives_in_eightbytes_and_long_double_on_the_stack() {
        let mixed = agg(Aggregate::builder().field(Type::F64).field(Type::I32));
        let sig = Signature::new(vec![mixed, Type::LongDouble], Some(Type::ComplexLongDouble)).unwrap();
        let plan = CallbackPlan::new(Abi::SysVX86_64, &sig).unwrap();
        assert_eq!(
            plan.args[0],
            vec![
                Piece { dst: 0, len: 8, from: Loc::Vec(0), by_reference: false },
                Piece { dst: 8, len: 8, from: Loc::Int(0), by_reference: false },
            ]
        );
        assert_eq!(plan.args[1], vec![Piece { dst: 0, len: 16, from: Loc::Stack(0), by_reference: false }]);
        let ResultSink::Regs { pieces, extend: None } = &plan.result else { panic!("{:?}", plan.result) };
        assert!(uses(pieces, RetReg::X87(0)) && uses(pieces, RetReg::X87(1)));
    }

    #[test]
    fn large_aggregates_arrive_by_reference_on_aapcs64_and_lp64d() {
        let id = agg(Aggregate::builder().array(Type::I8, 128));
        let sig = Signature::new(vec![Type::Pointer, Type::I32, id, Type::I32], Some(Type::I32)).unwrap();
        for abi in [Abi::Aapcs64, Abi::Lp64d] {
            let plan = CallbackPlan::new(abi, &sig).unwrap();
            assert_eq!(
                plan.args[2],
                vec![Piece { dst: 0, len: 128, from: Loc::Int(2), by_reference: true }],
                "{abi:?}"
            );
        }
        let big = agg(Aggregate::builder().array(Type::I64, 3));
        let x8 = CallbackPlan::new(Abi::Aapcs64, &Signature::new(vec![], Some(big)).unwrap()).unwrap();
        assert_eq!(x8.result, ResultSink::Memory { from: None });
        let a0 = CallbackPlan::new(Abi::Lp64d, &Signature::new(vec![], Some(big)).unwrap()).unwrap();
        assert_eq!(a0.result, ResultSink::Memory { from: Some(Loc::Int(0)) });
    }

    #[test]
    fn uint32_results_extend_as_each_abi_extends_them() {
        let sig = Signature::new(vec![], Some(Type::U32)).unwrap();
        let extend = |abi| match CallbackPlan::new(abi, &sig).unwrap().result {
            ResultSink::Regs { extend, .. } => extend,
            other => panic!("{other:?}"),
        };
        assert_eq!(extend(Abi::SysVX86_64), Some(false));
        assert_eq!(extend(Abi::Aapcs64), Some(false));
        assert_eq!(extend(Abi::Lp64d), Some(true));
    }

    #[test]
    fn variadic_signatures_list_their_named_arguments_only() {
        let call_site = Signature::variadic(1, vec![Type::Pointer, Type::I32], None).unwrap();
        let function = Signature::variadic(2, vec![Type::Pointer, Type::I32], None).unwrap();
        for abi in [Abi::SysVX86_64, Abi::Aapcs64, Abi::Lp64d] {
            assert_eq!(
                CallbackPlan::new(abi, &call_site),
                Err(Error::VariadicCallbackArguments { named: 1, total: 2 }),
                "{abi:?}"
            );
            let plan = CallbackPlan::new(abi, &function).unwrap();
            let next = crate::abi::NextArg { int: 2, vec: 0, stack: 0 };
            assert_eq!(plan.va, Some(VaStart { abi, next }), "{abi:?}");
            let plain = Signature::new(vec![Type::Pointer, Type::I32], None).unwrap();
            assert_eq!(CallbackPlan::new(abi, &plain).unwrap().va, None);
        }
    }

    #[test]
    fn every_piece_of_random_signatures_lies_inside_its_argument_on_every_abi() {
        let mut rng = crate::oracle::Rng(0x5eed_0020);
        for _ in 0..2000 {
            let sig = crate::oracle::random_signature(&mut rng);
            if sig.fixed_args().is_some() {
                continue;
            }
            for abi in [Abi::SysVX86_64, Abi::Aapcs64, Abi::Lp64d] {
                let plan = CallbackPlan::new(abi, &sig).unwrap();
                assert!(plan.covers(&sig), "{abi:?} {sig:?}");
                // Every argument has at least one piece (no type has zero bytes).
                assert!(plan.args.iter().all(|p| !p.is_empty()), "{abi:?} {sig:?}");
            }
        }
    }
}
