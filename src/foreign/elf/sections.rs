//! The cross-checks against the section headers, which the loader ignores and the linker writes
//! from the same layout: they catch a field shifted inside its valid range.

use std::io::{Read, Seek};

use super::dynamic::{
    tag_name, Dynamic, DT_FINI, DT_FINI_ARRAY, DT_FINI_ARRAYSZ, DT_GNU_HASH, DT_HASH, DT_INIT, DT_INIT_ARRAY,
    DT_INIT_ARRAYSZ, DT_JMPREL, DT_PLTRELSZ, DT_RELA, DT_RELASZ, DT_RELR, DT_RELRSZ, DT_SYMTAB, DT_VERDEF, DT_VERNEED,
    DT_VERSYM,
};
use super::headers::EHDR_BYTES;
use super::input::{u16_at, u32_at, u64_at};
use super::reader::Reader;
use super::symbol::{Symbol, STT_FUNC, SYM_BYTES};
use super::MAX_SECTIONS;
use crate::foreign::error::LoadError;

const SHDR_BYTES: u64 = 64;

const SHT_RELA: u32 = 4;
const SHT_HASH: u32 = 5;
const SHT_DYNAMIC: u32 = 6;
const SHT_NOBITS: u32 = 8;
const SHT_DYNSYM: u32 = 11;
const SHT_INIT_ARRAY: u32 = 14;
const SHT_FINI_ARRAY: u32 = 15;
const SHT_RELR: u32 = 19;
const SHT_GNU_HASH: u32 = 0x6fff_fff6;
const SHT_GNU_VERDEF: u32 = 0x6fff_fffd;
const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
const SHT_GNU_VERSYM: u32 = 0x6fff_ffff;
const SHF_WRITE: u64 = 1;
const SHF_ALLOC: u64 = 2;
const SHF_EXECINSTR: u64 = 4;
const SHF_INFO_LINK: u64 = 0x40;
const SHF_TLS: u64 = 0x400;

impl<R: Read + Seek> Reader<R> {
    /// The cross-checks against the section headers, when they can be read (see the module
    /// documentation); skipped for a file without readable ones.
    pub(super) fn sections(
        &mut self,
        d: &Dynamic,
        dyn_addr: u64,
        count: u64,
        symbols: &[Symbol],
    ) -> Result<(), LoadError> {
        let Ok(head) = self.input.read(0, EHDR_BYTES, "the ELF header") else { return Ok(()) };
        let (shoff, shentsize, shnum) = (u64_at(&head, 40), u16_at(&head, 58), u16_at(&head, 60));
        if shnum == 0 || shnum >= MAX_SECTIONS || u64::from(shentsize) != SHDR_BYTES {
            return Ok(());
        }
        let Ok(raw) = self.input.read(shoff, u64::from(shnum) * SHDR_BYTES, "the section headers") else {
            return Ok(());
        };
        struct Section {
            kind: u32,
            flags: u64,
            addr: u64,
            offset: u64,
            size: u64,
            info: u32,
        }
        let sections: Vec<Section> = raw
            .chunks_exact(SHDR_BYTES as usize)
            .map(|s| Section {
                kind: u32_at(s, 4),
                flags: u64_at(s, 8),
                addr: u64_at(s, 16),
                offset: u64_at(s, 24),
                size: u64_at(s, 32),
                info: u32_at(s, 44),
            })
            .collect();
        for s in sections.iter().filter(|s| s.flags & SHF_ALLOC != 0 && s.size > 0) {
            let nobits = s.kind == SHT_NOBITS;
            if nobits && s.flags & SHF_TLS != 0 {
                continue; // .tbss takes no room in the image
            }
            let end = s.addr.checked_add(s.size).ok_or(LoadError::Disagrees { what: "a section", at: s.addr })?;
            let seg = self
                .loads
                .iter()
                .find(|g| g.vaddr <= s.addr && end <= g.mem_end())
                .ok_or(LoadError::Disagrees { what: "a section", at: s.addr })?;
            // Initialised contents where the segment maps them from the file; zeroed ones
            // (.bss) past the file's part, where the loader clears them.
            let mapped_here = if nobits {
                s.addr >= seg.file_end()
            } else {
                end <= seg.file_end() && s.offset == seg.offset + (s.addr - seg.vaddr)
            };
            let permitted =
                (s.flags & SHF_EXECINSTR == 0 || seg.executable()) && (s.flags & SHF_WRITE == 0 || seg.writable());
            if !mapped_here || !permitted {
                return Err(LoadError::Disagrees { what: "a section", at: s.addr });
            }
        }
        let starts = |kind: u32, addr: u64| sections.iter().any(|s| s.kind == kind && s.addr == addr);
        let checks = [
            (DT_SYMTAB, SHT_DYNSYM),
            (DT_GNU_HASH, SHT_GNU_HASH),
            (DT_HASH, SHT_HASH),
            (DT_VERSYM, SHT_GNU_VERSYM),
            (DT_VERDEF, SHT_GNU_VERDEF),
            (DT_VERNEED, SHT_GNU_VERNEED),
            (DT_RELA, SHT_RELA),
            (DT_JMPREL, SHT_RELA),
            (DT_RELR, SHT_RELR),
            (DT_INIT_ARRAY, SHT_INIT_ARRAY),
            (DT_FINI_ARRAY, SHT_FINI_ARRAY),
        ];
        for (tag, kind) in checks {
            if let Some(at) = d.get(tag) {
                if !starts(kind, at) {
                    return Err(LoadError::Disagrees { what: tag_name(tag), at });
                }
            }
        }
        // The initialiser arrays: the one of each kind the dynamic section names, whole (a
        // library whose initialisers the loader never runs starts in a state its code does
        // not expect).
        for (array, size_tag, kind) in
            [(DT_INIT_ARRAY, DT_INIT_ARRAYSZ, SHT_INIT_ARRAY), (DT_FINI_ARRAY, DT_FINI_ARRAYSZ, SHT_FINI_ARRAY)]
        {
            let named = (d.get(array), d.get(size_tag));
            for s in sections.iter().filter(|s| s.kind == kind && s.flags & SHF_ALLOC != 0 && s.size > 0) {
                if named != (Some(s.addr), Some(s.size)) {
                    return Err(LoadError::Disagrees { what: tag_name(array), at: s.addr });
                }
            }
        }
        // The relocation tables: every relocation section inside a table the dynamic section
        // names, and every such table made of relocation sections (a relocation the loader
        // skips leaves an address unrelocated; one it reads past its section is garbage).
        let dynamic_tables: Vec<(u64, u64)> = [(DT_RELA, DT_RELASZ), (DT_JMPREL, DT_PLTRELSZ), (DT_RELR, DT_RELRSZ)]
            .iter()
            .filter_map(|&(t, z)| Some((d.get(t)?, d.get(t)?.checked_add(d.get(z)?)?)))
            .filter(|(a, b)| a < b)
            .collect();
        let mut relocation_sections: Vec<(u64, u64)> = sections
            .iter()
            .filter(|s| matches!(s.kind, SHT_RELA | SHT_RELR) && s.flags & SHF_ALLOC != 0 && s.size > 0)
            .filter_map(|s| Some((s.addr, s.addr.checked_add(s.size)?)))
            .collect();
        relocation_sections.sort_unstable();
        for &(lo, hi) in &relocation_sections {
            if !dynamic_tables.iter().any(|&(a, b)| a <= lo && hi <= b) {
                return Err(LoadError::Disagrees { what: "a relocation section", at: lo });
            }
        }
        for &(a, b) in &dynamic_tables {
            let mut covered = a;
            for &(lo, hi) in &relocation_sections {
                if lo <= covered && covered < hi {
                    covered = hi;
                }
            }
            if covered < b {
                return Err(LoadError::Disagrees { what: "a relocation table", at: a });
            }
        }
        if !starts(SHT_DYNAMIC, dyn_addr) {
            return Err(LoadError::Disagrees { what: "the dynamic section", at: dyn_addr });
        }
        if let Some(at) = d.get(DT_SYMTAB) {
            if !sections.iter().any(|s| s.kind == SHT_DYNSYM && s.addr == at && count * SYM_BYTES <= s.size) {
                return Err(LoadError::Disagrees { what: "the symbol count", at });
            }
        }
        // The PLT's relocations write into the section their own section names (`sh_info`
        // with SHF_INFO_LINK: `.got.plt` or `.got`).
        let plt_relocations =
            d.get(DT_JMPREL).and_then(|at| sections.iter().find(|s| s.kind == SHT_RELA && s.addr == at));
        if let Some(got) = plt_relocations
            .filter(|s| s.flags & SHF_INFO_LINK != 0)
            .and_then(|s| sections.get(usize::try_from(s.info).ok()?))
        {
            if let Some(&at) = self.plt_written.iter().find(|&&at| !(got.addr <= at && at - got.addr + 8 <= got.size)) {
                return Err(LoadError::Disagrees { what: "a PLT relocation's target", at });
            }
        }
        // DT_INIT is `.init`'s start, or with `-Wl,-init=f` the start of function `f`: one
        // the unwind table lists or the symbol table names.
        let starts = self.function_starts();
        for tag in [DT_INIT, DT_FINI] {
            if let Some(at) = d.get(tag) {
                let section_start = sections.iter().any(|s| s.flags & SHF_EXECINSTR != 0 && s.addr == at);
                let unwound = starts.as_ref().map_or(true, |f| f.binary_search(&at).is_ok());
                let named = symbols.iter().any(|s| s.defined() && s.kind() == STT_FUNC && s.value == at);
                if !section_start && !unwound && !named {
                    return Err(LoadError::NotAFunctionStart { what: tag_name(tag), at });
                }
            }
        }
        Ok(())
    }

    /// The function starts `.eh_frame_hdr`'s search table lists (the unwinder's index of the
    /// functions with call frame information), sorted; `None` without one, or with encodings
    /// other than the ones linkers write (`pcrel|sdata4`, `udata4`, `datarel|sdata4`).
    fn function_starts(&mut self) -> Option<Vec<u64>> {
        let (at, size) = self.eh_frame?;
        let hdr = self.table(at, size, "PT_GNU_EH_FRAME").ok()?;
        if hdr.len() < 12 || hdr[..4] != [1, 0x1b, 0x03, 0x3b] {
            return None;
        }
        let count = usize::try_from(u32_at(&hdr, 8)).ok()?;
        let table = hdr.get(12..count.checked_mul(8)?.checked_add(12)?)?;
        let mut starts: Vec<u64> =
            table.chunks_exact(8).map(|e| at.wrapping_add(u32_at(e, 0) as i32 as i64 as u64)).collect();
        starts.sort_unstable();
        Some(starts)
    }
}
