//! The crate's one error type.

/// Everything that can fail in this crate, one variant per failure site.
///
/// Plan-time variants (layouts, limits, variadic promotion) are reported when a
/// [`CallPlan`](crate::CallPlan) is made, so a call never meets them; bind-time variants when a
/// [`TypedFn`](crate::TypedFn) is made; call-time variants check what the caller passes to
/// [`CallPlan::call`](crate::CallPlan::call).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
        /// [`limits::MAX_AGGREGATE_BYTES`](crate::limits::MAX_AGGREGATE_BYTES).
        limit: usize,
    },
    /// Aggregates nested deeper than the plan supports.
    #[error("aggregates nested deeper than {limit} levels")]
    NestingTooDeep {
        /// [`limits::MAX_NESTING`](crate::limits::MAX_NESTING).
        limit: usize,
    },
    /// More arguments than the plan supports.
    #[error("{count} arguments exceed the limit of {limit}")]
    TooManyArguments {
        /// Number of arguments.
        count: usize,
        /// [`limits::MAX_ARGS`](crate::limits::MAX_ARGS).
        limit: usize,
    },
    /// The arguments passed on the stack need more bytes than the plan supports.
    #[error("stack arguments need {needed} bytes, the limit is {limit}")]
    StackTooLarge {
        /// Bytes needed.
        needed: usize,
        /// [`limits::MAX_STACK_BYTES`](crate::limits::MAX_STACK_BYTES).
        limit: usize,
    },
    /// The by-value copies of large aggregates (AArch64) need more bytes than supported.
    #[error("by-value aggregate copies need {needed} bytes, the limit is {limit}")]
    CopiesTooLarge {
        /// Bytes needed.
        needed: usize,
        /// [`limits::MAX_COPY_BYTES`](crate::limits::MAX_COPY_BYTES).
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
        expected: String,
        /// The binding's type.
        got: String,
    },
    /// A typed binding whose result type differs from the signature's (or is an aggregate,
    /// which typed bindings do not return).
    #[error("the result is {expected} in the signature but {got} in the binding")]
    ResultType {
        /// The signature's type.
        expected: String,
        /// The binding's type.
        got: String,
    },
    /// A by-value copy width this CPU or target cannot run.
    #[error("the {copy} copy is not available on this CPU")]
    VectorCopyUnavailable {
        /// Its name (`VectorCopy::name`).
        copy: &'static str,
    },
    /// A null pointer where the call needs a value (function, argument or result buffer).
    #[error("null {what} pointer")]
    NullPointer {
        /// Which pointer.
        what: &'static str,
    },
    /// No candidate of the discovery order loaded; every one tried, with why it failed.
    #[error(
        "no NCCL library found ({}); install one (`pip install nvidia-nccl-cu12`, or -cu13 for CUDA 13) or set NCCL_TRAMPOLINE_LIBRARY to its path",
        tried.join("; ")
    )]
    LibraryNotFound {
        /// `path (source): reason` for each candidate, in discovery order (candidates of one
        /// source that failed for the same reason share an entry: `a, b (source): reason`).
        tried: Vec<String>,
    },
    /// The library the caller named (`Nccl::load_from`, or `NCCL_TRAMPOLINE_LIBRARY` for
    /// `Nccl::load`) cannot be loaded or is not NCCL. No other candidate is tried for it.
    #[error("{}", library_load_message(path, *variable, reason))]
    LibraryLoad {
        /// The path or soname named.
        path: String,
        /// The environment variable that named it, if one did.
        variable: Option<&'static str>,
        /// Why: "no such file", "built for aarch64, this program runs on x86_64: use the
        /// x86_64 build", a missing dependency, "not an NCCL library", ...
        reason: String,
    },
    /// The dynamic symbol table of a loaded library could not be read (for its coverage).
    #[error("cannot read the symbol table of {path}: {reason}")]
    SymbolTable {
        /// The file.
        path: String,
        /// Why: "not a 64-bit little-endian ELF file", "no dynamic symbol table", ...
        reason: String,
    },
    /// The loaded library (or its config struct) lacks what the call needs.
    #[error("{symbol} needs NCCL {needs}, the loaded library is {loaded}")]
    Unsupported {
        /// C symbol or config field.
        symbol: &'static str,
        /// First NCCL version that has it.
        needs: String,
        /// Version of the loaded library.
        loaded: String,
    },
    /// An NCCL call returned an error.
    #[error("{function} failed: {name} ({code}){}", if last_error.is_empty() { String::new() } else { format!(": {last_error}") })]
    Nccl {
        /// The NCCL function.
        function: &'static str,
        /// The numeric `ncclResult_t`.
        code: i32,
        /// Its name (`ncclInvalidArgument`), or NCCL's string for an unknown code.
        name: String,
        /// `ncclGetLastError` text, empty when NCCL had none.
        last_error: String,
    },
    /// A unique id of the wrong length.
    #[error("a unique id has 128 bytes, got {len}")]
    InvalidUniqueId {
        /// Length given.
        len: usize,
    },
    /// A buffer too short for the collective.
    #[error("{what}: need {expected} elements, got {got}")]
    LengthMismatch {
        /// Which buffer.
        what: &'static str,
        /// Elements needed.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// An argument NCCL would reject or misuse.
    #[error("invalid argument: {what}")]
    InvalidArgument {
        /// What is wrong.
        what: &'static str,
    },
    /// A deadline passed: `operation` did not finish within `waited`.
    #[error("{operation} timed out after {waited:.1?}")]
    Timeout {
        /// What was waited for (an NCCL function, or "stream wait").
        operation: &'static str,
        /// How long it waited.
        waited: std::time::Duration,
    },
    /// The communicator can no longer run `operation` (failed, revoked, aborted, lost or
    /// destroyed); the call never reached NCCL.
    #[error("{operation} refused: the communicator is {state}")]
    Unusable {
        /// The NCCL function refused.
        operation: &'static str,
        /// Why, with the cause.
        state: crate::nccl::CommState,
    },
    /// An abort could not run yet: a blocking NCCL call is in progress on the communicator. It
    /// runs as soon as that call returns.
    #[error(
        "abort deferred: a blocking NCCL call is still running on the communicator; it aborts when that call returns"
    )]
    AbortPending,
    /// A communicator cannot be created inside an open group.
    #[error("{operation} inside an open group: NCCL fills the handle at ncclGroupEnd; end the group first (or use Nccl::split_all)")]
    InGroup {
        /// The creating function.
        operation: &'static str,
    },
    /// A buffer or stream on another device than the communicator's.
    #[error("{what} is on device {got}, the communicator on device {expected}")]
    DeviceMismatch {
        /// Which buffer or stream.
        what: &'static str,
        /// The communicator's device.
        expected: i32,
        /// The buffer's or stream's device.
        got: i32,
    },
    /// A buffer bound to another stream than the collective's.
    #[error("{what} is bound to another stream than the collective's")]
    StreamMismatch {
        /// Which buffer.
        what: &'static str,
    },
    /// A symbol the loaded library does not export was called.
    #[error("{symbol} is not exported by the loaded library")]
    SymbolMissing {
        /// The C symbol.
        symbol: &'static str,
    },
    /// NCCL's parameter registry has no parameter of this name (`ncclParamBind` or
    /// `ncclParamGetParameter` refused the key).
    #[error("NCCL has no runtime parameter {key}")]
    ParamNotFound {
        /// The key asked for.
        key: String,
    },
    /// A runtime parameter was read as another type than its own (NCCL's typed getters refuse).
    #[error("NCCL's runtime parameter {key} is not {requested}")]
    ParamType {
        /// The parameter.
        key: String,
        /// The type asked for: "int32_t", "const char *", ...
        requested: &'static str,
    },
    /// The CUDA driver could not be loaded.
    #[error("cannot load the CUDA driver {path}: {reason}")]
    CudaLoad {
        /// The library tried.
        path: String,
        /// The loader's message.
        reason: String,
    },
    /// A CUDA driver call failed.
    #[error("{function} failed: CUDA error {code} ({text})")]
    Cuda {
        /// The driver function.
        function: &'static str,
        /// The `CUresult`.
        code: i32,
        /// `cuGetErrorString`'s text.
        text: String,
    },
    /// A unique-id rendezvous failed (I/O or a malformed message).
    #[error("rendezvous: {what}: {detail}")]
    Rendezvous {
        /// What failed.
        what: &'static str,
        /// The cause.
        detail: String,
    },
    /// A unique-id rendezvous ran out of time.
    #[error("rendezvous timed out after {waited:?} waiting for {waiting_for}")]
    RendezvousTimeout {
        /// How long it waited.
        waited: std::time::Duration,
        /// What it was waiting for.
        waiting_for: &'static str,
    },
    /// A launcher variable whose value does not parse.
    #[error("launcher variable {variable}={value:?}: expected {expected}")]
    LauncherVariable {
        /// The variable.
        variable: String,
        /// Its value (never a secret's: those are not echoed).
        value: String,
        /// What it should hold.
        expected: &'static str,
    },
    /// Part of a launcher's variable set without the rest ("half a set").
    #[error("{launcher} variables incomplete: {} set but {} missing", present.join(", "), missing.join(", "))]
    LauncherIncomplete {
        /// The launcher whose variables were found.
        launcher: &'static str,
        /// The variables that are set.
        present: Vec<String>,
        /// The variables that would complete the set.
        missing: Vec<String>,
    },
    /// Launcher variables that contradict each other (a rank not below the size, ...).
    #[error("launcher variables contradict each other: {detail} ({})", variables.join(", "))]
    LauncherContradiction {
        /// The variables involved, each as `NAME=value`.
        variables: Vec<String>,
        /// What is wrong.
        detail: String,
    },
    /// No MPI library could be loaded; every candidate tried, with why it failed.
    #[error("no MPI library could be loaded; tried: {}", tried.join("; "))]
    MpiNotFound {
        /// `path: reason` for each candidate.
        tried: Vec<String>,
    },
    /// The loaded MPI library cannot be used: an ABI this crate does not know, a missing
    /// function, or MPI already finalized in this process.
    #[error("MPI library {library}: {detail}")]
    MpiLibrary {
        /// The library.
        library: String,
        /// What was found.
        detail: String,
    },
    /// An MPI call returned an error code.
    #[error("{function} failed: MPI error {code}{}", if text.is_empty() { String::new() } else { format!(" ({text})") })]
    Mpi {
        /// The MPI function.
        function: &'static str,
        /// Its return code.
        code: i32,
        /// `MPI_Error_string`'s text.
        text: String,
    },
    /// What MPI reports about the job disagrees with the launcher's variables.
    #[error("MPI reports {what} {mpi}, the launcher's variables say {launcher}")]
    MpiMismatch {
        /// "rank" or "size".
        what: &'static str,
        /// MPI's value.
        mpi: i32,
        /// The world's value.
        launcher: u32,
    },
    /// The TCP rendezvous root's deadline passed before every rank had the id.
    #[error("rendezvous timed out after {waited:?}: {} rank(s) never fetched the unique id ({}{})", missing.len(), missing.iter().take(8).map(|r| r.to_string()).collect::<Vec<_>>().join(", "), if missing.len() > 8 { ", ..." } else { "" })]
    RendezvousMissingRanks {
        /// How long the root waited.
        waited: std::time::Duration,
        /// The ranks that did not fetch the id, in order.
        missing: Vec<u32>,
    },
    /// A rendezvous peer failed to prove the per-job secret (a wrong secret, another job, or
    /// someone else's listener at the root's address).
    #[error("rendezvous: {who} failed authentication")]
    RendezvousAuth {
        /// Which side failed: "the root" (seen by a rank) or "a client".
        who: &'static str,
    },
    /// A rendezvous file that is refused (not a regular file, another owner, writable by
    /// others).
    #[error("rendezvous file {}: {reason}", path.display())]
    RendezvousFile {
        /// The path.
        path: std::path::PathBuf,
        /// Why it is refused.
        reason: String,
    },
    /// No way to hand the unique id to every rank could be chosen, or the chosen one is not
    /// usable in this world.
    #[error("unique-id route: {detail}")]
    IdRoute {
        /// What is missing and what to set.
        detail: String,
    },
    /// Choosing this rank's GPU failed.
    #[error("selecting the GPU of local rank {local_rank}: {detail}")]
    Device {
        /// The local rank.
        local_rank: u32,
        /// What failed (a CUDA driver call and its code, or too few GPUs).
        detail: String,
    },
}

fn library_load_message(path: &str, variable: Option<&str>, reason: &str) -> String {
    match variable {
        Some(v) => format!("{v}={path} cannot be loaded: {reason} (fix {v}, or unset it to search the usual places)"),
        None => format!("cannot load {path}: {reason}"),
    }
}
