//! [`c_struct!`](crate::c_struct): a `#[repr(C)]` struct declared once, with its C type and the
//! traits that pass it by value ([`CArg`]), return it ([`CRet`](crate::CRet)) and let a typed
//! callback take or return it ([`CallbackValue`](crate::CallbackValue)), its Rust layout checked
//! against the C one. What the macro's expansion calls lives here, reached through the
//! doc-hidden `__private` (not public API).

use crate::ctype::types::{Aggregate, Type};
use crate::engine::callback::value::CallbackValue;
use crate::engine::typed::CArg;

/// Declares a `#[repr(C)]` struct passed to or returned from C by value, and implements the
/// call core's traits for it from that one declaration:
///
/// - [`CArg`] (with [`AGGREGATE`](CArg::AGGREGATE)): its C type is the struct of its fields in
///   order, laid out as a C compiler does; an array field `[T; N]` is the C array `T name[N]`;
///   a field's type is any [`CArg`] (a scalar, a pointer, [`CLongDouble`](crate::CLongDouble),
///   [`Complex`](crate::Complex), another `c_struct!`) or an array of one;
/// - [`CRet`](crate::CRet) and [`CallbackValue`](crate::CallbackValue), where C may fill every
///   field with any bytes: each field (or array element) must itself be a
///   [`CallbackValue`](crate::CallbackValue), so a `bool`, `char`, enum, reference or `NonNull`
///   field is a compile-time error. `CallbackValue` also needs `Copy`: derive it.
///
/// By default all three; a struct that must only be passed says so after its body with
/// `impl CArg;` (or `impl CArg, CRet;`). The docs and attributes on the struct and its fields
/// are kept, derives included; do not add `#[repr(C)]`, the macro does. Generic structs,
/// `#[repr(packed)]` and alignment attributes are not supported.
///
/// The first time a plan, a binding or a callback asks for the struct's C type, the C layout
/// is compared with Rust's (size, alignment, and every field's offset, size and alignment, with
/// `offset_of!`): a difference panics, naming the struct and the field. It can only come from a
/// field type whose `CArg` describes another layout than its own; call
/// `<T as CArg>::c_type()` in a unit test to check it at test time.
///
/// A struct passed by value and returned by value, through a typed binding and a typed callback:
///
/// ```
/// use core::ffi::c_void;
/// use nccl_trampoline::{c_struct, CArg, CallPlan, Signature, TypedCallback, TypedFn};
///
/// c_struct! {
///     /// `struct span { int32_t first; uint16_t tag[3]; double weight; }`.
///     #[derive(Clone, Copy, Debug, Default, PartialEq)]
///     pub struct Span {
///         /// `first`.
///         pub first: i32,
///         /// `tag`: a C array member.
///         pub tag: [u16; 3],
///         /// `weight`.
///         pub weight: f64,
///     }
/// }
///
/// // `struct span widen(struct span s, int32_t by)`, as a C library would export it.
/// extern "C" fn widen(s: Span, by: i32) -> Span {
///     Span { first: s.first - by, tag: [s.tag[2], s.tag[1], s.tag[0]], weight: s.weight * 2.0 }
/// }
///
/// # if nccl_trampoline::Abi::native().is_none() { return Ok(()); }
/// // The signature, from the Rust types: (struct span, int32_t) -> struct span.
/// let sig = nccl_trampoline::symbols::signature::<(Span, i32), Span>()?;
/// assert_eq!(sig, Signature::new(vec![Span::c_type(), i32::c_type()], Some(Span::c_type()))?);
/// let plan = CallPlan::new(&sig)?;
/// // SAFETY: `widen` has this C signature and lives as long as the binding.
/// let bound: TypedFn<(Span, i32), Span> = unsafe { plan.bind(widen as *const c_void)? };
/// let s = Span { first: 10, tag: [1, 2, 3], weight: 0.25 };
/// // SAFETY: `widen` accepts any values.
/// assert_eq!(unsafe { bound.call((s, 4)) }, Span { first: 6, tag: [3, 2, 1], weight: 0.5 });
///
/// // The other direction: a Rust closure C calls with the struct by value.
/// # if nccl_trampoline::Callback::POOL_SIZE == 0 { return Ok(()); }
/// let narrow = TypedCallback::new(|s: Span, by: i32| -> Span { Span { first: s.first + by, ..s } })?;
/// let f: unsafe extern "C" fn(Span, i32) -> Span = narrow.as_fn();
/// // SAFETY: `narrow` lives; C would call `f` the same way.
/// assert_eq!(unsafe { f(s, 5) }.first, 15);
/// # Ok::<(), nccl_trampoline::Error>(())
/// ```
///
/// A struct C may fill with bytes that are not a valid Rust value (here a null `NonNull`)
/// cannot be returned or given to a callback:
///
/// ```compile_fail
/// nccl_trampoline::c_struct! {
///     #[derive(Clone, Copy)]
///     pub struct Buffer {
///         pub data: core::ptr::NonNull<u8>,
///         pub len: usize,
///     }
/// }
/// ```
///
/// but can be passed:
///
/// ```
/// nccl_trampoline::c_struct! {
///     #[derive(Clone, Copy)]
///     pub struct Buffer {
///         pub data: core::ptr::NonNull<u8>,
///         pub len: usize,
///     }
///     impl CArg;
/// }
/// ```
#[macro_export]
macro_rules! c_struct {
    (@impls [$first:ident $($rest:ident)*] $name:ident $fields:tt) => {
        $crate::c_struct!(@impl $first $name $fields);
        $crate::c_struct!(@impls [$($rest)*] $name $fields);
    };
    (@impls [] $name:ident $fields:tt) => {};
    (@impl CArg $name:ident { $($field:ident: $ty:ty),+ }) => {
        // SAFETY: the C type is built from the fields in declaration order, each of its own
        // `CArg` type (or an array of one), with C's layout rules; `c_struct_type` compares that
        // layout with this `#[repr(C)]` struct's (size, alignment, every field's offset, size and
        // alignment) and panics on any difference before the type is returned. An aggregate's
        // word is its address (the default).
        unsafe impl $crate::CArg for $name {
            const AGGREGATE: bool = true;

            fn c_type() -> $crate::Type {
                static TYPE: ::std::sync::OnceLock<$crate::Type> = ::std::sync::OnceLock::new();
                *TYPE.get_or_init(|| {
                    $crate::__private::c_struct_type(
                        ::core::stringify!($name),
                        ::core::mem::size_of::<$name>(),
                        ::core::mem::align_of::<$name>(),
                        &[$(
                            $crate::__private::CStructField {
                                name: ::core::stringify!($field),
                                c: <$ty as $crate::__private::CField>::c_field(),
                                offset: ::core::mem::offset_of!($name, $field),
                                size: ::core::mem::size_of::<$ty>(),
                                align: ::core::mem::align_of::<$ty>(),
                            },
                        )+],
                    )
                })
            }
        }
    };
    (@any_bits $($ty:ty),+) => {
        // Every field's type must be AnyBitPattern (a compile-time error naming the field's type
        // otherwise).
        const _: fn() = || {
            fn any_bits<T: ?Sized + $crate::__private::AnyBitPattern>() {}
            $( any_bits::<$ty>(); )+
        };
    };
    (@impl CRet $name:ident { $($field:ident: $ty:ty),+ }) => {
        $crate::c_struct!(@any_bits $($ty),+);
        // SAFETY: the C type is `CArg::c_type`'s, checked against this layout; every field is
        // `AnyBitPattern` (above), so any bytes a C function returns are a valid value.
        unsafe impl $crate::CRet for $name {
            fn c_type() -> ::core::option::Option<$crate::Type> {
                ::core::option::Option::Some(<$name as $crate::CArg>::c_type())
            }
        }
    };
    (@impl CallbackValue $name:ident { $($field:ident: $ty:ty),+ }) => {
        $crate::c_struct!(@any_bits $($ty),+);
        // SAFETY: `CArg::c_type` describes this struct exactly (checked against its layout), and
        // every field is `AnyBitPattern` (above): any bytes a C caller passes are a valid value.
        // `Copy + 'static` are the trait's own bounds.
        unsafe impl $crate::CallbackValue for $name {}
    };
    (@impl $other:ident $name:ident { $($rest:tt)* }) => {
        ::core::compile_error!(::core::concat!(
            "c_struct! implements CArg, CRet and CallbackValue, not ",
            ::core::stringify!($other)
        ));
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $ty:ty
            ),+ $(,)?
        }
        impl $($trait:ident),+ $(,)? ;
    ) => {
        $(#[$meta])*
        #[repr(C)]
        $vis struct $name {
            $(
                $(#[$fmeta])*
                $fvis $field: $ty,
            )+
        }

        $crate::c_struct!(@impls [$($trait)+] $name { $($field: $ty),+ });
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident { $($body:tt)* }
    ) => {
        $crate::c_struct! {
            $(#[$meta])*
            $vis struct $name { $($body)* }
            impl CArg, CRet, CallbackValue;
        }
    };
}

/// A field type of a [`c_struct!`](crate::c_struct): a [`CArg`] (one element) or an array of
/// one (`count` elements).
#[doc(hidden)]
pub trait CField {
    /// The C type of an element and the number of elements.
    fn c_field() -> (Type, usize);
}

impl<T: CArg> CField for T {
    fn c_field() -> (Type, usize) {
        (T::c_type(), 1)
    }
}

impl<T: CArg, const N: usize> CField for [T; N] {
    fn c_field() -> (Type, usize) {
        (T::c_type(), N)
    }
}

/// A field type every bit pattern of whose C type is a valid value: a [`CallbackValue`], or an
/// array of one. What [`c_struct!`](crate::c_struct) asks of every field of a struct it
/// implements `CRet` or `CallbackValue` for.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a C value whose every bit pattern is valid",
    label = "a field of a struct C returns or passes to a callback",
    note = "C may fill the field with any bytes: no bool, char, enum, reference or NonNull; \
            declare the struct with `impl CArg;` to only pass it"
)]
#[doc(hidden)]
pub trait AnyBitPattern {}

impl<T: CallbackValue> AnyBitPattern for T {}

impl<T: CallbackValue, const N: usize> AnyBitPattern for [T; N] {}

/// One field of a [`c_struct!`](crate::c_struct) as Rust lays it out, with its C type.
#[derive(Clone, Copy, Debug)]
pub struct CStructField {
    /// The Rust (and C) field name.
    pub name: &'static str,
    /// The C type of an element and the number of elements ([`CField::c_field`]).
    pub c: (Type, usize),
    /// `offset_of!` the field.
    pub offset: usize,
    /// `size_of` the field's type.
    pub size: usize,
    /// `align_of` the field's type.
    pub align: usize,
}

/// The C type of the `c_struct!` `name`, whose Rust layout is `size`, `align` and `fields`:
/// the fields' C types laid out by C's rules, checked against that layout.
///
/// # Panics
///
/// Where the layouts differ: a field type's `CArg` that describes another size or alignment
/// than its own (an unsound `CArg` implementation), reported with the struct and the field.
pub fn c_struct_type(name: &str, size: usize, align: usize, fields: &[CStructField]) -> Type {
    let built = fields.iter().fold(Aggregate::builder(), |b, f| b.array(f.c.0, f.c.1)).build();
    let aggregate = built.unwrap_or_else(|e| panic!("c_struct! {name}: its fields make no C struct: {e}"));
    for (rust, c) in fields.iter().zip(aggregate.fields()) {
        let (c_size, c_align) = (c.ty.size() * c.count, c.ty.align());
        if (c.offset, c_size, c_align) != (rust.offset, rust.size, rust.align) {
            panic!(
                "c_struct! {name}: field `{}` is at offset {}, {} bytes aligned to {} in Rust, \
                 but at offset {c_offset}, {c_size} bytes aligned to {c_align} in C \
                 (its type's CArg describes another layout)",
                rust.name,
                rust.offset,
                rust.size,
                rust.align,
                c_offset = c.offset,
            );
        }
    }
    if (aggregate.size(), aggregate.align()) != (size, align) {
        panic!(
            "c_struct! {name}: {size} bytes aligned to {align} in Rust, {} bytes aligned to {} in C",
            aggregate.size(),
            aggregate.align()
        );
    }
    Type::Aggregate(aggregate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CRet;

    crate::c_struct! {
        /// Every kind of field: scalars, a pointer, an array, a nested struct, a long double.
        #[derive(Clone, Copy, Debug)]
        #[allow(dead_code)]
        struct Mixed {
            small: u8,
            wide: i64,
            pointer: *const u8,
            array: [u16; 5],
            nested: Pair,
            ld: crate::CLongDouble,
        }
    }

    crate::c_struct! {
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        #[allow(dead_code)]
        pub(crate) struct Pair {
            pub(crate) a: f32,
            b: i32,
        }
    }

    #[test]
    fn the_c_type_is_the_fields_in_order_and_rusts_layout() {
        let Type::Aggregate(a) = <Mixed as CArg>::c_type() else { panic!("an aggregate") };
        let pair = <Pair as CArg>::c_type();
        let want = Aggregate::builder()
            .field(Type::U8)
            .field(Type::I64)
            .field(Type::Pointer)
            .array(Type::U16, 5)
            .field(pair)
            .field(Type::LongDouble)
            .build()
            .unwrap();
        assert_eq!(a, want);
        assert_eq!((a.size(), a.align()), (core::mem::size_of::<Mixed>(), core::mem::align_of::<Mixed>()));
        assert_eq!(a.fields()[3].count, 5);
        assert_eq!(<Pair as CRet>::c_type(), Some(pair));
        const { assert!(Mixed::AGGREGATE && Pair::AGGREGATE) };
    }

    #[test]
    #[should_panic(
        expected = "c_struct! Lying: field `x` is at offset 0, 4 bytes aligned to 4 in Rust, but at offset 0, 8 bytes"
    )]
    fn a_field_whose_c_type_lies_fails_loudly() {
        #[repr(transparent)]
        #[derive(Clone, Copy)]
        struct Wrong(u32);
        // SAFETY: deliberately wrong (an int64_t for a u32) for the check to catch; never passed
        // to C.
        unsafe impl CArg for Wrong {
            fn c_type() -> Type {
                Type::I64
            }
        }
        crate::c_struct! {
            #[allow(dead_code)]
            struct Lying {
                x: Wrong,
            }
            impl CArg;
        }
        let _ = Lying::c_type();
    }
}
