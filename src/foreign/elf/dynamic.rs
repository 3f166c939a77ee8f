//! The dynamic section: its entries up to `DT_NULL`, each single-valued tag at most once. What
//! the entries name is checked in `checks`.

use std::collections::BTreeMap;
use std::io::{Read, Seek};

use super::input::u64_at;
use super::reader::Reader;
use crate::foreign::error::LoadError;

const DYN_BYTES: u64 = 16;

pub(super) const DT_NULL: u64 = 0;
pub(super) const DT_NEEDED: u64 = 1;
pub(super) const DT_PLTRELSZ: u64 = 2;
pub(super) const DT_PLTGOT: u64 = 3;
pub(super) const DT_HASH: u64 = 4;
pub(super) const DT_STRTAB: u64 = 5;
pub(super) const DT_SYMTAB: u64 = 6;
pub(super) const DT_RELA: u64 = 7;
pub(super) const DT_RELASZ: u64 = 8;
pub(super) const DT_RELAENT: u64 = 9;
pub(super) const DT_STRSZ: u64 = 10;
pub(super) const DT_SYMENT: u64 = 11;
pub(super) const DT_INIT: u64 = 12;
pub(super) const DT_FINI: u64 = 13;
pub(super) const DT_SONAME: u64 = 14;
pub(super) const DT_RPATH: u64 = 15;
pub(super) const DT_PLTREL: u64 = 20;
pub(super) const DT_TEXTREL: u64 = 22;
pub(super) const DT_JMPREL: u64 = 23;
pub(super) const DT_INIT_ARRAY: u64 = 25;
pub(super) const DT_FINI_ARRAY: u64 = 26;
pub(super) const DT_INIT_ARRAYSZ: u64 = 27;
pub(super) const DT_FINI_ARRAYSZ: u64 = 28;
pub(super) const DT_RUNPATH: u64 = 29;
pub(super) const DT_FLAGS: u64 = 30;
pub(super) const DT_RELRSZ: u64 = 35;
pub(super) const DT_RELR: u64 = 36;
pub(super) const DT_RELRENT: u64 = 37;
pub(super) const DT_GNU_HASH: u64 = 0x6fff_fef5;
pub(super) const DT_TLSDESC_GOT: u64 = 0x6fff_fef7;
pub(super) const DT_VERSYM: u64 = 0x6fff_fff0;
pub(super) const DT_RELACOUNT: u64 = 0x6fff_fff9;
pub(super) const DT_VERDEF: u64 = 0x6fff_fffc;
pub(super) const DT_VERNEED: u64 = 0x6fff_fffe;
pub(super) const DT_AUXILIARY: u64 = 0x7fff_fffd;
pub(super) const DT_FILTER: u64 = 0x7fff_ffff;
pub(super) const DF_TEXTREL: u64 = 4;

/// The single-valued tags of the dynamic section this reader uses, by tag.
#[derive(Default)]
pub(super) struct Dynamic {
    tags: BTreeMap<u64, u64>,
    pub(super) needed: Vec<u64>,
    /// `DT_AUXILIARY` and `DT_FILTER` (names of other objects, like `DT_NEEDED`).
    pub(super) filters: Vec<u64>,
}

impl Dynamic {
    pub(super) fn get(&self, tag: u64) -> Option<u64> {
        self.tags.get(&tag).copied()
    }
}

/// The name of a dynamic tag, for messages.
pub(super) fn tag_name(tag: u64) -> &'static str {
    match tag {
        DT_PLTRELSZ => "DT_PLTRELSZ",
        DT_PLTGOT => "DT_PLTGOT",
        DT_HASH => "DT_HASH",
        DT_STRTAB => "DT_STRTAB",
        DT_SYMTAB => "DT_SYMTAB",
        DT_RELA => "DT_RELA",
        DT_RELASZ => "DT_RELASZ",
        DT_RELAENT => "DT_RELAENT",
        DT_STRSZ => "DT_STRSZ",
        DT_SYMENT => "DT_SYMENT",
        DT_INIT => "DT_INIT",
        DT_FINI => "DT_FINI",
        DT_SONAME => "DT_SONAME",
        DT_RPATH => "DT_RPATH",
        DT_PLTREL => "DT_PLTREL",
        DT_JMPREL => "DT_JMPREL",
        DT_INIT_ARRAY => "DT_INIT_ARRAY",
        DT_FINI_ARRAY => "DT_FINI_ARRAY",
        DT_INIT_ARRAYSZ => "DT_INIT_ARRAYSZ",
        DT_FINI_ARRAYSZ => "DT_FINI_ARRAYSZ",
        DT_RUNPATH => "DT_RUNPATH",
        DT_FLAGS => "DT_FLAGS",
        DT_RELRSZ => "DT_RELRSZ",
        DT_RELR => "DT_RELR",
        DT_RELRENT => "DT_RELRENT",
        DT_GNU_HASH => "DT_GNU_HASH",
        DT_TLSDESC_GOT => "DT_TLSDESC_GOT",
        DT_VERSYM => "DT_VERSYM",
        DT_RELACOUNT => "DT_RELACOUNT",
        DT_VERDEF => "DT_VERDEF",
        DT_VERNEED => "DT_VERNEED",
        _ => "a dynamic tag",
    }
}

/// The tags read as single values (the loader keeps the last of each).
const SINGLE_TAGS: [u64; 31] = [
    DT_PLTRELSZ,
    DT_PLTGOT,
    DT_HASH,
    DT_STRTAB,
    DT_SYMTAB,
    DT_RELA,
    DT_RELASZ,
    DT_RELAENT,
    DT_STRSZ,
    DT_SYMENT,
    DT_INIT,
    DT_FINI,
    DT_SONAME,
    DT_RPATH,
    DT_PLTREL,
    DT_JMPREL,
    DT_INIT_ARRAY,
    DT_FINI_ARRAY,
    DT_INIT_ARRAYSZ,
    DT_FINI_ARRAYSZ,
    DT_RUNPATH,
    DT_FLAGS,
    DT_RELRSZ,
    DT_RELR,
    DT_RELRENT,
    DT_GNU_HASH,
    DT_TLSDESC_GOT,
    DT_VERSYM,
    DT_RELACOUNT,
    DT_VERDEF,
    DT_VERNEED,
];

impl<R: Read + Seek> Reader<R> {
    /// The dynamic section: entries up to `DT_NULL`, single-valued tags at most once.
    pub(super) fn dynamic(&mut self, addr: u64, size: u64) -> Result<Dynamic, LoadError> {
        let bytes = self.table(addr, size, "the dynamic section")?;
        let mut out = Dynamic::default();
        for entry in bytes.chunks_exact(DYN_BYTES as usize) {
            let (tag, value) = (u64_at(entry, 0), u64_at(entry, 8));
            match tag {
                DT_NULL => return Ok(out),
                DT_NEEDED => out.needed.push(value),
                DT_AUXILIARY | DT_FILTER => out.filters.push(value),
                DT_TEXTREL => return Err(LoadError::Unchecked { what: "text relocations" }),
                t if SINGLE_TAGS.contains(&t) && out.tags.insert(t, value).is_some() => {
                    return Err(LoadError::Duplicate { what: tag_name(t) });
                }
                _ => {}
            }
        }
        Err(LoadError::Unterminated { what: "the dynamic section" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foreign::elf::headers::PT_DYNAMIC;
    use crate::foreign::elf::testing::{layout, X86_64};

    #[test]
    fn dynamic_table_corruptions_name_what_is_wrong() {
        let mut l = layout(X86_64);
        let at = l.entry(DT_STRSZ);
        l.put(at + 8, 0);
        assert_eq!(l.error(), "corrupt: DT_STRSZ is 0");
        let mut l = layout(X86_64);
        let at = l.entry(DT_STRTAB);
        l.put(at, 0x6000_0000); // an OS-specific tag the loader ignores
        assert_eq!(l.error(), "corrupt: DT_STRTAB is missing");
        let mut l = layout(X86_64);
        let at = l.entry(DT_SYMTAB);
        l.put(at + 8, 0xffff_0000);
        assert_eq!(l.error(), "corrupt: DT_SYMTAB at 0xffff0000 lies outside the file's load segments");
        let mut l = layout(X86_64);
        let (strtab, strsz) = (l.value(DT_STRTAB), l.value(DT_STRSZ));
        let last = l.offset(strtab) + strsz as usize - 1;
        l.0[last] = b'x';
        assert_eq!(l.error(), "corrupt: the string table does not end");
        let mut l = layout(X86_64);
        let at = l.entry(DT_RELAENT);
        l.put(at + 8, 16);
        assert_eq!(l.error(), "corrupt: DT_RELAENT is 16");
        let mut l = layout(X86_64);
        let at = l.entry(DT_PLTREL);
        l.put(at + 8, 17);
        assert_eq!(l.error(), "corrupt: DT_PLTREL is 17");
        let mut l = layout(X86_64);
        let at = l.entry(DT_INIT_ARRAYSZ);
        l.put(at, 0x6000_0000);
        assert_eq!(l.error(), "corrupt: DT_INIT_ARRAYSZ is missing");
        let mut l = layout(X86_64);
        let at = l.entry(DT_VERNEEDNUM_FOR_TESTS);
        l.put(at, DT_TEXTREL);
        assert_eq!(l.error(), "text relocations, which this loader does not check");
        let mut l = layout(X86_64);
        let (init, fini) = (l.value(DT_INIT), l.entry(DT_FINI));
        l.put(fini, DT_INIT);
        l.put(fini + 8, init);
        assert_eq!(l.error(), "corrupt: DT_INIT appears twice in the dynamic section");
        // No DT_NULL: every entry from the first made one the loader ignores.
        let mut l = layout(X86_64);
        let start = l.entry(DT_NEEDED);
        let end = l.entry(DT_NULL) + 16;
        for at in (start..end).step_by(16) {
            l.put(at, 0x6000_0000);
        }
        let size = u64_at(&l.0, l.phdr(PT_DYNAMIC) + 32) as usize;
        for at in (end..start + size).step_by(16) {
            l.put(at, 0x6000_0000);
        }
        assert_eq!(l.error(), "corrupt: the dynamic section does not end");
    }

    /// `DT_VERNEEDNUM`, which the loader does not read (a tag to overwrite harmlessly).
    const DT_VERNEEDNUM_FOR_TESTS: u64 = 0x6fff_ffff;
}
