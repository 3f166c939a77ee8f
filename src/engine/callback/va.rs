//! The variable arguments of a variadic callback: a [`VaList`] reads them one at a time where
//! each ABI's `va_arg` finds them, and a [`CVaList`] hands the list to a C function that takes
//! a `va_list` (`vsnprintf`) through the call core.
//!
//! A list starts from three addresses the callback record gives (the record contract of every
//! architecture: `saved_int_regs`, the first saved integer argument register, 8-byte words;
//! `saved_vec_regs`, the first saved vector register, 16-byte slots; `stack_args`, the caller's
//! stack pointer at the call) and from where the named arguments stopped ([`NextArg`], the
//! forward placement's own count), so the named arguments and the variable ones are placed by
//! one set of rules. The readers are pure Rust over those addresses: unit-tested on any host
//! with memory laid out as a C caller of each ABI lays it out.
//!
//! - **SysV x86-64** (psABI 3.5.7 "Variable Argument Lists"): `va_list` is an array of one
//!   `__va_list_tag { unsigned gp_offset, fp_offset; void *overflow_arg_area, *reg_save_area; }`.
//!   The register save area is the record's first 176 bytes (rdi..r9, then xmm0..xmm7 in 16-byte
//!   slots: figure 3.33's layout); `gp_offset` and `fp_offset` start after the registers the named
//!   arguments took, `overflow_arg_area` after their stack bytes. `long double` always comes from
//!   the overflow area, 16-aligned, as does an `__int128` once fewer than two registers are left.
//!   The stub saves all eight vector registers whatever `%al` says, so `%al` is not needed.
//! - **AAPCS64** (appendix "Variable argument lists", Linux): `va_list` is `struct { void
//!   *__stack; void *__gr_top; void *__vr_top; int __gr_offs; int __vr_offs; }`; the tops are
//!   the ends of the saved x0..x7 and q0..q7, the offsets minus the bytes of the registers left
//!   (8 per general register, 16 per vector register). `double` and `long double` come from the
//!   next q register, then the stack (16-aligned for `long double`); an `__int128` takes an even
//!   register pair.
//! - **LP64D** (RISC-V psABI, "Variadic arguments" and "va_list, va_start, and va_arg"):
//!   `va_list` is a `void *` walking the saved a-registers then, contiguously, the stack
//!   arguments (a0..a7 lie just below the stack arguments: the record contract). Variable
//!   arguments, `double` included, are in integer registers; a 2×XLEN-aligned one (`long
//!   double`, `__int128`) starts at an even register or a 16-aligned slot.

use core::ffi::c_void;
use core::marker::PhantomData;
use core::mem::MaybeUninit;

use super::plan::VaStart;
use super::value::CValue;
use crate::abi::{Abi, NextArg};
use crate::ctype::error::Error;
use crate::ctype::types::Type;

/// How `va_arg` fetches a promoted scalar: its class in the ABI's `va_arg` algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `int`, `long`, pointers: one integer register, or an 8-byte stack slot.
    Word,
    /// `__int128`: two integer registers (an even pair on AAPCS64 and LP64D), or 16 bytes
    /// 16-aligned on the stack.
    Pair,
    /// `double`: a vector register (an integer one on LP64D), or an 8-byte stack slot.
    Double,
    /// `long double`: SysV the stack, AAPCS64 a q register, LP64D an even integer pair; or 16
    /// bytes 16-aligned on the stack.
    LongDouble,
}

impl Kind {
    fn of(ty: &Type) -> Result<Kind, Error> {
        match ty {
            Type::I32 | Type::U32 | Type::I64 | Type::U64 | Type::Pointer => Ok(Kind::Word),
            Type::I128 | Type::U128 => Ok(Kind::Pair),
            Type::F64 => Ok(Kind::Double),
            Type::LongDouble => Ok(Kind::LongDouble),
            // C11 6.5.2.2p7: the default argument promotions apply to the arguments after `...`.
            Type::I8 | Type::U8 | Type::I16 | Type::U16 | Type::F32 => Err(Error::VaArgPromoted { ty: ty.c_name() }),
            other => Err(Error::VaArgUnsupported { ty: other.c_name() }),
        }
    }

    /// `sizeof` and `_Alignof` of the type on the stack.
    fn size_align(self) -> (usize, usize) {
        match self {
            Kind::Word | Kind::Double => (8, 8),
            Kind::Pair | Kind::LongDouble => (16, 16),
        }
    }
}

/// `p` rounded up to a multiple of `align` (a power of two), keeping its provenance.
fn align_up(p: *const u8, align: usize) -> *const u8 {
    p.wrapping_add((p as usize).wrapping_neg() & (align - 1))
}

/// SysV x86-64's `__va_list_tag` (psABI 3.5.7, figure 3.34).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct SysVTag {
    gp_offset: u32,
    fp_offset: u32,
    overflow_arg_area: *const u8,
    reg_save_area: *const u8,
}

/// The end of the general registers in the register save area (6 × 8 bytes), and of the
/// vector registers (then 8 × 16 bytes): figure 3.33.
const SYSV_GP_END: u32 = 48;
const SYSV_FP_END: u32 = 176;

impl SysVTag {
    /// psABI 3.5.7, "The va_arg Macro", steps 1 to 11 for a scalar.
    fn next(&mut self, kind: Kind) -> *const u8 {
        let (gp, fp) = match kind {
            Kind::Word => (1, 0),
            Kind::Pair => (2, 0),
            Kind::Double => (0, 1),
            // Step 1: a type passed in memory (X87 class) is fetched from the overflow area.
            Kind::LongDouble => return self.overflow(kind),
        };
        // Step 3: "if l->gp_offset > 48 − num_gp × 8 or l->fp_offset > 176 − num_fp × 16, go
        // to step 7" (the argument is in memory).
        if self.gp_offset > SYSV_GP_END - 8 * gp || self.fp_offset > SYSV_FP_END - 16 * fp {
            return self.overflow(kind);
        }
        // Steps 4 and 5: fetch at reg_save_area + gp_offset (or fp_offset), then advance by 8
        // per general register, 16 per vector register.
        let at = if gp > 0 { self.gp_offset } else { self.fp_offset };
        self.gp_offset += 8 * gp;
        self.fp_offset += 16 * fp;
        self.reg_save_area.wrapping_add(at as usize)
    }

    /// Steps 7 to 11: align overflow_arg_area to 16 if the type needs more than 8, fetch there,
    /// advance by the size rounded up to 8.
    fn overflow(&mut self, kind: Kind) -> *const u8 {
        let (size, align) = kind.size_align();
        let at = align_up(self.overflow_arg_area, align);
        self.overflow_arg_area = at.wrapping_add(size.next_multiple_of(8));
        at
    }
}

// The two C layouts (psABI figure 3.34: 24 bytes; the AAPCS64 appendix: 32 bytes), which
// `Abi::va_list_type` describes to the call core.
static_assertions::const_assert_eq!(core::mem::size_of::<SysVTag>(), 24);
static_assertions::const_assert_eq!(core::mem::size_of::<Aapcs64Tag>(), 32);

/// AAPCS64's `va_list` (appendix "Variable argument lists", "The va_list type").
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Aapcs64Tag {
    stack: *const u8,
    gr_top: *const u8,
    vr_top: *const u8,
    gr_offs: i32,
    vr_offs: i32,
}

impl Aapcs64Tag {
    /// The appendix's `va_arg` for a scalar of the general or the FP/SIMD register class.
    fn next(&mut self, kind: Kind) -> *const u8 {
        if matches!(kind, Kind::Word | Kind::Pair) {
            let mut offs = self.gr_offs;
            // "if (offs >= 0) goto on_stack": the general registers are already used up.
            if offs < 0 {
                if kind == Kind::Pair {
                    // 16-byte-aligned types take an even register pair: round up.
                    offs = (offs + 15) & -16;
                }
                let nreg = if kind == Kind::Pair { 2 } else { 1 };
                self.gr_offs = offs + 8 * nreg;
                if self.gr_offs <= 0 {
                    return self.gr_top.wrapping_offset(offs as isize);
                }
            }
        } else {
            let offs = self.vr_offs;
            if offs < 0 {
                // One whole 16-byte register per double or long double (its low bytes).
                self.vr_offs = offs + 16;
                if self.vr_offs <= 0 {
                    return self.vr_top.wrapping_offset(offs as isize);
                }
            }
        }
        // on_stack: aligned to 16 for 16-aligned types, then advanced by the size rounded to 8.
        let (size, align) = kind.size_align();
        let at = align_up(self.stack, align);
        self.stack = at.wrapping_add(size.next_multiple_of(8));
        at
    }
}

/// One `va_list` of any of the three ABIs, in the ABI's own representation (what a C function
/// taking a `va_list` receives).
#[derive(Clone, Copy, Debug)]
enum State {
    SysV(SysVTag),
    Aapcs64(Aapcs64Tag),
    /// The next argument's address.
    Lp64d(*const u8),
}

impl State {
    /// `va_start`, from the record contract's addresses and where the named arguments stopped.
    fn start(va: VaStart, int: *const u8, vec: *const u8, stack: *const u8) -> State {
        let NextArg { int: ngrn, vec: nsrn, stack: nsaa } = va.next;
        let after_named = stack.wrapping_add(nsaa as usize);
        match va.abi {
            Abi::SysVX86_64 => {
                // The tag has one base for both register kinds: the vector registers must follow
                // the six general ones (figure 3.33), as they do in the record.
                assert_eq!(vec as usize, int as usize + SYSV_GP_END as usize, "the record is not a register save area");
                State::SysV(SysVTag {
                    gp_offset: 8 * u32::from(ngrn),
                    fp_offset: SYSV_GP_END + 16 * u32::from(nsrn),
                    overflow_arg_area: after_named,
                    reg_save_area: int,
                })
            }
            Abi::Aapcs64 => State::Aapcs64(Aapcs64Tag {
                stack: after_named,
                gr_top: int.wrapping_add(8 * 8),
                vr_top: vec.wrapping_add(8 * 16),
                gr_offs: -8 * (8 - i32::from(ngrn.min(8))),
                vr_offs: -16 * (8 - i32::from(nsrn.min(8))),
            }),
            // The named arguments reach the stack only once a0..a7 are all taken.
            Abi::Lp64d if ngrn < 8 => State::Lp64d(stack.wrapping_sub(8 * usize::from(8 - ngrn))),
            Abi::Lp64d => State::Lp64d(after_named),
        }
    }

    fn abi(&self) -> Abi {
        match self {
            State::SysV(_) => Abi::SysVX86_64,
            State::Aapcs64(_) => Abi::Aapcs64,
            State::Lp64d(_) => Abi::Lp64d,
        }
    }

    /// `va_arg`: the address of the next variable argument of class `kind`; the list is moved
    /// past it.
    fn next(&mut self, kind: Kind) -> *const u8 {
        match self {
            State::SysV(tag) => tag.next(kind),
            State::Aapcs64(tag) => tag.next(kind),
            State::Lp64d(p) => {
                let (size, align) = kind.size_align();
                let at = align_up(*p, align);
                *p = at.wrapping_add(size);
                at
            }
        }
    }
}

/// The variable arguments of one call of a variadic [`Callback`](crate::Callback), from
/// [`CallbackArgs::va_list`](crate::CallbackArgs::va_list): C's `va_list` after `va_start`,
/// read one argument at a time with [`arg`](VaList::arg) by the ABI's `va_arg` rules, or handed
/// to a C function that takes a `va_list` with [`into_c`](VaList::into_c). Valid during the
/// handler only (the lifetime), on the handler's thread (not `Send`).
///
/// `Clone` is C's `va_copy`: the copy reads from the same position on, independently.
///
/// ```
/// use core::ffi::c_void;
/// use nccl_trampoline::{Callback, Signature, Type};
///
/// # if nccl_trampoline::engine::callback::POOL_SIZE == 0 { return Ok(()); }
/// // int64_t sum(int count, ...): `count` ints, then a double.
/// let sum = Signature::variadic(1, vec![Type::I32], Some(Type::I64))?;
/// let cb = Callback::new(&sum, |args, result| {
///     let mut va = args.va_list().unwrap();
///     let mut total = 0i64;
///     for _ in 0..args.get::<i32>(0).unwrap() {
///         // SAFETY: the caller passes `count` ints, then a double.
///         total += i64::from(unsafe { va.arg::<i32>() }.unwrap());
///     }
///     // SAFETY: as above.
///     let scale = unsafe { va.arg::<f64>() }.unwrap();
///     result.set((total as f64 * scale) as i64).unwrap();
/// })?;
/// // SAFETY: the entry is a C function `int64_t (int, ...)`, as its signature says.
/// let f = unsafe { std::mem::transmute::<*const c_void, unsafe extern "C" fn(i32, ...) -> i64>(cb.as_ptr()) };
/// // SAFETY: 3 ints, then a double, as the handler reads them.
/// assert_eq!(unsafe { f(3, 1, 2, 3, 10.0) }, 60);
/// # Ok::<(), nccl_trampoline::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct VaList<'a> {
    state: State,
    _call: PhantomData<&'a ()>,
}

impl<'a> VaList<'a> {
    /// `va_start` at the first variable argument.
    ///
    /// # Safety
    ///
    /// The three addresses are those of the record contract for the live call of a callback
    /// whose plan gave `va`: `int` the saved integer argument registers, `vec` the saved vector
    /// registers (on x86-64, `int` + 48: a register save area), `stack` the caller's first stack
    /// argument (on riscv64, with a0..a7 at the 64 bytes below it), all valid for `'a`.
    pub(crate) unsafe fn start(va: VaStart, int: *const u8, vec: *const u8, stack: *const u8) -> VaList<'a> {
        VaList { state: State::start(va, int, vec, stack), _call: PhantomData }
    }

    /// The ABI whose `va_arg` rules the list follows.
    pub fn abi(&self) -> Abi {
        self.state.abi()
    }

    /// The next variable argument, as `T`: C's `va_arg(ap, T)`. `T` is a type C passes through
    /// `...` after the default argument promotions: `i32`/`u32` (`int`, `unsigned`, and the
    /// `char`s, `short`s and `bool` promoted to `int`), `i64`/`u64`/`isize`/`usize` (`long`,
    /// `long long`, `size_t`), `f64` (`double`, and `float` promoted to it), raw pointers,
    /// [`CLongDouble`](crate::CLongDouble), `i128`/`u128` (`__int128`). A narrower type is
    /// [`Error::VaArgPromoted`], a complex one [`Error::VaArgUnsupported`]; neither moves the
    /// list.
    ///
    /// # Safety
    ///
    /// As for C's `va_arg`: the caller passed a next variable argument, and its type after the
    /// promotions is `T`'s C type (a `%d` read as a pointer reads another argument's bytes, or
    /// past the caller's arguments). Which arguments exist is known only from the C caller's
    /// convention (a format string, a count): it cannot be checked.
    pub unsafe fn arg<T: CValue>(&mut self) -> Result<T, Error> {
        let ty = T::c_type();
        let kind = Kind::of(&ty)?;
        let at = self.state.next(kind);
        let mut value = MaybeUninit::<T>::zeroed();
        // SAFETY: `at` is where the ABI's va_arg finds the next argument of this class: a saved
        // register of the live record or the caller's stack arguments, holding `sizeof T` bytes
        // of that argument (the function's contract); `value` has T's size (the CArg contract
        // for T's C type).
        unsafe { core::ptr::copy_nonoverlapping(at, value.as_mut_ptr().cast::<u8>(), ty.size()) };
        // SAFETY: every byte written (or zero), and every bit pattern is a valid T (CValue).
        Ok(unsafe { value.assume_init() })
    }

    /// The list as a C `va_list` argument, for a C function that takes one (`vsnprintf`,
    /// `vfprintf`) called through the call core. Consumes the list: after the callee used it,
    /// C leaves the caller's `va_list` indeterminate (C11 7.16p3: on x86-64 the callee moves the
    /// shared tag, on AAPCS64 it moved a copy). To read or pass the same arguments again, pass a
    /// [`clone`](Clone::clone) (`va_copy`) and keep the original.
    pub fn into_c(self) -> CVaList<'a> {
        CVaList { state: self.state, address: core::ptr::null(), _call: PhantomData }
    }
}

/// A `va_list` to pass to a C function through the call core: [`c_type`](CVaList::c_type) is
/// its parameter type in the function's [`Signature`](crate::Signature), and
/// [`arg`](CVaList::arg) the argument pointer for [`CallPlan::call`](crate::CallPlan::call).
/// Made by [`VaList::into_c`]; valid during the handler only.
///
/// Per ABI ([`Abi::va_list_type`]): x86-64 passes the address of the `__va_list_tag` held here
/// (the array decays to a pointer; the callee advances it in place); AAPCS64 passes the 32-byte
/// structure by value (the core gives the callee a copy, AAPCS64 B.4); riscv64 passes the
/// `void *`.
#[derive(Debug)]
pub struct CVaList<'a> {
    state: State,
    /// x86-64: the tag's address, the value of the pointer argument.
    address: *const u8,
    _call: PhantomData<&'a ()>,
}

impl CVaList<'_> {
    /// C's `va_list` as a parameter type of this ABI ([`Abi::va_list_type`]).
    pub fn c_type(&self) -> Type {
        self.state.abi().va_list_type()
    }

    /// The argument for [`CallPlan::call`](crate::CallPlan::call) (the address of the
    /// `va_list` value, as [`arg`](crate::arg) gives): valid until this `CVaList` is moved,
    /// dropped or asked again.
    pub fn arg(&mut self) -> *const c_void {
        match &mut self.state {
            State::SysV(tag) => {
                self.address = (tag as *mut SysVTag).cast::<u8>();
                (&self.address as *const *const u8).cast()
            }
            State::Aapcs64(tag) => (tag as *mut Aapcs64Tag).cast_const().cast(),
            State::Lp64d(p) => (p as *mut *const u8).cast_const().cast(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{Loc, Move};
    use crate::ctype::types::{Aggregate, Signature};
    use crate::ctype::wide::CLongDouble;
    use crate::engine::callback::plan::CallbackPlan;

    /// A C caller's argument memory, as the record contract presents it: the saved integer
    /// registers, the saved 16-byte vector registers and the stack arguments, in one
    /// allocation laid out as each ABI's callee sees it (x86-64: the vector registers right after
    /// the six general ones, the register save area; riscv64: a0..a7 right below the stack).
    struct Image {
        words: Vec<u128>,
        int: usize,
        vec: usize,
        stack: usize,
    }

    const FILL: u8 = 0xa5;

    impl Image {
        fn new(abi: Abi, stack_len: usize) -> Image {
            let (int, vec, stack) = match abi {
                Abi::SysVX86_64 => (0, 48, 176),
                Abi::Aapcs64 => (0, 64, 192),
                Abi::Lp64d => (128, 0, 192),
            };
            let words = vec![u128::from_ne_bytes([FILL; 16]); (stack + stack_len + 64) / 16];
            Image { words, int, vec, stack }
        }

        fn bytes(&mut self) -> &mut [u8] {
            let len = self.words.len() * 16;
            // SAFETY: the u128s are initialised bytes, any pattern of which is a valid u128.
            unsafe { core::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), len) }
        }

        /// Writes `value` where `loc` is, from its low byte.
        fn put(&mut self, loc: Loc, value: &[u8]) {
            let at = match loc {
                Loc::Int(n) => self.int + 8 * usize::from(n),
                Loc::Vec(n) => self.vec + 16 * usize::from(n),
                Loc::Stack(off) => self.stack + off as usize,
            };
            self.bytes()[at..at + value.len()].copy_from_slice(value);
        }

        /// `va_start` for a callback planned from `named` on `abi`.
        fn start(&mut self, abi: Abi, named: &Signature) -> VaList<'_> {
            let va = CallbackPlan::new(abi, named).unwrap().va.expect("a variadic plan");
            let base = self.words.as_ptr().cast::<u8>();
            // SAFETY: the image lays the three areas out as the record contract says, and lives
            // as long as the list borrows it.
            unsafe { VaList::start(va, base.add(self.int), base.add(self.vec), base.add(self.stack)) }
        }
    }

    /// Reads the next variable argument as the Rust type of `ty`; its bytes.
    fn read(va: &mut VaList<'_>, ty: &Type) -> Vec<u8> {
        fn bytes<T: Copy>(v: T, size: usize) -> Vec<u8> {
            // SAFETY: a plain value of `size` bytes.
            unsafe { core::slice::from_raw_parts((&v as *const T).cast::<u8>(), size).to_vec() }
        }
        // SAFETY: the tests lay out an argument of `ty` next (the point of each test).
        unsafe {
            match ty {
                Type::I32 => bytes(va.arg::<i32>().unwrap(), 4),
                Type::U32 => bytes(va.arg::<u32>().unwrap(), 4),
                Type::I64 => bytes(va.arg::<i64>().unwrap(), 8),
                Type::U64 => bytes(va.arg::<usize>().unwrap(), 8),
                Type::Pointer => bytes(va.arg::<*const u8>().unwrap(), 8),
                Type::F64 => bytes(va.arg::<f64>().unwrap(), 8),
                Type::LongDouble => bytes(va.arg::<CLongDouble>().unwrap(), 16),
                Type::I128 => bytes(va.arg::<i128>().unwrap(), 16),
                Type::U128 => bytes(va.arg::<u128>().unwrap(), 16),
                other => panic!("not a promoted scalar: {other:?}"),
            }
        }
    }

    /// Distinct bytes for argument `i` of a case: no two arguments look alike.
    fn value(i: usize, ty: &Type) -> Vec<u8> {
        (0..ty.size()).map(|k| (i as u8).wrapping_mul(16).wrapping_add(k as u8 + 1)).collect()
    }

    /// Lays out `named` then `variable` as a C caller does (the forward placement of the call:
    /// the placement the conformance suite checks against the C compilers), reads the variable
    /// ones back through a list started from the callback's plan, and compares the bytes.
    fn round_trip(abi: Abi, named: &[Type], variable: &[Type], ret: Option<Type>) {
        let call = Signature::variadic(named.len(), [named, variable].concat(), ret).unwrap();
        let placement = abi.place(&call).unwrap();
        let mut image = Image::new(abi, placement.stack_len);
        let values: Vec<Vec<u8>> = call.args().iter().enumerate().map(|(i, t)| value(i, t)).collect();
        for m in &placement.moves {
            match *m {
                Move::Int { arg, len, to, .. } => image.put(to, &values[usize::from(arg)][..usize::from(len)]),
                Move::Bytes { arg, src, len, to } => {
                    image.put(to, &values[usize::from(arg)][src as usize..(src + len) as usize])
                }
                // The callback never reads a named argument's private copy through the list.
                Move::CopyAddress { to, .. } | Move::ResultAddress { to } => image.put(to, &[0x5a; 8]),
                Move::Copy { .. } => {}
            }
        }
        let named_sig = Signature::variadic(named.len(), named.to_vec(), ret).unwrap();
        let mut va = image.start(abi, &named_sig);
        for (k, ty) in variable.iter().enumerate() {
            let i = named.len() + k;
            assert_eq!(read(&mut va, ty), values[i], "{abi:?}: variable argument {k} ({ty:?}) of {call:?}");
        }
    }

    const ABIS: [Abi; 3] = [Abi::SysVX86_64, Abi::Aapcs64, Abi::Lp64d];

    #[test]
    fn sysv_registers_then_the_overflow_area_long_double_and_int128_16_aligned() {
        // rdi = the format; rsi..r9 = five longs; the __int128 finds no pair left: the overflow
        // area, 16-aligned after the long double at 0; the next long too; xmm0..xmm7, then the
        // ninth double after it.
        let named = Signature::variadic(1, vec![Type::Pointer], None).unwrap();
        let mut image = Image::new(Abi::SysVX86_64, 64);
        image.put(Loc::Stack(0), &value(1, &Type::LongDouble));
        for k in 0..5u8 {
            image.put(Loc::Int(1 + k), &value(2 + usize::from(k), &Type::I64));
        }
        image.put(Loc::Stack(16), &value(7, &Type::I128));
        image.put(Loc::Stack(32), &value(8, &Type::I64));
        for k in 0..8u8 {
            image.put(Loc::Vec(k), &value(9 + usize::from(k), &Type::F64));
        }
        image.put(Loc::Stack(40), &value(17, &Type::F64));
        let mut va = image.start(Abi::SysVX86_64, &named);
        assert_eq!(read(&mut va, &Type::LongDouble), value(1, &Type::LongDouble));
        for k in 0..5 {
            assert_eq!(read(&mut va, &Type::I64), value(2 + k, &Type::I64));
        }
        assert_eq!(read(&mut va, &Type::I128), value(7, &Type::I128));
        assert_eq!(read(&mut va, &Type::I64), value(8, &Type::I64));
        for k in 0..8 {
            assert_eq!(read(&mut va, &Type::F64), value(9 + k, &Type::F64));
        }
        assert_eq!(read(&mut va, &Type::F64), value(17, &Type::F64));
    }

    #[test]
    fn aapcs64_even_pairs_q_registers_then_the_stack() {
        // x0, x1 named; __int128 in x2:x3; a long in x4; the next __int128 skips x5 for x6:x7;
        // the next long is on the stack. long double in q0, double in q1's low bytes.
        let named = Signature::variadic(2, vec![Type::Pointer, Type::I32], None).unwrap();
        let mut image = Image::new(Abi::Aapcs64, 16);
        image.put(Loc::Int(2), &value(2, &Type::I128));
        image.put(Loc::Int(4), &value(3, &Type::I64));
        image.put(Loc::Int(6), &value(4, &Type::I128));
        image.put(Loc::Stack(0), &value(5, &Type::I64));
        image.put(Loc::Vec(0), &value(6, &Type::LongDouble));
        image.put(Loc::Vec(1), &value(7, &Type::F64));
        let mut va = image.start(Abi::Aapcs64, &named);
        assert_eq!(read(&mut va, &Type::I128), value(2, &Type::I128));
        assert_eq!(read(&mut va, &Type::I64), value(3, &Type::I64));
        assert_eq!(read(&mut va, &Type::I128), value(4, &Type::I128));
        assert_eq!(read(&mut va, &Type::I64), value(5, &Type::I64));
        assert_eq!(read(&mut va, &Type::LongDouble), value(6, &Type::LongDouble));
        assert_eq!(read(&mut va, &Type::F64), value(7, &Type::F64));
    }

    #[test]
    fn lp64d_walks_the_a_registers_into_the_stack_even_pairs_aligned() {
        // a0 named (its double in fa0); __int128 skips a1 for a2:a3; a double in a4; a long
        // double skips a5 for a6:a7; then the stack: a long, an __int128 16-aligned after it.
        let named = Signature::variadic(2, vec![Type::Pointer, Type::F64], None).unwrap();
        let mut image = Image::new(Abi::Lp64d, 32);
        image.put(Loc::Int(2), &value(2, &Type::I128));
        image.put(Loc::Int(4), &value(3, &Type::F64));
        image.put(Loc::Int(6), &value(4, &Type::LongDouble));
        image.put(Loc::Stack(0), &value(5, &Type::I64));
        image.put(Loc::Stack(16), &value(6, &Type::U128));
        let mut va = image.start(Abi::Lp64d, &named);
        assert_eq!(read(&mut va, &Type::I128), value(2, &Type::I128));
        assert_eq!(read(&mut va, &Type::F64), value(3, &Type::F64));
        assert_eq!(read(&mut va, &Type::LongDouble), value(4, &Type::LongDouble));
        assert_eq!(read(&mut va, &Type::I64), value(5, &Type::I64));
        assert_eq!(read(&mut va, &Type::U128), value(6, &Type::U128));
    }

    #[test]
    fn named_arguments_that_fill_registers_and_stack_move_the_start() {
        let big = Type::Aggregate(Aggregate::builder().array(Type::I64, 3).build().unwrap());
        let pair = Type::Aggregate(Aggregate::builder().field(Type::I64).field(Type::I64).build().unwrap());
        let variable = [Type::I32, Type::F64, Type::LongDouble, Type::I64, Type::F64, Type::I128, Type::Pointer];
        for abi in ABIS {
            // Every register kind used up by named arguments, and named stack bytes.
            let named = [vec![Type::I64; 9], vec![Type::F64; 9], vec![Type::LongDouble, Type::I32]].concat();
            round_trip(abi, &named, &variable, None);
            // A hidden result address (SysV rdi, LP64D a0; AAPCS64 x8 takes none).
            round_trip(abi, &[Type::Pointer], &variable, Some(big));
            // AAPCS64 C.12: a composite that does not fit takes every remaining x register.
            round_trip(abi, &[vec![Type::I64; 7], vec![pair]].concat(), &variable, None);
            // A composite by value on the stack (SysV) or by reference (AAPCS64, LP64D).
            round_trip(abi, &[Type::I32, big, Type::F64], &variable, None);
        }
    }

    #[test]
    fn random_lists_read_back_where_the_forward_placement_puts_them_on_every_abi() {
        let named_types = [Type::I32, Type::I64, Type::Pointer, Type::F64, Type::LongDouble, Type::I128];
        let variable_types = [
            Type::I32,
            Type::U32,
            Type::I64,
            Type::U64,
            Type::Pointer,
            Type::F64,
            Type::LongDouble,
            Type::I128,
            Type::U128,
        ];
        let mut rng = crate::oracle::Rng(0x5eed_0a1a);
        let cases = if cfg!(miri) { 12 } else { 600 };
        for _ in 0..cases {
            let named: Vec<Type> = (0..rng.range(1, 10)).map(|_| named_types[rng.below(6) as usize]).collect();
            let variable: Vec<Type> = (0..rng.range(0, 24)).map(|_| variable_types[rng.below(9) as usize]).collect();
            for abi in ABIS {
                round_trip(abi, &named, &variable, None);
            }
        }
    }

    #[test]
    fn unpromoted_and_complex_types_are_refused_without_moving_the_list() {
        let named = Signature::variadic(1, vec![Type::Pointer], None).unwrap();
        for abi in ABIS {
            let mut image = Image::new(abi, 16);
            image.put(Loc::Int(1), &value(1, &Type::I32));
            let mut va = image.start(abi, &named);
            // SAFETY: refused before anything is read.
            unsafe {
                assert_eq!(va.arg::<i8>(), Err(Error::VaArgPromoted { ty: "int8_t" }));
                assert_eq!(va.arg::<u16>(), Err(Error::VaArgPromoted { ty: "uint16_t" }));
                assert_eq!(va.arg::<f32>(), Err(Error::VaArgPromoted { ty: "float" }));
                assert_eq!(
                    va.arg::<crate::ctype::wide::Complex<f64>>(),
                    Err(Error::VaArgUnsupported { ty: "_Complex double" })
                );
            }
            assert_eq!(read(&mut va, &Type::I32), value(1, &Type::I32), "{abi:?}");
        }
    }

    #[test]
    fn a_clone_reads_on_independently_like_va_copy() {
        for abi in ABIS {
            let named = Signature::variadic(1, vec![Type::Pointer], None).unwrap();
            let mut image = Image::new(abi, 16);
            image.put(Loc::Int(1), &value(1, &Type::I64));
            image.put(Loc::Int(2), &value(2, &Type::I64));
            let mut va = image.start(abi, &named);
            assert_eq!(read(&mut va, &Type::I64), value(1, &Type::I64));
            let mut copy = va.clone();
            assert_eq!(read(&mut copy, &Type::I64), value(2, &Type::I64));
            assert_eq!(read(&mut va, &Type::I64), value(2, &Type::I64), "{abi:?}");
        }
    }

    #[test]
    fn the_va_list_type_is_placed_as_c_places_a_va_list_parameter() {
        // int vsnprintf(char *, size_t, const char *, va_list)
        let vsnprintf = |abi: Abi| {
            let args = vec![Type::Pointer, Type::U64, Type::Pointer, abi.va_list_type()];
            abi.place(&Signature::new(args, Some(Type::I32)).unwrap()).unwrap()
        };
        for abi in [Abi::SysVX86_64, Abi::Lp64d] {
            assert_eq!(abi.va_list_type(), Type::Pointer);
            assert_eq!(vsnprintf(abi).moves[3], Move::Int { arg: 3, len: 8, signed: false, to: Loc::Int(3) });
        }
        let aapcs64 = Abi::Aapcs64.va_list_type();
        assert_eq!((aapcs64.size(), aapcs64.align()), (core::mem::size_of::<Aapcs64Tag>(), 8));
        // B.4: a composite over 16 bytes goes as the address of the caller's copy, in x3.
        let moves = vsnprintf(Abi::Aapcs64).moves;
        assert_eq!(
            moves[3..],
            [Move::Copy { arg: 3, len: 32, copy: 0 }, Move::CopyAddress { copy: 0, to: Loc::Int(3) }]
        );
    }

    #[test]
    fn the_c_va_list_is_the_abi_s_representation() {
        for abi in ABIS {
            let named = Signature::variadic(2, vec![Type::Pointer, Type::F64], None).unwrap();
            let mut image = Image::new(abi, 16);
            let base = image.words.as_ptr() as usize;
            let (int, vec, stack) = (base + image.int, base + image.vec, base + image.stack);
            let mut c = image.start(abi, &named).into_c();
            assert_eq!(c.c_type(), abi.va_list_type());
            let at = c.arg();
            // SAFETY: `arg` points at the va_list value, of the ABI's layout (checked here).
            unsafe {
                match abi {
                    Abi::SysVX86_64 => {
                        let tag = *at.cast::<*const u32>();
                        // gp_offset: rdi taken; fp_offset: xmm0 taken; overflow; save area.
                        assert_eq!((*tag, *tag.add(1)), (8, 48 + 16));
                        assert_eq!(*tag.add(2).cast::<usize>(), stack);
                        assert_eq!(*tag.add(4).cast::<usize>(), int);
                    }
                    Abi::Aapcs64 => {
                        let words = at.cast::<usize>();
                        assert_eq!((*words, *words.add(1), *words.add(2)), (stack, int + 64, vec + 128));
                        // x1..x7 and q1..q7 left.
                        assert_eq!((*at.cast::<i32>().add(6), *at.cast::<i32>().add(7)), (-56, -112));
                    }
                    // a1 is the next variable argument (the double took fa0).
                    _ => assert_eq!(*at.cast::<usize>(), stack - 64 + 8),
                }
            }
        }
    }
}
