//! How much of the loaded library's API the crate binds: the functions of the symbol table
//! (`nccl::functions`) against the public functions the library's file exports.

use core::fmt;

use crate::nccl::library::functions::SYMBOLS;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::error::Error;

/// The crate's coverage of one loaded library's public API ([`Nccl::coverage`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Coverage {
    /// The public NCCL functions the library exports, sorted.
    pub exported: Vec<String>,
    /// Those the crate binds (declared in its table and resolved in this library).
    pub bound: Vec<String>,
    /// Those it does not bind.
    pub unbound: Vec<String>,
}

impl fmt::Display for Coverage {
    /// `36 of 97 functions exported by this library are bound`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {} functions exported by this library are bound", self.bound.len(), self.exported.len())
    }
}

/// A public NCCL function name: `nccl` then an upper-case letter (`ncclAllReduce`), which
/// leaves out the `pnccl*` profiling aliases and any symbol of another naming.
fn is_public_nccl(name: &str) -> bool {
    name.strip_prefix("nccl").and_then(|rest| rest.bytes().next()).is_some_and(|b| b.is_ascii_uppercase())
}

impl Nccl {
    /// The crate's coverage of this library: which of its public functions the crate binds.
    ///
    /// What counts as exported: a function (`STT_FUNC` or `STT_GNU_IFUNC`) that the file the
    /// library was loaded from ([`path`](Self::path)) defines in its ELF dynamic symbol table,
    /// global or weak, default or protected visibility, named `nccl` then an upper-case letter.
    /// So the `pnccl*` profiling aliases, hidden and local (internal) functions, imported
    /// symbols and data objects do not count; exported functions NCCL does not document
    /// (`ncclResetDebugInit`) do. NCCL 2.32.3 exports 97. Bound: those the crate's table
    /// declares and resolved in this library (RCCL's `ncclAllToAll` is the table's
    /// `ncclAlltoAll`).
    ///
    /// The symbols are those the loader binds (`DT_SYMTAB`, as many as the hash tables
    /// cover), read from the very file loaded when it was checked before loading; the file is
    /// not read again. It does not fail; the `Result` is kept for the callers written when it
    /// read the file.
    pub fn coverage(&self) -> Result<Coverage, Error> {
        let exported: Vec<String> = self.exported_functions().iter().filter(|n| is_public_nccl(n)).cloned().collect();
        let alltoall = self.alltoall_name();
        let is_bound = |name: &str| {
            let name = if name == alltoall { "ncclAlltoAll" } else { name };
            SYMBOLS.iter().any(|row| row.name == name && self.has_sym(row.sym))
        };
        let (bound, unbound) = exported.iter().cloned().partition(|n| is_bound(n));
        Ok(Coverage { exported, bound, unbound })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_names_are_nccl_then_a_capital() {
        assert!(is_public_nccl("ncclAllReduce") && is_public_nccl("ncclGetVersion"));
        assert!(!is_public_nccl("pncclAllReduce") && !is_public_nccl("nccl") && !is_public_nccl("ncclx_internal"));
        assert!(!is_public_nccl("cudaMalloc"));
    }
}
