//! Tables of C functions resolved from a library at run time, declared once each.
//!
//! [`c_functions!`](crate::c_functions) turns one line per function — method name, C symbol,
//! argument names and Rust types, return type — into a struct holding every function's address
//! and call plan, and a typed `unsafe` wrapper per function. The plan is built from the same
//! Rust types the wrapper takes (through [`CType`]), so a wrapper cannot disagree with its plan.
//! Missing symbols resolve to `None` and fail only when called.

use core::ffi::c_void;
use core::mem::MaybeUninit;

use crate::{CallPlan, Error, Signature, Type};

/// A Rust type passed to or returned from C as one C scalar.
///
/// # Safety
///
/// `c_type()` must describe `Self` exactly: its size, and how the C ABI classifies it.
pub unsafe trait CType: Copy {
    /// The C type.
    fn c_type() -> Type;
}

macro_rules! c_scalars {
    ($($t:ty => $c:ident),* $(,)?) => {$(
        // SAFETY: the C type has this Rust type's size and ABI class.
        unsafe impl CType for $t { fn c_type() -> Type { Type::$c } }
    )*};
}
c_scalars!(i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32, i64 => I64, u64 => U64,
           f32 => F32, f64 => F64);
// LP64: `size_t`, `ssize_t` and `long` are 64 bits on every target with a trampoline.
#[cfg(target_pointer_width = "64")]
c_scalars!(usize => U64, isize => I64);

// SAFETY: every data pointer is one C pointer.
unsafe impl<T> CType for *const T {
    fn c_type() -> Type {
        Type::Pointer
    }
}
// SAFETY: as above.
unsafe impl<T> CType for *mut T {
    fn c_type() -> Type {
        Type::Pointer
    }
}

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
        let mut name = Vec::with_capacity(symbol.len() + 1);
        name.extend_from_slice(symbol.as_bytes());
        name.push(0);
        // SAFETY: only the address is read; it is called through a plan of its prototype.
        let func = match unsafe { lib.get::<*const c_void>(&name) } {
            Ok(f) if !f.is_null() => *f,
            _ => return Ok(None),
        };
        let plan = CallPlan::new(&Signature::new(args, Some(ret))?)?;
        Ok(Some(Entry { func, plan }))
    }

    /// Calls the function with `args` (pointers to values of the prototype's argument types).
    ///
    /// # Safety
    ///
    /// `args` must point to values of the planned argument types, `R` must be the planned
    /// return type, and the function's own contract must hold for these values.
    pub unsafe fn call<R: CType>(&self, args: &[*const c_void]) -> Result<R, Error> {
        let mut out = MaybeUninit::<R>::uninit();
        // SAFETY: the caller's contract; `out` has the return type's size and alignment.
        unsafe {
            self.plan.call(self.func, args, out.as_mut_ptr().cast())?;
            Ok(out.assume_init())
        }
    }

    /// The function's address.
    pub fn address(&self) -> *const c_void {
        self.func
    }
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
/// `missing()` list, and `unsafe fn init(&self, flags: u32) -> Result<i32, Error>` whose plan
/// comes from the same `u32 -> i32`. Calling a function the library lacks returns
/// [`Error::SymbolMissing`](crate::Error::SymbolMissing).
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
            $( $method: Option<$crate::symbols::Entry>, )*
        }

        #[allow(dead_code)]
        impl $table {
            /// Every C symbol of the table, in declaration order.
            pub const SYMBOLS: &'static [&'static str] = &[$($symbol),*];

            /// Resolves every function of the table in `lib` (a missing one is `None`).
            pub fn resolve(lib: &libloading::Library) -> Result<Self, $crate::Error> {
                Ok(Self { $(
                    $method: $crate::symbols::Entry::resolve(
                        lib,
                        $symbol,
                        vec![$(<$ty as $crate::symbols::CType>::c_type()),*],
                        <$ret as $crate::symbols::CType>::c_type(),
                    )?,
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
                    let Some(entry) = self.$method.as_ref() else {
                        return Err($crate::Error::SymbolMissing { symbol: $symbol });
                    };
                    // SAFETY: the plan was made from these argument types and this return type.
                    unsafe { entry.call::<$ret>(&[$($crate::arg(&$arg)),*]) }
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
        fn check<T: CType>() {
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
