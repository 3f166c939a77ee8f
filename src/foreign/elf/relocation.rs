//! The relocations: the types the loader applies on each machine and what each writes, the
//! `RELA`, `JMPREL` and `RELR` tables, and the check of every relocation's target and value.

use std::collections::BTreeMap;
use std::io::{Read, Seek};

use super::dynamic::{tag_name, Dynamic, DT_JMPREL, DT_PLTRELSZ, DT_RELA, DT_RELASZ};
use super::input::u64_at;
use super::machine::{EM_AARCH64, EM_RISCV, EM_X86_64};
use super::reader::Segment;
use super::reader::{Reader, Table};
use super::symbol::{Symbol, SHN_ABS, STT_TLS};
use crate::foreign::error::LoadError;

pub(super) const RELA_BYTES: u64 = 24;

/// The relocations the loader applies on `machine`, how many bytes each writes and what its
/// value is: `None` for a type the loader does not know (it would refuse the file).
fn relocation_kind(machine: u16, r_type: u32) -> Option<Reloc> {
    use Reloc::*;
    use Value::*;
    Some(match (machine, r_type) {
        (_, 0) => None_,
        // x86-64 psABI, table 4.9: 64, PC32, COPY, GLOB_DAT, JUMP_SLOT, RELATIVE, 32,
        // DTPMOD64, DTPOFF64, TPOFF64, TLSDESC, IRELATIVE.
        (EM_X86_64, 1) => Word(8, Address),
        (EM_X86_64, 6 | 7) => Word(8, Got),
        (EM_X86_64, 16) => Word(8, Module),
        (EM_X86_64, 17 | 18) => Word(8, TlsOffset),
        (EM_X86_64, 2 | 10) => Word(4, Address),
        (EM_X86_64, 5) => Copy,
        (EM_X86_64, 8) => Relative,
        (EM_X86_64, 36) => Word(16, TlsOffset),
        (EM_X86_64, 37) => Irelative,
        // ELF for the Arm 64-bit Architecture, "Dynamic relocations": ABS64, COPY, GLOB_DAT,
        // JUMP_SLOT, RELATIVE, TLS_DTPMOD, TLS_DTPREL, TLS_TPREL, TLSDESC, IRELATIVE.
        (EM_AARCH64, 257) => Word(8, Address),
        (EM_AARCH64, 1025 | 1026) => Word(8, Got),
        (EM_AARCH64, 1028) => Word(8, Module),
        (EM_AARCH64, 1029 | 1030) => Word(8, TlsOffset),
        (EM_AARCH64, 1024) => Copy,
        (EM_AARCH64, 1027) => Relative,
        (EM_AARCH64, 1031) => Word(16, TlsOffset),
        (EM_AARCH64, 1032) => Irelative,
        // RISC-V ELF psABI: 64, RELATIVE, COPY, JUMP_SLOT, TLS_DTPMOD64, TLS_DTPREL64,
        // TLS_TPREL64, IRELATIVE.
        (EM_RISCV, 2) => Word(8, Address),
        (EM_RISCV, 5) => Word(8, Got),
        (EM_RISCV, 7) => Word(8, Module),
        (EM_RISCV, 9 | 11) => Word(8, TlsOffset),
        (EM_RISCV, 3) => Relative,
        (EM_RISCV, 4) => Copy,
        (EM_RISCV, 58) => Irelative,
        _ => return None,
    })
}

/// What a relocation does, as far as the checks care.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Reloc {
    /// Nothing (`R_*_NONE`).
    None_,
    /// Writes this many bytes computed from a symbol or the module.
    Word(u64, Value),
    /// Writes the load address plus the addend.
    Relative,
    /// Calls the resolver at the addend and writes what it returns.
    Irelative,
    /// Copies a symbol's bytes from another object.
    Copy,
}

/// What a symbol relocation writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Value {
    /// A symbol's address plus the addend (`R_X86_64_64`, `R_AARCH64_ABS64`).
    Address,
    /// A GOT or PLT slot: the symbol's address (AArch64 adds the addend, which linkers leave 0).
    Got,
    /// A module id: no address.
    Module,
    /// An offset in a TLS block: the symbol's offset plus the addend.
    TlsOffset,
}

/// The largest addend an address relocation against another object's symbol may have (a
/// member of a large structure is far less; a corrupted high byte is far more).
const MAX_FOREIGN_ADDEND: u64 = 1 << 32;

/// The bytes of `DT_RELA` the loader applies as such. GNU ld on riscv64 (and older ld
/// elsewhere) makes `DT_RELASZ` cover `.rela.plt` as well; glibc then takes the PLT's part off
/// when the two tables end at the same byte (glibc 2.36, elf/dynamic-link.h,
/// `_ELF_DYNAMIC_DO_RELOC`: `ranges[0].size -= size`), so each relocation is applied once.
pub(super) fn rela_applied(d: &Dynamic) -> Result<Option<u64>, LoadError> {
    let Some(at) = d.get(DT_RELA) else { return Ok(None) };
    let size = d.get(DT_RELASZ).ok_or(LoadError::Missing { what: "DT_RELASZ" })?;
    let end = at.checked_add(size).ok_or(LoadError::BadValue { what: "DT_RELASZ", value: size })?;
    let plt = d.get(DT_JMPREL).zip(d.get(DT_PLTRELSZ));
    match plt {
        Some((plt_at, plt_size)) if plt_at.checked_add(plt_size) == Some(end) => {
            // glibc's subtraction wraps when the PLT's table starts before DT_RELA.
            size.checked_sub(plt_size).map(Some).ok_or(LoadError::BadValue { what: "DT_RELASZ", value: size })
        }
        _ => Ok(Some(size)),
    }
}

/// The bytes the GOT's reserved entries take that the loader writes for lazy binding.
pub(super) fn reserved_got_bytes(machine: u16) -> u64 {
    if machine == EM_RISCV {
        16
    } else {
        24
    }
}

/// Where an initialiser or finaliser slot's value comes from, as the relocations leave it.
#[derive(Clone, Copy)]
pub(super) enum SlotValue {
    /// Load address plus this.
    Relative(u64),
    /// A symbol's address plus this addend.
    Symbol(u32, u64),
    /// What an indirect function's resolver returns (the resolver is checked).
    Resolved,
    /// `DT_RELR`: load address plus what the file holds there.
    Implicit,
}

impl<R: Read + Seek> Reader<R> {
    /// A `RELA`-format table: its size tag present, a whole number of entries, inside the
    /// file.
    pub(super) fn rela_table(
        &mut self,
        d: &Dynamic,
        tag: u64,
        size: Option<u64>,
        tables: &mut Vec<Table>,
    ) -> Result<Vec<u8>, LoadError> {
        let (Some(at), Some(size)) = (d.get(tag), size) else { return Ok(Vec::new()) };
        if size % RELA_BYTES != 0 {
            let size_tag = if tag == DT_RELA { DT_RELASZ } else { DT_PLTRELSZ };
            return Err(LoadError::BadValue { what: tag_name(size_tag), value: size });
        }
        let bytes = self.table(at, size, tag_name(tag))?;
        tables.push(Table { start: at, end: at + size, what: "inside the relocation tables" });
        Ok(bytes)
    }

    /// `DT_RELR`: an address entry relocates one word and sets the base; a bitmap entry
    /// relocates up to 63 words after it.
    pub(super) fn relr(
        &mut self,
        relr: &[u8],
        tables: &[Table],
        slots: &mut BTreeMap<u64, Option<SlotValue>>,
    ) -> Result<(), LoadError> {
        let mut base = 0u64;
        for word in relr.chunks_exact(8).map(|w| u64_at(w, 0)) {
            let targets: Vec<u64> = if word & 1 == 0 {
                base = word.checked_add(8).ok_or(LoadError::BadValue { what: "a DT_RELR address", value: word })?;
                vec![word]
            } else {
                let t = (0..63u64).filter(|i| (word >> (i + 1)) & 1 != 0).map(|i| base.wrapping_add(i * 8)).collect();
                base = base.checked_add(63 * 8).ok_or(LoadError::BadValue { what: "a DT_RELR bitmap", value: word })?;
                t
            };
            for target in targets {
                self.target(target, 8, tables)?;
                // The addend is the word the file holds there.
                let value = self
                    .word_at(target)?
                    .ok_or(LoadError::BadTarget { at: target, reason: "outside the file's writable data" })?;
                if value > self.span_end() {
                    return Err(LoadError::BadValue {
                        what: "a DT_RELR relocation's value (outside the library)",
                        value,
                    });
                }
                if let Some(slot) = slots.get_mut(&target) {
                    *slot = Some(SlotValue::Implicit);
                }
            }
        }
        Ok(())
    }

    /// The end of the library's address span.
    fn span_end(&self) -> u64 {
        self.loads.iter().map(Segment::mem_end).max().unwrap_or(0)
    }

    /// A relocation writes `width` bytes at `at`: inside a writable segment, outside the
    /// loader's tables.
    fn target(&mut self, at: u64, width: u64, tables: &[Table]) -> Result<(), LoadError> {
        if !self.writable(at, width) {
            return Err(LoadError::BadTarget { at, reason: "outside the writable segments" });
        }
        if let Some(t) = tables.iter().find(|t| at < t.end && t.start < at + width) {
            return Err(LoadError::BadTarget { at, reason: t.what });
        }
        self.written.push((at, width));
        Ok(())
    }

    /// No two relocations write the same bytes: linkers give each slot one relocation, and a
    /// target moved onto another's leaves its own slot unrelocated.
    pub(super) fn distinct_targets(&mut self) -> Result<(), LoadError> {
        self.written.sort_unstable();
        match self.written.windows(2).find(|w| w[1].0 < w[0].0 + w[0].1) {
            Some(w) => Err(LoadError::BadTarget { at: w[1].0, reason: "where another relocation writes" }),
            None => Ok(()),
        }
    }

    /// One `Elf64_Rela`.
    pub(super) fn relocation(
        &mut self,
        r: &[u8],
        leading: bool,
        relacount: u64,
        symbols: &[Symbol],
        tables: &[Table],
        slots: &mut BTreeMap<u64, Option<SlotValue>>,
    ) -> Result<(), LoadError> {
        let (at, info, addend) = (u64_at(r, 0), u64_at(r, 8), u64_at(r, 16));
        let (sym, r_type) = ((info >> 32) as u32, info as u32);
        let kind = relocation_kind(self.machine, r_type)
            .ok_or(LoadError::BadValue { what: "a relocation's type", value: r_type.into() })?;
        if leading && kind != Reloc::Relative {
            // glibc applies the first DT_RELACOUNT entries as relative without looking (and
            // asserts it on x86-64).
            return Err(LoadError::BadValue {
                what: "DT_RELACOUNT (an entry it covers is not relative)",
                value: relacount,
            });
        }
        if sym != 0 && symbols.get(sym as usize).is_none() {
            return Err(LoadError::BadValue { what: "a relocation's symbol index", value: sym.into() });
        }
        let value = match kind {
            Reloc::None_ => return Ok(()),
            Reloc::Copy => {
                return Err(LoadError::Unchecked { what: "a copy relocation (no shared library needs one)" })
            }
            Reloc::Word(width, value) => {
                self.target(at, width, tables)?;
                let symbol = if sym == 0 { None } else { symbols.get(sym as usize) };
                self.symbol_value(value, symbol, addend)?;
                (sym != 0).then_some(SlotValue::Symbol(sym, addend))
            }
            Reloc::Relative => {
                self.target(at, 8, tables)?;
                if addend > self.span_end() {
                    return Err(LoadError::BadValue {
                        what: "a relative relocation's addend (outside the library)",
                        value: addend,
                    });
                }
                Some(SlotValue::Relative(addend))
            }
            Reloc::Irelative => {
                self.target(at, 8, tables)?;
                if !self.is_code(addend) {
                    return Err(LoadError::NotCode { what: "an indirect function's resolver", at: addend });
                }
                Some(SlotValue::Resolved)
            }
        };
        if let Some(slot) = slots.get_mut(&at) {
            *slot = value;
        }
        Ok(())
    }

    /// What a symbol relocation writes lies where its kind says: a GOT slot takes the symbol
    /// as it is (linkers write addend 0; AArch64's loader adds it), an address inside this
    /// library when the symbol is this library's (or near another object's), an offset inside
    /// the TLS block. `symbol` is `None` for symbol index 0 (this module).
    fn symbol_value(&self, value: Value, symbol: Option<&Symbol>, addend: u64) -> Result<(), LoadError> {
        let tls_size = self.tls_size;
        let own = symbol.filter(|s| s.defined() && s.shndx != SHN_ABS);
        match value {
            Value::Module => Ok(()),
            Value::Got if addend != 0 => Err(LoadError::BadValue { what: "a GOT relocation's addend", value: addend }),
            Value::Got => Ok(()),
            Value::Address => {
                let fits = match own {
                    Some(s) if s.kind() != STT_TLS => s.value.checked_add(addend).is_some_and(|v| v <= self.span_end()),
                    _ => addend.wrapping_add(MAX_FOREIGN_ADDEND) < 2 * MAX_FOREIGN_ADDEND,
                };
                if fits {
                    Ok(())
                } else {
                    Err(LoadError::BadValue { what: "an address relocation's addend", value: addend })
                }
            }
            Value::TlsOffset => {
                let fits = match (symbol, own) {
                    (None, _) => addend <= tls_size,
                    (Some(_), Some(s)) => s.value.checked_add(addend).is_some_and(|v| v <= tls_size),
                    (Some(_), None) => addend.wrapping_add(MAX_FOREIGN_ADDEND) < 2 * MAX_FOREIGN_ADDEND,
                };
                if fits {
                    Ok(())
                } else {
                    Err(LoadError::BadValue { what: "a TLS relocation's offset", value: addend })
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foreign::elf::dynamic::{DT_PLTGOT, DT_RELACOUNT};
    use crate::foreign::elf::headers::PT_DYNAMIC;
    use crate::foreign::elf::testing::{layout, RISCV64, X86_64};

    #[test]
    fn relocation_corruptions_name_what_is_wrong() {
        // Into the read-only part, into the dynamic section, of an unknown type.
        let mut l = layout(X86_64);
        let r = l.rela(0);
        l.put(r, 0x100);
        assert_eq!(l.error(), "corrupt: a relocation writes to 0x100, outside the writable segments");
        let mut l = layout(X86_64);
        let dynamic = u64_at(&l.0, l.phdr(PT_DYNAMIC) + 16);
        let r = l.rela(5);
        l.put(r, dynamic + 8);
        assert_eq!(
            l.error(),
            format!("corrupt: a relocation writes to {:#x}, inside the dynamic section", dynamic + 8)
        );
        let mut l = layout(X86_64);
        let r = l.rela(6);
        l.put(r + 8, (1 << 32) | 0xff);
        assert_eq!(l.error(), "corrupt: a relocation's type is 255");
        // A symbol index past the symbol table.
        let mut l = layout(X86_64);
        let r = l.rela(6);
        l.put(r + 8, (0xff_ffff << 32) | 6);
        assert!(l.error().starts_with("corrupt: DT_SYMTAB at "), "{}", l.error());
        // The first initialiser's relative addend moved into the data: it would be called.
        let mut l = layout(X86_64);
        let r = l.rela(0);
        let data = l.value(DT_PLTGOT);
        l.put(r + 16, data);
        assert_eq!(
            l.error(),
            format!("corrupt: an initialiser or finaliser at {data:#x} is not in an executable segment")
        );
        // An addend outside the library.
        let mut l = layout(X86_64);
        let r = l.rela(3);
        l.put(r + 16, 1 << 40);
        assert_eq!(l.error(), "corrupt: a relative relocation's addend (outside the library) is 1099511627776");
        // DT_RELACOUNT covering a symbolic relocation.
        let mut l = layout(X86_64);
        let at = l.entry(DT_RELACOUNT);
        l.put(at + 8, 6);
        assert_eq!(l.error(), "corrupt: DT_RELACOUNT (an entry it covers is not relative) is 6");
        // A copy relocation.
        let mut l = layout(X86_64);
        let r = l.rela(4);
        let info = u64_at(&l.0, r + 8);
        l.put(r + 8, (info & !0xffff_ffff) | 5);
        assert_eq!(l.error(), "a copy relocation (no shared library needs one), which this loader does not check");
    }

    /// `DT_RELASZ` covering the PLT's relocations as well: applied once when the two tables
    /// end together (as glibc takes them: the riscv64 seed, and x86-64's table stretched), a
    /// duplicate write when they do not.
    #[test]
    fn a_relocation_table_covering_the_plts_is_applied_once() {
        let l = layout(RISCV64);
        assert_eq!(l.value(DT_RELA) + l.value(DT_RELASZ), l.value(DT_JMPREL) + l.value(DT_PLTRELSZ));
        assert!(l.check().is_ok());
        let mut l = layout(X86_64);
        let (rela, plt) = (l.value(DT_RELA), l.value(DT_JMPREL));
        assert_eq!(rela + l.value(DT_RELASZ), plt, "the seed's tables are adjacent");
        let at = l.entry(DT_RELASZ);
        l.put(at + 8, plt + l.value(DT_PLTRELSZ) - rela);
        assert!(l.check().is_ok(), "{:?}", l.check().err());
        // The PLT's table moved back onto DT_RELA's last entry: the two no longer end
        // together, and that entry would be applied twice.
        let jmprel = l.entry(DT_JMPREL);
        l.put(jmprel + 8, plt - 24);
        assert!(l.error().ends_with("where another relocation writes"), "{}", l.error());
    }
}
