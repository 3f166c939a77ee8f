//! Tables of C functions resolved from a library at run time, declared once each.
//!
//! [`c_functions!`](crate::c_functions) turns one line per function — method name, C symbol,
//! argument names and Rust types, return type — into a struct holding every function bound
//! once ([`TypedFn`]), and a typed `unsafe` wrapper per function. The call plan is built from
//! the same Rust types the wrapper takes (their [`CArg`](crate::CArg) and [`CRet`] C types), and the binding
//! is checked against it, so a wrapper cannot disagree with its plan. Missing symbols resolve
//! to `None` and fail only when called. The NCCL facade's table (`nccl::functions`) is built on
//! the same [`Entry`].

use core::ffi::c_void;
use core::mem::MaybeUninit;

use crate::{CArgs, CRet, CallPlan, Error, Signature, Type, TypedFn};

/// One resolved function: its address and the plan of its prototype.
#[derive(Debug)]
pub struct Entry {
    func: *const c_void,
    plan: CallPlan,
}

// SAFETY: a code address and an immutable plan.
unsafe impl Send for Entry {}
// SAFETY: as above.
unsafe impl Sync for Entry {}

impl Entry {
    /// Resolves `symbol` in `lib` with the prototype `args -> ret`; `None` if the library does
    /// not export it. Errors only if the prototype cannot be planned on this target.
    pub fn resolve(lib: &libloading::Library, symbol: &str, args: Vec<Type>, ret: Type) -> Result<Option<Self>, Error> {
        Self::resolve_signature(lib, symbol, &Signature::new(args, Some(ret))?)
    }

    /// Resolves `symbol` in `lib` with the prototype `signature`; `None` if the library does
    /// not export it. Errors only if the prototype cannot be planned on this target.
    pub fn resolve_signature(
        lib: &libloading::Library,
        symbol: &str,
        signature: &Signature,
    ) -> Result<Option<Self>, Error> {
        let mut name = Vec::with_capacity(symbol.len() + 1);
        name.extend_from_slice(symbol.as_bytes());
        name.push(0);
        // SAFETY: only the address is read; it is called through a plan of its prototype.
        let func = match unsafe { lib.get::<*const c_void>(&name) } {
            Ok(f) if !f.is_null() => *f,
            _ => return Ok(None),
        };
        let plan = CallPlan::new(signature)?;
        Ok(Some(Entry { func, plan }))
    }

    /// An entry for a function address already known, with its plan.
    #[cfg(test)]
    pub(crate) fn from_parts(func: *const c_void, plan: CallPlan) -> Self {
        Entry { func, plan }
    }

    /// Calls the function with `args` (pointers to values of the prototype's argument types).
    ///
    /// # Safety
    ///
    /// `args` must point to values of the planned argument types, `R` must be the planned
    /// return type, and the function's own contract must hold for these values.
    pub unsafe fn call<R: CRet>(&self, args: &[*const c_void]) -> Result<R, Error> {
        let mut out = MaybeUninit::<R>::uninit();
        // SAFETY: the caller's contract; `out` has the return type's size and alignment.
        unsafe {
            self.plan.call(self.func, args, out.as_mut_ptr().cast())?;
            Ok(out.assume_init())
        }
    }

    /// The function bound to the Rust types `A -> R`, checked once against the plan
    /// ([`CallPlan::bind`]).
    ///
    /// # Safety
    ///
    /// The plan must be the function's prototype (as [`resolve`](Self::resolve) was told), and
    /// the library must stay loaded while the binding is used.
    pub unsafe fn bind<A: CArgs, R: CRet>(&self) -> Result<TypedFn<A, R>, Error> {
        // SAFETY: the plan is the function's prototype (caller).
        unsafe { self.plan.bind(self.func) }
    }

    /// The function's address.
    pub fn address(&self) -> *const c_void {
        self.func
    }

    /// The function's call plan.
    pub fn plan(&self) -> &CallPlan {
        &self.plan
    }
}

/// The signature of a C function taking the C types of `A` and returning `R`'s.
pub fn signature<A: CArgs, R: CRet>() -> Result<Signature, Error> {
    Signature::new(A::types(), R::c_type())
}

/// Declares a table of C functions resolved at run time: one line per function.
///
/// ```ignore
/// c_functions! {
///     /// The CUDA driver functions this crate calls.
///     pub(crate) struct DriverFns {
///         /// `CUresult cuInit(unsigned int flags)`
///         fn init = "cuInit"(flags: u32) -> i32;
///     }
/// }
/// ```
///
/// generates `DriverFns::resolve(&lib) -> Result<DriverFns, Error>`, `DriverFns::SYMBOLS`, a
/// `missing()` list, and `unsafe fn init(&self, flags: u32) -> Result<i32, Error>` that calls a
/// [`TypedFn`]`<(u32,), i32>` bound when the table is resolved, to a plan made from the same
/// `u32 -> i32`. Calling a function the library lacks returns
/// [`Error::SymbolMissing`](crate::Error::SymbolMissing). The table must not outlive `lib`.
#[macro_export]
#[doc(hidden)]
macro_rules! c_functions {
    (
        $(#[$meta:meta])*
        $vis:vis struct $table:ident {
            $( $(#[$fmeta:meta])* fn $method:ident = $symbol:literal ( $( $arg:ident : $ty:ty ),* $(,)? ) -> $ret:ty; )*
        }
    ) => {
        $(#[$meta])*
        $vis struct $table {
            $( $method: Option<$crate::TypedFn<($($ty,)*), $ret>>, )*
        }

        #[allow(dead_code)]
        impl $table {
            /// Every C symbol of the table, in declaration order.
            pub const SYMBOLS: &'static [&'static str] = &[$($symbol),*];

            /// Resolves every function of the table in `lib` (a missing one is `None`).
            pub fn resolve(lib: &libloading::Library) -> Result<Self, $crate::Error> {
                Ok(Self { $(
                    $method: match $crate::symbols::Entry::resolve_signature(
                        lib,
                        $symbol,
                        &$crate::symbols::signature::<($($ty,)*), $ret>()?,
                    )? {
                        // SAFETY: the plan was made from these very types.
                        Some(entry) => Some(unsafe { entry.bind::<($($ty,)*), $ret>() }?),
                        None => None,
                    },
                )* })
            }

            /// The symbols `lib` did not export.
            pub fn missing(&self) -> Vec<&'static str> {
                let mut out = Vec::new();
                $( if self.$method.is_none() { out.push($symbol); } )*
                out
            }

            $(
                $(#[$fmeta])*
                ///
                /// # Safety
                ///
                /// The C function's own contract: valid pointers for its pointer arguments,
                /// values it accepts, and the lifetimes it expects of what it keeps.
                #[allow(clippy::too_many_arguments)]
                pub unsafe fn $method(&self, $( $arg: $ty ),*) -> Result<$ret, $crate::Error> {
                    let Some(function) = self.$method.as_ref() else {
                        return Err($crate::Error::SymbolMissing { symbol: $symbol });
                    };
                    // SAFETY: bound to these argument types and this return type when resolved;
                    // the function's contract is the caller's.
                    Ok(unsafe { function.call(($($arg,)*)) })
                }
            )*
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_types_match_their_c_sizes() {
        fn check<T: crate::CArg>() {
            assert_eq!(T::c_type().size(), core::mem::size_of::<T>(), "{}", core::any::type_name::<T>());
        }
        check::<i8>();
        check::<u16>();
        check::<i32>();
        check::<u64>();
        check::<usize>();
        check::<f32>();
        check::<f64>();
        check::<*mut c_void>();
        check::<*const u8>();
    }
}
