//! The typed form of callbacks: a Rust closure of C types, `Fn(A0, A1, ..) -> R`, bound once to a
//! pool entry (docs/adr/0025-callbacks.md, "The typed form"). The signature comes from the
//! types, the plan is made once, and each call runs a dispatch monomorphised for the closure's
//! type: every argument is read straight from the place the plan found for it in the record (one
//! load for a value in one register or one stack slot), the closure is called, and its result is
//! written into the result registers (or the caller's memory). No per-call check: the types were
//! matched to the signature when the callback was made, because the signature was made from them.
//!
//! ```
//! use nccl_trampoline::TypedCallback;
//!
//! # if nccl_trampoline::Callback::POOL_SIZE == 0 { return Ok(()); }
//! let offset = 10;
//! let add = TypedCallback::new(move |a: i32, b: f64| -> f64 { f64::from(a + offset) * b })?;
//! let f: unsafe extern "C" fn(i32, f64) -> f64 = add.as_fn();
//! // SAFETY: `add` lives; C would call `f` the same way.
//! assert_eq!(unsafe { f(2, 0.5) }, 6.0);
//! # Ok::<(), nccl_trampoline::Error>(())
//! ```
//!
//! Types without a C meaning, or that not every bit pattern makes valid, are refused when the
//! program is built:
//!
//! ```compile_fail
//! // `bool` is not a C value a callback may receive (C may pass any byte).
//! let _ = nccl_trampoline::TypedCallback::new(|b: bool| -> i32 { b as i32 });
//! ```
//!
//! ```compile_fail
//! // `NonNull` cannot hold the null pointer C may pass.
//! let _ = nccl_trampoline::TypedCallback::new(|p: core::ptr::NonNull<u8>| -> i32 { 0 });
//! ```
//!
//! ```compile_fail
//! // A `String` is no C result.
//! let _ = nccl_trampoline::TypedCallback::new(|n: i32| -> String { n.to_string() });
//! ```
//!
//! ```compile_fail
//! // More arguments than the typed call path's 12.
//! let _ = nccl_trampoline::TypedCallback::new(
//!     |a: i32, b: i32, c: i32, d: i32, e: i32, f: i32, g: i32, h: i32, i: i32, j: i32, k: i32, l: i32, m: i32| -> i32 { a },
//! );
//! ```
//!
//! ```compile_fail
//! // A closure borrowing a local: C may call the pointer from any thread at any time while the
//! // callback lives, so the handler must be `'static` (and `Send + Sync`).
//! let scale = 3;
//! let r = &scale;
//! let _ = nccl_trampoline::TypedCallback::new(|a: i32| -> i32 { a * *r });
//! ```
//!
//! The same closures with C types compile:
//!
//! ```
//! let scale = 3;
//! let _ = nccl_trampoline::TypedCallback::new(move |a: i32| -> i32 { a * scale });
//! let _ = nccl_trampoline::TypedCallback::new(
//!     |a: i32, b: i32, c: i32, d: i32, e: i32, f: i32, g: i32, h: i32, i: i32, j: i32, k: i32, l: i32| -> i32 { a },
//! );
//! let _ = nccl_trampoline::TypedCallback::new(|p: *const u8| -> *const u8 { p });
//! ```

use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use core::mem::{align_of, size_of};

use super::frame::Record;
use super::place::{places_are_whole, ArgPlace, ResultPlace};
use super::plan::CallbackPlan;
use super::value::{CallbackReturn, CallbackValue};
use super::{Callback, State};
use crate::ctype::error::{Error, Position};
use crate::ctype::types::{Signature, Type};

mod sealed {
    use super::{ArgPlace, Record};

    /// The arguments of one call, read in order; `SIMPLE`: every place is
    /// [`ArgPlace::Whole`] (checked when the callback was made), so no piece is ever copied.
    pub struct Args<'a, const SIMPLE: bool> {
        pub(super) record: &'a Record,
        pub(super) places: &'a [ArgPlace],
        pub(super) next: usize,
    }

    /// Reads the arguments and calls the handler.
    pub trait Invoke<A, R> {
        /// # Safety
        ///
        /// `args` has one place per argument of `A`, made for `A`'s types, and its record is the
        /// live one of a call with that signature.
        unsafe fn invoke<const SIMPLE: bool>(&self, args: Args<'_, SIMPLE>) -> R;

        /// The direct path's target: the address of an `unsafe extern "C" fn(A0, A1, ..) -> R`
        /// that runs a handler of type `Self` conjured from nothing (`TypedCallback::direct`).
        ///
        /// # Safety
        ///
        /// The function behind the address may be called only while a value of `Self` exists
        /// or was forgotten, `Self` is zero-sized and has no drop glue.
        unsafe fn direct_target() -> *const core::ffi::c_void
        where
            Self: Sized;
    }

    pub trait Tuple {}
}
use sealed::{Args, Invoke};

/// The argument types of a typed callback: a tuple of [`CallbackValue`]s, `()` for none, up to
/// 12 (the typed call path's arity). Sealed.
pub trait CallbackArgTypes: sealed::Tuple + 'static {
    /// The C function pointer type of a callback taking these arguments and returning `R`:
    /// `unsafe extern "C" fn(A0, A1, ..) -> R`.
    type CFn<R: CallbackReturn>: Copy;

    /// The C types, in order.
    fn types() -> Vec<Type>;

    /// `(size_of, align_of)` of each type, in order.
    fn layouts() -> Vec<(usize, usize)>;

    /// `code` as the C function pointer type.
    ///
    /// # Safety
    ///
    /// `code` is the address of a function with this signature.
    unsafe fn c_fn<R: CallbackReturn>(code: *const c_void) -> Self::CFn<R>;
}

/// A handler a typed callback runs: any `Fn(A0, A1, ..) -> R + Send + Sync + 'static` of
/// [`CallbackValue`] arguments (up to 12) and a [`CallbackReturn`] result. Implemented for every
/// such closure and function; the closure's parameter types must be written out (or inferred from
/// a function item), since they make the C signature.
pub trait CallbackFn<A, R>: Invoke<A, R> + Send + Sync + 'static {}

impl<const SIMPLE: bool> Args<'_, SIMPLE> {
    /// The next argument, as `T`.
    ///
    /// # Safety
    ///
    /// The place at `next` exists and was made for `T`'s C type; the record is live.
    #[inline(always)]
    unsafe fn next<T: CallbackValue>(&mut self) -> T {
        // SAFETY: the caller's contract: one place per argument.
        let place = unsafe { self.places.get_unchecked(self.next) };
        self.next += 1;
        // SAFETY: the caller's contract (with SIMPLE, the place is whole).
        unsafe {
            if SIMPLE {
                place.read_whole::<T>(self.record)
            } else {
                place.read::<T>(self.record)
            }
        }
    }
}

macro_rules! arities {
    ($(($($a:ident),*)),* $(,)?) => {
        $(
            impl<$($a: CallbackValue),*> sealed::Tuple for ($($a,)*) {}

            impl<$($a: CallbackValue),*> CallbackArgTypes for ($($a,)*) {
                type CFn<R: CallbackReturn> = unsafe extern "C" fn($($a),*) -> R;

                fn types() -> Vec<Type> {
                    vec![$($a::c_type()),*]
                }

                fn layouts() -> Vec<(usize, usize)> {
                    vec![$((size_of::<$a>(), align_of::<$a>())),*]
                }

                unsafe fn c_fn<R: CallbackReturn>(code: *const c_void) -> Self::CFn<R> {
                    // SAFETY: a code address is the size of a function pointer; its signature
                    // is the caller's contract.
                    unsafe { core::mem::transmute::<*const c_void, Self::CFn<R>>(code) }
                }
            }

            impl<F, R, $($a),*> Invoke<($($a,)*), R> for F
            where
                F: Fn($($a),*) -> R,
                R: CallbackReturn,
                $($a: CallbackValue),*
            {
                #[inline(always)]
                #[allow(unused_mut, unused_variables, non_snake_case)]
                unsafe fn invoke<const SIMPLE: bool>(&self, mut args: Args<'_, SIMPLE>) -> R {
                    // SAFETY: the caller's contract: a place per argument, in order (the
                    // evaluation order of the lets below is the arguments').
                    $(let $a = unsafe { args.next::<$a>() };)*
                    self($($a),*)
                }

                unsafe fn direct_target() -> *const c_void {
                    /// The direct path of a handler `F`: C's call lands here, its registers and
                    /// stack as C left them, through cb_common's tail jump. Rust's `extern "C"`
                    /// places every argument and the result as C does (TypedCallback::direct
                    /// refused the types where it does not).
                    ///
                    /// # Safety
                    ///
                    /// `F` is zero-sized, has no drop glue, and a value of it was forgotten
                    /// (`direct_target`'s contract).
                    #[allow(non_snake_case, improper_ctypes_definitions)]
                    unsafe extern "C" fn direct<F, R, $($a),*>($($a: $a),*) -> R
                    where
                        F: Fn($($a),*) -> R,
                        R: CallbackReturn,
                        $($a: CallbackValue),*
                    {
                        // SAFETY: F is zero-sized, so any aligned non-null address holds one, and
                        // a value of F exists for good (forgotten): this shared reference
                        // conjures nothing that was not made (the function's contract).
                        let handler: &F = unsafe { core::ptr::NonNull::<F>::dangling().as_ref() };
                        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler($($a),*))) {
                            Ok(value) => value,
                            Err(payload) => super::entry::fatal(format_args!(
                                "the handler of a direct callback panicked ({}); a panic must not unwind into the C caller",
                                super::entry::panic_message(&*payload)
                            )),
                        }
                    }
                    let f: unsafe extern "C" fn($($a),*) -> R = direct::<F, R, $($a),*>;
                    f as *const c_void
                }
            }

            impl<F, R, $($a),*> CallbackFn<($($a,)*), R> for F
            where
                F: Fn($($a),*) -> R + Send + Sync + 'static,
                R: CallbackReturn,
                $($a: CallbackValue),*
            {
            }
        )*
    };
}

arities! {
    (),
    (A0),
    (A0, A1),
    (A0, A1, A2),
    (A0, A1, A2, A3),
    (A0, A1, A2, A3, A4),
    (A0, A1, A2, A3, A4, A5),
    (A0, A1, A2, A3, A4, A5, A6),
    (A0, A1, A2, A3, A4, A5, A6, A7),
    (A0, A1, A2, A3, A4, A5, A6, A7, A8),
    (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9),
    (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10),
    (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11),
}

/// What the slot's state holds for a typed callback: the places and the closure (`H = F`), or
/// for a direct callback a stand-in for the forgotten one (`H = Forgotten<F>`).
struct Typed<H> {
    places: Box<[ArgPlace]>,
    result: ResultPlace,
    handler: H,
}

/// Gives the handler `F` a typed callback runs.
trait Holds<F> {
    fn get(&self) -> &F;
}

impl<F> Holds<F> for F {
    #[inline(always)]
    fn get(&self) -> &F {
        self
    }
}

/// Stands for a handler `F` that was forgotten: zero-sized, no drop glue, alive for good.
struct Forgotten<F>(PhantomData<fn() -> F>);

impl<F> Forgotten<F> {
    /// # Safety
    ///
    /// `F` is zero-sized, has no drop glue, and a value of it was forgotten.
    unsafe fn new() -> Self {
        Forgotten(PhantomData)
    }
}

impl<F> Holds<F> for Forgotten<F> {
    #[inline(always)]
    fn get(&self) -> &F {
        // SAFETY: F is zero-sized, so any aligned non-null address holds one, and a value of F
        // lives for good (forgotten; `Forgotten::new`'s contract): the reference conjures
        // nothing that was not made.
        unsafe { core::ptr::NonNull::<F>::dangling().as_ref() }
    }
}

/// A typed callback's `invoke`: reads the arguments, runs the closure, places its result.
///
/// # Safety
///
/// `state.handler` is a `Typed<H>` made for `A` and `R`; the record is the live one of a call
/// with the state's signature.
///
/// `SIMPLE`: every argument is whole at one place and the result is a word or `void` (checked
/// when the callback was made): the instance for the common signatures, with no copy of pieces.
unsafe fn invoke<H: Holds<F> + 'static, F: CallbackFn<A, R>, A, R: CallbackReturn, const SIMPLE: bool>(
    state: &State,
    record: &mut Record,
) {
    // SAFETY: the function's contract.
    let typed = unsafe { state.handler::<Typed<H>>() };
    let args = Args::<SIMPLE> { record: &*record, places: &typed.places, next: 0 };
    // SAFETY: one place per argument of A, made for A's types (TypedCallback::new); whole ones
    // when SIMPLE.
    let value = unsafe { typed.handler.get().invoke(args) };
    // SAFETY: the result place was made for R; a word or void one when SIMPLE.
    unsafe {
        if SIMPLE {
            typed.result.write_simple(value, record)
        } else {
            typed.result.write(value, record)
        }
    }
}

/// A C function pointer whose calls run a Rust closure of C types, valid while this object
/// lives: the typed form of [`Callback`].
///
/// `A` is the tuple of argument types and `R` the result type (`()` for `void`): the C signature
/// is made from them, planned once, and a call runs a dispatch monomorphised for the closure (no
/// per-call check). [`as_fn`](TypedCallback::as_fn) gives the typed C function pointer,
/// [`as_ptr`](TypedCallback::as_ptr) its address. The pool, the drop (which waits for calls
/// running on other threads, except for a [`direct`](TypedCallback::direct) one) and the panic
/// policy (abort with a message) are [`Callback`]'s.
pub struct TypedCallback<A, R> {
    callback: Callback,
    _types: PhantomData<fn(A) -> R>,
}

impl<A: CallbackArgTypes, R: CallbackReturn> TypedCallback<A, R> {
    /// A callback running `handler`, whose parameter and result types make the C signature.
    ///
    /// Errors: [`Error::CallbacksUnsupported`] where the target has no callback entries yet,
    /// [`Error::CallbackLayout`] for a [`CallbackValue`] whose Rust layout is not its C type's,
    /// the placement's errors (limits), and [`Error::CallbackPoolExhausted`].
    pub fn new<F: CallbackFn<A, R>>(handler: F) -> Result<Self, Error> {
        Self::with_handler::<F, F>(handler)
    }

    /// A callback whose state holds `handler`, which gives the `F` the calls run.
    fn with_handler<H: Holds<F> + Send + Sync + 'static, F: CallbackFn<A, R>>(handler: H) -> Result<Self, Error> {
        let signature = Signature::new(A::types(), R::c_type())?;
        check_layouts(&signature, &A::layouts(), (size_of::<R>(), align_of::<R>()))?;
        #[cfg(nccl_trampoline_callbacks)]
        {
            let abi = crate::abi::Abi::native().ok_or(Error::CallbacksUnsupported { target: crate::engine::TARGET })?;
            let plan = CallbackPlan::new(abi, &signature)?;
            let places: Box<[ArgPlace]> = plan.args.iter().map(|p| ArgPlace::new(p)).collect();
            let result = ResultPlace::new(&plan.result, size_of::<R>());
            let simple = places_are_whole(&places) && matches!(result, ResultPlace::Word { .. } | ResultPlace::Void);
            let invoke: unsafe fn(&State, &mut Record) =
                if simple { invoke::<H, F, A, R, true> } else { invoke::<H, F, A, R, false> };
            let handler = Box::new(Typed { places, result, handler });
            let callback = Callback::from_state(State { plan, signature, invoke, handler })?;
            Ok(TypedCallback { callback, _types: PhantomData })
        }
        #[cfg(not(nccl_trampoline_callbacks))]
        {
            let _ = (handler, CallbackPlan::new, invoke::<H, F, A, R, true>, invoke::<H, F, A, R, false>);
            let _ = (ArgPlace::new, ResultPlace::new, places_are_whole);
            Err(Error::CallbacksUnsupported { target: crate::engine::TARGET })
        }
    }

    /// A callback whose calls reach `handler` without the record: the direct path
    /// (docs/adr/0025-callbacks.md, "The direct path"). For a handler that captures nothing
    /// (a closure without captures or a function item: zero-sized, no drop glue, refused when
    /// the program is built otherwise), whose types Rust's own `extern "C"` places exactly as C
    /// does: the integers, `f32`, `f64`, raw pointers, `i128`/`u128`, `Complex<f32>`,
    /// `Complex<f64>` and `#[repr(C)]` structs of them. The entry's common stub jumps straight
    /// to an `extern "C" fn(A0, A1, ..) -> R` monomorphised for the handler, with the caller's
    /// registers and stack untouched: no record, no dispatcher, no running mark. A panic still
    /// aborts with a message.
    ///
    /// ```
    /// use nccl_trampoline::TypedCallback;
    ///
    /// # if nccl_trampoline::Callback::POOL_SIZE == 0 { return Ok(()); }
    /// let add = TypedCallback::direct(|a: i32, b: i32| -> i32 { a + b })?;
    /// // SAFETY: `add` lives; C would call it the same way.
    /// assert_eq!(unsafe { add.as_fn()(2, 3) }, 5);
    /// # Ok::<(), nccl_trampoline::Error>(())
    /// ```
    ///
    /// A closure with captures is refused when the program is built (`new` takes it):
    ///
    /// ```compile_fail
    /// let offset = 1;
    /// let _ = nccl_trampoline::TypedCallback::direct(move |a: i32| -> i32 { a + offset });
    /// ```
    ///
    /// Drop: the entry's direct target is cleared, then the entry goes back to the pool. Unlike
    /// the other forms, the drop does not wait for calls already running (the direct path marks
    /// none): there is no state for them to lose, the handler being code only. A C call through
    /// the pointer after the drop is the same contract violation as for the other forms: it runs
    /// whatever callback has the entry then, or aborts if none has.
    ///
    /// Errors: [`Error::DirectCallbackType`] for `long double`, `_Complex long double` (Rust has
    /// no C long double) and structs with an alignment attribute (anywhere in an argument or the
    /// result); then those of [`new`](TypedCallback::new).
    pub fn direct<F: CallbackFn<A, R>>(handler: F) -> Result<Self, Error> {
        const {
            assert!(
                size_of::<F>() == 0 && !core::mem::needs_drop::<F>(),
                "TypedCallback::direct takes a handler that captures nothing (zero-sized, no drop glue): use TypedCallback::new"
            )
        };
        let signature = Signature::new(A::types(), R::c_type())?;
        for (i, ty) in signature.args().iter().enumerate() {
            if let Some(what) = direct_refusal(ty) {
                return Err(Error::DirectCallbackType { position: Position::Argument(i), what });
            }
        }
        if let Some(what) = signature.ret().and_then(direct_refusal) {
            return Err(Error::DirectCallbackType { position: Position::Result, what });
        }
        // The handler lives for good: forgotten, so the direct function (and the record path,
        // which the entry's state keeps for a call that races the drop) may conjure it at any
        // time.
        core::mem::forget(handler);
        // SAFETY: F is zero-sized without drop glue (checked above) and forgotten (just now).
        #[cfg_attr(not(nccl_trampoline_callbacks), allow(unused_mut))]
        let mut this = Self::with_handler::<Forgotten<F>, F>(unsafe { Forgotten::new() })?;
        #[cfg(nccl_trampoline_callbacks)]
        {
            // SAFETY: as above.
            let target = unsafe { <F as Invoke<A, R>>::direct_target() };
            super::pool::set_direct(this.callback.index, target);
            this.callback.direct = true;
        }
        Ok(this)
    }

    /// The typed C function pointer, `unsafe extern "C" fn(A0, A1, ..) -> R`: to call, or to
    /// give C (as an `Option<unsafe extern "C" fn ..>` field, say). Calling it is sound while
    /// the callback lives.
    ///
    /// Except with [`CLongDouble`](crate::CLongDouble) or `Complex<CLongDouble>` arguments or
    /// result: Rust has no x87 `long double`, so a Rust call through this type passes them as
    /// 16-byte structs (in integer registers), not as C does (on the stack, on the x87 stack).
    /// Such a pointer is for C to call only.
    pub fn as_fn(&self) -> A::CFn<R> {
        // SAFETY: the entry runs this callback, whose signature was made from A and R.
        unsafe { A::c_fn::<R>(self.callback.as_ptr()) }
    }

    /// The C function pointer's address.
    pub fn as_ptr(&self) -> *const c_void {
        self.callback.as_ptr()
    }

    /// The signature made from `A` and `R`.
    pub fn signature(&self) -> &Signature {
        self.callback.signature()
    }

    /// The index of the pool entry this callback holds.
    pub fn pool_index(&self) -> usize {
        self.callback.pool_index()
    }
}

/// Why the direct path does not take `ty`, if it does not. The others Rust's `extern "C"` places
/// as C does on SysV x86-64, AAPCS64 and LP64D (rustc_target's `abi::call` implements each
/// ABI's classification for the integers, floats, pointers, `i128` (16-aligned since Rust 1.77,
/// passed as GCC does since LLVM 18) and `#[repr(C)]` structs, complex numbers being structs of
/// two floats on all three); tests/typed_callbacks.rs checks every family against C callers.
fn direct_refusal(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::LongDouble => Some("a long double (Rust has no C long double)"),
        Type::ComplexLongDouble => Some("a _Complex long double (Rust has no C long double)"),
        Type::Aggregate(a) => {
            if a.align() != a.natural_align() || a.fields().iter().any(|f| f.align != f.ty.align()) {
                Some("a struct with an alignment attribute (its placement by Rust is not checked against C)")
            } else {
                a.fields().iter().find_map(|f| direct_refusal(&f.ty))
            }
        }
        _ => None,
    }
}

/// Each type's Rust size and alignment equal its C type's.
fn check_layouts(signature: &Signature, args: &[(usize, usize)], ret: (usize, usize)) -> Result<(), Error> {
    let check = |position, ty: &Type, (rust_size, rust_align): (usize, usize)| {
        if (ty.size(), ty.align()) == (rust_size, rust_align) {
            Ok(())
        } else {
            Err(Error::CallbackLayout { position, c_size: ty.size(), c_align: ty.align(), rust_size, rust_align })
        }
    };
    for (i, (ty, &layout)) in signature.args().iter().zip(args).enumerate() {
        check(Position::Argument(i), ty, layout)?;
    }
    match signature.ret() {
        Some(ty) => check(Position::Result, ty, ret),
        None => Ok(()),
    }
}

impl<A, R> fmt::Debug for TypedCallback<A, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedCallback").field("callback", &self.callback).finish()
    }
}
