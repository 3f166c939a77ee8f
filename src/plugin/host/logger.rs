//! The logger a host hands a plugin's `init`: a C function of NCCL's `ncclDebugLogger_t` type
//! (a variadic [`Callback`]) whose handler formats each message in Rust (`printf.rs`) and keeps
//! it, with the level, subsystem flags, file and line, for whoever reads the plugin's log
//! (`doctor`, the network test bench), and optionally echoes it to standard error.

use core::ffi::c_char;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::ctype::types::{Signature, Type};
use crate::engine::callback::Callback;
use crate::plugin::common::{DebugLogger, LogLevel};
use crate::plugin::error::PluginError;
use crate::plugin::host::printf::{self, read_string};
use crate::trace::trace_event;

/// One line a plugin logged.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogLine {
    /// `ncclDebugLogLevel`.
    pub level: LogLevel,
    /// `ncclDebugLogSubSys` flags.
    pub flags: u64,
    /// The source file the plugin named.
    pub file: String,
    /// Its line.
    pub line: i32,
    /// The formatted message.
    pub text: String,
    /// What was wrong with the message's format (empty when nothing was).
    pub faults: Vec<String>,
}

impl core::fmt::Display for LogLine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let level = self.level.name().map_or_else(|| format!("level {}", self.level.0), str::to_string);
        write!(f, "{level} {}:{} {}", self.file, self.line, self.text)?;
        if !self.faults.is_empty() {
            write!(f, " [malformed: {}]", self.faults.join("; "))?;
        }
        Ok(())
    }
}

/// A logger of NCCL's type and the lines it received.
pub struct Logger {
    callback: Callback,
    lines: Arc<Mutex<Vec<LogLine>>>,
    malformed: Arc<AtomicBool>,
}

impl core::fmt::Debug for Logger {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Logger").field("entry", &self.callback.as_ptr()).finish()
    }
}

/// The most lines kept; later ones are counted in the last.
const MAX_LINES: usize = 10_000;

impl Logger {
    /// A new logger; `echo` also prints each line to standard error as it arrives.
    pub fn new(echo: bool) -> Result<Logger, PluginError> {
        let signature =
            Signature::variadic(5, vec![Type::I32, Type::U64, Type::Pointer, Type::I32, Type::Pointer], None)
                .map_err(PluginError::Core)?;
        let lines: Arc<Mutex<Vec<LogLine>>> = Arc::default();
        let kept = lines.clone();
        let malformed: Arc<AtomicBool> = Arc::default();
        let seen = malformed.clone();
        let callback = Callback::new(&signature, move |args, _| {
            let (level, flags, line) =
                (args.get::<i32>(0).unwrap_or(0), args.get::<u64>(1).unwrap_or(0), args.get::<i32>(3).unwrap_or(0));
            let file = args.get::<*const c_char>(2).map_or(0, |p| p as usize);
            let fmt = args.get::<*const c_char>(4).map_or(0, |p| p as usize);
            let file = match file {
                0 => String::new(),
                at => read_string(at).unwrap_or_else(|| format!("(unreadable {at:#x})")),
            };
            let formatted = match args.va_list() {
                Ok(mut va) => printf::format(fmt, &mut va),
                Err(e) => printf::Formatted { text: String::new(), faults: vec![e.to_string()] },
            };
            let entry =
                LogLine { level: LogLevel(level), flags, file, line, text: formatted.text, faults: formatted.faults };
            if !entry.faults.is_empty() {
                seen.store(true, Ordering::Release);
            }
            if echo {
                eprintln!("plugin: {entry}");
            }
            // The plugin's own words, as it logged them (NCCL hands a plugin no unique id).
            trace_event!(plugin, level = crate::trace::nccl_log_level(entry.level.0), "plugin.log",
                nccl_level = entry.level.name().unwrap_or("unknown"), level_code = entry.level.0,
                subsystem = %crate::trace::nccl_subsystems(entry.flags), flags = entry.flags, file = %entry.file,
                line = entry.line, malformed = !entry.faults.is_empty(), "{}", entry.text);
            if let Ok(mut lines) = kept.lock() {
                if lines.len() < MAX_LINES {
                    lines.push(entry);
                }
            }
        })
        .map_err(PluginError::Core)?;
        Ok(Logger { callback, lines, malformed })
    }

    /// The logger as the C function pointer a plugin's `init` takes.
    pub fn as_c(&self) -> DebugLogger {
        // SAFETY: the entry is a C function of the logger's variadic type (its signature), alive
        // while `self` is.
        DebugLogger(Some(unsafe {
            core::mem::transmute::<
                *const core::ffi::c_void,
                unsafe extern "C" fn(i32, core::ffi::c_ulong, *const c_char, i32, *const c_char, ...),
            >(self.callback.as_ptr())
        }))
    }

    /// The first line received with a malformed format, if any.
    pub fn first_malformed(&self) -> Option<LogLine> {
        if !self.malformed.load(Ordering::Acquire) {
            return None;
        }
        self.lines.lock().ok()?.iter().find(|l| !l.faults.is_empty()).cloned()
    }

    /// The lines received so far, and clears them.
    pub fn take(&self) -> Vec<LogLine> {
        self.lines.lock().map(|mut l| std::mem::take(&mut *l)).unwrap_or_default()
    }

    /// The lines received so far.
    pub fn lines(&self) -> Vec<LogLine> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

#[cfg(all(test, nccl_trampoline_callbacks))]
mod tests {
    use super::*;

    #[test]
    fn a_c_call_of_the_logger_is_formatted_and_kept() {
        let logger = Logger::new(false).unwrap();
        let f = logger.as_c().0.unwrap();
        let (name, bytes, ms) = (c"lo", 1u64 << 33, 12.625f64);
        // SAFETY: the logger's type; the arguments match the format's conversions.
        unsafe {
            f(
                3,
                0x10,
                c"net.cc".as_ptr(),
                225,
                c"dev %d %s: %zu bytes in %.3f ms".as_ptr(),
                7,
                name.as_ptr(),
                bytes,
                ms,
            )
        };
        // SAFETY: a malformed format with fewer arguments than conversions: read, not obeyed.
        unsafe { f(2, 0, core::ptr::null(), 0, c"%q %s %n %".as_ptr(), 8usize) };
        let lines = logger.take();
        assert_eq!(lines[0].text, "dev 7 lo: 8589934592 bytes in 12.625 ms");
        assert_eq!(
            (lines[0].level, lines[0].flags, lines[0].file.as_str(), lines[0].line),
            (LogLevel::INFO, 0x10, "net.cc", 225)
        );
        assert!(lines[1].faults.len() >= 3, "{:?}", lines[1]);
        assert!(logger.lines().is_empty());
    }
}
