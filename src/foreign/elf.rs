//! A bounded reader of ELF shared libraries that checks, before the system loader sees a file,
//! everything the loader trusts: a file that passes is mapped and relocated without reading
//! or writing outside its mappings, and one that does not is refused in one line.
//!
//! glibc's loader (`dlopen`) checks the ELF header and little else: it maps the load segments
//! whatever the file's length (the first read of a page past the end raises SIGBUS), follows
//! the dynamic section's addresses, walks hash chains and version lists until their end
//! markers, writes where relocations say and calls what the initialiser arrays hold. A
//! truncated or corrupted library therefore crashes (or hangs) the process that loads it. This
//! reader checks, from the file alone (System V gABI "ELF Header", "Program Header", "Dynamic
//! Section", "Hash Table", "Relocation"; the GNU extensions as glibc 2.36 reads them):
//!
//! - the ELF header: 64-bit, little-endian, current version, a shared object (`ET_DYN`), for
//!   the expected machine (this build's, when loading);
//! - the program headers, inside the file; every `PT_LOAD`'s file range inside the file (a
//!   truncated file), its size, alignment and order; `PT_DYNAMIC`, `PT_PHDR`, `PT_TLS`,
//!   `PT_GNU_EH_FRAME`, `PT_GNU_RELRO` and `PT_GNU_PROPERTY` (and its notes) inside the
//!   load segments;
//! - the dynamic section, ending in `DT_NULL`, each tag the loader uses at most once, and
//!   every table it dereferences inside the file-backed part of a load segment:
//!   `DT_STRTAB`/`DT_STRSZ` (ending in a NUL), `DT_SYMTAB`, `DT_HASH` and `DT_GNU_HASH`
//!   (bucket counts, Bloom filter size, every bucket and chain inside the table, every chain
//!   ending: no loop), `DT_RELA`/`DT_RELASZ`/`DT_RELAENT`, `DT_JMPREL`/`DT_PLTRELSZ`/
//!   `DT_PLTREL`, `DT_RELR`/`DT_RELRSZ`/`DT_RELRENT`, `DT_INIT`, `DT_FINI`,
//!   `DT_INIT_ARRAY`/`DT_FINI_ARRAY` and their sizes, `DT_VERSYM`, `DT_VERDEF` and
//!   `DT_VERNEED` (each list ending, every version index a symbol uses defined), `DT_PLTGOT`;
//!   the string offsets of `DT_NEEDED`, `DT_SONAME`, `DT_RPATH`, `DT_RUNPATH`, `DT_AUXILIARY`
//!   and `DT_FILTER`, of every symbol and version name;
//! - every symbol: a function (`STT_FUNC`, `STT_GNU_IFUNC`) inside an executable segment, a
//!   data object inside a load segment, a thread-local one inside `PT_TLS`;
//! - every relocation (`RELA`, `JMPREL`, `RELR`; `RELA` without the PLT's part when
//!   `DT_RELASZ` covers `.rela.plt` too, as GNU ld writes it on riscv64 and glibc reads it):
//!   of a type the loader applies on this machine, writing inside a writable segment, not
//!   into a table the loader reads and not where another relocation writes, its symbol
//!   inside the symbol table; a relative
//!   relocation's value inside the library; a GOT slot's addend 0 (AArch64's loader adds it);
//!   an address relocation's value inside the library for its own symbols, within 4 GiB of
//!   another object's; a TLS offset inside the TLS block; an indirect function's resolver
//!   inside an executable segment; `DT_RELACOUNT`'s leading entries relative; no text
//!   relocations and no copy relocations;
//! - every initialiser and finaliser the loader calls (`DT_INIT`, `DT_FINI`, each slot of the
//!   arrays as relocated) inside an executable segment;
//! - when the file has readable section headers (the loader ignores them; the linker writes
//!   them from the same layout): every allocated section inside the load segment that maps it,
//!   at the file offset that segment maps (`.bss` past the file's part), with its
//!   permissions; each table of the dynamic section at the start of the section of its type,
//!   the initialiser arrays and relocation sections all named by it, whole; the PLT's
//!   relocations inside the section their section names; `DT_INIT` and `DT_FINI` at the start
//!   of a section, of a function the unwind table (`.eh_frame_hdr`) lists, or of a function
//!   symbol. This catches a field shifted inside its valid range, which no bounds check can
//!   tell apart.
//!
//! What is not and cannot be checked: the contents of code and data. A corrupted instruction,
//! an address redirected to another place inside the library (a relocation's addend, a symbol
//! value, an unwind table entry), or data the library's code relies on (where `PT_GNU_RELRO`
//! ends against the data it must not cover) look like any other valid file; such a library
//! loads and may crash when its code runs. The libraries it needs (`DT_NEEDED`) are loaded by
//! the system loader unchecked. A file without section headers is checked on its program
//! headers and dynamic section alone.
//!
//! Every offset and size is checked against the input's length before it is used and every
//! table read is bounded ([`MAX_TABLE_BYTES`]), so a hostile input gives an error, never a
//! panic, an unbounded allocation, a loop or a read outside the input. The input is any
//! `Read + Seek` (a file by descriptor, or bytes in memory for tests and fuzzing).

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};

use crate::foreign::error::LoadError;

/// At most this many bytes of one table (the string table, the symbol table, a relocation
/// table, a segment's data) are read. libnccl 2.32.3's largest, its relocations, has 600 KiB.
pub(crate) const MAX_TABLE_BYTES: u64 = 64 << 20;
/// At most this many program headers (libnccl has 8).
const MAX_PROGRAM_HEADERS: u16 = 1024;
/// At most this many section headers are read for the cross-checks (libnccl has about 40).
const MAX_SECTIONS: u16 = 0xff00;
/// A symbol name longer than this is not a C function name this crate looks for.
pub(crate) const MAX_NAME_BYTES: usize = 4096;
/// At most this many entries of a version list (glibc's libc has about 40 definitions).
const MAX_VERSION_ENTRIES: usize = 4096;
/// At most this many initialiser or finaliser slots per array.
const MAX_ARRAY_SLOTS: u64 = 1 << 16;
/// The largest `PT_TLS` alignment and size accepted.
const MAX_TLS_ALIGN: u64 = 1 << 16;
const MAX_TLS_BYTES: u64 = 1 << 30;

/// `e_machine` of the architectures this crate runs on.
pub(crate) const EM_X86_64: u16 = 62;
pub(crate) const EM_AARCH64: u16 = 183;
pub(crate) const EM_RISCV: u16 = 243;

/// The `e_machine` of this build, if it is one of the architectures the reader knows.
pub(crate) fn native_machine() -> Option<u16> {
    match std::env::consts::ARCH {
        "x86_64" => Some(EM_X86_64),
        "aarch64" => Some(EM_AARCH64),
        "riscv64" => Some(EM_RISCV),
        _ => None,
    }
}

const EHDR_BYTES: u64 = 64;
const PHDR_BYTES: u64 = 56;
const SHDR_BYTES: u64 = 64;
const DYN_BYTES: u64 = 16;
const SYM_BYTES: u64 = 24;
const RELA_BYTES: u64 = 24;

const ET_DYN: u16 = 3;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_PHDR: u32 = 6;
const PT_TLS: u32 = 7;
const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
const PT_GNU_RELRO: u32 = 0x6474_e552;
const PT_GNU_PROPERTY: u32 = 0x6474_e553;

const PF_X: u32 = 1;
const PF_W: u32 = 2;

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

const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_PLTRELSZ: u64 = 2;
const DT_PLTGOT: u64 = 3;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_RELA: u64 = 7;
const DT_RELASZ: u64 = 8;
const DT_RELAENT: u64 = 9;
const DT_STRSZ: u64 = 10;
const DT_SYMENT: u64 = 11;
const DT_INIT: u64 = 12;
const DT_FINI: u64 = 13;
const DT_SONAME: u64 = 14;
const DT_RPATH: u64 = 15;
const DT_PLTREL: u64 = 20;
const DT_TEXTREL: u64 = 22;
const DT_JMPREL: u64 = 23;
const DT_INIT_ARRAY: u64 = 25;
const DT_FINI_ARRAY: u64 = 26;
const DT_INIT_ARRAYSZ: u64 = 27;
const DT_FINI_ARRAYSZ: u64 = 28;
const DT_RUNPATH: u64 = 29;
const DT_FLAGS: u64 = 30;
const DT_RELRSZ: u64 = 35;
const DT_RELR: u64 = 36;
const DT_RELRENT: u64 = 37;
const DT_GNU_HASH: u64 = 0x6fff_fef5;
const DT_TLSDESC_GOT: u64 = 0x6fff_fef7;
const DT_VERSYM: u64 = 0x6fff_fff0;
const DT_RELACOUNT: u64 = 0x6fff_fff9;
const DT_VERDEF: u64 = 0x6fff_fffc;
const DT_VERNEED: u64 = 0x6fff_fffe;
const DT_AUXILIARY: u64 = 0x7fff_fffd;
const DT_FILTER: u64 = 0x7fff_ffff;
const DF_TEXTREL: u64 = 4;

const STT_OBJECT: u8 = 1;
const STT_FUNC: u8 = 2;
const STT_TLS: u8 = 6;
const STT_GNU_IFUNC: u8 = 10;
/// Bindings other objects link to: `STB_GLOBAL` (1) and `STB_WEAK` (2).
const EXPORTED_BINDINGS: [u8; 2] = [1, 2];
/// Visibilities other objects see: `STV_DEFAULT` (0) and `STV_PROTECTED` (3).
const VISIBLE: [u8; 2] = [0, 3];
const SHN_UNDEF: u16 = 0;
const SHN_LORESERVE: u16 = 0xff00;
const SHN_ABS: u16 = 0xfff1;

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
fn rela_applied(d: &Dynamic) -> Result<Option<u64>, LoadError> {
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
fn reserved_got_bytes(machine: u16) -> u64 {
    if machine == EM_RISCV {
        16
    } else {
        24
    }
}

/// An input read at offsets, every read checked against its length and bounded.
pub(crate) struct Input<R> {
    reader: R,
    len: u64,
}

impl<R: Read + Seek> Input<R> {
    /// Takes `reader`; its length is where its end is now.
    pub(crate) fn new(mut reader: R) -> Result<Self, LoadError> {
        let len = reader.seek(SeekFrom::End(0))?;
        Ok(Input { reader, len })
    }

    /// `size` bytes at `offset`: [`LoadError::Truncated`] naming `what` if they run past the
    /// end, [`LoadError::TooLarge`] past [`MAX_TABLE_BYTES`].
    fn read(&mut self, offset: u64, size: u64, what: &'static str) -> Result<Vec<u8>, LoadError> {
        let end = offset.saturating_add(size);
        if end > self.len {
            return Err(LoadError::Truncated { what, end, len: self.len });
        }
        if size > MAX_TABLE_BYTES {
            return Err(LoadError::TooLarge { what, size });
        }
        let n = usize::try_from(size).map_err(|_| LoadError::TooLarge { what, size })?;
        let mut buf = vec![0u8; n];
        self.reader.seek(SeekFrom::Start(offset))?;
        self.reader.read_exact(&mut buf)?;
        Ok(buf)
    }
}

/// One `PT_LOAD`.
#[derive(Clone, Copy, Debug)]
struct Segment {
    vaddr: u64,
    memsz: u64,
    offset: u64,
    filesz: u64,
    flags: u32,
}

impl Segment {
    /// The end of the part the file backs (no overflow: checked when read).
    fn file_end(&self) -> u64 {
        self.vaddr + self.filesz
    }
    fn mem_end(&self) -> u64 {
        self.vaddr + self.memsz
    }
    fn writable(&self) -> bool {
        self.flags & PF_W != 0
    }
    fn executable(&self) -> bool {
        self.flags & PF_X != 0
    }
}

/// One `.dynsym` entry.
#[derive(Clone, Copy, Debug)]
struct Symbol {
    name: u32,
    info: u8,
    other: u8,
    shndx: u16,
    value: u64,
    /// `st_size`: an object's bytes.
    size: u64,
}

impl Symbol {
    fn kind(&self) -> u8 {
        self.info & 0xf
    }
    fn defined(&self) -> bool {
        self.shndx != SHN_UNDEF
    }
    fn exported(&self) -> bool {
        EXPORTED_BINDINGS.contains(&(self.info >> 4)) && VISIBLE.contains(&(self.other & 3)) && self.defined()
    }
}

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
    strtab: Vec<u8>,
    symbols: Vec<Symbol>,
    versym: Vec<u16>,
    soname: Option<String>,
    needed: Vec<String>,
    /// `DT_RPATH`, `DT_RUNPATH`, `DT_AUXILIARY`, `DT_FILTER` strings.
    paths: Vec<String>,
}

/// The single-valued tags of the dynamic section this reader uses, by tag.
#[derive(Default)]
struct Dynamic {
    tags: BTreeMap<u64, u64>,
    needed: Vec<u64>,
    /// `DT_AUXILIARY` and `DT_FILTER` (names of other objects, like `DT_NEEDED`).
    filters: Vec<u64>,
}

impl Dynamic {
    fn get(&self, tag: u64) -> Option<u64> {
        self.tags.get(&tag).copied()
    }
}

/// The name of a dynamic tag, for messages.
fn tag_name(tag: u64) -> &'static str {
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

/// A range of addresses the loader reads as a table; relocations must not write into it.
struct Table {
    start: u64,
    end: u64,
    what: &'static str,
}

/// Where an initialiser or finaliser slot's value comes from, as the relocations leave it.
#[derive(Clone, Copy)]
enum SlotValue {
    /// Load address plus this.
    Relative(u64),
    /// A symbol's address plus this addend.
    Symbol(u32, u64),
    /// What an indirect function's resolver returns (the resolver is checked).
    Resolved,
    /// `DT_RELR`: load address plus what the file holds there.
    Implicit,
}

/// Reads and checks the file, keeping the checked layout while it goes.
struct Reader<R> {
    input: Input<R>,
    machine: u16,
    loads: Vec<Segment>,
    /// Each writable segment's file bytes, read when first needed (RELR addends, slots).
    data: BTreeMap<u64, Vec<u8>>,
    /// `PT_GNU_EH_FRAME`: address and size.
    eh_frame: Option<(u64, u64)>,
    /// Where the relocations write, and how many bytes: no two may overlap.
    written: Vec<(u64, u64)>,
    /// Where the PLT's relocations (`DT_JMPREL`) write.
    plt_written: Vec<u64>,
    /// `PT_TLS`'s memory size (0 without one).
    tls_size: u64,
}

impl<R: Read + Seek> Reader<R> {
    /// The load segment whose file-backed part holds `[addr, addr + size)`.
    fn file_backed(&self, addr: u64, size: u64) -> Option<&Segment> {
        let end = addr.checked_add(size)?;
        self.loads.iter().find(|s| s.vaddr <= addr && end <= s.file_end())
    }

    /// `size` bytes at address `addr`, which must be file-backed.
    fn table(&mut self, addr: u64, size: u64, what: &'static str) -> Result<Vec<u8>, LoadError> {
        let seg = *self.file_backed(addr, size).ok_or(LoadError::Outside { what, at: addr })?;
        self.input.read(seg.offset + (addr - seg.vaddr), size, what)
    }

    fn writable(&self, addr: u64, size: u64) -> bool {
        addr.checked_add(size)
            .is_some_and(|end| self.loads.iter().any(|s| s.writable() && s.vaddr <= addr && end <= s.mem_end()))
    }

    fn is_code(&self, addr: u64) -> bool {
        is_code(&self.loads, addr)
    }

    /// The 8 bytes the file holds at writable address `addr`, if the file backs it.
    fn word_at(&mut self, addr: u64) -> Result<Option<u64>, LoadError> {
        let Some(seg) = self
            .loads
            .iter()
            .find(|s| s.writable() && s.vaddr <= addr && addr.checked_add(8).is_some_and(|e| e <= s.file_end()))
            .copied()
        else {
            return Ok(None);
        };
        if !self.data.contains_key(&seg.vaddr) {
            let bytes = self.input.read(seg.offset, seg.filesz, "a writable segment")?;
            self.data.insert(seg.vaddr, bytes);
        }
        let bytes = &self.data[&seg.vaddr];
        let at =
            usize::try_from(addr - seg.vaddr).map_err(|_| LoadError::Outside { what: "a relocated word", at: addr })?;
        Ok(bytes.get(at..at + 8).map(|b| u64_at(b, 0)))
    }
}

fn is_code(loads: &[Segment], addr: u64) -> bool {
    loads.iter().any(|s| s.executable() && s.vaddr <= addr && addr < s.file_end())
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

impl<R: Read + Seek> Reader<R> {
    fn image(mut self) -> Result<Image, LoadError> {
        let len = self.input.len;
        let head = self.input.read(0, len.min(EHDR_BYTES), "the ELF header")?;
        if head.len() < 4 || head[..4] != *b"\x7fELF" {
            return Err(LoadError::NotElf);
        }
        if head.len() < EHDR_BYTES as usize {
            return Err(LoadError::Truncated { what: "the ELF header", end: EHDR_BYTES, len });
        }
        if let Some(mismatch) = target_mismatch(&head, self.machine) {
            return Err(LoadError::OtherTarget(mismatch));
        }
        if head[6] != 1 || u32_at(&head, 20) != 1 {
            return Err(LoadError::BadValue { what: "the ELF version", value: u64::from(u32_at(&head, 20)) });
        }
        let e_type = u16_at(&head, 16);
        if e_type != ET_DYN {
            return Err(LoadError::NotSharedLibrary { e_type });
        }
        let (phoff, phentsize, phnum) = (u64_at(&head, 32), u16_at(&head, 54), u16_at(&head, 56));
        if u64::from(phentsize) != PHDR_BYTES {
            return Err(LoadError::BadValue { what: "the program header size", value: phentsize.into() });
        }
        if phnum == 0 {
            return Err(LoadError::Missing { what: "the program headers" });
        }
        if phnum > MAX_PROGRAM_HEADERS {
            return Err(LoadError::BadValue { what: "the number of program headers", value: phnum.into() });
        }
        let phdrs = self.input.read(phoff, u64::from(phnum) * PHDR_BYTES, "the program headers")?;
        let mut others: Vec<(u32, u64, u64, u64)> = Vec::new();
        for ph in phdrs.chunks_exact(PHDR_BYTES as usize) {
            let (p_type, flags) = (u32_at(ph, 0), u32_at(ph, 4));
            let (offset, vaddr, filesz, memsz, align) =
                (u64_at(ph, 8), u64_at(ph, 16), u64_at(ph, 32), u64_at(ph, 40), u64_at(ph, 48));
            if p_type == PT_LOAD {
                self.load_segment(Segment { vaddr, memsz, offset, filesz, flags }, align)?;
            } else {
                others.push((p_type, vaddr, filesz.max(memsz), align));
            }
        }
        if self.loads.is_empty() {
            return Err(LoadError::Missing { what: "a load segment" });
        }
        let mut dynamic = None;
        for &(p_type, vaddr, size, align) in &others {
            match p_type {
                PT_DYNAMIC if dynamic.is_some() => return Err(LoadError::Duplicate { what: "PT_DYNAMIC" }),
                PT_DYNAMIC => dynamic = Some((vaddr, size)),
                PT_PHDR => {
                    let wanted = u64::from(phnum) * PHDR_BYTES;
                    let seg =
                        self.file_backed(vaddr, wanted).ok_or(LoadError::Outside { what: "PT_PHDR", at: vaddr })?;
                    if seg.offset + (vaddr - seg.vaddr) != phoff {
                        return Err(LoadError::Disagrees { what: "PT_PHDR", at: vaddr });
                    }
                }
                PT_TLS => self.tls_segment(&phdrs, vaddr, align)?,
                PT_GNU_EH_FRAME if self.file_backed(vaddr, size).is_none() => {
                    return Err(LoadError::Outside { what: "PT_GNU_EH_FRAME", at: vaddr })
                }
                PT_GNU_EH_FRAME => self.eh_frame = Some((vaddr, size)),
                PT_GNU_RELRO => {
                    let inside = vaddr
                        .checked_add(size)
                        .is_some_and(|end| self.loads.iter().any(|s| s.vaddr <= vaddr && end <= s.mem_end()));
                    if !inside {
                        return Err(LoadError::Outside { what: "PT_GNU_RELRO", at: vaddr });
                    }
                }
                PT_GNU_PROPERTY => self.property_notes(vaddr, size, align)?,
                _ => {}
            }
        }
        let (dyn_addr, dyn_size) = dynamic.ok_or(LoadError::Missing { what: "the dynamic section" })?;
        let dynamic = self.dynamic(dyn_addr, dyn_size)?;
        self.check(dyn_addr, dyn_size, dynamic)
    }

    /// Checks one `PT_LOAD` and keeps it.
    fn load_segment(&mut self, s: Segment, align: u64) -> Result<(), LoadError> {
        let len = self.input.len;
        let end = s.offset.saturating_add(s.filesz);
        if end > len {
            return Err(LoadError::Truncated { what: "a load segment", end, len });
        }
        if s.filesz > s.memsz {
            return Err(LoadError::BadValue {
                what: "a load segment's file size (above its memory size)",
                value: s.filesz,
            });
        }
        if s.vaddr.checked_add(s.memsz).is_none() {
            return Err(LoadError::BadValue { what: "a load segment's address", value: s.vaddr });
        }
        if align > 1 && !align.is_power_of_two() {
            return Err(LoadError::BadValue { what: "a load segment's alignment", value: align });
        }
        // mmap maps whole pages: the address and the offset must agree within a page.
        if s.vaddr.wrapping_sub(s.offset) % 4096 != 0 {
            return Err(LoadError::BadValue {
                what: "a load segment's offset (not page-aligned with its address)",
                value: s.offset,
            });
        }
        if let Some(prev) = self.loads.last() {
            if s.vaddr < prev.mem_end() {
                return Err(LoadError::BadValue {
                    what: "a load segment's address (below the end of the one before)",
                    value: s.vaddr,
                });
            }
        }
        self.loads.push(s);
        Ok(())
    }

    /// `PT_TLS`: the initialisation image inside the file, a power-of-two alignment, sizes
    /// the loader can allocate.
    fn tls_segment(&self, phdrs: &[u8], vaddr: u64, align: u64) -> Result<(), LoadError> {
        let Some(ph) = phdrs.chunks_exact(PHDR_BYTES as usize).find(|ph| u32_at(ph, 0) == PT_TLS) else {
            return Ok(());
        };
        let (filesz, memsz) = (u64_at(ph, 32), u64_at(ph, 40));
        if align > MAX_TLS_ALIGN || (align > 1 && !align.is_power_of_two()) {
            return Err(LoadError::BadValue { what: "the TLS segment's alignment", value: align });
        }
        if filesz > memsz || memsz > MAX_TLS_BYTES {
            return Err(LoadError::BadValue { what: "the TLS segment's size", value: memsz });
        }
        if filesz > 0 && self.file_backed(vaddr, filesz).is_none() {
            return Err(LoadError::Outside { what: "the TLS initialisation image", at: vaddr });
        }
        Ok(())
    }

    /// `PT_GNU_PROPERTY`: glibc (x86-64, AArch64) walks its notes in memory and reads each
    /// property array by the note's own size; every note must lie inside the segment.
    fn property_notes(&mut self, vaddr: u64, size: u64, align: u64) -> Result<(), LoadError> {
        const WHAT: &str = "PT_GNU_PROPERTY";
        let notes = self.table(vaddr, size, WHAT)?;
        if align != 8 {
            return Ok(()); // glibc skips a misaligned note segment
        }
        let mut at = 0usize;
        let mut count = 0usize;
        let align_up = |n: u64| n.checked_add(7).map(|n| n & !7);
        while at + 12 < notes.len() {
            let (namesz, descsz) = (u64::from(u32_at(&notes, at)), u64::from(u32_at(&notes, at + 4)));
            // ELF_NOTE_NEXT_OFFSET: the descriptor starts at the header and name rounded up
            // to 8, the next note after the descriptor rounded up to 8.
            let next = align_up(12 + namesz)
                .and_then(|desc| desc.checked_add(align_up(descsz)?))
                .and_then(|n| n.checked_add(at as u64));
            match next {
                Some(next) if next <= notes.len() as u64 => at = next as usize,
                _ => return Err(LoadError::Outside { what: "a PT_GNU_PROPERTY note", at: vaddr + at as u64 }),
            }
            count += 1;
            if count > MAX_VERSION_ENTRIES {
                return Err(LoadError::Unterminated { what: "the PT_GNU_PROPERTY notes" });
            }
        }
        Ok(())
    }

    /// The dynamic section: entries up to `DT_NULL`, single-valued tags at most once.
    fn dynamic(&mut self, addr: u64, size: u64) -> Result<Dynamic, LoadError> {
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

    /// Every check that needs the dynamic section.
    fn check(mut self, dyn_addr: u64, dyn_size: u64, d: Dynamic) -> Result<Image, LoadError> {
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
            .map(|s| Symbol { name: u32_at(s, 0), info: s[4], other: s[5], shndx: u16_at(s, 6), value: u64_at(s, 8), size: u64_at(s, 16) })
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

    /// A `RELA`-format table: its size tag present, a whole number of entries, inside the
    /// file.
    fn rela_table(
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

    /// `DT_GNU_HASH`: the symbol count its chains cover. The loader divides by the bucket
    /// count, masks with the Bloom filter's size (a power of two) and walks each chain until
    /// an entry with its low bit set.
    fn gnu_hash(&mut self, at: u64, tables: &mut Vec<Table>) -> Result<u64, LoadError> {
        let head = self.table(at, 16, "DT_GNU_HASH")?;
        let (nbuckets, symoffset, bloom) =
            (u64::from(u32_at(&head, 0)), u64::from(u32_at(&head, 4)), u64::from(u32_at(&head, 8)));
        if nbuckets == 0 {
            return Err(LoadError::BadValue { what: "the GNU hash bucket count", value: 0 });
        }
        if !bloom.is_power_of_two() {
            return Err(LoadError::BadValue { what: "the GNU hash Bloom filter size", value: bloom });
        }
        let fixed = 16 + bloom * 8 + nbuckets * 4;
        let table = self.table(at, fixed, "DT_GNU_HASH")?;
        let buckets: Vec<u64> =
            table[(16 + bloom * 8) as usize..].chunks_exact(4).map(|b| u64::from(u32_at(b, 0))).collect();
        let chains_at = at + fixed;
        let mut count = symoffset;
        let last = buckets.iter().copied().filter(|&b| b != 0).max();
        if let Some(b) = buckets.iter().find(|&&b| b != 0 && b < symoffset) {
            return Err(LoadError::BadValue { what: "a GNU hash bucket", value: *b });
        }
        let mut end = chains_at;
        if let Some(start) = last {
            // Chains are contiguous and walked forward: the walk from the highest bucket ends
            // last, and every other walk ends at or before it.
            let seg = *self
                .file_backed(chains_at, 0)
                .ok_or(LoadError::Outside { what: "the GNU hash chains", at: chains_at })?;
            let first = chains_at + (start - symoffset) * 4;
            let available = seg.file_end().saturating_sub(first).min(MAX_TABLE_BYTES) / 4 * 4;
            if available == 0 {
                return Err(LoadError::Outside { what: "a GNU hash chain", at: first });
            }
            // Read in growing pieces: the chain's length is known only at its end.
            let (mut read, mut piece) = (0u64, 4096u64);
            let len = loop {
                let size = piece.min(available - read);
                let words = self.table(first + read, size, "the GNU hash chains")?;
                if let Some(i) = words.chunks_exact(4).position(|w| u32_at(w, 0) & 1 != 0) {
                    break read / 4 + i as u64;
                }
                read += size;
                if read >= available {
                    return Err(LoadError::Unterminated { what: "a GNU hash chain" });
                }
                piece = piece.saturating_mul(4);
            };
            count = start + len + 1;
            end = first + (len + 1) * 4;
        }
        tables.push(Table { start: at, end, what: "inside the GNU hash table" });
        Ok(count)
    }

    /// `DT_HASH`: `nchain`, the symbol count. Every bucket and chain entry below it, and no
    /// chain loops (the loader walks a chain until index 0).
    fn sysv_hash(&mut self, at: u64, tables: &mut Vec<Table>) -> Result<u64, LoadError> {
        let head = self.table(at, 8, "DT_HASH")?;
        let (nbucket, nchain) = (u64::from(u32_at(&head, 0)), u64::from(u32_at(&head, 4)));
        if nbucket == 0 {
            return Err(LoadError::BadValue { what: "the hash table's bucket count", value: 0 });
        }
        let size = 8 + (nbucket + nchain) * 4;
        let table = self.table(at, size, "DT_HASH")?;
        tables.push(Table { start: at, end: at + size, what: "inside the hash table" });
        let words: Vec<u32> = table[8..].chunks_exact(4).map(|w| u32_at(w, 0)).collect();
        let (buckets, chains) = words.split_at(nbucket as usize);
        if let Some(&bad) = words.iter().find(|&&w| u64::from(w) >= nchain && w != 0) {
            return Err(LoadError::BadValue { what: "a hash table entry (not below nchain)", value: bad.into() });
        }
        // The chains form a graph where each index has one successor: mark each index as
        // ending (reaches 0) once, walking each unknown one; a walk that meets itself loops.
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            Unknown,
            Walking,
            Ends,
        }
        let mut marks = vec![Mark::Unknown; chains.len()];
        let mut path = Vec::new();
        for &start in buckets {
            let mut i = start as usize;
            while i != 0 && marks[i] == Mark::Unknown {
                marks[i] = Mark::Walking;
                path.push(i);
                i = chains[i] as usize;
            }
            if i != 0 && marks[i] == Mark::Walking {
                return Err(LoadError::Unterminated { what: "a hash chain" });
            }
            for j in path.drain(..) {
                marks[j] = Mark::Ends;
            }
        }
        Ok(nchain)
    }

    /// A version definition (`DT_VERDEF`) or needs (`DT_VERNEED`) list: version 1 entries,
    /// names inside the string table, ending within [`MAX_VERSION_ENTRIES`]. The indices it
    /// defines go to `versions`.
    fn version_list(
        &mut self,
        at: u64,
        needs: bool,
        strsz: u64,
        versions: &mut Vec<u16>,
        tables: &mut Vec<Table>,
    ) -> Result<(), LoadError> {
        let (what, entry_bytes) = if needs { ("DT_VERNEED", 16) } else { ("DT_VERDEF", 20) };
        let list = if needs { "the version needs" } else { "the version definitions" };
        let (mut lo, mut hi) = (at, at);
        let mut entry = at;
        for _ in 0..MAX_VERSION_ENTRIES {
            let e = self.table(entry, entry_bytes, what)?;
            let (version, name_or_ndx, aux, next) = if needs {
                (u16_at(&e, 0), u64::from(u32_at(&e, 4)), u64::from(u32_at(&e, 8)), u64::from(u32_at(&e, 12)))
            } else {
                (u16_at(&e, 0), u64::from(u16_at(&e, 4)), u64::from(u32_at(&e, 12)), u64::from(u32_at(&e, 16)))
            };
            if version != 1 {
                return Err(LoadError::BadValue { what: "a version entry's format", value: version.into() });
            }
            if needs && name_or_ndx >= strsz {
                return Err(LoadError::BadValue { what: "a DT_VERNEED file name's offset", value: name_or_ndx });
            }
            if !needs {
                versions.push(name_or_ndx as u16 & 0x7fff);
            }
            lo = lo.min(entry);
            hi = hi.max(entry + entry_bytes);
            // The auxiliary entries: a needed version's index, a definition's name.
            let mut a = entry.checked_add(aux).ok_or(LoadError::Outside { what, at: entry })?;
            let mut ended = false;
            for _ in 0..MAX_VERSION_ENTRIES {
                let (aux_bytes, name_at, next_at) = if needs { (16, 8, 12) } else { (8, 0, 4) };
                let x = self.table(a, aux_bytes, what)?;
                let name = u64::from(u32_at(&x, name_at));
                if name >= strsz {
                    return Err(LoadError::BadValue { what: "a version name's offset", value: name });
                }
                if needs {
                    versions.push(u16_at(&x, 6) & 0x7fff);
                }
                lo = lo.min(a);
                hi = hi.max(a + aux_bytes);
                let next_aux = u64::from(u32_at(&x, next_at));
                // A definition's names after the first are its parents, which the loader does
                // not read; a needed version's list is walked to its end.
                if next_aux == 0 || !needs {
                    ended = true;
                    break;
                }
                a = a.checked_add(next_aux).ok_or(LoadError::Outside { what, at: a })?;
            }
            if !ended {
                return Err(LoadError::Unterminated { what: list });
            }
            if next == 0 {
                tables.push(Table { start: lo, end: hi, what: "inside the version tables" });
                return Ok(());
            }
            entry = entry.checked_add(next).ok_or(LoadError::Outside { what, at: entry })?;
        }
        Err(LoadError::Unterminated { what: list })
    }

    /// `DT_RELR`: an address entry relocates one word and sets the base; a bitmap entry
    /// relocates up to 63 words after it.
    fn relr(
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
    fn distinct_targets(&mut self) -> Result<(), LoadError> {
        self.written.sort_unstable();
        match self.written.windows(2).find(|w| w[1].0 < w[0].0 + w[0].1) {
            Some(w) => Err(LoadError::BadTarget { at: w[1].0, reason: "where another relocation writes" }),
            None => Ok(()),
        }
    }

    /// One `Elf64_Rela`.
    fn relocation(
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

    /// The cross-checks against the section headers, when they can be read (see the module
    /// documentation); skipped for a file without readable ones.
    fn sections(&mut self, d: &Dynamic, dyn_addr: u64, count: u64, symbols: &[Symbol]) -> Result<(), LoadError> {
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

/// `PT_TLS`'s memory size (0 without one), for thread-local symbols.
fn tls_memsz<R: Read + Seek>(reader: &mut Reader<R>) -> Result<u64, LoadError> {
    let head = reader.input.read(0, EHDR_BYTES, "the ELF header")?;
    let (phoff, phnum) = (u64_at(&head, 32), u16_at(&head, 56));
    let phdrs = reader.input.read(phoff, u64::from(phnum) * PHDR_BYTES, "the program headers")?;
    Ok(phdrs.chunks_exact(PHDR_BYTES as usize).find(|p| u32_at(p, 0) == PT_TLS).map_or(0, |p| u64_at(p, 40)))
}

/// `e_machine` values of the ELF specification (System V gABI, "ELF Header").
const MACHINES: &[(u16, &str)] = &[
    (3, "32-bit x86"),
    (8, "mips"),
    (20, "powerpc"),
    (21, "powerpc64"),
    (22, "s390x"),
    (40, "32-bit arm"),
    (EM_X86_64, "x86_64"),
    (EM_AARCH64, "aarch64"),
    (EM_RISCV, "riscv"),
    (258, "loongarch"),
];

/// The architecture this program was built for, spelled as `MACHINES` spells it.
fn this_machine() -> &'static str {
    match std::env::consts::ARCH {
        "x86" => "32-bit x86",
        "arm" => "32-bit arm",
        "riscv64" => "riscv",
        "loongarch64" => "loongarch",
        other => other,
    }
}

/// Reads the ELF header at the start of `bytes` (only its first 20 bytes are looked at) and
/// says what is wrong with it for this program, if anything can be told from it.
pub(crate) fn elf_mismatch(bytes: &[u8]) -> Option<String> {
    let running = this_machine();
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" {
        return Some("not a shared library (no ELF header)".to_string());
    }
    let machine = match bytes[5] {
        1 => u16::from_le_bytes([bytes[18], bytes[19]]),
        2 => u16::from_be_bytes([bytes[18], bytes[19]]),
        _ => return Some("not a shared library (unknown ELF byte order)".to_string()),
    };
    let built_for = MACHINES.iter().find(|(m, _)| *m == machine).map(|(_, name)| *name);
    let bits = if bytes[4] == 2 { 64 } else { 32 };
    match built_for {
        Some(name) if name != running => {
            Some(format!("built for {name}, this program runs on {running}: use the {running} build"))
        }
        None => {
            Some(format!("built for ELF machine {machine}, this program runs on {running}: use the {running} build"))
        }
        Some(_) if bits != usize::BITS => {
            Some(format!("a {bits}-bit library, this program is {}-bit: use a {}-bit build", usize::BITS, usize::BITS))
        }
        Some(_) => None,
    }
}

/// What is wrong with the ELF identification and machine of `head` (at least 20 bytes of an
/// ELF header) for `machine`: this program's wording ([`elf_mismatch`]) when `machine` is this
/// build's, else a plain one. `None` for a 64-bit little-endian file for `machine`.
fn target_mismatch(head: &[u8], machine: u16) -> Option<String> {
    let fits = head[4] == 2 && head[5] == 1 && u16_at(head, 18) == machine;
    if fits {
        return None;
    }
    if Some(machine) == native_machine() {
        if let Some(m) = elf_mismatch(head) {
            return Some(m);
        }
    }
    Some(format!(
        "not a 64-bit little-endian ELF file for machine {machine} (class {}, byte order {}, machine {})",
        head[4],
        head[5],
        u16_at(head, 18)
    ))
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tests/data/elf/tiny.c built by gcc 12 (Debian 12) for x86-64, AArch64 and riscv64
    /// (whose `DT_RELASZ` covers `.rela.plt` too), and for x86-64 with RELR relocations and a
    /// System V hash table (the commands are in that folder's README).
    const X86_64: &[u8] = include_bytes!("../../tests/data/elf/tiny-x86_64.so");
    const AARCH64: &[u8] = include_bytes!("../../tests/data/elf/tiny-aarch64.so");
    const RISCV64: &[u8] = include_bytes!("../../tests/data/elf/tiny-riscv64.so");
    const RELR_SYSV: &[u8] = include_bytes!("../../tests/data/elf/tiny-relr-sysv-hash.so");

    /// Where things are in a (valid) file, to corrupt them one at a time.
    struct Layout(Vec<u8>);

    impl Layout {
        fn phdrs(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
            let (phoff, phnum) = (u64_at(&self.0, 32) as usize, u16_at(&self.0, 56) as usize);
            (0..phnum).map(move |i| (phoff + i * 56, u32_at(&self.0, phoff + i * 56)))
        }
        /// The file offset of the first program header of `p_type`.
        fn phdr(&self, p_type: u32) -> usize {
            self.phdrs().find(|(_, t)| *t == p_type).expect("a program header of that type").0
        }
        /// The file offset of address `vaddr`.
        fn offset(&self, vaddr: u64) -> usize {
            self.phdrs()
                .filter(|(_, t)| *t == PT_LOAD)
                .map(|(at, _)| (u64_at(&self.0, at + 16), u64_at(&self.0, at + 8), u64_at(&self.0, at + 32)))
                .find(|(v, _, size)| *v <= vaddr && vaddr < v + size)
                .map(|(v, off, _)| (off + vaddr - v) as usize)
                .expect("a file-backed address")
        }
        /// The file offset of the dynamic entry `tag`.
        fn entry(&self, tag: u64) -> usize {
            let dynamic = self.offset(u64_at(&self.0, self.phdr(PT_DYNAMIC) + 16));
            (0..).map(|i| dynamic + 16 * i).find(|&at| u64_at(&self.0, at) == tag).expect("the tag")
        }
        fn value(&self, tag: u64) -> u64 {
            u64_at(&self.0, self.entry(tag) + 8)
        }
        fn put(&mut self, at: usize, value: u64) {
            self.0[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
        fn put32(&mut self, at: usize, value: u32) {
            self.0[at..at + 4].copy_from_slice(&value.to_le_bytes());
        }
        /// The file offset of the `i`th relocation of `DT_RELA`.
        fn rela(&self, i: usize) -> usize {
            self.offset(self.value(DT_RELA)) + 24 * i
        }
        fn check(&self) -> Result<Image, LoadError> {
            Image::parse(&self.0, u16_at(&self.0, 18))
        }
        fn error(&self) -> String {
            self.check().expect_err("a corrupted file").to_string()
        }
    }

    fn layout(bytes: &[u8]) -> Layout {
        Layout(bytes.to_vec())
    }

    #[test]
    fn the_seeds_pass_and_say_what_they_define() {
        let seeds = [(X86_64, EM_X86_64), (AARCH64, EM_AARCH64), (RISCV64, EM_RISCV), (RELR_SYSV, EM_X86_64)];
        for (bytes, machine) in seeds {
            let image = Image::parse(bytes, machine).unwrap();
            assert_eq!(image.exported_functions(), ["tiny_function"]);
            assert!(matches!(image.definition("tiny_function"), Some(Definition::Function(_))));
            assert_eq!(image.definition("tiny_counter"), Some(Definition::Other("a data object")));
            assert_eq!(image.definition("tiny_thread_local"), Some(Definition::Other("a thread-local variable")));
            // Imported, not defined; not there at all.
            assert_eq!(image.definition("__cxa_finalize"), None);
            assert_eq!(image.definition("ncclGetVersion"), None);
            assert!(!image.uses_origin() && image.soname().is_none());
        }
        let other = Image::parse(AARCH64, EM_X86_64).unwrap_err().to_string();
        assert!(other.contains("183") || other.starts_with("built for aarch64"), "{other}");
    }

    /// Every prefix that cuts into what the loader maps is refused as truncated; none panics.
    #[test]
    fn every_truncation_of_the_mapped_part_is_refused() {
        for bytes in [X86_64, AARCH64, RELR_SYSV] {
            let l = layout(bytes);
            let mapped_end = l
                .phdrs()
                .filter(|(_, t)| *t == PT_LOAD)
                .map(|(at, _)| u64_at(bytes, at + 8) + u64_at(bytes, at + 32))
                .max()
                .unwrap() as usize;
            for n in 0..bytes.len() {
                let result = Image::parse(&bytes[..n], u16_at(bytes, 18));
                match (n, result) {
                    (0..=3, Err(LoadError::NotElf)) => {}
                    (4..=63, Err(LoadError::Truncated { what: "the ELF header", .. })) => {}
                    (n, Err(LoadError::Truncated { len, .. })) if n < mapped_end => assert_eq!(len, n as u64),
                    (n, r) if n < mapped_end => panic!("a prefix of {n} bytes: {r:?}"),
                    // Past the mapped part only the section headers are cut: they are
                    // skipped or, cut part way, read as far as they go.
                    (_, r) => assert!(r.is_ok(), "{r:?}"),
                }
            }
        }
        let msg = Image::parse(&X86_64[..4096], EM_X86_64).unwrap_err().to_string();
        assert!(
            msg.starts_with("truncated: a load segment ends at byte ") && msg.ends_with(", the file has 4096 bytes"),
            "{msg}"
        );
    }

    #[test]
    fn header_and_program_header_corruptions_name_what_is_wrong() {
        let mut l = layout(X86_64);
        l.0[16] = 2;
        assert_eq!(l.error(), "not a shared library (ELF type 2, an executable)");
        let mut l = layout(X86_64);
        l.0[54] = 55;
        assert_eq!(l.error(), "corrupt: the program header size is 55");
        let mut l = layout(X86_64);
        l.0[56..58].copy_from_slice(&[0, 0]);
        assert_eq!(l.error(), "corrupt: the program headers is missing");
        let mut l = layout(X86_64);
        let load = l.phdr(PT_LOAD);
        l.put(load + 32, 1 << 40);
        l.put(load + 40, 1 << 40);
        assert!(l.error().starts_with("truncated: a load segment ends at byte 1099511627776"), "{}", l.error());
        let mut l = layout(X86_64);
        let dynamic = l.phdr(PT_DYNAMIC);
        l.put(dynamic + 16, 0x10_0000);
        assert_eq!(l.error(), "corrupt: the dynamic section at 0x100000 lies outside the file's load segments");
        let mut l = layout(X86_64);
        let tls = l.phdr(PT_TLS);
        l.put(tls + 48, 3);
        assert_eq!(l.error(), "corrupt: the TLS segment's alignment is 3");
        // Values shifted inside their valid range, which only the section headers tell
        // apart: the data segment's file part cut short (its last initialised bytes would
        // read as zeros), an initialiser array one slot shorter.
        let mut l = layout(X86_64);
        let (data, _) = l.phdrs().filter(|(_, t)| *t == PT_LOAD).nth(1).unwrap();
        let filesz = u64_at(&l.0, data + 32);
        l.put(data + 32, filesz - 0x10);
        assert!(l.error().contains("disagrees with the section headers"), "{}", l.error());
        let mut l = layout(X86_64);
        let at = l.entry(DT_INIT_ARRAYSZ);
        l.put(at + 8, 8);
        assert!(l.error().starts_with("corrupt: DT_INIT_ARRAY at "), "{}", l.error());
    }

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

    #[test]
    fn hash_and_version_corruptions_name_what_is_wrong() {
        let mut l = layout(X86_64);
        let gnu = l.offset(l.value(DT_GNU_HASH));
        l.put32(gnu, 0);
        assert_eq!(l.error(), "corrupt: the GNU hash bucket count is 0");
        let mut l = layout(X86_64);
        l.put32(gnu + 8, 3);
        assert_eq!(l.error(), "corrupt: the GNU hash Bloom filter size is 3");
        // A chain without its end marker: every chain word made even, up to the symbols.
        let mut l = layout(X86_64);
        let (nbuckets, bloom) = (u32_at(&l.0, gnu) as usize, u32_at(&l.0, gnu + 8) as usize);
        let chains = gnu + 16 + bloom * 8 + nbuckets * 4;
        let end = l.offset(l.value(DT_SYMTAB));
        for at in (chains..end).step_by(4) {
            let w = u32_at(&l.0, at);
            l.put32(at, w & !1);
        }
        // The walk runs on into the symbol table, whose words end it at random: an error
        // either way.
        assert!(l.check().is_err());
        // A System V hash chain that loops back on itself; an entry past nchain.
        let mut l = layout(RELR_SYSV);
        let hash = l.offset(l.value(DT_HASH));
        let (nbucket, nchain) = (u32_at(&l.0, hash) as usize, u32_at(&l.0, hash + 4));
        let first = (0..nbucket).map(|b| u32_at(&l.0, hash + 8 + 4 * b)).find(|&i| i != 0).unwrap();
        l.put32(hash + 8 + 4 * nbucket + 4 * first as usize, first);
        assert_eq!(l.error(), "corrupt: a hash chain does not end");
        let mut l = layout(RELR_SYSV);
        l.put32(hash + 8, nchain);
        assert_eq!(l.error(), format!("corrupt: a hash table entry (not below nchain) is {nchain}"));
        // The version needs list going on past its one entry, into what follows it (the
        // loader walks it until an offset of 0; a list of one cannot loop).
        let mut l = layout(X86_64);
        let verneed = l.offset(l.value(DT_VERNEED));
        assert_eq!(u32_at(&l.0, verneed + 12), 0, "the seed needs one library's versions");
        l.put32(verneed + 12, 16);
        assert!(l.check().is_err());
        // Its auxiliary entry's offset to the next one (unsigned: lists only go forward)
        // pointing 4 GiB on, past the file.
        let mut l = layout(X86_64);
        let aux = verneed + u32_at(&l.0, verneed + 8) as usize;
        l.put32(aux + 12, 0u32.wrapping_sub(16));
        assert!(l.check().is_err());
        // A symbol version no entry defines.
        let mut l = layout(X86_64);
        let versym = l.offset(l.value(DT_VERSYM));
        l.0[versym + 2..versym + 4].copy_from_slice(&77u16.to_le_bytes());
        assert_eq!(l.error(), "corrupt: a symbol's version index is 77");
    }

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

    /// Every byte of the headers and of every table the loader reads, set to three values:
    /// an error or a pass, never a panic (the fuzz target does this at random and longer).
    #[test]
    fn every_byte_of_the_loaders_tables_corrupted_is_survived() {
        for bytes in [X86_64, RELR_SYSV] {
            let l = layout(bytes);
            let tables_end = l.offset(l.value(DT_JMPREL)) + 24;
            let dynamic = l.offset(u64_at(bytes, l.phdr(PT_DYNAMIC) + 16));
            let dynamic_end = dynamic + u64_at(bytes, l.phdr(PT_DYNAMIC) + 32) as usize;
            let mut refused = 0;
            for at in (0..tables_end).chain(dynamic..dynamic_end) {
                for value in [0x00, 0xff, bytes[at].wrapping_add(1)] {
                    let mut bad = bytes.to_vec();
                    bad[at] = value;
                    refused += usize::from(Image::parse(&bad, EM_X86_64).is_err());
                }
            }
            assert!(refused > tables_end, "{refused}");
        }
    }

    /// Every shared library of the machine's library folders passes: the checks refuse
    /// corrupt files, not the ones linkers write.
    #[test]
    #[cfg_attr(miri, ignore = "reads the machine's libraries")]
    fn the_machines_libraries_pass() {
        let Some(machine) = native_machine() else { return };
        let mut checked = 0;
        let mut failures = Vec::new();
        for dir in
            ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
        {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            for e in entries.flatten() {
                let path = e.path();
                let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
                if !name.contains(".so") || !path.is_file() {
                    continue;
                }
                let Ok(file) = std::fs::File::open(&path) else { continue };
                match Image::read(file, machine) {
                    Ok(_) => checked += 1,
                    Err(LoadError::NotElf | LoadError::OtherTarget(_)) => {}
                    Err(e) => failures.push(format!("{}: {e}", path.display())),
                }
            }
        }
        assert!(failures.is_empty(), "{checked} passed; refused:\n{}", failures.join("\n"));
    }

    /// The real NCCL wheels of every architecture pass for their own machine (the test
    /// command names them; see tests/real_nccl.rs).
    #[test]
    #[cfg_attr(miri, ignore = "reads files")]
    fn the_real_nccl_wheels_pass() {
        for var in ["NCCL_TRAMPOLINE_REAL_NCCL", "NCCL_TRAMPOLINE_REAL_NCCL_OLD", "NCCL_TRAMPOLINE_REAL_NCCL_FOREIGN"] {
            let Some(path) = std::env::var_os(var) else { continue };
            let mut file = std::fs::File::open(&path).unwrap();
            let mut head = [0u8; 20];
            file.read_exact(&mut head).unwrap();
            let image = Image::read(file, u16_at(&head, 18)).unwrap_or_else(|e| panic!("{var}: {e}"));
            assert_eq!(image.soname(), Some("libnccl.so.2"));
            assert!(matches!(image.definition("ncclGetVersion"), Some(Definition::Function(_))));
        }
    }
}
