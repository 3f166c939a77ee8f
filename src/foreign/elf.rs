//! The functions a shared library exports, read from its ELF dynamic symbol table (`.dynsym`),
//! for the coverage reports of the symbol tables (`Nccl::coverage`).
//!
//! The file is untrusted input: only the 64-bit little-endian ELF that this crate's targets
//! load is read (x86-64, AArch64, riscv64), every offset and size is checked against the file's
//! length before it is used, and what is read is bounded ([`MAX_SECTIONS`],
//! [`MAX_TABLE_BYTES`], [`MAX_NAME_BYTES`]). A hostile file gives an error, never a panic, an
//! unbounded allocation or a read outside the file. The layout is the System V gABI's ("ELF
//! Header", "Sections", "Symbol Table").

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// At most this many section headers are read (libnccl has about 40).
pub(crate) const MAX_SECTIONS: u64 = 4096;
/// At most this many bytes of `.dynsym` or of its string table are read (libnccl 2.32.3:
/// about 30 KiB and 40 KiB).
pub(crate) const MAX_TABLE_BYTES: u64 = 64 << 20;
/// A symbol name longer than this is not a C function name this crate looks for.
pub(crate) const MAX_NAME_BYTES: usize = 4096;

/// `SHT_DYNSYM`, the section type of the dynamic symbol table.
const SHT_DYNSYM: u32 = 11;
/// Symbol types that are functions: `STT_FUNC` (2) and `STT_GNU_IFUNC` (10: an indirect
/// function is a function to its callers).
const FUNCTION_TYPES: [u8; 2] = [2, 10];
/// Bindings other objects link to: `STB_GLOBAL` (1) and `STB_WEAK` (2).
const EXPORTED_BINDINGS: [u8; 2] = [1, 2];
/// Visibilities other objects see: `STV_DEFAULT` (0) and `STV_PROTECTED` (3).
const VISIBLE: [u8; 2] = [0, 3];
/// `SHN_UNDEF`: a symbol the object imports, not one it defines.
const SHN_UNDEF: u16 = 0;
/// The sizes of `Elf64_Ehdr`, `Elf64_Shdr` and `Elf64_Sym`.
const EHDR_BYTES: usize = 64;
const SHDR_BYTES: u64 = 64;
const SYM_BYTES: u64 = 24;

/// The names of the functions the ELF shared object at `path` defines and exports (global or
/// weak, default or protected visibility, `STT_FUNC` or `STT_GNU_IFUNC`, defined in a section),
/// sorted, without duplicates. Symbol versions are not part of a name (`.gnu.version` holds
/// them apart).
pub(crate) fn exported_functions(path: &Path) -> Result<Vec<String>, String> {
    let mut file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let len = file.metadata().map_err(|e| format!("cannot read {}: {e}", path.display()))?.len();
    let mut read = |offset: u64, bytes: u64| -> Result<Vec<u8>, String> {
        offset.checked_add(bytes).filter(|&end| end <= len).ok_or("a table lies outside the file")?;
        let n = usize::try_from(bytes).map_err(|_| "a table too large")?;
        let mut buf = vec![0u8; n];
        file.seek(SeekFrom::Start(offset)).and_then(|_| file.read_exact(&mut buf)).map_err(|e| e.to_string())?;
        Ok(buf)
    };
    let head = read(0, EHDR_BYTES as u64).map_err(|_| "too short for an ELF header".to_string())?;
    if head[..4] != *b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if head[4] != 2 || head[5] != 1 {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let (shoff, shentsize, shnum) = (u64_at(&head, 0x28), u16_at(&head, 0x3a), u16_at(&head, 0x3c));
    if shnum == 0 || u64::from(shnum) > MAX_SECTIONS || u64::from(shentsize) != SHDR_BYTES {
        return Err(format!("{shnum} section headers of {shentsize} bytes: not a shared library this reads"));
    }
    let sections = read(shoff, u64::from(shnum) * SHDR_BYTES)?;
    let section = |i: u64| -> Option<&[u8]> {
        let at = usize::try_from(i.checked_mul(SHDR_BYTES)?).ok()?;
        sections.get(at..at.checked_add(SHDR_BYTES as usize)?)
    };
    let dynsym = (0..u64::from(shnum))
        .filter_map(section)
        .find(|s| u32_at(s, 4) == SHT_DYNSYM)
        .ok_or("no dynamic symbol table (.dynsym)")?;
    let (sym_offset, sym_size, link, entsize) =
        (u64_at(dynsym, 0x18), u64_at(dynsym, 0x20), u32_at(dynsym, 0x28), u64_at(dynsym, 0x38));
    if entsize != SYM_BYTES || sym_size > MAX_TABLE_BYTES || sym_size % SYM_BYTES != 0 {
        return Err(format!(".dynsym of {sym_size} bytes in entries of {entsize}: not a table this reads"));
    }
    let strtab = section(u64::from(link)).ok_or(".dynsym names no string table")?;
    let (str_offset, str_size) = (u64_at(strtab, 0x18), u64_at(strtab, 0x20));
    if str_size > MAX_TABLE_BYTES {
        return Err(format!("a string table of {str_size} bytes"));
    }
    let symbols = read(sym_offset, sym_size)?;
    let strings = read(str_offset, str_size)?;
    let mut names: Vec<String> = symbols
        .chunks_exact(SYM_BYTES as usize)
        .filter(|sym| {
            let (info, other, shndx) = (sym[4], sym[5], u16_at(sym, 6));
            FUNCTION_TYPES.contains(&(info & 0xf))
                && EXPORTED_BINDINGS.contains(&(info >> 4))
                && VISIBLE.contains(&(other & 3))
                && shndx != SHN_UNDEF
        })
        .filter_map(|sym| name_at(&strings, u32_at(sym, 0)))
        .collect();
    names.sort_unstable();
    names.dedup();
    Ok(names)
}

/// The NUL-terminated name at `offset` of `strings`, if it is there, short and UTF-8.
fn name_at(strings: &[u8], offset: u32) -> Option<String> {
    let rest = strings.get(usize::try_from(offset).ok()?..)?;
    let rest = &rest[..rest.len().min(MAX_NAME_BYTES + 1)];
    let end = rest.iter().position(|&b| b == 0)?;
    let name = core::str::from_utf8(&rest[..end]).ok()?;
    (!name.is_empty()).then(|| name.to_string())
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `st_info` values: binding << 4 | type (global 1, weak 2; function 2, object 1, ifunc 10).
    const GLOBAL_FUNC: u8 = 0x12;

    fn write(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("nccl-trampoline-elf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// A minimal ELF: header, `.dynstr`, `.dynsym` with the given symbols, two section headers.
    fn elf(symbols: &[(&str, u8, u8, u16)]) -> Vec<u8> {
        let mut strings = vec![0u8];
        let mut syms = vec![0u8; 24]; // the null symbol
        for (name, info, other, shndx) in symbols {
            let at = strings.len() as u32;
            strings.extend_from_slice(name.as_bytes());
            strings.push(0);
            let mut s = [0u8; 24];
            s[0..4].copy_from_slice(&at.to_le_bytes());
            s[4] = *info;
            s[5] = *other;
            s[6..8].copy_from_slice(&shndx.to_le_bytes());
            syms.extend_from_slice(&s);
        }
        let str_off = 64u64;
        let sym_off = str_off + strings.len() as u64;
        let sh_off = sym_off + syms.len() as u64;
        let mut f = vec![0u8; 64];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[0x28..0x30].copy_from_slice(&sh_off.to_le_bytes());
        f[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        f[0x3c..0x3e].copy_from_slice(&2u16.to_le_bytes());
        f.extend_from_slice(&strings);
        f.extend_from_slice(&syms);
        let mut strtab = [0u8; 64];
        strtab[4..8].copy_from_slice(&3u32.to_le_bytes()); // SHT_STRTAB
        strtab[0x18..0x20].copy_from_slice(&str_off.to_le_bytes());
        strtab[0x20..0x28].copy_from_slice(&(strings.len() as u64).to_le_bytes());
        let mut dynsym = [0u8; 64];
        dynsym[4..8].copy_from_slice(&SHT_DYNSYM.to_le_bytes());
        dynsym[0x18..0x20].copy_from_slice(&sym_off.to_le_bytes());
        dynsym[0x20..0x28].copy_from_slice(&(syms.len() as u64).to_le_bytes());
        dynsym[0x28..0x2c].copy_from_slice(&0u32.to_le_bytes()); // sh_link: section 0
        dynsym[0x38..0x40].copy_from_slice(&SYM_BYTES.to_le_bytes());
        f.extend_from_slice(&strtab);
        f.extend_from_slice(&dynsym);
        f
    }

    #[test]
    fn only_defined_visible_functions_count() {
        let path = write(
            "lib.so",
            &elf(&[
                // (name, st_info, st_other: visibility 0 default, 2 hidden, 3 protected, st_shndx)
                ("ncclAllReduce", GLOBAL_FUNC, 0, 12),
                ("pncclAllReduce", 0x22, 0, 12),
                ("ncclImported", GLOBAL_FUNC, 0, SHN_UNDEF),
                ("ncclHidden", GLOBAL_FUNC, 2, 12),
                ("ncclLocal", 0x02, 0, 12),
                ("ncclObject", 0x11, 0, 12),
                ("ncclIndirect", 0x1a, 3, 12),
                ("ncclAllReduce", GLOBAL_FUNC, 0, 12),
            ]),
        );
        assert_eq!(exported_functions(&path).unwrap(), ["ncclAllReduce", "ncclIndirect", "pncclAllReduce"]);
    }

    /// Truncated, corrupted and oversized files give errors; none panics or reads past the
    /// file. Every prefix of a valid file, and every single-byte corruption of its header
    /// and section headers, is tried.
    #[test]
    fn hostile_files_are_errors() {
        let good = elf(&[("ncclGetVersion", GLOBAL_FUNC, 0, 12)]);
        for n in 0..good.len() {
            let path = write("prefix.so", &good[..n]);
            let _ = exported_functions(&path);
        }
        let headers: Vec<usize> = (0..64).chain(good.len() - 128..good.len()).collect();
        for at in headers {
            for value in [0x00u8, 0x7f, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[at] = value;
                let path = write("corrupt.so", &bad);
                let _ = exported_functions(&path);
            }
        }
        let mut huge = good.clone();
        let at = good.len() - 64 + 0x20;
        huge[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(exported_functions(&write("huge.so", &huge)).is_err());
        let text = [b'x'; 200];
        assert_eq!(exported_functions(&write("text.so", &text)).unwrap_err(), "not an ELF file");
        assert_eq!(exported_functions(&write("short.so", &good[..20])).unwrap_err(), "too short for an ELF header");
    }
}
