//! C types as the call core sees them: scalars, aggregates described by their field layout,
//! and signatures. Nothing here knows about registers; `crate::abi` maps these to locations.
//!
//! [`Type`] is `Copy`: an aggregate is a handle to its layout, which is stored once per process
//! (see [`Aggregate`]).

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::ctype::error::Error;
use crate::ctype::error::TypeDescription;
use crate::ctype::limits::{MAX_AGGREGATE_BYTES, MAX_ALIGN, MAX_ARGS, MAX_NESTING};

/// A C argument or return type.
///
/// `Copy`, however large the struct it describes: an [`Aggregate`] is a handle. New C types
/// (vector types, `_Float16`, ...) may be added, hence `#[non_exhaustive]`.
///
/// The `long double` type is [`Type::LongDouble`]; its values are
/// [`CLongDouble`](crate::CLongDouble).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Type {
    /// `int8_t` / `signed char`.
    I8,
    /// `uint8_t` / `unsigned char`.
    U8,
    /// `int16_t`.
    I16,
    /// `uint16_t`.
    U16,
    /// `int32_t` / `int`.
    I32,
    /// `uint32_t`.
    U32,
    /// `int64_t` / `long` (LP64).
    I64,
    /// `uint64_t` / `size_t`.
    U64,
    /// Any data or function pointer.
    Pointer,
    /// `float`.
    F32,
    /// `double`.
    F64,
    /// `__int128`: 16 bytes, 16-aligned. SysV x86-64: a pair of integer registers or wholly in
    /// memory, returned in rax:rdx; AAPCS64: an even-numbered register pair, returned in x0:x1.
    I128,
    /// `unsigned __int128`: as [`Type::I128`].
    U128,
    /// `long double`: 16 bytes, 16-aligned on both ABIs, with different formats. SysV x86-64:
    /// the 80-bit x87 format in the low 10 bytes (6 bytes of padding), passed in memory and
    /// returned in `st(0)`; AAPCS64: IEEE binary128, in a `q` register (an HFA member type).
    ///
    /// A 16-byte, 16-aligned [`Type::Aggregate`] is not a `long double`: it is classified as
    /// the struct it is.
    LongDouble,
    /// `_Complex float`: two `float`s (real, imaginary), 8 bytes, 4-aligned; classified as a
    /// struct of two floats (SysV: one SSE eightbyte; AAPCS64: an HFA of two).
    ComplexF32,
    /// `_Complex double`: two `double`s, 16 bytes, 8-aligned (SysV: two SSE eightbytes;
    /// AAPCS64: an HFA of two).
    ComplexF64,
    /// `_Complex long double`: two `long double`s, 32 bytes, 16-aligned. SysV x86-64: class
    /// COMPLEX_X87, passed in memory, returned in `st(0)` (real) and `st(1)` (imaginary);
    /// AAPCS64: an HFA of two binary128 values (two `q` registers).
    ComplexLongDouble,
    /// A `struct` passed or returned by value.
    Aggregate(Aggregate),
}

impl Type {
    /// `sizeof` the type on LP64 targets.
    pub fn size(&self) -> usize {
        match self {
            Type::I8 | Type::U8 => 1,
            Type::I16 | Type::U16 => 2,
            Type::I32 | Type::U32 | Type::F32 => 4,
            Type::I64 | Type::U64 | Type::Pointer | Type::F64 | Type::ComplexF32 => 8,
            Type::I128 | Type::U128 | Type::LongDouble | Type::ComplexF64 => 16,
            Type::ComplexLongDouble => 32,
            Type::Aggregate(a) => a.size(),
        }
    }

    /// `_Alignof` the type on LP64 targets.
    pub fn align(&self) -> usize {
        match self {
            Type::Aggregate(a) => a.align(),
            Type::ComplexF32 => 4,
            Type::ComplexF64 => 8,
            Type::ComplexLongDouble => 16,
            scalar => scalar.size(),
        }
    }

    /// True for the real floating-point types: `float`, `double`, `long double`.
    pub fn is_float(&self) -> bool {
        matches!(self, Type::F32 | Type::F64 | Type::LongDouble)
    }

    /// For a complex type, the type of its real and imaginary parts.
    pub fn complex_element(&self) -> Option<Type> {
        match self {
            Type::ComplexF32 => Some(Type::F32),
            Type::ComplexF64 => Some(Type::F64),
            Type::ComplexLongDouble => Some(Type::LongDouble),
            _ => None,
        }
    }

    /// True for a type that fits one 64-bit word and is placed as a scalar: the integers up to
    /// 64 bits, pointers, `float` and `double`. Typed calls pass these as their value
    /// ([`CArg::word`](crate::CArg::word)); every other type by address, like an aggregate.
    pub fn is_word(&self) -> bool {
        !matches!(
            self,
            Type::I128
                | Type::U128
                | Type::LongDouble
                | Type::ComplexF32
                | Type::ComplexF64
                | Type::ComplexLongDouble
                | Type::Aggregate(_)
        )
    }

    /// True for the signed integer types (not pointers).
    pub fn is_signed(&self) -> bool {
        matches!(self, Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::I128)
    }

    /// The C spelling, for messages and generated test code.
    pub fn c_name(&self) -> &'static str {
        match self {
            Type::I8 => "int8_t",
            Type::U8 => "uint8_t",
            Type::I16 => "int16_t",
            Type::U16 => "uint16_t",
            Type::I32 => "int32_t",
            Type::U32 => "uint32_t",
            Type::I64 => "int64_t",
            Type::U64 => "uint64_t",
            Type::Pointer => "void *",
            Type::F32 => "float",
            Type::F64 => "double",
            Type::I128 => "__int128",
            Type::U128 => "unsigned __int128",
            Type::LongDouble => "long double",
            Type::ComplexF32 => "_Complex float",
            Type::ComplexF64 => "_Complex double",
            Type::ComplexLongDouble => "_Complex long double",
            Type::Aggregate(_) => "struct",
        }
    }

    /// A short description for messages: the C name of a scalar, the size and alignment of an
    /// aggregate.
    pub fn describe(&self) -> String {
        match self {
            Type::Aggregate(a) => format!("struct of {} bytes, alignment {}", a.size(), a.align()),
            t => t.c_name().to_string(),
        }
    }

    /// [`describe`](Self::describe) without allocating, for the call core's errors.
    pub fn description(&self) -> TypeDescription {
        match self {
            Type::Aggregate(a) => TypeDescription::Struct { size: a.size(), align: a.align() },
            t => TypeDescription::Scalar(t.c_name()),
        }
    }

    fn depth(&self) -> usize {
        match self {
            Type::Aggregate(a) => a.0.depth,
            _ => 0,
        }
    }

    /// Calls `f(offset, scalar)` for every scalar in the type, arrays expanded, in memory order.
    /// A complex number is two scalars of its element type (both ABIs classify `_Complex T` as
    /// a struct of two `T`).
    pub(crate) fn for_each_scalar(&self, base: usize, f: &mut impl FnMut(usize, &Type)) {
        if let Some(e) = self.complex_element() {
            f(base, &e);
            f(base + e.size(), &e);
            return;
        }
        match self {
            Type::Aggregate(a) => {
                for field in a.fields() {
                    let stride = field.ty.size();
                    for k in 0..field.count {
                        field.ty.for_each_scalar(base + field.offset + k * stride, f);
                    }
                }
            }
            scalar => f(base, scalar),
        }
    }
}

/// One field of an [`Aggregate`]: `count` consecutive elements of `ty` starting at `offset`
/// (`count > 1` is a C array member). Make one with [`Field::new`], then
/// [`with_count`](Field::with_count) and [`with_align`](Field::with_align); what a field may
/// describe can grow (bit-fields, say), hence `#[non_exhaustive]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Field {
    /// Byte offset from the start of the aggregate.
    pub offset: usize,
    /// Element type.
    pub ty: Type,
    /// Number of elements (1 for a plain member).
    pub count: usize,
    /// Alignment of the member declaration: the type's, or more with `_Alignas`.
    pub align: usize,
}

impl Field {
    /// A plain member of type `ty` at byte `offset`: one element, aligned as its type.
    pub fn new(offset: usize, ty: Type) -> Self {
        Field { offset, ty, count: 1, align: ty.align() }
    }

    /// This field as an array member of `count` elements.
    pub fn with_count(self, count: usize) -> Self {
        Field { count, ..self }
    }

    /// This field declared with alignment `align` (`_Alignas`, at least the type's).
    pub fn with_align(self, align: usize) -> Self {
        Field { align, ..self }
    }
}

/// A C `struct` by its layout. Build one with [`Aggregate::builder`] (C's layout algorithm) or
/// [`Aggregate::from_fields`] (an explicit layout, validated).
///
/// An `Aggregate` is a `Copy` handle to its layout. Each distinct layout (size, alignment and
/// fields, nested structs included) is stored once, process-wide, when it is first built, and
/// kept for the life of the process; building an equal layout again returns the same handle, so
/// two aggregates are equal exactly when their layouts are. The cost: a lock and a hash lookup
/// each time a layout is built (plan time, never during a call), and memory that is never given
/// back, about 100 bytes plus 40 per field for each distinct layout. A program that builds
/// unboundedly many different layouts grows by that much for each.
#[derive(Clone, Copy)]
pub struct Aggregate(&'static Layout);

/// What an [`Aggregate`] points to: the validated layout, stored once per process.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Layout {
    size: usize,
    align: usize,
    natural_align: usize,
    depth: usize,
    fields: Box<[Field]>,
}

impl Layout {
    /// The stored layout equal to this one: the one stored before, or this one, stored now.
    fn intern(self) -> Aggregate {
        static LAYOUTS: OnceLock<Mutex<HashSet<&'static Layout>>> = OnceLock::new();
        // Nothing panics while holding the lock; a poisoned set is still consistent.
        let mut layouts = LAYOUTS.get_or_init(Default::default).lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&stored) = layouts.get(&self) {
            return Aggregate(stored);
        }
        let stored: &'static Layout = Box::leak(Box::new(self));
        layouts.insert(stored);
        Aggregate(stored)
    }
}

// Equal layouts are one stored layout (Layout::intern), so the handle's identity is the layout's
// equality, and its address a hash consistent with it.
impl PartialEq for Aggregate {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self.0, other.0)
    }
}

impl Eq for Aggregate {}

impl core::hash::Hash for Aggregate {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        core::ptr::hash(self.0, state)
    }
}

impl core::fmt::Debug for Aggregate {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let Layout { size, align, natural_align, depth, fields } = self.0;
        f.debug_struct("Aggregate")
            .field("size", size)
            .field("align", align)
            .field("natural_align", natural_align)
            .field("depth", depth)
            .field("fields", fields)
            .finish()
    }
}

impl Aggregate {
    /// Starts a struct laid out as a C compiler would: each member at the next offset aligned
    /// to its alignment, the size rounded up to the struct's alignment.
    pub fn builder() -> AggregateBuilder {
        AggregateBuilder { fields: Vec::new(), align: 1 }
    }

    /// An aggregate from an explicit layout. Fields must be in offset order, aligned, inside
    /// `size` and not overlapping; `size` must be a multiple of `align`, and `align` at least
    /// every field's alignment. Every layout that breaks a rule is a typed error, whatever the
    /// numbers (an offset or count near `usize::MAX` included).
    pub fn from_fields(size: usize, align: usize, fields: Vec<Field>) -> Result<Self, Error> {
        check_align(align)?;
        if fields.is_empty() || size == 0 {
            return Err(Error::EmptyAggregate);
        }
        if size > MAX_AGGREGATE_BYTES {
            return Err(Error::AggregateTooLarge { size, limit: MAX_AGGREGATE_BYTES });
        }
        let mut end_prev = 0;
        let mut natural_align = 1;
        let mut depth = 0;
        for (index, f) in fields.iter().enumerate() {
            check_align(f.align)?;
            if f.count == 0 || f.ty.size() == 0 {
                return Err(Error::EmptyAggregate);
            }
            if f.align < f.ty.align() {
                return Err(Error::FieldAlignBelowType { index, align: f.align, type_align: f.ty.align() });
            }
            if f.offset % f.align != 0 {
                return Err(Error::MisalignedField { index, offset: f.offset, align: f.align });
            }
            if f.offset < end_prev {
                return Err(Error::OverlappingFields { index });
            }
            let end = f.ty.size().checked_mul(f.count).and_then(|bytes| f.offset.checked_add(bytes));
            let end = end.ok_or(Error::FieldOverflow { index, offset: f.offset, count: f.count })?;
            if end > size {
                return Err(Error::FieldOutOfBounds { index, end, size });
            }
            end_prev = end;
            natural_align = natural_align.max(f.align);
            depth = depth.max(f.ty.depth());
        }
        if align < natural_align {
            return Err(Error::AlignmentBelowFields { align, fields: natural_align });
        }
        if size % align != 0 {
            return Err(Error::InvalidSize { size, align });
        }
        if depth + 1 > MAX_NESTING {
            return Err(Error::NestingTooDeep { limit: MAX_NESTING });
        }
        Ok(Layout { size, align, natural_align, depth: depth + 1, fields: fields.into_boxed_slice() }.intern())
    }

    /// `sizeof`.
    pub fn size(&self) -> usize {
        self.0.size
    }

    /// `_Alignof`, including an alignment attribute on the struct itself.
    pub fn align(&self) -> usize {
        self.0.align
    }

    /// The largest member alignment, ignoring an attribute on the struct itself: the
    /// "natural alignment" AAPCS64 uses to place arguments (as GCC and Clang do).
    pub fn natural_align(&self) -> usize {
        self.0.natural_align
    }

    /// The fields in offset order.
    pub fn fields(&self) -> &[Field] {
        &self.0.fields
    }

    /// The scalar members with their offsets, arrays and nested structs expanded.
    pub fn scalars(&self) -> Vec<(usize, Type)> {
        let mut out = Vec::new();
        Type::Aggregate(*self).for_each_scalar(0, &mut |off, t| out.push((off, *t)));
        out
    }
}

fn check_align(align: usize) -> Result<(), Error> {
    if align == 0 || !align.is_power_of_two() || align > MAX_ALIGN {
        return Err(Error::InvalidAlignment { align, max: MAX_ALIGN });
    }
    Ok(())
}

/// Builds an [`Aggregate`] member by member with C's layout rules.
#[derive(Clone, Debug)]
pub struct AggregateBuilder {
    fields: Vec<(Type, usize, usize)>,
    align: usize,
}

impl AggregateBuilder {
    /// Appends a member of type `ty`.
    pub fn field(self, ty: Type) -> Self {
        self.array_aligned(ty, 1, 1)
    }

    /// Appends an array member `ty name[count]`.
    pub fn array(self, ty: Type, count: usize) -> Self {
        self.array_aligned(ty, count, 1)
    }

    /// Appends a member declared `_Alignas(align) ty name`.
    pub fn field_aligned(self, ty: Type, align: usize) -> Self {
        self.array_aligned(ty, 1, align)
    }

    /// Appends `_Alignas(align) ty name[count]`.
    pub fn array_aligned(mut self, ty: Type, count: usize, align: usize) -> Self {
        self.fields.push((ty, count, align));
        self
    }

    /// Sets an alignment attribute on the struct itself (`__attribute__((aligned(n)))`).
    pub fn align(mut self, align: usize) -> Self {
        self.align = align;
        self
    }

    /// Lays the members out and validates the result.
    pub fn build(self) -> Result<Aggregate, Error> {
        check_align(self.align)?;
        let mut offset = 0usize;
        let mut align = self.align;
        let mut fields = Vec::with_capacity(self.fields.len());
        for (ty, count, explicit) in self.fields {
            check_align(explicit)?;
            let field_align = ty.align().max(explicit);
            // Both stay within MAX_AGGREGATE_BYTES (checked below before the next member), so
            // the arithmetic cannot overflow.
            offset = offset.next_multiple_of(field_align);
            let bytes = ty.size().saturating_mul(count);
            if bytes > MAX_AGGREGATE_BYTES {
                return Err(Error::AggregateTooLarge { size: bytes, limit: MAX_AGGREGATE_BYTES });
            }
            fields.push(Field { offset, ty, count, align: field_align });
            offset += bytes;
            if offset > MAX_AGGREGATE_BYTES {
                return Err(Error::AggregateTooLarge { size: offset, limit: MAX_AGGREGATE_BYTES });
            }
            align = align.max(field_align);
        }
        let size = offset.next_multiple_of(align);
        Aggregate::from_fields(size, align, fields)
    }
}

/// A C function type: argument types, return type, and for variadic functions the number of
/// named arguments.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    args: Vec<Type>,
    ret: Option<Type>,
    fixed: Option<usize>,
}

impl Signature {
    /// A prototype `ret f(args...)`; `ret` is `None` for `void`.
    pub fn new(args: Vec<Type>, ret: Option<Type>) -> Result<Self, Error> {
        if args.len() > MAX_ARGS {
            return Err(Error::TooManyArguments { count: args.len(), limit: MAX_ARGS });
        }
        Ok(Signature { args, ret, fixed: None })
    }

    /// A call to a variadic function `ret f(named..., ...)`: the first `fixed` of `args` are the
    /// named parameters, the rest the variadic ones. Variadic arguments must already have C's
    /// default argument promotions applied (no `float`, no integer narrower than `int`).
    pub fn variadic(fixed: usize, args: Vec<Type>, ret: Option<Type>) -> Result<Self, Error> {
        if fixed == 0 || fixed > args.len() {
            return Err(Error::InvalidVariadic { fixed, total: args.len() });
        }
        for (index, ty) in args.iter().enumerate().skip(fixed) {
            if matches!(ty, Type::F32 | Type::I8 | Type::U8 | Type::I16 | Type::U16) {
                return Err(Error::VariadicPromotion { index, ty: ty.c_name() });
            }
        }
        let mut sig = Signature::new(args, ret)?;
        sig.fixed = Some(fixed);
        Ok(sig)
    }

    /// Argument types in order.
    pub fn args(&self) -> &[Type] {
        &self.args
    }

    /// Return type, `None` for `void`.
    pub fn ret(&self) -> Option<&Type> {
        self.ret.as_ref()
    }

    /// For a variadic function, the number of named arguments.
    pub fn fixed_args(&self) -> Option<usize> {
        self.fixed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_lays_out_like_c() {
        let s = Aggregate::builder().field(Type::I8).field(Type::F64).field(Type::I16).build().unwrap();
        assert_eq!((s.size(), s.align()), (24, 8));
        assert_eq!(s.fields().iter().map(|f| f.offset).collect::<Vec<_>>(), vec![0, 8, 16]);
        let a = Aggregate::builder().field(Type::I8).field_aligned(Type::I32, 16).build().unwrap();
        assert_eq!((a.size(), a.align(), a.natural_align(), a.fields()[1].offset), (32, 16, 16, 16));
        let t = Aggregate::builder().field(Type::I64).align(16).build().unwrap();
        assert_eq!((t.size(), t.align(), t.natural_align()), (16, 16, 8));
    }

    #[test]
    fn bad_layouts_are_typed_errors() {
        assert_eq!(Aggregate::builder().build(), Err(Error::EmptyAggregate));
        assert_eq!(Aggregate::builder().array(Type::I32, 0).build(), Err(Error::EmptyAggregate));
        assert!(matches!(Aggregate::builder().field(Type::I8).align(3).build(), Err(Error::InvalidAlignment { .. })));
        assert!(matches!(Aggregate::builder().field(Type::I8).align(32).build(), Err(Error::InvalidAlignment { .. })));
        let f = |offset, ty| Field { offset, ty, count: 1, align: 4 };
        assert!(matches!(Aggregate::from_fields(8, 4, vec![f(2, Type::I32)]), Err(Error::MisalignedField { .. })));
        assert!(matches!(
            Aggregate::from_fields(8, 4, vec![f(4, Type::I32), f(0, Type::I32)]),
            Err(Error::OverlappingFields { .. })
        ));
        assert!(matches!(Aggregate::from_fields(4, 4, vec![f(4, Type::I32)]), Err(Error::FieldOutOfBounds { .. })));
        assert!(matches!(Aggregate::from_fields(6, 4, vec![f(0, Type::I32)]), Err(Error::InvalidSize { .. })));
        assert!(matches!(Aggregate::builder().array(Type::I64, 1 << 20).build(), Err(Error::AggregateTooLarge { .. })));
        let mut deep = Type::I8;
        for _ in 0..=crate::ctype::limits::MAX_NESTING {
            deep = match Aggregate::builder().field(deep).build() {
                Ok(a) => Type::Aggregate(a),
                Err(e) => {
                    assert_eq!(e, Error::NestingTooDeep { limit: crate::ctype::limits::MAX_NESTING });
                    return;
                }
            };
        }
        panic!("nesting limit not enforced");
    }

    #[test]
    fn every_bad_explicit_layout_is_a_typed_error_whatever_the_numbers() {
        let f = |offset, ty, count, align| Field { offset, ty, count, align };
        // Offsets and counts whose end overflows usize (a panic, or a wrapped end accepted).
        for (fields, want) in [
            (vec![f(0, Type::I16, 1 << 63, 2)], Error::FieldOverflow { index: 0, offset: 0, count: 1 << 63 }),
            (vec![f(0, Type::I64, usize::MAX, 8)], Error::FieldOverflow { index: 0, offset: 0, count: usize::MAX }),
            (
                vec![f(0, Type::I8, 1, 1), f(usize::MAX - 3, Type::I32, 1, 4)],
                Error::FieldOverflow { index: 1, offset: usize::MAX - 3, count: 1 },
            ),
            (
                vec![f(usize::MAX & !15, Type::LongDouble, 2, 16)],
                Error::FieldOverflow { index: 0, offset: usize::MAX & !15, count: 2 },
            ),
        ] {
            assert_eq!(Aggregate::from_fields(16, 16, fields), Err(want));
        }
        // Zero, non-power-of-two and huge alignments, of the aggregate and of a field.
        for align in [0, 3, 12, 32, usize::MAX, 1 << 63] {
            let want = Err(Error::InvalidAlignment { align, max: MAX_ALIGN });
            assert_eq!(Aggregate::from_fields(16, align, vec![f(0, Type::I8, 1, 1)]), want);
            assert_eq!(Aggregate::from_fields(16, 16, vec![f(0, Type::I8, 1, align)]), want);
        }
        // A member declared less aligned than its type, and an aggregate less aligned than
        // its members: each said as it is.
        assert_eq!(
            Aggregate::from_fields(8, 4, vec![f(0, Type::I32, 1, 1)]),
            Err(Error::FieldAlignBelowType { index: 0, align: 1, type_align: 4 })
        );
        assert_eq!(
            Aggregate::from_fields(8, 1, vec![f(0, Type::I32, 1, 4)]),
            Err(Error::AlignmentBelowFields { align: 1, fields: 4 })
        );
        // Empty and too large, nested included.
        assert_eq!(Aggregate::from_fields(0, 1, vec![f(0, Type::I8, 1, 1)]), Err(Error::EmptyAggregate));
        assert_eq!(Aggregate::from_fields(8, 8, vec![]), Err(Error::EmptyAggregate));
        assert_eq!(
            Aggregate::from_fields(usize::MAX, 1, vec![f(0, Type::I8, 1, 1)]),
            Err(Error::AggregateTooLarge { size: usize::MAX, limit: MAX_AGGREGATE_BYTES })
        );
        let inner = Type::Aggregate(Aggregate::builder().array(Type::I8, 4000).build().unwrap());
        assert_eq!(
            Aggregate::builder().field(inner).field(inner).build(),
            Err(Error::AggregateTooLarge { size: 8000, limit: MAX_AGGREGATE_BYTES })
        );
        let pair = Type::Aggregate(Aggregate::builder().field(Type::I32).field(Type::I32).build().unwrap());
        assert_eq!(
            Aggregate::from_fields(16, 4, vec![f(0, pair, usize::MAX / 4, 4)]),
            Err(Error::FieldOverflow { index: 0, offset: 0, count: usize::MAX / 4 })
        );
    }

    #[test]
    fn an_aggregate_is_a_copy_handle_equal_layouts_share() {
        // Type is Copy, aggregates included.
        let words = [Type::U32; 17];
        let pair = Type::Aggregate(Aggregate::builder().field(Type::I32).field(Type::F64).build().unwrap());
        let (a, b) = (pair, pair);
        assert_eq!(words.len(), 17);
        assert_eq!(a, b);
        // The same layout, however it is made, is the same handle; another layout is not.
        let Type::Aggregate(built) = pair else { unreachable!() };
        let explicit = Aggregate::from_fields(16, 8, vec![Field::new(0, Type::I32), Field::new(8, Type::F64)]).unwrap();
        assert!(core::ptr::eq(built.0, explicit.0));
        assert_eq!(built, explicit);
        let other = Aggregate::builder().field(Type::I32).field(Type::I64).build().unwrap();
        assert_ne!(built, other);
        // Nested: equal when their members are.
        let outer = |inner: Aggregate| Aggregate::builder().field(Type::Aggregate(inner)).array(Type::U8, 3).build();
        assert_eq!(outer(built).unwrap(), outer(explicit).unwrap());
        assert_ne!(outer(built).unwrap(), outer(other).unwrap());
        // Debug shows the layout, as before it was a handle.
        assert_eq!(
            format!("{built:?}"),
            format!(
                "Aggregate {{ size: 16, align: 8, natural_align: 8, depth: 1, fields: {:?} }}",
                [Field::new(0, Type::I32), Field::new(8, Type::F64)]
            )
        );
        assert_eq!(
            Field::new(4, Type::U16).with_count(3).with_align(8),
            Field { offset: 4, ty: Type::U16, count: 3, align: 8 }
        );
    }

    #[test]
    fn variadic_arguments_must_be_promoted() {
        assert!(matches!(
            Signature::variadic(1, vec![Type::I32, Type::F32], None),
            Err(Error::VariadicPromotion { index: 1, .. })
        ));
        assert!(matches!(Signature::variadic(0, vec![Type::I32], None), Err(Error::InvalidVariadic { .. })));
        assert!(Signature::variadic(1, vec![Type::I32, Type::F64, Type::I64], None).is_ok());
    }
}
