//! The checks of everything the dynamic section names, in the order the loader uses it:
//! strings, relocation tables, hash tables and symbols, versions, relocations, initialisers,
//! the PLT's GOT.

use std::collections::BTreeMap;
use std::io::{Read, Seek};

use super::dynamic::*;
use super::headers::tls_memsz;
use super::image::Image;
use super::input::{u16_at, u32_at, u64_at};
use super::reader::{Reader, Table};
use super::relocation::{rela_applied, reserved_got_bytes, SlotValue, RELA_BYTES};
use super::symbol::{Symbol, SHN_ABS, SHN_LORESERVE, STT_FUNC, STT_GNU_IFUNC, STT_OBJECT, STT_TLS, SYM_BYTES};
use super::MAX_ARRAY_SLOTS;
use crate::foreign::error::LoadError;

impl<R: Read + Seek> Reader<R> {
    /// Every check that needs the dynamic section.
    pub(super) fn check(mut self, dyn_addr: u64, dyn_size: u64, d: Dynamic) -> Result<Image, LoadError> {
        if d.get(DT_FLAGS).is_some_and(|f| f & DF_TEXTREL != 0) {
            return Err(LoadError::Unchecked { what: "text relocations" });
        }
        let mut tables = vec![Table { start: dyn_addr, end: dyn_addr + dyn_size, what: "inside the dynamic section" }];

        // Strings: the loader reads names up to their NUL, so the table must end in one.
        let strtab_at = d.get(DT_STRTAB).ok_or(LoadError::Missing { what: "DT_STRTAB" })?;
        let strsz = d.get(DT_STRSZ).ok_or(LoadError::Missing { what: "DT_STRSZ" })?;
        if strsz == 0 {
            return Err(LoadError::BadValue { what: "DT_STRSZ", value: 0 });
        }
        let strtab = self.table(strtab_at, strsz, "DT_STRTAB")?;
        if strtab.last() != Some(&0) {
            return Err(LoadError::Unterminated { what: "the string table" });
        }
        tables.push(Table { start: strtab_at, end: strtab_at + strsz, what: "inside the string table" });
        let string = |offset: u64, what: &'static str| -> Result<String, LoadError> {
            let at = usize::try_from(offset)
                .ok()
                .filter(|&o| o < strtab.len())
                .ok_or(LoadError::BadValue { what, value: offset })?;
            let end = strtab[at..].iter().position(|&b| b == 0).map_or(strtab.len(), |e| at + e);
            Ok(String::from_utf8_lossy(&strtab[at..end]).into_owned())
        };
        let needed = d.needed.iter().map(|&o| string(o, "a DT_NEEDED name's offset")).collect::<Result<Vec<_>, _>>()?;
        let soname = d.get(DT_SONAME).map(|o| string(o, "DT_SONAME's offset")).transpose()?;
        let mut paths = Vec::new();
        for (tag, what) in [(DT_RPATH, "DT_RPATH's offset"), (DT_RUNPATH, "DT_RUNPATH's offset")] {
            if let Some(o) = d.get(tag) {
                paths.push(string(o, what)?);
            }
        }
        for &o in &d.filters {
            paths.push(string(o, "a DT_FILTER name's offset")?);
        }

        // Relocation tables: the loader reads each size tag when the address tag is there.
        if d.get(DT_SYMENT).is_some_and(|e| e != SYM_BYTES) {
            return Err(LoadError::BadValue { what: "DT_SYMENT", value: d.get(DT_SYMENT).unwrap_or(0) });
        }
        let rela = self.rela_table(&d, DT_RELA, rela_applied(&d)?, &mut tables)?;
        if d.get(DT_RELA).is_some() && d.get(DT_RELAENT) != Some(RELA_BYTES) {
            return Err(match d.get(DT_RELAENT) {
                None => LoadError::Missing { what: "DT_RELAENT" },
                Some(v) => LoadError::BadValue { what: "DT_RELAENT", value: v },
            });
        }
        let plt_size = d.get(DT_JMPREL).map(|_| d.get(DT_PLTRELSZ).ok_or(LoadError::Missing { what: "DT_PLTRELSZ" }));
        let jmprel = self.rela_table(&d, DT_JMPREL, plt_size.transpose()?, &mut tables)?;
        if d.get(DT_JMPREL).is_some() && d.get(DT_PLTREL) != Some(DT_RELA) {
            return Err(match d.get(DT_PLTREL) {
                None => LoadError::Missing { what: "DT_PLTREL" },
                Some(v) => LoadError::BadValue { what: "DT_PLTREL", value: v },
            });
        }
        let relr = match d.get(DT_RELR) {
            None => Vec::new(),
            Some(at) => {
                let size = d.get(DT_RELRSZ).ok_or(LoadError::Missing { what: "DT_RELRSZ" })?;
                if d.get(DT_RELRENT) != Some(8) {
                    return Err(LoadError::BadValue { what: "DT_RELRENT", value: d.get(DT_RELRENT).unwrap_or(0) });
                }
                if size % 8 != 0 {
                    return Err(LoadError::BadValue { what: "DT_RELRSZ", value: size });
                }
                let bytes = self.table(at, size, "DT_RELR")?;
                tables.push(Table { start: at, end: at + size, what: "inside the relocation tables" });
                bytes
            }
        };

        // The symbol table's length is not in the file: the hash tables cover the symbols
        // others look up, the relocations name the ones they import (which the GNU hash
        // table may leave out); the loader reads both.
        let symtab_at = d.get(DT_SYMTAB).ok_or(LoadError::Missing { what: "DT_SYMTAB" })?;
        let named = rela.chunks_exact(RELA_BYTES as usize).chain(jmprel.chunks_exact(RELA_BYTES as usize));
        let relocated = named.map(|r| (u64_at(r, 8) >> 32) + 1).max().unwrap_or(0);
        let mut count = None;
        if let Some(at) = d.get(DT_GNU_HASH) {
            count = Some(self.gnu_hash(at, &mut tables)?);
        }
        if let Some(at) = d.get(DT_HASH) {
            let n = self.sysv_hash(at, &mut tables)?;
            count = Some(count.map_or(n, |c: u64| c.max(n)));
        }
        let count =
            count.ok_or(LoadError::Missing { what: "a symbol hash table (DT_HASH or DT_GNU_HASH)" })?.max(relocated);
        let symtab_size =
            count.checked_mul(SYM_BYTES).ok_or(LoadError::BadValue { what: "the symbol count", value: count })?;
        let symtab = self.table(symtab_at, symtab_size, "DT_SYMTAB")?;
        tables.push(Table { start: symtab_at, end: symtab_at + symtab_size, what: "inside the symbol table" });
        let symbols: Vec<Symbol> = symtab
            .chunks_exact(SYM_BYTES as usize)
            .map(|s| Symbol {
                name: u32_at(s, 0),
                info: s[4],
                other: s[5],
                shndx: u16_at(s, 6),
                value: u64_at(s, 8),
                size: u64_at(s, 16),
            })
            .collect();
        let tls_size = tls_memsz(&mut self)?;
        self.tls_size = tls_size;
        for (sym, raw) in symbols.iter().zip(symtab.chunks_exact(SYM_BYTES as usize)) {
            if u64::from(sym.name) >= strsz {
                return Err(LoadError::BadValue { what: "a symbol's name offset", value: sym.name.into() });
            }
            if !sym.defined() || sym.shndx == SHN_ABS || sym.shndx >= SHN_LORESERVE && sym.shndx != 0xffff {
                continue;
            }
            let size = u64_at(raw, 16);
            match sym.kind() {
                STT_FUNC | STT_GNU_IFUNC if !self.is_code(sym.value) => {
                    return Err(LoadError::NotCode { what: "a function symbol", at: sym.value })
                }
                STT_TLS if !sym.value.checked_add(size).is_some_and(|end| end <= tls_size) => {
                    return Err(LoadError::Outside { what: "a thread-local symbol", at: sym.value });
                }
                STT_OBJECT => {
                    let inside = sym
                        .value
                        .checked_add(size)
                        .is_some_and(|end| self.loads.iter().any(|s| s.vaddr <= sym.value && end <= s.mem_end()));
                    if !inside {
                        return Err(LoadError::Outside { what: "a data symbol", at: sym.value });
                    }
                }
                _ => {}
            }
        }

        // Versions: every index a symbol uses must be defined (the loader indexes its table
        // of versions with it), and every list must end.
        let mut versions: Vec<u16> = vec![0, 1];
        if let Some(at) = d.get(DT_VERDEF) {
            self.version_list(at, false, strsz, &mut versions, &mut tables)?;
        }
        if let Some(at) = d.get(DT_VERNEED) {
            self.version_list(at, true, strsz, &mut versions, &mut tables)?;
        }
        // With versions to check, glibc takes DT_VERSYM's address without looking whether the
        // tag is there (`_dl_check_map_versions`).
        if (d.get(DT_VERDEF).is_some() || d.get(DT_VERNEED).is_some()) && d.get(DT_VERSYM).is_none() {
            return Err(LoadError::Missing { what: "DT_VERSYM" });
        }
        let mut versym = Vec::new();
        if let Some(at) = d.get(DT_VERSYM) {
            let bytes = self.table(at, count * 2, "DT_VERSYM")?;
            tables.push(Table { start: at, end: at + count * 2, what: "inside the symbol versions" });
            versym = bytes.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
            if let Some(v) = versym.iter().find(|v| !versions.contains(&(**v & 0x7fff))) {
                return Err(LoadError::BadValue { what: "a symbol's version index", value: u64::from(*v & 0x7fff) });
            }
        }

        // Relocations, in the loader's order (RELR, RELA, JMPREL); the last write to an
        // initialiser slot is what the loader calls.
        let mut slots: BTreeMap<u64, Option<SlotValue>> = BTreeMap::new();
        for (array, size_tag) in [(DT_INIT_ARRAY, DT_INIT_ARRAYSZ), (DT_FINI_ARRAY, DT_FINI_ARRAYSZ)] {
            let Some(at) = d.get(array) else { continue };
            let size = d.get(size_tag).ok_or(LoadError::Missing { what: tag_name(size_tag) })?;
            if size % 8 != 0 || size / 8 > MAX_ARRAY_SLOTS {
                return Err(LoadError::BadValue { what: tag_name(size_tag), value: size });
            }
            if self.file_backed(at, size).is_none() {
                return Err(LoadError::Outside { what: tag_name(array), at });
            }
            for i in 0..size / 8 {
                slots.insert(at + 8 * i, None);
            }
        }
        self.relr(&relr, &tables, &mut slots)?;
        let relacount = d.get(DT_RELACOUNT).unwrap_or(0);
        for (i, r) in rela.chunks_exact(RELA_BYTES as usize).chain(jmprel.chunks_exact(RELA_BYTES as usize)).enumerate()
        {
            let in_rela = i < rela.len() / RELA_BYTES as usize;
            let leading = (i as u64) < relacount && in_rela;
            self.relocation(r, leading, relacount, &symbols, &tables, &mut slots)?;
            if !in_rela {
                self.plt_written.push(u64_at(r, 0));
            }
        }
        self.distinct_targets()?;
        for (&slot, value) in &slots {
            let target = match value {
                None => return Err(LoadError::NotCode { what: "an initialiser no relocation sets", at: slot }),
                Some(SlotValue::Relative(v)) => Some(*v),
                Some(SlotValue::Implicit) => self.word_at(slot)?,
                Some(SlotValue::Symbol(index, addend)) => match symbols.get(*index as usize) {
                    Some(s) if s.defined() && s.kind() != STT_GNU_IFUNC => Some(s.value.wrapping_add(*addend)),
                    _ => None, // another object's function, or a resolver checked above
                },
                Some(SlotValue::Resolved) => None,
            };
            if let Some(target) = target {
                if !self.is_code(target) {
                    return Err(LoadError::NotCode { what: "an initialiser or finaliser", at: target });
                }
            }
        }
        for tag in [DT_INIT, DT_FINI] {
            if let Some(at) = d.get(tag) {
                if !self.is_code(at) {
                    return Err(LoadError::NotCode { what: tag_name(tag), at });
                }
            }
        }
        // The loader writes the reserved entries of the PLT's GOT for lazy binding (and
        // AArch64's TLS descriptor entry).
        if d.get(DT_JMPREL).is_some() {
            if let Some(at) = d.get(DT_PLTGOT) {
                if !self.writable(at, reserved_got_bytes(self.machine)) {
                    return Err(LoadError::BadTarget { at, reason: "outside the writable segments (DT_PLTGOT)" });
                }
            }
        }
        if let Some(at) = d.get(DT_TLSDESC_GOT) {
            if !self.writable(at, 8) {
                return Err(LoadError::BadTarget { at, reason: "outside the writable segments (DT_TLSDESC_GOT)" });
            }
        }
        self.sections(&d, dyn_addr, count, &symbols)?;
        Ok(Image { strtab, symbols, versym, soname, needed, paths })
    }
}
