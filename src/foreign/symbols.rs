//! Tables of C functions resolved from a library at run time, declared once each.
//!
//! [`foreign_functions!`](crate::foreign_functions) is the one mechanism every run-time-loaded
//! library of this crate uses (NCCL, the CUDA driver, MPI, NVML in the command-line tool). One
//! line per function — field, symbol variant, C name, optional first version, argument names
//! and Rust types, result type — gives the symbol's index ([`Symbol`] rows in a `SYMBOLS`
//! table, in the order of a generated `Sym` enum), its call plan (made from the same Rust
//! types' [`CArg`](crate::CArg) and [`CRet`] C types), a [`Function`] bound once to those types
//! and checked against the plan, a typed `unsafe` wrapper, the list of missing symbols and the
//! count of bound ones. Missing symbols resolve to unbound functions and fail only when
//! called.

use core::ffi::c_void;
use core::mem::MaybeUninit;

use crate::ctype::error::Error;

use crate::engine::plan::CallPlan;

use crate::engine::typed::{CArgs, CRet, TypedFn};

use crate::ctype::types::{Signature, Type};

/// A loaded library, as tables are resolved in it (libloading's).
pub use libloading::Library;

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

/// What a table knows of one of its functions: the variant that names it, its C name, the
/// first version of the library that has it (where the table says), and its prototype, made
/// from the declared Rust types.
#[derive(Debug)]
pub struct Symbol<S: 'static> {
    /// The table's name for it.
    pub sym: S,
    /// The C symbol.
    pub name: &'static str,
    /// The first library version that exports it (major, minor, patch), if the table says.
    pub since: Option<(u32, u32, u32)>,
    /// The prototype, from the declared Rust types.
    pub signature: fn() -> Result<Signature, Error>,
}

/// Resolves every row of `table` in `lib` (a missing symbol is `None`), under the C name
/// `name_of` gives for each row (its own name, or a library's other spelling of it).
pub fn resolve_entries<S>(
    lib: &libloading::Library,
    table: &[Symbol<S>],
    name_of: impl Fn(&Symbol<S>) -> &'static str,
) -> Result<Vec<Option<Entry>>, Error> {
    table.iter().map(|row| Entry::resolve_signature(lib, name_of(row), &(row.signature)()?)).collect()
}

/// A function of a table (named by `S`, the table's `Sym`) bound to the Rust argument types
/// `A` (a tuple) and result type `R`, or unbound where the library lacks it.
pub struct Function<S, A, R> {
    sym: S,
    name: &'static str,
    typed: Option<TypedFn<A, R>>,
}

impl<S, A, R> core::fmt::Debug for Function<S, A, R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Function").field("name", &self.name).field("bound", &self.typed.is_some()).finish()
    }
}

impl<S: Copy, A: CArgs, R: CRet> Function<S, A, R> {
    /// Binds `entry` (if resolved) to `A -> R`; [`CallPlan::bind`] checks the types against the
    /// entry's plan.
    ///
    /// # Safety
    ///
    /// The entry's plan is the C function's prototype, and its library stays loaded while the
    /// binding is used.
    pub unsafe fn bind(sym: S, name: &'static str, entry: Option<&Entry>) -> Result<Self, Error> {
        let typed = match entry {
            // SAFETY: the caller's contract; `bind` checks `A -> R` against the plan.
            Some(entry) => Some(unsafe { entry.bind::<A, R>() }?),
            None => None,
        };
        Ok(Function { sym, name, typed })
    }

    /// The table's name for the function.
    pub fn sym(&self) -> S {
        self.sym
    }

    /// The C symbol.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// True if the library exports the function.
    pub fn is_bound(&self) -> bool {
        self.typed.is_some()
    }

    /// Calls the function with `args`, or returns `None` if the library lacks it.
    ///
    /// # Safety
    ///
    /// The C function's contract for these argument values (valid pointers, values it
    /// accepts, the threads it allows, the lifetimes it expects of what it keeps).
    #[inline(always)]
    pub unsafe fn call_if_bound(&self, args: A) -> Option<R> {
        // SAFETY: bound to this prototype when the table was resolved; the caller's contract
        // covers the values.
        self.typed.as_ref().map(|f| unsafe { f.call(args) })
    }

    /// Calls the function with `args`; [`Error::SymbolMissing`] if the library lacks it.
    ///
    /// # Safety
    ///
    /// As [`call_if_bound`](Self::call_if_bound).
    #[inline(always)]
    pub unsafe fn call_or_missing(&self, args: A) -> Result<R, Error> {
        // SAFETY: the caller's contract.
        unsafe { self.call_if_bound(args) }.ok_or(Error::SymbolMissing { symbol: self.name })
    }
}

/// Declares a table of C functions resolved at run time: one line per function.
///
/// ```ignore
/// foreign_functions! {
///     /// The CUDA driver functions this crate calls.
///     pub(crate) struct DriverFns, enum DriverSym {
///         /// `CUresult cuInit(unsigned int flags)`
///         init: Init = "cuInit" (flags: u32) -> i32;
///         /// A function with the library version that introduced it.
///         get_version: GetVersion = "ncclGetVersion" since (2, 3, 4) (version: *mut i32) -> NcclResult;
///     }
/// }
/// ```
///
/// generates, from those lines alone:
///
/// - `enum DriverSym { Init, .. }`, in table order (`sym as usize` is the row), with
///   `name()` and `since()`;
/// - `DriverFns::SYMBOLS: &[Symbol<DriverSym>]` (name, since, prototype from the Rust types);
/// - `struct DriverFns` with a field per function, a [`Function`]`<DriverSym, (u32,), i32>`
///   bound to a plan made from the same `u32 -> i32` ([`CallPlan::bind`] checks it);
/// - `DriverFns::resolve(&lib)`, `DriverFns::bind(&entries)` (entries from
///   [`resolve_entries`], for a library that spells some names its own way), `missing()` (the
///   C names the library lacks) and `bound()` (how many it has);
/// - `unsafe fn init(&self, flags: u32) -> Result<i32, Error>`, a typed wrapper that returns
///   [`Error::SymbolMissing`](crate::Error::SymbolMissing) for a function the library lacks.
///
/// A table may take one handle type as a parameter (`struct MpiHandleFns<H>`, used as `H` in
/// the lines): the prototypes then differ per instance, as MPI's do per ABI. The table must
/// not outlive the library it was resolved in.
#[macro_export]
#[doc(hidden)]
macro_rules! foreign_functions {
    (
        $(#[$meta:meta])*
        $vis:vis struct $table:ident $(< $h:ident >)?, $svis:vis enum $sym:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $variant:ident = $name:literal
                    $( since ($ma:literal, $mi:literal, $pa:literal) )?
                    ( $( $arg:ident : $ty:ty ),* $(,)? ) -> $ret:ty;
            )*
        }
    ) => {
        /// The functions of the table, in its order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(usize)]
        #[allow(missing_docs, dead_code)]
        #[non_exhaustive]
        $svis enum $sym {
            $( $variant, )*
        }

        #[allow(dead_code)]
        impl $sym {
            /// Every function, in table order.
            pub const ALL: &'static [$sym] = &[$($sym::$variant),*];

            /// The C symbol.
            pub const fn name(self) -> &'static str {
                match self { $( $sym::$variant => $name, )* }
            }

            /// The first library version that exports it, if the table says.
            pub const fn since(self) -> Option<(u32, u32, u32)> {
                match self { $( $sym::$variant => $crate::foreign_functions!(@since $(($ma, $mi, $pa))?), )* }
            }
        }

        $(#[$meta])*
        $vis struct $table $(< $h >)? {
            $(
                $(#[$fmeta])*
                pub $field: $crate::symbols::Function<$sym, ($($ty,)*), $ret>,
            )*
        }

        #[allow(dead_code, clippy::too_many_arguments)]
        impl $(< $h: $crate::CArg + 'static >)? $table $(< $h >)? {
            /// Every function of the table: name, first version, prototype. In `Sym` order.
            pub const SYMBOLS: &'static [$crate::symbols::Symbol<$sym>] = &[$(
                $crate::symbols::Symbol {
                    sym: $sym::$variant,
                    name: $name,
                    since: $crate::foreign_functions!(@since $(($ma, $mi, $pa))?),
                    signature: $crate::symbols::signature::<($($ty,)*), $ret>,
                },
            )*];

            /// Resolves and binds every function of the table in `lib` (a missing one is
            /// unbound).
            pub fn resolve(lib: &$crate::symbols::Library) -> Result<Self, $crate::Error> {
                let entries = $crate::symbols::resolve_entries(lib, Self::SYMBOLS, |row| row.name)?;
                // SAFETY: each entry's plan was made from its row's prototype, which is made
                // from the very types `bind` binds it to.
                unsafe { Self::bind(&entries) }
            }

            /// Binds every resolved entry (`entries` in `Sym` order, as
            /// [`resolve_entries`]($crate::symbols::resolve_entries) gives them).
            ///
            /// # Safety
            ///
            /// Each entry's plan is its row's prototype (from `SYMBOLS`), and the library
            /// stays loaded while the bindings are used.
            pub unsafe fn bind(entries: &[Option<$crate::symbols::Entry>]) -> Result<Self, $crate::Error> {
                if entries.len() != Self::SYMBOLS.len() {
                    return Err($crate::Error::TableLength { expected: Self::SYMBOLS.len(), got: entries.len() });
                }
                Ok(Self { $(
                    // SAFETY: the caller's contract.
                    $field: unsafe {
                        $crate::symbols::Function::bind(
                            $sym::$variant,
                            $name,
                            entries[$sym::$variant as usize].as_ref(),
                        )
                    }?,
                )* })
            }

            /// The C symbols the library did not export, in table order.
            pub fn missing(&self) -> Vec<&'static str> {
                let mut out = Vec::new();
                $( if !self.$field.is_bound() { out.push($name); } )*
                out
            }

            /// How many functions of the table the library exports.
            pub fn bound(&self) -> usize {
                0 $( + usize::from(self.$field.is_bound()) )*
            }

            $(
                $(#[$fmeta])*
                ///
                /// # Safety
                ///
                /// The C function's own contract: valid pointers for its pointer arguments,
                /// values it accepts, and the lifetimes it expects of what it keeps.
                #[inline(always)]
                pub unsafe fn $field(&self, $( $arg: $ty ),*) -> Result<$ret, $crate::Error> {
                    // SAFETY: the caller's contract.
                    unsafe { self.$field.call_or_missing(($($arg,)*)) }
                }
            )*
        }
    };
    (@since ($ma:literal, $mi:literal, $pa:literal)) => { Some(($ma, $mi, $pa)) };
    (@since) => { None };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::foreign_functions! {
        /// libc's `abs`, and a function no library has.
        struct Libc, enum LibcSym {
            /// `int abs(int)`
            abs: Abs = "abs" (x: i32) -> i32;
            /// Never exported.
            absent: Absent = "nccl_trampoline_no_such_function" since (9, 8, 7) (x: *mut c_void) -> u64;
        }
    }

    crate::foreign_functions! {
        /// One line, two prototypes: `H` is chosen per instance.
        struct ByHandle<H>, enum ByHandleSym {
            labs: Labs = "labs" (x: H) -> i64;
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "loads a library (dlopen), which Miri cannot run")]
    fn a_table_indexes_binds_lists_and_wraps_its_lines() {
        assert_eq!(LibcSym::ALL, &[LibcSym::Abs, LibcSym::Absent]);
        assert_eq!((LibcSym::Absent as usize, LibcSym::Absent.name()), (1, "nccl_trampoline_no_such_function"));
        assert_eq!((LibcSym::Abs.since(), LibcSym::Absent.since()), (None, Some((9, 8, 7))));
        let rows = Libc::SYMBOLS;
        assert_eq!(rows[1].sym, LibcSym::Absent);
        assert_eq!((rows[0].signature)().unwrap(), Signature::new(vec![Type::I32], Some(Type::I32)).unwrap());
        assert_eq!((rows[1].signature)().unwrap(), Signature::new(vec![Type::Pointer], Some(Type::U64)).unwrap());
        // The handle type decides the prototype.
        let narrow = (ByHandle::<i32>::SYMBOLS[0].signature)().unwrap();
        let wide = (ByHandle::<*const c_void>::SYMBOLS[0].signature)().unwrap();
        assert_eq!((narrow.args(), wide.args()), (&[Type::I32][..], &[Type::Pointer][..]));
        if crate::Abi::native().is_none() {
            return;
        }
        // SAFETY: the C library's initialisers have run already in this process.
        let lib = unsafe { Library::new("libc.so.6") }.unwrap();
        let libc = Libc::resolve(&lib).unwrap();
        assert_eq!((libc.bound(), libc.missing()), (1, vec!["nccl_trampoline_no_such_function"]));
        // SAFETY: `abs` takes any int but INT_MIN.
        assert_eq!(unsafe { libc.abs(-5) }.unwrap(), 5);
        assert_eq!(libc.abs.name(), "abs");
        // SAFETY: an unbound function calls nothing.
        let missing = unsafe { libc.absent(core::ptr::null_mut()) };
        assert!(matches!(missing, Err(Error::SymbolMissing { symbol: "nccl_trampoline_no_such_function" })));
        // SAFETY: `labs` takes any long but LONG_MIN.
        assert_eq!(unsafe { ByHandle::<i64>::resolve(&lib).unwrap().labs(-7) }.unwrap(), 7);
        // A plan is checked against the types it is bound to: the wrong entry for a table is
        // refused, not called.
        let entries = resolve_entries(&lib, Libc::SYMBOLS, |row| row.name).unwrap();
        let abs_only = &entries[..1];
        // SAFETY: nothing is called.
        assert!(unsafe { ByHandle::<*const c_void>::bind(abs_only) }.is_err(), "an int plan bound to a pointer");
        // SAFETY: as above.
        assert!(unsafe { Libc::bind(abs_only) }.is_err(), "one entry for a table of two");
    }

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
