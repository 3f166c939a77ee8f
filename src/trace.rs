//! Events for operators, with the `tracing` feature: what the crate does that nobody sees unless
//! the caller prints it — a library loaded, a creation begun, done, failed or given up, an
//! abort, the watchdog acting, a rendezvous step, a plugin's log line. The list, with levels
//! and fields, is the README's "Logging" section (docs/adr/0028-operator-events.md).
//!
//! Every call site uses [`trace_event!`]: without the feature it expands to nothing (its
//! arguments are not even evaluated), so the events cost nothing and no call site carries a
//! `#[cfg]`. No event is emitted on a hot path (a collective's enqueue, a typed call, the
//! watchdog's event record): only on paths that start a thread, call `ncclCommAbort`, or wait.
//!
//! What no event carries: the unique id, its bytes or anything derived from them (its
//! fingerprint included), the rendezvous key or the secret it comes from
//! (`NCCL_TRAMPOLINE_SECRET`), the launcher's job id (the key is derived from it when no secret
//! is set), `NCCL_COMM_ID`'s address (with it the id is the constant magic and that address),
//! and an encryption pre-shared key. `tests/tracing.rs` captures every event of a run and
//! checks.

/// Emits a `tracing` event of one of the crate's layers, or nothing without the `tracing`
/// feature:
///
/// - `trace_event!(nccl, INFO, "creation.done", nranks = n, took_ms = ms, "a creation finished")`:
///   the layer (`nccl`, `launch` or `plugin`: the target `nccl_trampoline::<layer>`), the level
///   (one of `tracing::Level`'s constants), the event's name, then fields and the message in
///   `tracing`'s syntax (`%` for `Display`, `?` for `Debug`);
/// - `trace_event!(plugin, level = expr, "plugin.log", ...)`: a level known only at run time
///   (a `tracing::Level`).
///
/// Always a statement (`trace_event!(...);`): without the feature it is an empty one.
#[cfg(feature = "tracing")]
macro_rules! trace_event {
    (nccl, $($rest:tt)+) => { $crate::trace::trace_event!(@at "nccl_trampoline::nccl", $($rest)+) };
    (launch, $($rest:tt)+) => { $crate::trace::trace_event!(@at "nccl_trampoline::launch", $($rest)+) };
    (plugin, $($rest:tt)+) => { $crate::trace::trace_event!(@at "nccl_trampoline::plugin", $($rest)+) };
    (@at $target:literal, level = $level:expr, $name:literal, $($fields:tt)+) => {
        match $level {
            ::tracing::Level::ERROR => $crate::trace::trace_event!(@at $target, ERROR, $name, $($fields)+),
            ::tracing::Level::WARN => $crate::trace::trace_event!(@at $target, WARN, $name, $($fields)+),
            ::tracing::Level::INFO => $crate::trace::trace_event!(@at $target, INFO, $name, $($fields)+),
            ::tracing::Level::DEBUG => $crate::trace::trace_event!(@at $target, DEBUG, $name, $($fields)+),
            _ => $crate::trace::trace_event!(@at $target, TRACE, $name, $($fields)+),
        }
    };
    (@at $target:literal, $level:ident, $name:literal, $($fields:tt)+) => {
        ::tracing::event!(name: $name, target: $target, ::tracing::Level::$level, $($fields)+)
    };
}

/// Without the `tracing` feature: nothing, its arguments unevaluated.
#[cfg(not(feature = "tracing"))]
macro_rules! trace_event {
    ($($anything:tt)*) => {};
}

pub(crate) use trace_event;

/// A duration as milliseconds, the unit of every `*_ms` field.
#[cfg(feature = "tracing")]
pub(crate) fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A configured limit for a field: `600s`, `1.5s`, or `none` for no limit.
#[cfg(feature = "tracing")]
pub(crate) fn limit(d: Option<std::time::Duration>) -> String {
    d.map_or_else(|| "none".to_string(), |d| format!("{d:?}"))
}

/// The `tracing` level of an NCCL log level (`ncclDebugLogLevel`): `NCCL_LOG_ABORT` is an
/// error, `WARN` a warning, `VERSION` information, NCCL's `INFO` (its `NCCL_DEBUG=INFO`
/// chatter) debug, `TRACE` and anything unknown trace.
#[cfg(feature = "tracing")]
pub(crate) fn nccl_log_level(level: i32) -> tracing::Level {
    match level {
        4 => tracing::Level::ERROR,
        2 => tracing::Level::WARN,
        1 => tracing::Level::INFO,
        3 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    }
}

/// The names of NCCL's subsystem flags (`ncclDebugLogSubSys`, nccl_common.h:36-56) set in
/// `flags`, joined by `|` (`INIT|NET`); unknown bits as hex; `ALL` for every bit.
#[cfg(feature = "tracing")]
pub(crate) fn nccl_subsystems(flags: u64) -> String {
    const NAMES: [(u64, &str); 16] = [
        (0x1, "INIT"),
        (0x2, "COLL"),
        (0x4, "P2P"),
        (0x8, "SHM"),
        (0x10, "NET"),
        (0x20, "GRAPH"),
        (0x40, "TUNING"),
        (0x80, "ENV"),
        (0x100, "ALLOC"),
        (0x200, "CALL"),
        (0x400, "PROXY"),
        (0x800, "NVLS"),
        (0x1000, "BOOTSTRAP"),
        (0x2000, "REG"),
        (0x4000, "PROFILE"),
        (0x8000, "RAS"),
    ];
    if flags == u64::MAX || flags == u64::from(u32::MAX) {
        return "ALL".to_string();
    }
    let mut parts: Vec<String> = NAMES.iter().filter(|(bit, _)| flags & bit != 0).map(|(_, n)| n.to_string()).collect();
    let known = NAMES.iter().fold(0, |all, (bit, _)| all | bit);
    if flags & !known != 0 {
        parts.push(format!("{:#x}", flags & !known));
    }
    parts.join("|")
}

#[cfg(all(test, feature = "tracing"))]
mod tests {
    use super::*;

    #[test]
    fn nccl_levels_and_subsystems_read_as_operators_expect() {
        assert_eq!(nccl_log_level(2), tracing::Level::WARN);
        assert_eq!(nccl_log_level(3), tracing::Level::DEBUG);
        assert_eq!(nccl_log_level(4), tracing::Level::ERROR);
        assert_eq!(nccl_log_level(99), tracing::Level::TRACE);
        assert_eq!(nccl_subsystems(0x11), "INIT|NET");
        assert_eq!(nccl_subsystems(0), "");
        assert_eq!(nccl_subsystems(!0), "ALL");
        assert_eq!(nccl_subsystems(0x4000 | 0x10000), "PROFILE|0x10000");
        assert_eq!(limit(None), "none");
        assert_eq!(limit(Some(std::time::Duration::from_millis(1500))), "1.5s");
    }
}
