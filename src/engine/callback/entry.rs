//! The entries of the pool: how many the assembly has, and what happens when a call through
//! one cannot go on (the process ends with a message; a panic never unwinds into C).

use core::fmt;

/// Callback entries in the pool: at most this many [`Callback`](crate::Callback)s exist at once
/// in a process (0 where the target has no callback entries yet). Each entry costs 16 bytes of
/// `.text` and a slot of the code table.
#[cfg(nccl_trampoline_callbacks)]
pub const POOL_SIZE: usize = crate::engine::layout::CB_POOL as usize;
/// Callback entries in the pool: at most this many [`Callback`](crate::Callback)s exist at once
/// in a process (0 where the target has no callback entries yet).
#[cfg(not(nccl_trampoline_callbacks))]
pub const POOL_SIZE: usize = 0;

/// Ends the process with `message` on stderr: what the dispatcher does where continuing would
/// unwind into C or run the wrong code.
#[cold]
#[cfg_attr(not(nccl_trampoline_callbacks), allow(dead_code))]
pub(crate) fn fatal(message: fmt::Arguments<'_>) -> ! {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "nccl-trampoline: {message}; aborting");
    std::process::abort()
}

/// The panic payload's message, when it has one.
#[cfg_attr(not(nccl_trampoline_callbacks), allow(dead_code))]
pub(crate) fn panic_message(payload: &(dyn core::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}
