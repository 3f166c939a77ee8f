//! The Rust types a callback's arguments and result can be: [`CValue`] (read through the
//! dynamic form's checked views, every bit pattern valid), and [`CallbackValue`] /
//! [`CallbackReturn`] (a typed callback's arguments and result, a caller's `#[repr(C)]` structs
//! among them).

use crate::ctype::types::Type;
use crate::ctype::wide::{CLongDouble, Complex};
use crate::engine::typed::CArg;

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that a callback can read an argument as and return a result as: every bit
/// pattern of its C type is a valid value of it. The integers (`isize`/`usize` as
/// `int64_t`/`uint64_t`, `i128`/`u128` as `__int128`), `f32`, `f64`, raw pointers,
/// [`CLongDouble`] and [`Complex`] of `f32`, `f64` and `CLongDouble`. Sealed: `NonNull`, say,
/// would be undefined behaviour for a null argument. Read a struct with
/// [`CallbackArgs::read_bytes`](crate::CallbackArgs::read_bytes).
pub trait CValue: CArg + Copy + sealed::Sealed {}

macro_rules! c_values {
    ($($t:ty),* $(,)?) => {
        $(
            impl sealed::Sealed for $t {}
            impl CValue for $t {}
        )*
    };
}
c_values!(i8, u8, i16, u16, i32, u32, i64, u64, isize, usize, f32, f64, i128, u128, CLongDouble);
c_values!(Complex<f32>, Complex<f64>, Complex<CLongDouble>);
impl<T> sealed::Sealed for *const T {}
impl<T> CValue for *const T {}
impl<T> sealed::Sealed for *mut T {}
impl<T> CValue for *mut T {}

/// A Rust type a typed callback receives from C or returns to C.
///
/// Implemented for every [`CValue`] (the integers, `f32`, `f64`, raw pointers, `i128`/`u128`,
/// [`CLongDouble`](crate::CLongDouble), [`Complex`](crate::Complex)); implement it for a
/// `#[repr(C)]` struct passed or returned by value, after [`CArg`].
///
/// # Safety
///
/// [`CArg::c_type`] describes `Self` exactly (size, alignment, field offsets and types), and
/// every bit pattern a C caller may pass for that C type (every byte of a field, any padding)
/// is a valid `Self`: no `bool`, `char`, enum, reference or `NonNull` fields.
pub unsafe trait CallbackValue: CArg + Copy + 'static {}

// SAFETY: CValue's contract is this one, for the types it is sealed to.
unsafe impl<T: CValue + 'static> CallbackValue for T {}

/// The result type of a typed callback: `()` for `void`, or a [`CallbackValue`].
pub trait CallbackReturn: Sized + 'static {
    /// The C result type (`None` for `void`).
    fn c_type() -> Option<Type>;
}

impl CallbackReturn for () {
    fn c_type() -> Option<Type> {
        None
    }
}

impl<T: CallbackValue> CallbackReturn for T {
    fn c_type() -> Option<Type> {
        Some(T::c_type())
    }
}
