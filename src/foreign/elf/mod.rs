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
//!
//! The reader's parts: the bounded input and its field reads (`input`), the machines
//! (`machine`), the ELF header and program headers (`headers`), the reader's state and its
//! address checks (`reader`), the dynamic section and the checks it leads to (`dynamic`), the
//! symbols (`symbol`), the hash tables (`hash`), the symbol versions (`versions`), the
//! relocations (`relocation`), the section header cross-checks (`sections`) and the checked
//! file (`image`).

mod checks;
mod dynamic;
mod hash;
mod headers;
mod image;
mod input;
mod machine;
mod reader;
mod relocation;
mod sections;
mod symbol;
#[cfg(test)]
mod testing;
mod versions;

pub(crate) use image::{Definition, Image};
#[cfg(test)]
pub(crate) use machine::elf_mismatch;
pub(crate) use machine::native_machine;

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

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::dynamic::DT_JMPREL;
    use super::headers::PT_DYNAMIC;
    use super::input::{u16_at, u64_at};
    use super::machine::{EM_AARCH64, EM_RISCV, EM_X86_64};
    use super::testing::{layout, AARCH64, RELR_SYSV, RISCV64, X86_64};
    use super::*;
    use crate::foreign::error::LoadError;

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
