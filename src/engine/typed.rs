//! Typed bindings: a [`CallPlan`](crate::CallPlan) bound once to a function and to Rust
//! argument and result types, checked against the plan's signature when it is made, then
//! called with no per-call checks at all.
//!
//! ```
//! use core::ffi::c_void;
//! use nccl_trampoline::{CallPlan, Signature, Type, TypedFn};
//!
//! extern "C" fn add3(a: i32, b: i64, c: i32) -> i64 {
//!     a as i64 + b + c as i64
//! }
//!
//! # if nccl_trampoline::Abi::native().is_none() { return Ok(()); }
//! let plan = CallPlan::new(&Signature::new(vec![Type::I32, Type::I64, Type::I32], Some(Type::I64))?)?;
//! // SAFETY: add3 has the plan's C signature and lives as long as the binding.
//! let add: TypedFn<(i32, i64, i32), i64> = unsafe { plan.bind(add3 as *const c_void)? };
//! // SAFETY: add3 accepts any values.
//! assert_eq!(unsafe { add.call((1, 2, 3)) }, 6);
//! # Ok::<(), nccl_trampoline::Error>(())
//! ```

use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::ctype::types::Type;
use crate::ctype::wide::{CLongDouble, Complex};
use crate::engine::code::CodePath;
use crate::engine::{self, TypedEntry};

/// A Rust type that has the layout of one C argument type and is passed as that type.
///
/// Implemented for the integers (`isize`/`usize` as `int64_t`/`uint64_t`, `i128`/`u128` as
/// `__int128`), `f32`, `f64`, [`CLongDouble`](crate::CLongDouble), [`Complex`](crate::Complex) of
/// `f32`, `f64` and `CLongDouble`, raw pointers and [`NonNull`]. Implement it for a `#[repr(C)]` struct passed by value (such as
/// `ncclUniqueId`: the default [`word`](CArg::word) is right for it) or a
/// `#[repr(transparent)]` newtype over a scalar (forward `word` to the scalar's).
///
/// # Safety
///
/// `c_type()` must describe `Self` exactly: same size, alignment, field offsets and field
/// types; and `word()` must return what its documentation says for that C type.
pub unsafe trait CArg: Sized {
    /// True for a type passed as a C aggregate (its word is its address): set it in the impl
    /// for a `#[repr(C)]` struct, so that [`ValueAt`] accepts it.
    const AGGREGATE: bool = false;

    /// The C type of values of `Self`.
    fn c_type() -> Type;

    /// The value as the one 64-bit word a typed call passes to the core for it: an integer or
    /// pointer extended to 64 bits by the signedness of its C type (ADR 2; on riscv64 a
    /// `uint32_t` is sign-extended, as LP64D passes it), a `float`'s or `double`'s bits in the
    /// low bytes (zero above), or, for an aggregate and every type wider than a word
    /// (`__int128`, `long double`, the complex types: see [`Type::is_word`](crate::Type::is_word)),
    /// its address (the default), which must stay valid during the call.
    #[inline(always)]
    fn word(&self) -> u64 {
        (self as *const Self) as usize as u64
    }
}

/// An aggregate passed by value from where it already is: the core copies it once, into the
/// outgoing stack area or the private copy the ABI calls for, straight from that address, where
/// passing `T` itself in the argument tuple would copy it into the tuple first. For types whose
/// [`CArg::AGGREGATE`] is true (a compile-time error otherwise).
///
/// The value must stay alive until the call returns (it is read during the call, and never
/// written: the callee gets its own copy).
///
/// A scalar is refused when the program is built:
///
/// ```compile_fail
/// use nccl_trampoline::{CArg, ValueAt};
/// let n = 5i32;
/// let _ = ValueAt::new(&n).word(); // i32 is not an aggregate
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ValueAt<T>(*const T);

impl<T: CArg> ValueAt<T> {
    /// The aggregate `value`, to be passed by value.
    #[inline(always)]
    pub fn new(value: &T) -> Self {
        ValueAt(value)
    }
}

// SAFETY: the C type is T's; the word of an aggregate is its address, which this holds (T is an
// aggregate: checked at compile time in `word`).
unsafe impl<T: CArg> CArg for ValueAt<T> {
    const AGGREGATE: bool = true;

    fn c_type() -> Type {
        T::c_type()
    }

    #[inline(always)]
    fn word(&self) -> u64 {
        const { assert!(T::AGGREGATE, "ValueAt<T> needs an aggregate T (CArg::AGGREGATE)") };
        self.0 as usize as u64
    }
}

/// A Rust type that has the layout of a C return type: `()` for `void`, the word scalars of
/// [`CArg`], `i128` / `u128`, [`Complex`](crate::Complex) of `f32` and `f64`, and `#[repr(C)]`
/// structs returned by value (such as NCCL's 12-byte `ncclTeam`: implement this trait for them
/// with an [`Aggregate`](crate::Aggregate) type). Scalars come back through the typed program,
/// straight from the result registers; an aggregate result comes back through the plan's checked
/// program ([`CallPlan::call`](crate::CallPlan::call)), which stores it from the registers (or
/// the memory) the ABI returns it in. `long double` and `_Complex long double` results are not
/// supported by typed bindings.
///
/// # Safety
///
/// `c_type()` must describe `Self` exactly: for a scalar, `Self` must be returned by an
/// `extern "C"` function in the registers the C type is returned in; for an aggregate, `Self`
/// must be a `#[repr(C)]` type of the aggregate's size, alignment and field layout, valid for
/// every bit pattern the C function may return.
pub unsafe trait CRet {
    /// The C return type (`None` for `void`).
    fn c_type() -> Option<Type>;
}

/// A `uint32_t`'s word: zero-extended (SysV, AAPCS64, ADR 2), except on riscv64, where LP64D
/// passes it sign-extended from bit 31 and compiled callees rely on it (RISC-V psABI, "Integer
/// Calling Convention").
#[inline(always)]
fn u32_word(v: u32) -> u64 {
    if cfg!(target_arch = "riscv64") {
        i64::from(v as i32) as u64
    } else {
        u64::from(v)
    }
}

macro_rules! scalars {
    ($($rust:ty => $c:expr, $word:expr);* $(;)?) => {
        $(
            // SAFETY: the C type has this Rust type's size, alignment and class (LP64); the word
            // extends it by its signedness (integers) or holds its bits (floats).
            unsafe impl CArg for $rust {
                fn c_type() -> Type {
                    $c
                }
                #[inline(always)]
                fn word(&self) -> u64 {
                    ($word)(*self)
                }
            }
            // SAFETY: as above; scalars return in rax/xmm0 or x0/v0 alike in C and Rust.
            unsafe impl CRet for $rust {
                fn c_type() -> Option<Type> {
                    Some($c)
                }
            }
        )*
    };
}

scalars! {
    i8 => Type::I8, |v: i8| i64::from(v) as u64;
    u8 => Type::U8, u64::from;
    i16 => Type::I16, |v: i16| i64::from(v) as u64;
    u16 => Type::U16, u64::from;
    i32 => Type::I32, |v: i32| i64::from(v) as u64;
    u32 => Type::U32, u32_word;
    i64 => Type::I64, |v: i64| v as u64;
    u64 => Type::U64, |v: u64| v;
    f32 => Type::F32, |v: f32| u64::from(v.to_bits());
    f64 => Type::F64, f64::to_bits;
}

#[cfg(target_pointer_width = "64")]
scalars! {
    isize => Type::I64, |v: isize| v as u64;
    usize => Type::U64, |v: usize| v as u64;
}

// SAFETY: a thin raw pointer is a C data pointer; its word is its address.
unsafe impl<T> CArg for *const T {
    fn c_type() -> Type {
        Type::Pointer
    }
    #[inline(always)]
    fn word(&self) -> u64 {
        *self as usize as u64
    }
}
// SAFETY: as above.
unsafe impl<T> CArg for *mut T {
    fn c_type() -> Type {
        Type::Pointer
    }
    #[inline(always)]
    fn word(&self) -> u64 {
        *self as usize as u64
    }
}
// SAFETY: NonNull<T> is a #[repr(transparent)] non-null `*mut T`.
unsafe impl<T> CArg for NonNull<T> {
    fn c_type() -> Type {
        Type::Pointer
    }
    #[inline(always)]
    fn word(&self) -> u64 {
        self.as_ptr() as usize as u64
    }
}
// SAFETY: as for CArg.
unsafe impl<T> CRet for *const T {
    fn c_type() -> Option<Type> {
        Some(Type::Pointer)
    }
}
// SAFETY: as for CArg.
unsafe impl<T> CRet for *mut T {
    fn c_type() -> Option<Type> {
        Some(Type::Pointer)
    }
}
// SAFETY: `()` is what a Rust `extern "C"` function returning nothing returns: C's `void`.
unsafe impl CRet for () {
    fn c_type() -> Option<Type> {
        None
    }
}

// The C values Rust has no type for (`crate::ctype::wide`), and `__int128`.

// SAFETY: 16 bytes, 16-aligned, the layout of C's long double on both ABIs; its word is its
// address (the default), which the program reads through.
unsafe impl CArg for CLongDouble {
    fn c_type() -> Type {
        Type::LongDouble
    }
}

// SAFETY: two T in order, T's alignment: C's _Complex T; the word is the address (default).
unsafe impl CArg for Complex<f32> {
    fn c_type() -> Type {
        Type::ComplexF32
    }
}
// SAFETY: as above.
unsafe impl CArg for Complex<f64> {
    fn c_type() -> Type {
        Type::ComplexF64
    }
}
// SAFETY: as above (CLongDouble is 16 bytes, 16-aligned).
unsafe impl CArg for Complex<CLongDouble> {
    fn c_type() -> Type {
        Type::ComplexLongDouble
    }
}

// SAFETY: a #[repr(C)] struct of two f32 / two f64 is returned by Rust's extern "C" exactly as
// C returns _Complex float / _Complex double: SysV classifies both as structs of two floats
// (xmm0 low 8 bytes; xmm0, xmm1), AAPCS64 as HFAs of two (s0, s1; d0, d1).
unsafe impl CRet for Complex<f32> {
    fn c_type() -> Option<Type> {
        Some(Type::ComplexF32)
    }
}
// SAFETY: as above.
unsafe impl CRet for Complex<f64> {
    fn c_type() -> Option<Type> {
        Some(Type::ComplexF64)
    }
}

// SAFETY: i128 / u128 are 16 bytes, 16-aligned (Rust >= 1.77, as C's __int128 on LP64 Linux);
// the word is the address (default), read through by the program.
unsafe impl CArg for i128 {
    fn c_type() -> Type {
        Type::I128
    }
}
// SAFETY: as above.
unsafe impl CArg for u128 {
    fn c_type() -> Type {
        Type::U128
    }
}
// SAFETY: Rust's extern "C" returns i128 / u128 in rax:rdx (SysV) and x0:x1 (AAPCS64), where C
// returns __int128.
unsafe impl CRet for i128 {
    fn c_type() -> Option<Type> {
        Some(Type::I128)
    }
}
// SAFETY: as above.
unsafe impl CRet for u128 {
    fn c_type() -> Option<Type> {
        Some(Type::U128)
    }
}

/// The argument list of a typed binding: a tuple of [`CArg`] types, `()` for none, up to 13
/// (NCCL's GIN v13 `iputSignal` has 13; beyond 12 a call takes the walk, not a straight-line
/// body).
///
/// # Safety
///
/// `words` must return, in order, each element's [`CArg::word`], and `types` the elements' C
/// types in the same order.
pub unsafe trait CArgs {
    /// `[u64; N]`.
    type Words: AsRef<[u64]>;
    /// The C types, in order.
    fn types() -> Vec<Type>;
    /// The elements' words, in order (aggregates' words point into `self`).
    fn words(&self) -> Self::Words;
}

macro_rules! tuples {
    ($(($n:literal; $($t:ident $i:tt),*)),* $(,)?) => {
        $(
            // SAFETY: one word per element, in order, each that element's CArg::word.
            unsafe impl<$($t: CArg),*> CArgs for ($($t,)*) {
                type Words = [u64; $n];
                fn types() -> Vec<Type> {
                    vec![$($t::c_type()),*]
                }
                #[inline(always)]
                fn words(&self) -> Self::Words {
                    [$(self.$i.word()),*]
                }
            }
        )*
    };
}

// SAFETY: no elements, no words.
unsafe impl CArgs for () {
    type Words = [u64; 0];
    fn types() -> Vec<Type> {
        Vec::new()
    }
    #[inline(always)]
    fn words(&self) -> Self::Words {
        []
    }
}

tuples! {
    (1; A0 0),
    (2; A0 0, A1 1),
    (3; A0 0, A1 1, A2 2),
    (4; A0 0, A1 1, A2 2, A3 3),
    (5; A0 0, A1 1, A2 2, A3 3, A4 4),
    (6; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5),
    (7; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6),
    (8; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7),
    (9; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8),
    (10; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9),
    (11; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10),
    (12; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11),
    (13; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12),
}

/// Most arguments of a typed call ([`TypedFn`]) whose result is an aggregate.
pub(crate) const AGGREGATE_RESULT_MAX_ARGS: usize = 12;

/// Header words of an aggregate-result program, before the checked program: the checked
/// entry's address, the argument count, and the mask of word arguments (bit `i` set: argument
/// `i`'s word is its value; clear: its word is its address).
pub(crate) const AGGREGATE_RESULT_HEADER: usize = 3;

/// The typed entry of bindings whose result is an aggregate: turns the argument words into the
/// argument pointers the checked entry reads and runs the checked program, which stores the
/// result (from its registers, or through the hidden result address) into `R`'s buffer.
///
/// `program` is `[checked entry, argc, word mask, checked program...]`
/// ([`AGGREGATE_RESULT_HEADER`]).
///
/// # Safety
///
/// `program` was built by `CallPlan::bind` for a signature whose result is `R`'s aggregate and
/// whose arguments are `argc` (at most [`AGGREGATE_RESULT_MAX_ARGS`]); `words` holds `argc` words
/// as [`CArg::word`] makes them; `func` has the plan's signature and its contract holds.
pub(crate) unsafe extern "C" fn aggregate_result<R>(words: *const u64, func: *const c_void, program: *const u64) -> R {
    // SAFETY: the caller's contract: the header words are there, the first is a checked entry.
    let (entry, argc, mask) = unsafe {
        (
            core::mem::transmute::<usize, engine::CheckedEntry>(*program as usize),
            *program.add(1) as usize,
            *program.add(2),
        )
    };
    let mut argv = [core::ptr::null::<c_void>(); AGGREGATE_RESULT_MAX_ARGS];
    for (i, slot) in argv.iter_mut().enumerate().take(argc) {
        // SAFETY: `words` holds `argc` words (the caller's contract). A word argument's value is
        // the low bytes of its word on these little-endian targets, so the word's address is
        // the value's; any other argument's word is its address (CArg::word).
        *slot = unsafe {
            if mask >> i & 1 == 1 {
                words.add(i).cast::<c_void>()
            } else {
                *words.add(i) as usize as *const c_void
            }
        };
    }
    let mut out = core::mem::MaybeUninit::<R>::uninit();
    // SAFETY: the checked program of this signature, with one non-null pointer per argument
    // and a buffer of the result's size and alignment; it writes the whole result (an aggregate
    // of R's layout: CRet's contract) before it returns STATUS_OK.
    let status = unsafe { entry(argv.as_ptr(), out.as_mut_ptr().cast(), func, program.add(AGGREGATE_RESULT_HEADER)) };
    debug_assert_eq!(i64::from(status), crate::engine::layout::STATUS_OK);
    // SAFETY: written by the callee's return (above); any bit pattern is valid (CRet's contract).
    unsafe { out.assume_init() }
}

/// A C function bound to Rust argument types `A` (a tuple) and result type `R`, made by
/// [`CallPlan::bind`](crate::CallPlan::bind). Arity and every type were checked against the
/// plan's signature then; a call checks nothing. It passes one word per argument
/// ([`CArg::word`]) to the plan's typed entry: a straight-line word body when every argument is
/// an integer or pointer (up to 12: registers, then stack slots), else the walk, without a
/// frame when nothing goes on the stack.
///
/// `TypedFn` is `Send` and `Sync`: it holds a code address, the address of the function and
/// an immutable program. Whether the function itself may be called from several threads is
/// the function's contract.
pub struct TypedFn<A, R> {
    entry: TypedEntry<R>,
    func: *const c_void,
    program: Box<[u64]>,
    _args: PhantomData<fn(A) -> R>,
}

// SAFETY: see the type's documentation: nothing in it is mutated after construction.
unsafe impl<A, R> Send for TypedFn<A, R> {}
// SAFETY: as above.
unsafe impl<A, R> Sync for TypedFn<A, R> {}

impl<A: CArgs, R: CRet> TypedFn<A, R> {
    /// Assembled by `CallPlan::bind` after its checks.
    ///
    /// # Safety
    ///
    /// `entry` and `program` implement the signature `A -> R` on this target; `func` is a
    /// function of that signature.
    pub(crate) unsafe fn from_parts(entry: usize, func: *const c_void, program: Box<[u64]>) -> Self {
        // SAFETY: `entry` is the address of a typed entry of the table (a code address, the
        // size of a function pointer); its contract is TypedEntry's for this R (caller).
        let entry = unsafe { core::mem::transmute::<usize, TypedEntry<R>>(entry) };
        TypedFn { entry, func, program, _args: PhantomData }
    }

    /// Calls the function with `args` and returns its result.
    ///
    /// # Safety
    ///
    /// The function's own contract for these argument values (what its pointers must point
    /// to, which thread may call it, what it keeps) must hold, and the function must still be
    /// loaded. The signature itself was checked when the binding was made.
    #[inline(always)]
    pub unsafe fn call(&self, args: A) -> R {
        let words = args.words();
        // SAFETY: the entry and program implement A -> R (from_parts); the words are the
        // arguments' (aggregates' point into `args`, alive until the call returns); the
        // function's contract is the caller's.
        unsafe { (self.entry)(words.as_ref().as_ptr(), self.func, self.program.as_ptr()) }
    }

    /// The bound function's address.
    pub fn func(&self) -> *const c_void {
        self.func
    }
}

impl<A, R> CodePath for TypedFn<A, R> {
    fn code_path(&self) -> Vec<&'static str> {
        // Every typed entry is a piece of the assembly's table except `aggregate_result`.
        if engine::code_name(self.entry as usize).is_none() {
            let mut path = vec!["aggregate_result"];
            path.extend(crate::engine::program::code_path(
                self.program[0] as usize,
                &self.program[AGGREGATE_RESULT_HEADER..],
            ));
            return path;
        }
        crate::engine::program::code_path(self.entry as usize, &self.program)
    }
}

impl<A, R> Clone for TypedFn<A, R> {
    fn clone(&self) -> Self {
        TypedFn { entry: self.entry, func: self.func, program: self.program.clone(), _args: PhantomData }
    }
}

impl<A, R> fmt::Debug for TypedFn<A, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedFn")
            .field("func", &self.func)
            .field("entry", &engine::code_name(self.entry as usize))
            .finish_non_exhaustive()
    }
}
