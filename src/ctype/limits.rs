//! Plan-time limits. A signature beyond one is refused with a typed [`Error`](crate::Error)
//! when the plan is made; a call never meets them.

/// Most arguments in one signature.
pub const MAX_ARGS: usize = 64;
/// Largest aggregate, in bytes.
pub const MAX_AGGREGATE_BYTES: usize = 4096;
/// Largest alignment of an aggregate or member.
pub const MAX_ALIGN: usize = 16;
/// Deepest nesting of aggregates.
pub const MAX_NESTING: usize = 16;
/// Most bytes of stack arguments.
pub const MAX_STACK_BYTES: usize = 8192;
/// Most bytes of private by-value copies (AAPCS64 composites over 16 bytes).
pub const MAX_COPY_BYTES: usize = 8192;
