//! Call plans: a signature placed once and compiled into assembly programs, then called any
//! number of times without touching the heap and without interpreting anything in Rust.

use core::ffi::c_void;
use core::fmt;

use crate::abi::{Abi, Placement};
use crate::ctype::error::Error;
use crate::ctype::error::TypeDescription;
use crate::ctype::types::{Signature, Type};
use crate::ctype::wide::Complex;
use crate::engine::code::CodePath;
use crate::engine::layout::{HDR_ARGC, STATUS_NOT_NATIVE, STATUS_NULL_ARGUMENT, STATUS_OK};
use crate::engine::program::{self, Mode};
use crate::engine::typed::{
    aggregate_result, CArgs, CRet, TypedFn, AGGREGATE_RESULT_HEADER, AGGREGATE_RESULT_MAX_ARGS,
};
use crate::engine::{self, CheckedEntry, TypedEntry, VectorCopy};

/// A signature prepared for calling through the assembly core.
///
/// Make it once with [`CallPlan::new`]; every layout or limit problem is reported then, and
/// the placement is compiled into the programs the assembly runs (see `src/engine/program/`). Then:
///
/// - [`call`](CallPlan::call) takes argument pointers and a result buffer, checks them (count,
///   null pointers) and runs the checked program: allocation-free, nothing interpreted in Rust;
/// - [`bind`](CallPlan::bind) checks Rust types against the signature once and returns a
///   [`TypedFn`] whose calls check nothing;
/// - [`call_words`](CallPlan::call_words) runs the same typed program with argument words
///   given at run time, for callers that checked their inputs themselves.
///
/// ```
/// use core::ffi::c_void;
/// use nccl_trampoline::{arg, CallPlan, Signature, Type};
///
/// extern "C" fn add3(a: i32, b: i64, c: u8) -> i64 {
///     a as i64 + b + c as i64
/// }
///
/// let sig = Signature::new(vec![Type::I32, Type::I64, Type::U8], Some(Type::I64))?;
/// let plan = CallPlan::new(&sig)?;
/// let (a, b, c) = (1i32, 2i64, 3u8);
/// let mut out = 0i64;
/// # if nccl_trampoline::Abi::native().is_none() { return Ok(()); }
/// // SAFETY: `add3` has exactly the signature of the plan; the arguments and the result
/// // buffer match its types.
/// unsafe {
///     plan.call(add3 as *const c_void, &[arg(&a), arg(&b), arg(&c)], arg_mut(&mut out))?;
/// }
/// assert_eq!(out, 6);
/// # fn arg_mut<T>(v: &mut T) -> *mut c_void { v as *mut T as *mut c_void }
/// # Ok::<(), nccl_trampoline::Error>(())
/// ```
#[derive(Clone)]
pub struct CallPlan {
    argc: usize,
    needs_ret: bool,
    /// The checked entry and its program (a refusing stub where the plan cannot run).
    entry: CheckedEntry,
    program: Box<[u64]>,
    /// The typed entry and program, where the result comes back in a register (or is void).
    typed: Option<(usize, Box<[u64]>)>,
    ret: RetClass,
    abi: Abi,
    signature: Signature,
    copy: Option<VectorCopy>,
}

/// How `call_words` receives the result of the typed entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RetClass {
    Void,
    /// An integer or pointer of this many bytes, in rax / x0.
    Int(u8),
    F32,
    F64,
    /// `__int128` / `unsigned __int128`, in rax:rdx / x0:x1 (as Rust's `u128`).
    Int128,
    /// `_Complex float` / `_Complex double`, in xmm0 / xmm0:xmm1, s0:s1 / d0:d1 (as Rust's
    /// `#[repr(C)]` pair, [`Complex`](crate::Complex)).
    ComplexF32,
    ComplexF64,
    /// Anything else: through the checked program.
    Other,
}

impl RetClass {
    fn of(ret: Option<&Type>) -> RetClass {
        match ret {
            None => RetClass::Void,
            Some(Type::F32) => RetClass::F32,
            Some(Type::F64) => RetClass::F64,
            Some(Type::I128 | Type::U128) => RetClass::Int128,
            Some(Type::ComplexF32) => RetClass::ComplexF32,
            Some(Type::ComplexF64) => RetClass::ComplexF64,
            Some(t) if !t.is_word() => RetClass::Other,
            Some(t) => RetClass::Int(t.size() as u8),
        }
    }
}

/// The checked entry of a plan that cannot run here: the same precedence of errors as a real
/// one (null arguments first), then "not native". Nothing is called.
unsafe extern "C" fn refuse(
    argv: *const *const c_void,
    _ret: *mut c_void,
    _func: *const c_void,
    program: *const u64,
) -> u32 {
    // SAFETY: `program` is this plan's header (HDR_ARGC is in it) and argv holds argc pointers
    // (`call` checked the count).
    unsafe {
        let argc = *program.add((HDR_ARGC / 8) as usize) as usize;
        if (0..argc).any(|i| (*argv.add(i)).is_null()) {
            return STATUS_NULL_ARGUMENT as u32;
        }
    }
    STATUS_NOT_NATIVE as u32
}

impl CallPlan {
    /// Prepares `sig` for this target's ABI, with the widest vector copy this CPU has. Fails
    /// with [`Error::UnsupportedTarget`] where the crate has no trampoline, or with the error
    /// of the first layout or limit problem.
    pub fn new(sig: &Signature) -> Result<Self, Error> {
        let abi = Abi::native().ok_or(Error::UnsupportedTarget { target: engine::TARGET })?;
        Self::for_abi(abi, sig)
    }

    /// Prepares `sig` for a given ABI, on any host. Such a plan can be inspected
    /// ([`placement`](CallPlan::placement)) everywhere but called only where `abi` is native.
    pub fn for_abi(abi: Abi, sig: &Signature) -> Result<Self, Error> {
        let placement = abi.place(sig)?;
        let copy = if Abi::native() == Some(abi) { VectorCopy::best() } else { None };
        Ok(Self::compile(abi, sig.clone(), &placement, copy))
    }

    fn compile(abi: Abi, signature: Signature, placement: &Placement, copy: Option<VectorCopy>) -> Self {
        let argc = signature.args().len();
        let ret = RetClass::of(signature.ret());
        let mut plan = CallPlan {
            argc,
            needs_ret: signature.ret().is_some(),
            entry: refuse,
            program: program::header_only(argc),
            typed: None,
            ret,
            abi,
            signature,
            copy,
        };
        if let (Some(copy), Some(_)) = (copy, engine::table()) {
            let checked = program::build(&plan.signature, placement, Mode::Checked, copy);
            // SAFETY: a checked entry of the table (program::build chose it for Mode::Checked).
            plan.entry = unsafe { core::mem::transmute::<usize, CheckedEntry>(checked.entry) };
            plan.program = checked.program;
            if ret != RetClass::Other {
                let typed = program::build(&plan.signature, placement, Mode::Typed, copy);
                plan.typed = Some((typed.entry, typed.program));
            }
        }
        plan
    }

    /// The ABI this plan was made for.
    pub fn abi(&self) -> Abi {
        self.abi
    }

    /// The signature this plan was made from.
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// Where every argument and the result go, as computed when the plan was made.
    pub fn placement(&self) -> Placement {
        // Recomputed on demand: the plan keeps only what a call needs. The signature was placed
        // successfully once, so placing it again cannot fail.
        self.abi.place(&self.signature).expect("a planned signature places again")
    }

    /// Calls `func` with `args` and writes its result to `ret`.
    ///
    /// `args[i]` points to the value of argument `i`, laid out as the C type of the signature
    /// (for an aggregate, its `size()` bytes). `ret` points to a buffer of the return type's
    /// size and alignment, and may be null for `void`. Aggregates passed by value are copied;
    /// the callee never sees the caller's own memory, and the values behind `args` are not
    /// changed whatever the callee does with its copies.
    ///
    /// Errors: [`Error::ArgumentCount`] and [`Error::NullPointer`] for bad inputs,
    /// [`Error::UnsupportedTarget`] / [`Error::AbiMismatch`] where the plan cannot run.
    ///
    /// # Safety
    ///
    /// `func` must be a function with exactly the C signature of the plan (a variadic one when
    /// the signature is variadic), safe to call with these argument values. Every `args[i]`
    /// must be valid for reads of that argument's size, and `ret` (when the signature returns
    /// a value) valid for writes of the result's size and aligned for it. The callee's own
    /// contract (threads, lifetimes of pointers it keeps) is the caller's to uphold.
    #[inline]
    pub unsafe fn call(&self, func: *const c_void, args: &[*const c_void], ret: *mut c_void) -> Result<(), Error> {
        if args.len() != self.argc || func.is_null() || (ret.is_null() && self.needs_ret) {
            return Err(self.refusal(func, args, ret));
        }
        // SAFETY: the count matches the program's argc, func and (where needed) ret are not
        // null; the entry null-checks every argument pointer before anything else; the rest is
        // this function's contract. The entry was chosen for this program (compile).
        let status = unsafe { (self.entry)(args.as_ptr(), ret, func, self.program.as_ptr()) };
        if status != STATUS_OK as u32 {
            return Err(self.status_error(status));
        }
        Ok(())
    }

    /// The error for inputs the cheap checks of `call` refused, in the order: count, function,
    /// arguments, result.
    #[cold]
    #[inline(never)]
    fn refusal(&self, func: *const c_void, args: &[*const c_void], ret: *mut c_void) -> Error {
        if args.len() != self.argc {
            Error::ArgumentCount { expected: self.argc, got: args.len() }
        } else if func.is_null() {
            Error::NullPointer { what: "function" }
        } else if args.iter().any(|a| a.is_null()) {
            Error::NullPointer { what: "argument" }
        } else {
            debug_assert!(ret.is_null());
            Error::NullPointer { what: "result" }
        }
    }

    #[cold]
    #[inline(never)]
    fn status_error(&self, status: u32) -> Error {
        if i64::from(status) == STATUS_NULL_ARGUMENT {
            return Error::NullPointer { what: "argument" };
        }
        match Abi::native() {
            None => Error::UnsupportedTarget { target: engine::TARGET },
            Some(native) => Error::AbiMismatch { plan: self.abi.name(), native: native.name() },
        }
    }

    /// Calls `func` with one word per argument (see [`CArg::word`](crate::CArg::word): integers
    /// and pointers extended to 64 bits by their C type, floats' bits, the addresses of
    /// aggregates and of the types wider than a word)
    /// and writes its result to `ret`, without any check: the typed program, the one
    /// [`bind`](CallPlan::bind) uses, for callers whose signatures are known only at run time.
    ///
    /// Errors, decided by the plan alone (no argument is looked at): [`Error::ResultType`] for
    /// a signature returning an aggregate, a `long double` or a `_Complex long double` (typed
    /// programs return what a Rust type can receive), and
    /// [`Error::UnsupportedTarget`] / [`Error::AbiMismatch`] where the plan cannot run.
    ///
    /// # Safety
    ///
    /// As [`call`](CallPlan::call), with `words` in place of `args`: `words.len()` is the
    /// signature's argument count, every word encodes its argument as above (an aggregate's
    /// address valid for reads of its size), and `ret` is valid for writes of the result's size
    /// (any pointer for `void`).
    #[inline]
    pub unsafe fn call_words(&self, func: *const c_void, words: &[u64], ret: *mut c_void) -> Result<(), Error> {
        let Some((entry, program)) = &self.typed else {
            return Err(self.no_typed_program());
        };
        let (w, prog) = (words.as_ptr(), program.as_ptr());
        // SAFETY: `entry` is the typed entry built for this signature, called with the Rust
        // type of its result class (RetClass::of); the rest is this function's contract.
        unsafe {
            match self.ret {
                RetClass::Void => typed_entry::<()>(*entry)(w, func, prog),
                RetClass::Int(size) => {
                    let r = typed_entry::<u64>(*entry)(w, func, prog);
                    // Little-endian: the value's bytes are the low bytes of the register.
                    core::ptr::copy_nonoverlapping(
                        (&r as *const u64).cast::<u8>(),
                        ret.cast::<u8>(),
                        usize::from(size),
                    );
                }
                RetClass::F32 => ret.cast::<f32>().write_unaligned(typed_entry::<f32>(*entry)(w, func, prog)),
                RetClass::F64 => ret.cast::<f64>().write_unaligned(typed_entry::<f64>(*entry)(w, func, prog)),
                RetClass::Int128 => ret.cast::<u128>().write_unaligned(typed_entry::<u128>(*entry)(w, func, prog)),
                RetClass::ComplexF32 => {
                    ret.cast::<Complex<f32>>().write_unaligned(typed_entry::<Complex<f32>>(*entry)(w, func, prog))
                }
                RetClass::ComplexF64 => {
                    ret.cast::<Complex<f64>>().write_unaligned(typed_entry::<Complex<f64>>(*entry)(w, func, prog))
                }
                RetClass::Other => unreachable!("plans with aggregate or long double results have no typed program"),
            }
        }
        Ok(())
    }

    /// Why the plan has no typed program: an aggregate or `long double` result, or a plan that
    /// cannot run here.
    #[cold]
    #[inline(never)]
    fn no_typed_program(&self) -> Error {
        match self.signature.ret() {
            Some(t) if self.ret == RetClass::Other && engine::table().is_some() && Abi::native() == Some(self.abi) => {
                Error::ResultType { expected: t.description(), got: TypeDescription::TypedResult }
            }
            _ => self.status_error(STATUS_NOT_NATIVE as u32),
        }
    }

    /// Binds the plan to `func` and to the Rust argument types `A` (a tuple of [`CArg`](crate::CArg)
    /// types) and result type `R`: the count and every type are checked here, once, against
    /// the signature; calls through the returned [`TypedFn`] check nothing.
    ///
    /// Errors: [`Error::NullPointer`] for a null `func`, [`Error::ArgumentCount`],
    /// [`Error::ArgumentType`] and [`Error::ResultType`] where the types disagree with the
    /// signature (`long double` and `_Complex long double` results are not supported: use
    /// [`call`](CallPlan::call); an aggregate result comes back through the checked program),
    /// and
    /// [`Error::UnsupportedTarget`] / [`Error::AbiMismatch`] where the plan cannot run.
    ///
    /// # Safety
    ///
    /// `func` must be a function with exactly the C signature of the plan, and must stay
    /// loaded as long as the binding (or a clone of it) is used.
    pub unsafe fn bind<A: CArgs, R: CRet>(&self, func: *const c_void) -> Result<TypedFn<A, R>, Error> {
        if func.is_null() {
            return Err(Error::NullPointer { what: "function" });
        }
        let types = A::types();
        if types.len() != self.argc {
            return Err(Error::ArgumentCount { expected: self.argc, got: types.len() });
        }
        for (index, (want, got)) in self.signature.args().iter().zip(&types).enumerate() {
            if want != got {
                return Err(Error::ArgumentType { index, expected: want.description(), got: got.description() });
            }
        }
        let ret = R::c_type();
        if ret.as_ref() != self.signature.ret() {
            let describe = |t: Option<&Type>| t.map_or(TypeDescription::Void, Type::description);
            return Err(Error::ResultType { expected: describe(self.signature.ret()), got: describe(ret.as_ref()) });
        }
        if let Some(Type::Aggregate(_)) = self.signature.ret() {
            return self.bind_aggregate_result(func, &types);
        }
        let Some((entry, program)) = &self.typed else {
            return Err(self.no_typed_program());
        };
        // SAFETY: the typed program implements this signature (compile), whose types are
        // exactly A -> R (checked above); func's signature is this function's contract.
        Ok(unsafe { TypedFn::from_parts(*entry, func, program.clone()) })
    }

    /// `bind` for a signature returning an aggregate: a typed entry that runs the checked
    /// program ([`typed::aggregate_result`](crate::engine::typed)), which stores the result from the
    /// registers or memory the ABI returns it in (the same program [`call`](CallPlan::call)
    /// runs, proven against the C compiler by the conformance tests).
    ///
    /// # Safety
    ///
    /// As [`bind`](CallPlan::bind), whose checks have passed: `A -> R` is the signature.
    unsafe fn bind_aggregate_result<A: CArgs, R: CRet>(
        &self,
        func: *const c_void,
        types: &[Type],
    ) -> Result<TypedFn<A, R>, Error> {
        if engine::code_name(self.entry as usize).is_none() {
            return Err(self.status_error(STATUS_NOT_NATIVE as u32));
        }
        if types.len() > AGGREGATE_RESULT_MAX_ARGS {
            return Err(Error::ArgumentCount { expected: AGGREGATE_RESULT_MAX_ARGS, got: types.len() });
        }
        let mask = types.iter().enumerate().filter(|(_, t)| t.is_word()).fold(0u64, |m, (i, _)| m | 1 << i);
        let mut program = Vec::with_capacity(AGGREGATE_RESULT_HEADER + self.program.len());
        program.extend_from_slice(&[self.entry as usize as u64, types.len() as u64, mask]);
        program.extend_from_slice(&self.program);
        let entry = aggregate_result::<R> as TypedEntry<R> as usize;
        // SAFETY: `aggregate_result::<R>` is a typed entry returning R, and the program is its
        // header followed by this plan's checked program (for A -> R, checked by the caller);
        // func's signature is the caller's contract.
        Ok(unsafe { TypedFn::from_parts(entry, func, program.into_boxed_slice()) })
    }
}

/// A plan's programs as the assembly runs them, and the copy width they were built for: for
/// this crate's tests and for ports that drive the assembly by hand. Not public API (reached
/// through the doc-hidden `__private`): the program format is the assembly's private contract.
#[doc(hidden)]
pub trait PlanCode: CodePath {
    /// Prepares `sig` for this target with the given by-value copy width (tests and benchmarks
    /// compare them; [`CallPlan::new`] picks the widest available). Fails with
    /// [`Error::VectorCopyUnavailable`] where this CPU or target cannot run it.
    fn with_vector_copy(sig: &Signature, copy: VectorCopy) -> Result<Self, Error>
    where
        Self: Sized;

    /// The by-value copy width of this plan's programs (`None` where it cannot run here).
    fn vector_copy(&self) -> Option<VectorCopy>;

    /// As [`code_path`](CodePath::code_path), for [`CallPlan::call_words`] and typed bindings.
    fn typed_code_path(&self) -> Vec<&'static str>;

    /// The checked entry's address and its program: `entry(argv, ret, func, program.as_ptr())
    /// -> status` ([`CheckedEntry`]; `argv` holds argument pointers).
    fn checked_parts(&self) -> (usize, &[u64]);

    /// The typed entry's address and its program, where the plan has them (a native plan
    /// whose result is void or a scalar): `entry(words, func, program.as_ptr()) -> R`
    /// ([`TypedEntry`]; `words` holds argument words).
    fn typed_parts(&self) -> Option<(usize, &[u64])>;
}

impl CodePath for CallPlan {
    fn code_path(&self) -> Vec<&'static str> {
        if engine::code_name(self.entry as usize).is_none() {
            return Vec::new();
        }
        program::code_path(self.entry as usize, &self.program)
    }
}

impl PlanCode for CallPlan {
    fn with_vector_copy(sig: &Signature, copy: VectorCopy) -> Result<Self, Error> {
        let abi = Abi::native().ok_or(Error::UnsupportedTarget { target: engine::TARGET })?;
        if !copy.is_available() {
            return Err(Error::VectorCopyUnavailable { copy: copy.name() });
        }
        let placement = abi.place(sig)?;
        Ok(Self::compile(abi, sig.clone(), &placement, Some(copy)))
    }

    fn vector_copy(&self) -> Option<VectorCopy> {
        self.copy
    }

    fn typed_code_path(&self) -> Vec<&'static str> {
        match &self.typed {
            Some((entry, prog)) => program::code_path(*entry, prog),
            None => self.code_path(),
        }
    }

    fn checked_parts(&self) -> (usize, &[u64]) {
        (self.entry as usize, &self.program)
    }

    fn typed_parts(&self) -> Option<(usize, &[u64])> {
        self.typed.as_ref().map(|(entry, program)| (*entry, &program[..]))
    }
}

/// The typed entry at `address` returning `R`.
///
/// # Safety
///
/// `address` is a typed entry of the code table whose program returns a C value of `R`'s class.
#[inline(always)]
unsafe fn typed_entry<R>(address: usize) -> TypedEntry<R> {
    // SAFETY: the caller's contract; a code address is the size of a function pointer.
    unsafe { core::mem::transmute::<usize, TypedEntry<R>>(address) }
}

impl fmt::Debug for CallPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallPlan")
            .field("abi", &self.abi)
            .field("signature", &self.signature)
            .field("vector_copy", &self.copy)
            .field("code_path", &self.code_path())
            .finish()
    }
}

/// The address of a value, as an argument pointer for [`CallPlan::call`].
pub fn arg<T>(value: &T) -> *const c_void {
    (value as *const T).cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctype::types::Aggregate;
    use core::ptr;

    extern "C" fn add(a: i32, b: i32) -> i32 {
        a + b
    }

    fn plan() -> Option<CallPlan> {
        let sig = Signature::new(vec![Type::I32, Type::I32], Some(Type::I32)).unwrap();
        match CallPlan::new(&sig) {
            Ok(p) => Some(p),
            Err(Error::UnsupportedTarget { .. }) => None,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn bad_call_inputs_are_errors_not_undefined_behaviour() {
        let Some(plan) = plan() else { return };
        let (a, b, mut r) = (1i32, 2i32, 0i32);
        let f = add as *const c_void;
        let ret = (&mut r as *mut i32).cast();
        // SAFETY: every call below is refused before anything is called.
        unsafe {
            assert_eq!(plan.call(f, &[arg(&a)], ret), Err(Error::ArgumentCount { expected: 2, got: 1 }));
            assert_eq!(plan.call(ptr::null(), &[arg(&a), arg(&b)], ret), Err(Error::NullPointer { what: "function" }));
            assert_eq!(plan.call(f, &[arg(&a), ptr::null()], ret), Err(Error::NullPointer { what: "argument" }));
            assert_eq!(plan.call(f, &[ptr::null(), arg(&b)], ret), Err(Error::NullPointer { what: "argument" }));
            assert_eq!(plan.call(f, &[arg(&a), arg(&b)], ptr::null_mut()), Err(Error::NullPointer { what: "result" }));
        }
        // SAFETY: `add` has the planned signature.
        unsafe { plan.call(f, &[arg(&a), arg(&b)], ret) }.unwrap();
        assert_eq!(r, 3);
    }

    #[test]
    fn the_walk_null_checks_every_argument_before_calling() {
        // A float argument keeps the signature off the straight-line bodies: the checked walk.
        extern "C" fn never(_: i32, _: f64, _: i64) -> i32 {
            unreachable!("called with a null argument")
        }
        let sig = Signature::new(vec![Type::I32, Type::F64, Type::I64], Some(Type::I32)).unwrap();
        let Ok(plan) = CallPlan::new(&sig) else { return };
        assert_eq!(plan.code_path()[0], "walk_checked");
        let (a, b, c, mut r) = (1i32, 2.0f64, 3i64, 0i32);
        let ret = (&mut r as *mut i32).cast();
        for null in 0..3 {
            let mut args = [arg(&a), arg(&b), arg(&c)];
            args[null] = ptr::null();
            // SAFETY: refused before anything is called.
            let err = unsafe { plan.call(never as *const c_void, &args, ret) }.unwrap_err();
            assert_eq!(err, Error::NullPointer { what: "argument" });
        }
    }

    #[repr(C)]
    #[derive(Debug, PartialEq)]
    struct Big([i64; 4]);

    extern "C" fn no_arguments_big_result() -> Big {
        Big([1, -2, 3, -4])
    }

    #[test]
    fn no_arguments_and_a_result_through_memory() {
        let big = Type::Aggregate(Aggregate::builder().array(Type::I64, 4).build().unwrap());
        let Ok(plan) = CallPlan::new(&Signature::new(vec![], Some(big)).unwrap()) else { return };
        let mut out = Big([0; 4]);
        // SAFETY: the function has the planned signature; `out` is a Big.
        unsafe { plan.call(no_arguments_big_result as *const c_void, &[], (&mut out as *mut Big).cast()) }.unwrap();
        assert_eq!(out, Big([1, -2, 3, -4]));
    }

    #[test]
    fn plan_for_a_foreign_abi_cannot_be_called() {
        let sig = Signature::new(vec![Type::I32, Type::I32], Some(Type::I32)).unwrap();
        let foreign = match Abi::native() {
            Some(Abi::SysVX86_64) => Abi::Aapcs64,
            _ => Abi::SysVX86_64,
        };
        let plan = CallPlan::for_abi(foreign, &sig).unwrap();
        let (a, mut r) = (1i32, 0i32);
        // SAFETY: refused before anything is called.
        let err =
            unsafe { plan.call(add as *const c_void, &[arg(&a), arg(&a)], (&mut r as *mut i32).cast()) }.unwrap_err();
        assert!(matches!(err, Error::AbiMismatch { .. } | Error::UnsupportedTarget { .. }), "{err}");
        // SAFETY: as above.
        let err = unsafe { plan.call(add as *const c_void, &[arg(&a), ptr::null()], (&mut r as *mut i32).cast()) };
        assert_eq!(err, Err(Error::NullPointer { what: "argument" }), "null arguments come first");
        // SAFETY: as above.
        let bound = unsafe { plan.bind::<(i32, i32), i32>(add as *const c_void) };
        assert!(matches!(bound, Err(Error::AbiMismatch { .. } | Error::UnsupportedTarget { .. })));
        assert!(plan.code_path().is_empty());
    }

    #[test]
    fn limits_are_plan_time_errors() {
        let big = Type::Aggregate(Aggregate::builder().array(Type::I64, 512).build().unwrap());
        let sig = Signature::new(vec![big; 3], None).unwrap();
        for abi in [Abi::SysVX86_64, Abi::Aapcs64, Abi::Lp64d] {
            let err = CallPlan::for_abi(abi, &sig).unwrap_err();
            assert!(matches!(err, Error::StackTooLarge { .. } | Error::CopiesTooLarge { .. }), "{abi:?}: {err}");
        }
        let too_many = Signature::new(vec![Type::I32; crate::ctype::limits::MAX_ARGS + 1], None);
        assert!(matches!(too_many, Err(Error::TooManyArguments { .. })));
    }

    /// Thirteen arguments, the most a binding takes (GIN v13's `iputSignal`): past the
    /// straight-line bodies, through the walk; every argument where it belongs.
    #[test]
    fn a_thirteen_argument_binding_passes_every_argument() {
        #[allow(clippy::too_many_arguments)]
        extern "C" fn weigh(
            a: i64,
            b: i32,
            c: u64,
            d: i8,
            e: u16,
            f: i64,
            g: u32,
            h: i64,
            i: f64,
            j: i64,
            k: u8,
            l: i32,
            m: *const u8,
        ) -> i64 {
            let m = if m.is_null() { 0 } else { 13 };
            a + 2 * i64::from(b)
                + 3 * c as i64
                + 4 * i64::from(d)
                + 5 * i64::from(e)
                + 6 * f
                + 7 * i64::from(g)
                + 8 * h
                + (9.0 * i) as i64
                + 10 * j
                + 11 * i64::from(k)
                + 12 * i64::from(l)
                + m
        }
        if Abi::native().is_none() {
            return;
        }
        type A = (i64, i32, u64, i8, u16, i64, u32, i64, f64, i64, u8, i32, *const u8);
        let sig = crate::symbols::signature::<A, i64>().unwrap();
        let plan = CallPlan::new(&sig).unwrap();
        // SAFETY: `weigh` has this signature.
        let bound = unsafe { plan.bind::<A, i64>(weigh as *const c_void) }.unwrap();
        let one = 1u8;
        // SAFETY: plain values and a pointer to a live byte.
        let got = unsafe { bound.call((1, 1, 1, -1, 1, 1, 1, 1, 1.0, 1, 1, 1, &one)) };
        assert_eq!(got, 1 + 2 + 3 - 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11 + 12 + 13);
    }

    #[test]
    fn bind_checks_the_types_once() {
        let Some(plan) = plan() else { return };
        let f = add as *const c_void;
        // SAFETY: `add` has the planned signature.
        unsafe {
            assert_eq!(plan.bind::<(i32,), i32>(f).unwrap_err(), Error::ArgumentCount { expected: 2, got: 1 });
            assert_eq!(
                plan.bind::<(i32, u32), i32>(f).unwrap_err(),
                Error::ArgumentType {
                    index: 1,
                    expected: TypeDescription::Scalar("int32_t"),
                    got: TypeDescription::Scalar("uint32_t")
                }
            );
            assert_eq!(
                plan.bind::<(i32, i32), i64>(f).unwrap_err(),
                Error::ResultType {
                    expected: TypeDescription::Scalar("int32_t"),
                    got: TypeDescription::Scalar("int64_t")
                }
            );
            assert_eq!(
                plan.bind::<(i32, i32), ()>(f).unwrap_err(),
                Error::ResultType { expected: TypeDescription::Scalar("int32_t"), got: TypeDescription::Void }
            );
            assert_eq!(plan.bind::<(i32, i32), i32>(ptr::null()).unwrap_err(), Error::NullPointer { what: "function" });
            let bound = plan.bind::<(i32, i32), i32>(f).unwrap();
            assert_eq!(bound.call((40, 2)), 42);
            assert_eq!(bound.call((-40, 2)), -38);
            assert_eq!(bound.code_path(), ["words_2"]);
        }
        assert_eq!(plan.code_path(), ["line_ii_r4"]);
    }

    #[test]
    fn call_words_returns_every_scalar_class() {
        extern "C" fn half(x: f64, n: u8) -> f32 {
            (x / 2.0) as f32 + f32::from(n)
        }
        extern "C" fn store(p: *mut i16, v: i16) {
            // SAFETY: the test passes a valid pointer.
            unsafe { *p = v }
        }
        let Ok(p1) = CallPlan::new(&Signature::new(vec![Type::F64, Type::U8], Some(Type::F32)).unwrap()) else {
            return;
        };
        let p2 = CallPlan::new(&Signature::new(vec![Type::Pointer, Type::I16], None).unwrap()).unwrap();
        let mut out = 0f32;
        let mut slot = 0i16;
        let p = &mut slot as *mut i16;
        // SAFETY: both functions have the planned signatures; the words encode their arguments.
        unsafe {
            let words = [5.0f64.to_bits(), 1];
            p1.call_words(half as *const c_void, &words, (&mut out as *mut f32).cast()).unwrap();
            p2.call_words(store as *const c_void, &[p as u64, -7i64 as u64], ptr::null_mut()).unwrap();
        }
        assert_eq!((out, slot), (3.5, -7));
        // x86-64 has typed bodies for vector registers (ADR 33); elsewhere the typed walk.
        let vector_body = if cfg!(nccl_trampoline_asm = "x86_64_sysv") { "regs_1_1" } else { "walk_tail" };
        assert_eq!(p1.typed_code_path()[0], vector_body);
        assert_eq!(p2.typed_code_path(), ["words_2"]);
        let big = Type::Aggregate(Aggregate::builder().array(Type::I64, 4).build().unwrap());
        let p3 = CallPlan::new(&Signature::new(vec![], Some(big)).unwrap()).unwrap();
        // SAFETY: refused before anything is called.
        let refused = unsafe { p3.call_words(no_arguments_big_result as *const c_void, &[], ptr::null_mut()) };
        assert!(matches!(refused, Err(Error::ResultType { .. })), "{refused:?}");
    }
}
