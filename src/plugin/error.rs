//! Why a plugin could not be found, loaded, initialised or exercised: the plugin layer's one
//! error.

use std::path::PathBuf;

use crate::plugin::host::names::Family;

/// What went wrong with a plugin, one variant per failure site: the plugin layer's error, one
/// of the crate's errors per layer (docs/adr/0019-errors-per-layer.md), beside the launchers'
/// [`launch::Error`](crate::launch::Error) on top of the facade. It wraps the call core's
/// [`crate::Error`] (in [`PluginError::Core`]); NCCL's own results come as the codes the plugins
/// return, not as the facade's [`nccl::Error`](crate::nccl::Error), and the CUDA driver's
/// [`cuda::Error`](crate::cuda::Error) does not reach it.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// Nothing NCCL would try exists (every name tried, and why each failed).
    #[error("no {} plugin found (tried {})", family.label(), tried.join(", "))]
    NotFound {
        /// The family.
        family: Family,
        /// Each name tried, with the loader's reason.
        tried: Vec<String>,
    },
    /// The family's variable says `none`.
    #[error("{} plugins are disabled by {}=none", family.label(), family.variable())]
    Disabled {
        /// The family.
        family: Family,
    },
    /// A file was found but did not load.
    #[error("{} plugin {}: {reason}", family.label(), path.display())]
    Load {
        /// The family.
        family: Family,
        /// The file.
        path: PathBuf,
        /// The loader's reason, in one line.
        reason: String,
    },
    /// The library exports none of the family's symbols this crate knows.
    #[error("{} plugin {} exports none of {}{}", family.label(), path.display(), known.join(" "), other_versions(unknown))]
    NoKnownVersion {
        /// The family.
        family: Family,
        /// The file.
        path: PathBuf,
        /// The symbols searched, newest first.
        known: Vec<&'static str>,
        /// Symbols of the family it does export, of versions this crate does not know.
        unknown: Vec<String>,
    },
    /// The symbol is there but is not a table (a function, a TLS variable, ...).
    #[error("{} plugin {}: {symbol} is {kind}, not a table", family.label(), path.display())]
    NotATable {
        /// The family.
        family: Family,
        /// The file.
        path: PathBuf,
        /// The symbol.
        symbol: &'static str,
        /// What it is.
        kind: &'static str,
    },
    /// The table leaves entries NCCL calls without checking NULL.
    #[error("{} plugin {}: {symbol} has NULL {}", family.label(), path.display(), missing.join(", "))]
    NullEntries {
        /// The family.
        family: Family,
        /// The file.
        path: PathBuf,
        /// The symbol.
        symbol: &'static str,
        /// The required entries that are NULL.
        missing: Vec<&'static str>,
    },
    /// A plugin function returned an error code.
    #[error("{call} returned {code:?}{}", last_log(log))]
    Call {
        /// The entry and what it was asked.
        call: String,
        /// Its result.
        code: crate::nccl::NcclResult,
        /// The last line the plugin logged before it, if any.
        log: Option<String>,
    },
    /// A plugin function's result breaks its contract (a NULL comm reported as success, a
    /// size out of range, a string that cannot be read).
    #[error("{call}: {what}")]
    Contract {
        /// The entry.
        call: String,
        /// What is wrong.
        what: String,
    },
    /// A plugin call, or a loop NCCL would run (connect, accept, test), did not finish in time.
    #[error("{call} did not finish within {} ms{}", deadline.as_millis(), if *returned { "" } else { " (the call has not returned: it runs on in a thread of its own)" })]
    Deadline {
        /// The entry or loop.
        call: String,
        /// The limit.
        deadline: std::time::Duration,
        /// False when the plugin function itself never returned.
        returned: bool,
    },
    /// The plugin logged with a format that does not match C's rules (an unknown
    /// conversion, `%n`, an unreadable string): shown, never obeyed, and an error for the bench.
    #[error("{call}: the plugin logged with a malformed format: {line}")]
    LogFormat {
        /// The call during which it logged.
        call: String,
        /// The line as formatted, with what is wrong with it.
        line: String,
    },
    /// Received bytes differ from those sent.
    #[error("{size}-byte message with tag {tag}: byte {offset} is {got:#04x}, {expected:#04x} was sent")]
    Corrupt {
        /// Message size.
        size: usize,
        /// Its tag.
        tag: i32,
        /// First differing byte.
        offset: usize,
        /// Received.
        got: u8,
        /// Sent.
        expected: u8,
    },
    /// The call core refused something (a signature, no callbacks on this target).
    #[error(transparent)]
    Core(crate::Error),
}

fn other_versions(unknown: &[String]) -> String {
    if unknown.is_empty() {
        String::new()
    } else {
        format!(" (it exports {}, a version this crate does not know)", unknown.join(" "))
    }
}

fn last_log(log: &Option<String>) -> String {
    log.as_ref().map_or_else(String::new, |l| format!(" (it logged: {l})"))
}
