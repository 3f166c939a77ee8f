//! The checked file: what the loader and the crate read from a library that passed every check
//! (its name, the names it needs, its symbols and their versions) and the questions the crate
//! asks of it.

use std::collections::BTreeMap;
use std::io::{Read, Seek};

use super::input::Input;
use super::reader::Reader;
use super::symbol::{Symbol, STT_FUNC, STT_GNU_IFUNC, STT_OBJECT, STT_TLS};
use super::MAX_NAME_BYTES;
use crate::foreign::error::LoadError;

/// What a library file defines a symbol as (see [`Image::definition`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Definition {
    /// `STT_FUNC` at this address (relative to the load address).
    Function(u64),
    /// `STT_GNU_IFUNC`: its resolver is here; the function is what the resolver returns.
    IndirectFunction,
    /// Anything else: "a data object", "a thread-local variable", ...
    Other(&'static str),
}

/// A library file that passed every check, with what the loader and the crate read from it.
#[derive(Debug)]
pub(crate) struct Image {
    pub(super) strtab: Vec<u8>,
    pub(super) symbols: Vec<Symbol>,
    pub(super) versym: Vec<u16>,
    pub(super) soname: Option<String>,
    pub(super) needed: Vec<String>,
    /// `DT_RPATH`, `DT_RUNPATH`, `DT_AUXILIARY`, `DT_FILTER` strings.
    pub(super) paths: Vec<String>,
}

impl Image {
    /// Reads and checks the ELF shared library in `reader` for `machine` (an `e_machine`).
    pub(crate) fn read<R: Read + Seek>(reader: R, machine: u16) -> Result<Image, LoadError> {
        let input = Input::new(reader)?;
        Reader {
            input,
            machine,
            loads: Vec::new(),
            data: BTreeMap::new(),
            eh_frame: None,
            written: Vec::new(),
            plt_written: Vec::new(),
            tls_size: 0,
        }
        .image()
    }

    /// [`read`](Self::read) from bytes in memory.
    #[cfg(any(test, fuzzing))]
    pub(crate) fn parse(bytes: &[u8], machine: u16) -> Result<Image, LoadError> {
        Self::read(std::io::Cursor::new(bytes), machine)
    }

    /// `DT_SONAME`, if the file has one.
    pub(crate) fn soname(&self) -> Option<&str> {
        self.soname.as_deref()
    }

    /// True if `DT_RPATH`, `DT_RUNPATH` or a name of another object (`DT_NEEDED`,
    /// `DT_AUXILIARY`, `DT_FILTER`) says `$ORIGIN`: the loader expands it to the folder of the
    /// name the library was opened by.
    pub(crate) fn uses_origin(&self) -> bool {
        self.paths.iter().chain(&self.needed).any(|s| s.contains("$ORIGIN") || s.contains("${ORIGIN}"))
    }

    /// The name of symbol `sym`, if it is valid UTF-8 and not longer than [`MAX_NAME_BYTES`].
    fn name(&self, sym: &Symbol) -> Option<&str> {
        let rest = self.strtab.get(usize::try_from(sym.name).ok()?..)?;
        let end = rest.iter().take(MAX_NAME_BYTES + 1).position(|&b| b == 0)?;
        core::str::from_utf8(&rest[..end]).ok().filter(|n| !n.is_empty())
    }

    /// What the file defines `name` as, among the symbols other objects see (global or weak,
    /// default or protected visibility): the default version's definition first, as the loader
    /// binds it; `None` if the file does not define it.
    pub(crate) fn definition(&self, name: &str) -> Option<Definition> {
        let hidden = |i: usize| self.versym.get(i).is_some_and(|v| v & 0x8000 != 0);
        let mut found: Vec<(usize, &Symbol)> =
            self.symbols.iter().enumerate().filter(|(_, s)| s.exported() && self.name(s) == Some(name)).collect();
        found.sort_by_key(|(i, _)| hidden(*i));
        let (_, sym) = found.first()?;
        Some(match sym.kind() {
            STT_FUNC => Definition::Function(sym.value),
            STT_GNU_IFUNC => Definition::IndirectFunction,
            STT_OBJECT => Definition::Other("a data object"),
            STT_TLS => Definition::Other("a thread-local variable"),
            0 => Definition::Other("a symbol without a type"),
            3 => Definition::Other("a section"),
            4 => Definition::Other("a file name"),
            5 => Definition::Other("a common block"),
            _ => Definition::Other("a symbol of an unknown type"),
        })
    }

    /// The size in bytes (`st_size`) of the data object the file exports as `name`, if it
    /// exports one by that name.
    pub(crate) fn object_size(&self, name: &str) -> Option<u64> {
        self.symbols
            .iter()
            .find(|s| s.exported() && s.kind() == STT_OBJECT && self.name(s) == Some(name))
            .map(|s| s.size)
    }

    /// The names of the data objects the file exports that start with `prefix`, sorted.
    pub(crate) fn exported_objects(&self, prefix: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .symbols
            .iter()
            .filter(|s| s.exported() && s.kind() == STT_OBJECT)
            .filter_map(|s| self.name(s))
            .filter(|n| n.starts_with(prefix))
            .map(String::from)
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The names of the functions the file defines and exports (global or weak, default or
    /// protected visibility, `STT_FUNC` or `STT_GNU_IFUNC`), sorted, without duplicates.
    /// Symbol versions are not part of a name.
    pub(crate) fn exported_functions(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .symbols
            .iter()
            .filter(|s| s.exported() && matches!(s.kind(), STT_FUNC | STT_GNU_IFUNC))
            .filter_map(|s| self.name(s).map(str::to_string))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}
