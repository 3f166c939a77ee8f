//! Argument placement, one module per ABI, in pure Rust: compiled and unit-tested on every
//! host, whatever the target. A module turns a [`Signature`] into a [`Placement`]: where every
//! byte of every argument goes (register image, stack-argument image, private copy) and where
//! every byte of the result comes from. Nothing here knows about NCCL or the assembly; the
//! frame layout lives in `crate::engine`.

pub mod aapcs64;
pub mod lp64d;
pub mod sysv_x86_64;

use crate::ctype::error::Error;
use crate::ctype::limits::{MAX_COPY_BYTES, MAX_STACK_BYTES};
use crate::ctype::types::{Aggregate, Signature, Type};

/// A calling convention the core can place arguments for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Abi {
    /// System V AMD64 psABI (Linux x86-64).
    SysVX86_64,
    /// Procedure Call Standard for the Arm 64-bit Architecture (Linux AArch64).
    Aapcs64,
    /// RISC-V psABI, LP64D: 64-bit integers, pointers and `double` in registers (Linux riscv64).
    Lp64d,
}

impl Abi {
    /// The ABI of the target this crate was built for, when it has a trampoline.
    pub const fn native() -> Option<Abi> {
        if cfg!(nccl_trampoline_asm = "x86_64_sysv") {
            Some(Abi::SysVX86_64)
        } else if cfg!(nccl_trampoline_asm = "aarch64_aapcs64") {
            Some(Abi::Aapcs64)
        } else if cfg!(nccl_trampoline_asm = "riscv64_lp64d") {
            Some(Abi::Lp64d)
        } else {
            None
        }
    }

    /// Short name, for messages.
    pub const fn name(self) -> &'static str {
        match self {
            Abi::SysVX86_64 => "sysv-x86_64",
            Abi::Aapcs64 => "aapcs64",
            Abi::Lp64d => "riscv64-lp64d",
        }
    }

    /// C's `va_list` as a parameter type of this ABI, to pass a live variable-argument list to
    /// a function that takes one (`vsnprintf`):
    /// - SysV x86-64 (psABI 3.5.7, figure 3.34): an array of one 24-byte `__va_list_tag`, which
    ///   decays to a pointer to it as a parameter: `void *`;
    /// - AAPCS64 ("Variable argument lists" appendix): `struct { void *__stack; void *__gr_top;
    ///   void *__vr_top; int __gr_offs; int __vr_offs; }`, 32 bytes, passed by value (a
    ///   composite over 16 bytes: B.4 turns it into the address of the caller's copy);
    /// - LP64D (RISC-V psABI, "va_list, va_start, and va_arg"): `void *`.
    pub fn va_list_type(self) -> Type {
        match self {
            Abi::SysVX86_64 | Abi::Lp64d => Type::Pointer,
            Abi::Aapcs64 => Type::Aggregate(
                Aggregate::builder()
                    .array(Type::Pointer, 3)
                    .array(Type::I32, 2)
                    .build()
                    .expect("a valid layout: 3 pointers and 2 ints"),
            ),
        }
    }

    /// Places the arguments and result of `sig`.
    pub fn place(self, sig: &Signature) -> Result<Placement, Error> {
        let placement = match self {
            Abi::SysVX86_64 => sysv_x86_64::place(sig)?,
            Abi::Aapcs64 => aapcs64::place(sig)?,
            Abi::Lp64d => lp64d::place(sig)?,
        };
        if placement.stack_len > MAX_STACK_BYTES {
            return Err(Error::StackTooLarge { needed: placement.stack_len, limit: MAX_STACK_BYTES });
        }
        if placement.copy_len > MAX_COPY_BYTES {
            return Err(Error::CopiesTooLarge { needed: placement.copy_len, limit: MAX_COPY_BYTES });
        }
        Ok(placement)
    }
}

/// Where a piece of an argument goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Loc {
    /// Integer argument register `n` (rdi, rsi, rdx, rcx, r8, r9 / x0..x7 / a0..a7), from its
    /// low byte.
    Int(u8),
    /// Vector or floating-point argument register `n` (xmm0..xmm7 / v0..v7 / fa0..fa7), from
    /// its low byte.
    Vec(u8),
    /// Byte offset in the stack-argument image (0 = the lowest address at the call).
    Stack(u32),
}

/// One step of moving arguments into place, in the order the plan runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Move {
    /// An integer or pointer argument of `len` bytes, extended to 64 bits (sign-extended when
    /// `signed`), into a register or an 8-byte stack slot.
    Int {
        /// Argument index.
        arg: u16,
        /// 1, 2, 4 or 8.
        len: u8,
        /// Sign- rather than zero-extend.
        signed: bool,
        /// Destination.
        to: Loc,
    },
    /// `len` raw bytes of argument `arg` from byte `src`, to the start of `to`.
    Bytes {
        /// Argument index.
        arg: u16,
        /// First byte of the argument.
        src: u32,
        /// Number of bytes.
        len: u32,
        /// Destination.
        to: Loc,
    },
    /// The whole argument `arg` (`len` bytes) into the private copy area at byte `copy`
    /// (16-aligned): the callee's own copy of a large aggregate (AAPCS64 B.4, LP64D by
    /// reference).
    Copy {
        /// Argument index.
        arg: u16,
        /// Size of the argument.
        len: u32,
        /// Offset in the copy area.
        copy: u32,
    },
    /// The address of byte `copy` of the private copy area, as a pointer argument.
    CopyAddress {
        /// Offset in the copy area.
        copy: u32,
        /// Destination.
        to: Loc,
    },
    /// The address of the caller's result buffer, as the hidden first argument
    /// ([`IndirectResult::HiddenArgument`]: SysV MEMORY class results, LP64D results larger than
    /// 16 bytes).
    ResultAddress {
        /// Destination.
        to: Loc,
    },
}

/// A result register, by register file and number (as [`Loc`] names argument registers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetReg {
    /// Integer result register `n`: rax, rdx / x0, x1 / a0, a1.
    Int(u8),
    /// Vector or floating-point result register `n`: xmm0, xmm1 / v0..v3 / fa0, fa1.
    Vec(u8),
    /// Entry `n` of the x87 register stack (x86-64 only): `st(0)`, `st(1)`. A piece of this kind
    /// is a `long double` (10 value bytes), popped from the x87 stack as it is stored. Named, like
    /// `Int` and `Vec`, by its register file: the psABI's name for that file and for the classes
    /// returned in it (X87, X87UP, COMPLEX_X87), which has no ABI-neutral equivalent.
    X87(u8),
}

/// Where the result comes back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResultPlace {
    /// `void`.
    Void,
    /// In registers: each piece copies `len` bytes from the low end of `from` to byte `dst`
    /// of the result.
    Regs(Vec<RetPiece>),
    /// In memory: the callee writes the result to a buffer of the caller's, whose address it is
    /// given the way [`IndirectResult`] says.
    Indirect(IndirectResult),
}

/// How the caller gives a callee the address of the buffer it writes an indirect result to
/// ([`ResultPlace::Indirect`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IndirectResult {
    /// As a hidden first argument, in the first integer argument register ahead of the real
    /// arguments, which move up one: SysV x86-64's MEMORY-class results (rdi), LP64D's results
    /// larger than two registers (a0). The placement has a [`Move::ResultAddress`] for it.
    HiddenArgument,
    /// In the ABI's dedicated indirect-result register, which is not an argument register and
    /// leaves the arguments where they are: AAPCS64's indirect result location register XR (x8),
    /// for results larger than 16 bytes that are not HFAs or HVAs.
    DedicatedRegister,
}

/// The placement's state after the last argument: the argument registers taken and the stack
/// bytes used, as the ABI documents count them (SysV psABI 3.5.7: `gp_offset`, `fp_offset`,
/// `overflow_arg_area`; AAPCS64: NGRN, NSRN, NSAA after the named arguments, C.12 and C.3
/// included: a composite that did not fit takes every remaining register; LP64D: the next a
/// register, then the stack). A variadic callee's `va_start` begins there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct NextArg {
    /// Integer argument registers taken (a hidden result address included, AAPCS64's dedicated
    /// result register not).
    pub int: u8,
    /// Vector / floating-point argument registers taken.
    pub vec: u8,
    /// Bytes of stack arguments used, a multiple of 8 (not rounded up to 16).
    pub stack: u32,
}

/// A piece of a result returned in registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RetPiece {
    /// Register.
    pub from: RetReg,
    /// Destination offset in the result.
    pub dst: u32,
    /// Bytes.
    pub len: u32,
}

/// The outcome of placing a signature: the moves, the sizes of the two images, and the result.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Placement {
    /// Moves, in argument order.
    pub moves: Vec<Move>,
    /// Bytes of stack arguments, a multiple of 16.
    pub stack_len: usize,
    /// Bytes of private aggregate copies (AAPCS64, LP64D), a multiple of 16.
    pub copy_len: usize,
    /// Vector registers used for arguments (%al on x86-64).
    pub vector_count: u8,
    /// Where an argument after the last one would go: what a variadic callee's `va_start`
    /// starts from.
    pub next: NextArg,
    /// The result.
    pub result: ResultPlace,
}

pub(crate) fn arg_index(i: usize) -> u16 {
    // Signature::new caps the argument count at MAX_ARGS, far below u16::MAX.
    u16::try_from(i).expect("argument count is bounded by limits::MAX_ARGS")
}

pub(crate) fn offset32(v: usize) -> u32 {
    // Offsets are bounded by MAX_STACK_BYTES / MAX_COPY_BYTES / MAX_AGGREGATE_BYTES, checked
    // before they are used; saturate so a huge value still fails that check.
    u32::try_from(v).unwrap_or(u32::MAX)
}
