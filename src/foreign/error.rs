//! Why a C library was not loaded: the run-time loading layer's one error (docs/adr/0019).
//!
//! Every message is one short lowercase line that says what is wrong with the file in terms a
//! user can check (`truncated: a load segment ends at byte 90112, the file has 4096 bytes`).
//! The facade keeps it as the reason of `nccl::Error::LibraryLoad`.

use std::path::PathBuf;

/// What went wrong finding, checking or loading a library file, one variant per kind of
/// failure site.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    /// The path names nothing.
    #[error("no such file")]
    NoSuchFile,
    /// The path names something other than a regular file (opening a FIFO for reading would
    /// wait for a writer for ever; a device or a directory is no library).
    #[error("not a regular file but {kind}")]
    NotRegular {
        /// "a FIFO", "a directory", "a character device", ...
        kind: &'static str,
    },
    /// The system loader's search for a bare name reaches something that is not a regular
    /// file (where the loader itself would block or fail).
    #[error("the system loader's search reaches {}, which is not a regular file but {kind}", path.display())]
    FoundNotRegular {
        /// What the search reached.
        path: PathBuf,
        /// "a FIFO", ...
        kind: &'static str,
    },
    /// Opening or reading the file failed.
    #[error("cannot read it: {source}")]
    Read {
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A bare name that no directory of the system loader's search holds.
    #[error("not found by the system loader")]
    NotFound,
    /// The file does not start with an ELF header.
    #[error("not a shared library (no ELF header)")]
    NotElf,
    /// An ELF file for another machine, class or byte order (the text names both and what to
    /// use instead).
    #[error("{0}")]
    OtherTarget(String),
    /// An ELF file that is not a shared library.
    #[error("not a shared library (ELF type {e_type}, {})", elf_type_name(*e_type))]
    NotSharedLibrary {
        /// `e_type`.
        e_type: u16,
    },
    /// A structure ends past the end of the file (a truncated file: the loader would map the
    /// missing pages and the first read of them would raise SIGBUS).
    #[error("truncated: {what} ends at byte {end}, the file has {len} bytes")]
    Truncated {
        /// "a load segment", "the program headers", ...
        what: &'static str,
        /// Where it ends (`u64::MAX` when its end overflows).
        end: u64,
        /// The file's length.
        len: u64,
    },
    /// An address the loader dereferences that no load segment backs with file contents.
    #[error("corrupt: {what} at {at:#x} lies outside the file's load segments")]
    Outside {
        /// "the dynamic section", "DT_SYMTAB", ...
        what: &'static str,
        /// The address (relative to the load address).
        at: u64,
    },
    /// A relocation that would write outside the writable segments, or into a table the
    /// loader reads.
    #[error("corrupt: a relocation writes to {at:#x}, {reason}")]
    BadTarget {
        /// The address written.
        at: u64,
        /// "outside the writable segments", "inside DT_SYMTAB", ...
        reason: &'static str,
    },
    /// An address the loader calls (an initialiser, an indirect function's resolver) that is
    /// not in an executable segment.
    #[error("corrupt: {what} at {at:#x} is not in an executable segment")]
    NotCode {
        /// "DT_INIT", "an initialiser", "an indirect function", ...
        what: &'static str,
        /// The address.
        at: u64,
    },
    /// An address the loader calls as a function that starts no function (the section
    /// headers, the unwind table and the symbols list the starts).
    #[error("corrupt: {what} at {at:#x} is not the start of a function")]
    NotAFunctionStart {
        /// "DT_INIT", "DT_FINI".
        what: &'static str,
        /// The address.
        at: u64,
    },
    /// A value the loader uses as a count, size, index or alignment that it cannot have.
    #[error("corrupt: {what} is {value}")]
    BadValue {
        /// "the GNU hash bucket count", "DT_RELAENT", ...
        what: &'static str,
        /// The value found.
        value: u64,
    },
    /// Something the loader needs that is not there.
    #[error("corrupt: {what} is missing")]
    Missing {
        /// "DT_STRSZ", "the dynamic section", ...
        what: &'static str,
    },
    /// A tag of the dynamic section given twice (the loader would take the last).
    #[error("corrupt: {what} appears twice in the dynamic section")]
    Duplicate {
        /// "DT_STRTAB", ...
        what: &'static str,
    },
    /// A list or chain the loader walks until its end marker, without one (the loader would
    /// read past it or loop for ever).
    #[error("corrupt: {what} does not end")]
    Unterminated {
        /// "the dynamic section", "a hash chain", "the version needs", ...
        what: &'static str,
    },
    /// The section headers say something else than the program headers or the dynamic
    /// section (the loader does not read sections; a disagreement means one of them is
    /// corrupt).
    #[error("corrupt: {what} at {at:#x} disagrees with the section headers")]
    Disagrees {
        /// "a section", "DT_SYMTAB", ...
        what: &'static str,
        /// The address in question.
        at: u64,
    },
    /// Something valid that this reader does not check, so it refuses rather than load
    /// unchecked.
    #[error("{what}, which this loader does not check")]
    Unchecked {
        /// "text relocations", "a copy relocation", ...
        what: &'static str,
    },
    /// A table larger than this reader reads.
    #[error("{what} of {size} bytes is larger than this loader reads")]
    TooLarge {
        /// "DT_STRTAB", ...
        what: &'static str,
        /// Its size in bytes.
        size: u64,
    },
    /// A function the caller binds is defined by the file as something else.
    #[error("{symbol} is {kind} in this library, not a function")]
    NotAFunction {
        /// The symbol.
        symbol: String,
        /// "a data object", "a thread-local variable", ...
        kind: &'static str,
    },
    /// A function the caller binds resolves to an address that is not executable code.
    #[error("{symbol} resolves to {at:#x}, which is not in an executable mapping")]
    NotExecutable {
        /// The symbol.
        symbol: String,
        /// The address.
        at: usize,
    },
    /// The file at the path changed between the check and the load (Linux, where loading
    /// by path is the fallback).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    #[error("the file changed while it was being loaded")]
    Changed,
    /// The system loader refused the file; its reason, without the repeated path.
    #[error("{0}")]
    Loader(String),
}

/// The name of an ELF `e_type` (System V gABI, "ELF Header").
fn elf_type_name(e_type: u16) -> &'static str {
    match e_type {
        0 => "no file type",
        1 => "a relocatable object",
        2 => "an executable",
        3 => "a shared object",
        4 => "a core file",
        _ => "unknown",
    }
}

impl From<std::io::Error> for LoadError {
    fn from(source: std::io::Error) -> Self {
        LoadError::Read { source }
    }
}
