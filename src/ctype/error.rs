//! The call core's error.

use core::fmt;

/// What can fail in the call core, one variant per failure site: making a
/// [`Signature`](crate::Signature) or [`Aggregate`](crate::Aggregate), planning, binding,
/// calling, making callbacks and resolving symbol tables.
///
/// The crate has one error per layer (docs/adr/0019-errors-per-layer.md); each wraps the ones
/// below it, and this one, the call core's, is at the bottom:
///
/// | layer | its error |
/// | --- | --- |
/// | the call core: C types, placement, plans, typed bindings, callbacks, symbol tables | `nccl_trampoline::Error` (this one) |
/// | the CUDA driver's binding | [`cuda::Error`](crate::cuda::Error): this one in `Core` |
/// | the NCCL facade | [`nccl::Error`](crate::nccl::Error): this one in `Core`, `cuda::Error` in `Cuda` |
/// | the launchers, the unique id's route and MPI | [`launch::Error`](crate::launch::Error): the facade's, the rendezvous's ([`launch::rendezvous::Error`](crate::launch::rendezvous::Error)), the CUDA driver's and this one |
/// | NCCL's plugins: finding, loading, hosting and testing them | [`plugin::PluginError`](crate::plugin::PluginError): this one in `Core` |
///
/// It is `Copy` and building one never allocates: every field is a number, a `&'static str` or a
/// [`TypeDescription`], so a call that fails allocates no more than one that succeeds.
///
/// Plan-time variants (layouts, limits, variadic promotion) are reported when a
/// [`CallPlan`](crate::CallPlan) is made, so a call never meets them; bind-time variants when a
/// [`TypedFn`](crate::TypedFn) is made; call-time variants check what the caller passes to
/// [`CallPlan::call`](crate::CallPlan::call).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// This target has no trampoline (see `docs/adr/0005-porting-guide.md`).
    #[error("no call trampoline for target {target}")]
    UnsupportedTarget {
        /// `arch-os` of the target the crate was built for.
        target: &'static str,
    },
    /// The plan was made for another ABI than the one this binary runs on.
    #[error("plan is for the {plan} ABI but this target uses {native}")]
    AbiMismatch {
        /// ABI the plan was prepared for.
        plan: &'static str,
        /// ABI of this target, or "none".
        native: &'static str,
    },
    /// An alignment that is zero, not a power of two, or above the supported maximum.
    #[error("invalid alignment {align} (must be a power of two, at most {max})")]
    InvalidAlignment {
        /// The alignment given.
        align: usize,
        /// Largest supported alignment.
        max: usize,
    },
    /// An aggregate (or an array field) with no bytes; C has no such type.
    #[error("aggregate or array field has size zero")]
    EmptyAggregate,
    /// A field whose offset is not a multiple of its alignment (packed layouts are not supported).
    #[error("field {index} at offset {offset} is not aligned to {align}")]
    MisalignedField {
        /// Index of the field in the aggregate.
        index: usize,
        /// Its byte offset.
        offset: usize,
        /// Its required alignment.
        align: usize,
    },
    /// A field whose declared alignment is below its type's (a packed member; not supported).
    #[error("field {index} declares alignment {align}, below its type's {type_align}")]
    FieldAlignBelowType {
        /// Index of the field.
        index: usize,
        /// The alignment it declares.
        align: usize,
        /// Its type's alignment.
        type_align: usize,
    },
    /// A field whose end (`offset + count * sizeof(type)`) is past the largest address.
    #[error("field {index} at offset {offset} with {count} elements ends past the address space")]
    FieldOverflow {
        /// Index of the field.
        index: usize,
        /// Its byte offset.
        offset: usize,
        /// Its number of elements.
        count: usize,
    },
    /// An aggregate alignment below the alignment of one of its fields.
    #[error("aggregate alignment {align} is below its fields' alignment {fields}")]
    AlignmentBelowFields {
        /// The aggregate's alignment.
        align: usize,
        /// The largest field alignment.
        fields: usize,
    },
    /// A field that does not fit inside the aggregate's size.
    #[error("field {index} ends at byte {end}, past the aggregate size {size}")]
    FieldOutOfBounds {
        /// Index of the field.
        index: usize,
        /// First byte after the field.
        end: usize,
        /// Size of the aggregate.
        size: usize,
    },
    /// Fields that share bytes (unions are not supported).
    #[error("field {index} overlaps the field before it")]
    OverlappingFields {
        /// Index of the later field.
        index: usize,
    },
    /// An aggregate size that is not a multiple of its alignment.
    #[error("aggregate size {size} is not a multiple of its alignment {align}")]
    InvalidSize {
        /// Size given.
        size: usize,
        /// Alignment of the aggregate.
        align: usize,
    },
    /// An aggregate larger than the plan supports.
    #[error("aggregate of {size} bytes exceeds the limit of {limit}")]
    AggregateTooLarge {
        /// Its size.
        size: usize,
        /// [`limits::MAX_AGGREGATE_BYTES`](crate::ctype::limits::MAX_AGGREGATE_BYTES).
        limit: usize,
    },
    /// Aggregates nested deeper than the plan supports.
    #[error("aggregates nested deeper than {limit} levels")]
    NestingTooDeep {
        /// [`limits::MAX_NESTING`](crate::ctype::limits::MAX_NESTING).
        limit: usize,
    },
    /// More arguments than the plan supports.
    #[error("{count} arguments exceed the limit of {limit}")]
    TooManyArguments {
        /// Number of arguments.
        count: usize,
        /// [`limits::MAX_ARGS`](crate::ctype::limits::MAX_ARGS).
        limit: usize,
    },
    /// The arguments passed on the stack need more bytes than the plan supports.
    #[error("stack arguments need {needed} bytes, the limit is {limit}")]
    StackTooLarge {
        /// Bytes needed.
        needed: usize,
        /// [`limits::MAX_STACK_BYTES`](crate::ctype::limits::MAX_STACK_BYTES).
        limit: usize,
    },
    /// The by-value copies of large aggregates (AArch64) need more bytes than supported.
    #[error("by-value aggregate copies need {needed} bytes, the limit is {limit}")]
    CopiesTooLarge {
        /// Bytes needed.
        needed: usize,
        /// [`limits::MAX_COPY_BYTES`](crate::ctype::limits::MAX_COPY_BYTES).
        limit: usize,
    },
    /// A variadic signature whose fixed-argument count is zero or above the argument count.
    #[error("variadic signature with {fixed} fixed arguments out of {total}")]
    InvalidVariadic {
        /// Fixed arguments declared.
        fixed: usize,
        /// All arguments.
        total: usize,
    },
    /// A variadic argument of a type that C's default argument promotions never pass.
    #[error("variadic argument {index} is {ty}; C promotes it, pass the promoted type")]
    VariadicPromotion {
        /// Index of the argument.
        index: usize,
        /// Its type.
        ty: &'static str,
    },
    /// `call` got another number of arguments than the signature has.
    #[error("the signature has {expected} arguments but {got} were passed")]
    ArgumentCount {
        /// Arguments in the signature.
        expected: usize,
        /// Arguments passed.
        got: usize,
    },
    /// A typed binding whose argument type differs from the signature's.
    #[error("argument {index} is {expected} in the signature but {got} in the binding")]
    ArgumentType {
        /// Index of the argument.
        index: usize,
        /// The signature's type.
        expected: TypeDescription,
        /// The binding's type.
        got: TypeDescription,
    },
    /// A typed binding whose result type differs from the signature's (or is an aggregate,
    /// which typed bindings do not return).
    #[error("the result is {expected} in the signature but {got} in the binding")]
    ResultType {
        /// The signature's type.
        expected: TypeDescription,
        /// The binding's type.
        got: TypeDescription,
    },
    /// A by-value copy width this CPU or target cannot run, asked for by the crate's own tests
    /// and benchmarks (a plan made by [`CallPlan::new`](crate::CallPlan::new) uses the widest
    /// this CPU runs).
    #[error("the {copy} copy is not available on this CPU")]
    VectorCopyUnavailable {
        /// Its name: `sse`, `avx`, `avx512vl`, `neon` or `xlen`.
        copy: &'static str,
    },
    /// A null pointer where the call needs a value (function, argument or result buffer).
    #[error("null {what} pointer")]
    NullPointer {
        /// Which pointer.
        what: &'static str,
    },
    /// Callbacks ([`Callback`](crate::Callback)) on a target whose assembly has no callback
    /// entries (x86-64, AArch64 and riscv64 Linux have them).
    #[error("no callback entries for target {target} yet")]
    CallbacksUnsupported {
        /// `arch-os` of the target the crate was built for.
        target: &'static str,
    },
    /// A variadic callback's signature that lists variable arguments: a variadic C function
    /// type names its fixed parameters only (`Signature::variadic(n, named, ret)` with
    /// `named.len() == n`); the handler reads the others through its `VaList`.
    #[error("a variadic callback's signature lists its {named} named arguments only, not {total}")]
    VariadicCallbackArguments {
        /// Named arguments declared.
        named: usize,
        /// Arguments listed.
        total: usize,
    },
    /// `CallbackArgs::va_list` in the handler of a callback whose signature is not variadic.
    #[error("the callback's signature is not variadic: it has no variable arguments")]
    NotVariadic,
    /// A variable argument read as a type no C caller passes through `...`: C's default
    /// argument promotions turn `float` into `double` and the integers narrower than `int`
    /// into `int` (C11 6.5.2.2p7).
    #[error("a variable argument cannot be read as {ty}: C promotes it, read the promoted type")]
    VaArgPromoted {
        /// The type asked for.
        ty: &'static str,
    },
    /// A variable argument read as a type the `va_list` view does not read (the complex types).
    #[error("a variable argument cannot be read as {ty}: the va_list view reads promoted scalars only")]
    VaArgUnsupported {
        /// The type asked for.
        ty: &'static str,
    },
    /// Every entry of the callback pool is held by a live [`Callback`](crate::Callback).
    #[error("all {size} callback entries are in use")]
    CallbackPoolExhausted {
        /// The pool's size ([`Callback::POOL_SIZE`](crate::Callback::POOL_SIZE)).
        size: usize,
    },
    /// A typed callback's argument or result type whose Rust layout is not its C type's (a
    /// wrong `CArg` implementation of a `#[repr(C)]` struct).
    #[error("the {position} of a typed callback is {c_size} bytes aligned to {c_align} in C but {rust_size} bytes aligned to {rust_align} in Rust")]
    CallbackLayout {
        /// Which argument, or the result.
        position: Position,
        /// `sizeof` the C type.
        c_size: usize,
        /// `_Alignof` the C type.
        c_align: usize,
        /// `size_of` the Rust type.
        rust_size: usize,
        /// `align_of` the Rust type.
        rust_align: usize,
    },
    /// A type the direct path of a typed callback
    /// ([`TypedCallback::direct`](crate::TypedCallback::direct)) does not take: one Rust's own
    /// `extern "C"` does not place as C does (`long double`, `_Complex long double`: Rust has no
    /// C long double), or a struct with an alignment attribute, whose placement was not checked
    /// against C on every ABI. [`TypedCallback::new`](crate::TypedCallback::new) takes them.
    #[error("the {position} of a direct callback is {what}; TypedCallback::new takes it")]
    DirectCallbackType {
        /// Which argument, or the result.
        position: Position,
        /// The C type refused and why, in words ("a long double (Rust has no C long double)").
        what: &'static str,
    },
    /// A callback's handler asked for an argument the signature does not have.
    #[error("argument {index} does not exist: the signature has {count}")]
    ArgumentIndex {
        /// The index asked for.
        index: usize,
        /// Arguments in the signature.
        count: usize,
    },
    /// A value's bytes of another length than its C type's size.
    #[error("the value has {expected} bytes but {got} were given")]
    ValueSize {
        /// `sizeof` the C type.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// A callback's handler read an argument as another type than the signature's.
    #[error("argument {index} is {expected} in the signature but was read as {got}")]
    CallbackArgumentType {
        /// Index of the argument.
        index: usize,
        /// The signature's type.
        expected: TypeDescription,
        /// The type it was read as.
        got: TypeDescription,
    },
    /// A callback's handler set a result of another type than the signature's.
    #[error("the result is {expected} in the signature but was set as {got}")]
    CallbackResultType {
        /// The signature's result type (`void` included).
        expected: TypeDescription,
        /// The type it was set as.
        got: TypeDescription,
    },
    /// A function of a [`foreign_functions!`](crate::foreign_functions) table that the loaded
    /// library does not export was called.
    #[error("{symbol} is not exported by the loaded library")]
    SymbolMissing {
        /// The C symbol.
        symbol: &'static str,
    },
    /// A [`foreign_functions!`](crate::foreign_functions) table was bound to another number of
    /// resolved entries than it has functions.
    #[error("{got} resolved entries for a table of {expected} functions")]
    TableLength {
        /// The table's functions.
        expected: usize,
        /// The entries given.
        got: usize,
    },
}

/// A C type as error messages name it, without allocating: the C name of a scalar, the size
/// and alignment of a struct.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeDescription {
    /// No result (`void`).
    Void,
    /// A scalar, by its C name (`int32_t`, `void *`, `long double`, ...).
    Scalar(&'static str),
    /// A struct, by its size and alignment.
    Struct {
        /// Its size in bytes.
        size: usize,
        /// Its alignment in bytes.
        align: usize,
    },
    /// Any result a typed binding can return (not a struct, `long double` or `_Complex long
    /// double`).
    TypedResult,
}

impl fmt::Display for TypeDescription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeDescription::Void => f.write_str("void"),
            TypeDescription::Scalar(name) => f.write_str(name),
            TypeDescription::Struct { size, align } => write!(f, "struct of {size} bytes, alignment {align}"),
            TypeDescription::TypedResult => f.write_str("a result typed calls return (not a struct or long double)"),
        }
    }
}

/// A value of a signature: an argument (by index) or the result. More may name a value later
/// (a variable argument, say), hence `#[non_exhaustive]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Position {
    /// Argument `n`, from 0.
    Argument(usize),
    /// The result.
    Result,
}

impl core::fmt::Display for Position {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Position::Argument(n) => write!(f, "argument {n}"),
            Position::Result => f.write_str("result"),
        }
    }
}
