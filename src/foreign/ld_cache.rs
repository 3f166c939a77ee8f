//! glibc's loader cache, `/etc/ld.so.cache`, read the way glibc's loader reads it
//! (`elf/dl-cache.c` and `sysdeps/generic/dl-cache.h` of glibc 2.36): the
//! `glibc-ld.so.cache1.1` format, optionally after the old `ld.so-1.7.0` table, with its
//! `glibc-hwcaps` extension.
//!
//! The cache is input from outside the program: every offset is checked against the bytes
//! read, every name must end in a NUL inside them, and a cache glibc would not use (another
//! byte order, a bad magic) is none at all, as it is to glibc.

use std::path::PathBuf;

/// The new format's magic and version.
const MAGIC: &[u8; 20] = b"glibc-ld.so.cache1.1";
/// The old format's magic (libc5-era), which may precede the new table.
const OLD_MAGIC: &[u8; 11] = b"ld.so-1.7.0";
/// `struct cache_file_new` and `struct file_entry_new`.
const HEADER_BYTES: usize = 48;
const ENTRY_BYTES: usize = 24;
/// `struct cache_file` and `struct file_entry` of the old format.
const OLD_HEADER_BYTES: usize = 16;
const OLD_ENTRY_BYTES: usize = 12;
/// `cache_file_new_flags_endian_little`.
const LITTLE_ENDIAN: u8 = 2;
/// `cache_extension_magic` and `cache_extension_tag_glibc_hwcaps`.
const EXTENSION_MAGIC: u32 = 0xeaa4_2174;
const TAG_GLIBC_HWCAPS: u32 = 1;
/// `DL_CACHE_HWCAP_EXTENSION`: the low 32 bits of `hwcap` index the hwcaps names.
const HWCAP_EXTENSION: u64 = 1 << 62;
/// `DL_CACHE_HWCAP_ISA_LEVEL_MASK`, in the upper 32 bits.
const ISA_LEVEL_MASK: u64 = (1 << 10) - 1;

/// The flags of an entry this build's loader uses (`_DL_CACHE_DEFAULT_ID`): `FLAG_ELF_LIBC6`
/// with `FLAG_X8664_LIB64`, `FLAG_AARCH64_LIB64` or `FLAG_RISCV_FLOAT_ABI_DOUBLE`.
pub(crate) fn native_flags() -> Option<i32> {
    match std::env::consts::ARCH {
        "x86_64" => Some(0x0303),
        "aarch64" => Some(0x0a03),
        "riscv64" => Some(0x1003),
        _ => None,
    }
}

/// A parsed cache: its bytes and where the new table starts in them.
#[derive(Debug)]
pub(crate) struct LdCache {
    bytes: Vec<u8>,
    /// Where `struct cache_file_new` starts; string offsets count from here.
    base: usize,
    nlibs: usize,
    /// The `glibc-hwcaps` subfolder names, by index.
    hwcaps: Vec<Option<String>>,
}

/// One entry of the cache.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Entry<'a> {
    /// The soname it is listed under.
    pub(crate) name: &'a [u8],
    /// The file.
    pub(crate) path: &'a [u8],
    /// `FLAG_*` bits: the ELF class and architecture.
    pub(crate) flags: i32,
    /// The `glibc-hwcaps` subfolder it was found in, if any; `Err(())` for a legacy hwcap
    /// entry (glibc before 2.37 only), which this reader does not match.
    pub(crate) hwcaps: Result<Option<&'a str>, ()>,
}

impl LdCache {
    /// The cache in `bytes`, or `None` if glibc would not use it.
    pub(crate) fn parse(bytes: Vec<u8>) -> Option<LdCache> {
        let base = if bytes.starts_with(OLD_MAGIC) {
            let nlibs = usize::try_from(u32_at(&bytes, 12)?).ok()?;
            let end = nlibs.checked_mul(OLD_ENTRY_BYTES)?.checked_add(OLD_HEADER_BYTES)?;
            end.checked_add(7)? & !7
        } else {
            0
        };
        let header = bytes.get(base..base.checked_add(HEADER_BYTES)?)?;
        // A cache that records no byte order is taken to be in this machine's (glibc's
        // `cache_file_new_matches_endian`); every target of this crate is little-endian.
        if header[..20] != *MAGIC || !matches!(header[28] & 3, 0 | LITTLE_ENDIAN) {
            return None;
        }
        let nlibs = usize::try_from(u32_at(header, 20)?).ok()?;
        let entries_end = nlibs.checked_mul(ENTRY_BYTES)?.checked_add(base + HEADER_BYTES)?;
        if entries_end > bytes.len() {
            return None;
        }
        let extension = usize::try_from(u32_at(header, 32)?).ok()?;
        let mut cache = LdCache { bytes, base, nlibs, hwcaps: Vec::new() };
        cache.hwcaps = cache.hwcaps_names(extension).unwrap_or_default();
        Some(cache)
    }

    /// The names of the `glibc-hwcaps` extension section, by index.
    fn hwcaps_names(&self, extension: usize) -> Option<Vec<Option<String>>> {
        if extension == 0 {
            return None;
        }
        let at = self.base.checked_add(extension)?;
        if u32_at(&self.bytes, at)? != EXTENSION_MAGIC {
            return None;
        }
        let count = u32_at(&self.bytes, at + 4)?;
        for i in 0..count.min(64) as usize {
            let section = at.checked_add(8 + i * 16)?;
            if u32_at(&self.bytes, section)? != TAG_GLIBC_HWCAPS {
                continue;
            }
            let offset = usize::try_from(u32_at(&self.bytes, section + 8)?).ok()?;
            let size = usize::try_from(u32_at(&self.bytes, section + 12)?).ok()?;
            let start = self.base.checked_add(offset)?;
            let table = self.bytes.get(start..start.checked_add(size)?)?;
            let names = table
                .chunks_exact(4)
                .take(1024)
                .map(|w| {
                    let name = self.string(u32::from_le_bytes([w[0], w[1], w[2], w[3]]))?;
                    core::str::from_utf8(name).ok().map(str::to_string)
                })
                .collect();
            return Some(names);
        }
        None
    }

    /// The NUL-terminated string at `offset` from the new table's start.
    fn string(&self, offset: u32) -> Option<&[u8]> {
        let start = self.base.checked_add(usize::try_from(offset).ok()?)?;
        let rest = self.bytes.get(start..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        Some(&rest[..end])
    }

    /// Every entry whose strings are inside the cache, in the cache's order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = Entry<'_>> {
        (0..self.nlibs).filter_map(move |i| {
            let e = self.bytes.get(self.base + HEADER_BYTES + i * ENTRY_BYTES..)?.get(..ENTRY_BYTES)?;
            let flags = i32::from_le_bytes([e[0], e[1], e[2], e[3]]);
            let (name, path) = (self.string(u32_at(e, 4)?)?, self.string(u32_at(e, 8)?)?);
            let mut word = [0u8; 8];
            word.copy_from_slice(&e[16..24]);
            let hwcap = u64::from_le_bytes(word);
            let hwcaps = if (hwcap >> 32) & !ISA_LEVEL_MASK == HWCAP_EXTENSION >> 32 {
                Ok(self.hwcaps.get(hwcap as u32 as usize).and_then(|n| n.as_deref()))
            } else if hwcap == 0 {
                Ok(None)
            } else {
                Err(())
            };
            // An entry of a hwcaps subfolder whose name cannot be read is of no subfolder
            // this loader activates.
            let hwcaps = match hwcaps {
                Ok(None) if hwcap != 0 => Err(()),
                other => other,
            };
            (!path.is_empty()).then_some(Entry { name, path, flags, hwcaps })
        })
    }

    /// The file glibc's loader takes from the cache for soname `name`: among the entries of
    /// that name with `flags`, one of the active `glibc-hwcaps` subfolders (`active`, best
    /// first) in their order, else the first plain entry.
    pub(crate) fn lookup(&self, name: &[u8], flags: i32, active: &[&str]) -> Option<PathBuf> {
        let mut best: Option<(usize, &[u8])> = None;
        for e in self.entries().filter(|e| e.name == name && e.flags == flags) {
            let rank = match e.hwcaps {
                Ok(None) => active.len(),
                Ok(Some(sub)) => match active.iter().position(|a| *a == sub) {
                    Some(p) => p,
                    None => continue,
                },
                Err(()) => continue,
            };
            if best.as_ref().map_or(true, |(r, _)| rank < *r) {
                best = Some((rank, e.path));
            }
        }
        best.map(|(_, path)| path_from_bytes(path))
    }
}

/// A path from the cache's bytes (a Unix path is bytes).
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let w = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache in the new format: `(name, path, flags, hwcap)` entries and hwcaps names.
    pub(crate) fn cache(entries: &[(&str, &str, i32, u64)], hwcaps: &[&str]) -> Vec<u8> {
        let mut strings = Vec::new();
        let strings_at = HEADER_BYTES + entries.len() * ENTRY_BYTES;
        let mut put = |s: &str| {
            let at = (strings_at + strings.len()) as u32;
            strings.extend_from_slice(s.as_bytes());
            strings.push(0);
            at
        };
        let mut table = Vec::new();
        for (name, path, flags, hwcap) in entries {
            let (k, v) = (put(name), put(path));
            table.extend_from_slice(&flags.to_le_bytes());
            table.extend_from_slice(&k.to_le_bytes());
            table.extend_from_slice(&v.to_le_bytes());
            table.extend_from_slice(&0u32.to_le_bytes());
            table.extend_from_slice(&hwcap.to_le_bytes());
        }
        let names: Vec<u32> = hwcaps.iter().map(|h| put(h)).collect();
        while (strings_at + strings.len()) % 8 != 0 {
            strings.push(0);
        }
        let ext_at = strings_at + strings.len();
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        out.extend_from_slice(&[LITTLE_ENDIAN, 0, 0, 0]);
        out.extend_from_slice(&(if hwcaps.is_empty() { 0 } else { ext_at as u32 }).to_le_bytes());
        out.extend_from_slice(&[0; 12]);
        out.extend_from_slice(&table);
        out.extend_from_slice(&strings);
        if !hwcaps.is_empty() {
            let section_at = (ext_at + 8 + 16) as u32;
            out.extend_from_slice(&EXTENSION_MAGIC.to_le_bytes());
            out.extend_from_slice(&1u32.to_le_bytes());
            out.extend_from_slice(&TAG_GLIBC_HWCAPS.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&section_at.to_le_bytes());
            out.extend_from_slice(&((names.len() * 4) as u32).to_le_bytes());
            for n in names {
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        out
    }

    #[test]
    fn the_loaders_choice_among_entries_of_one_name() {
        let x86 = 0x0303;
        let bytes = cache(
            &[
                ("libm.so.6", "/lib32/libm.so.6", 0x0003, 0),
                ("libnccl.so.2", "/opt/a/libnccl.so.2", x86, 0),
                ("libnccl.so.2", "/opt/v3/libnccl.so.2", x86, HWCAP_EXTENSION | 1),
                ("libnccl.so.2", "/opt/v4/libnccl.so.2", x86, HWCAP_EXTENSION),
                ("libnccl.so.2", "/opt/legacy/libnccl.so.2", x86, 0x40),
                ("libnccl.so.2", "/opt/b/libnccl.so.2", x86, 0),
            ],
            &["x86-64-v4", "x86-64-v3"],
        );
        let c = LdCache::parse(bytes).unwrap();
        assert_eq!(c.lookup(b"libnccl.so.2", x86, &[]), Some(PathBuf::from("/opt/a/libnccl.so.2")));
        assert_eq!(c.lookup(b"libnccl.so.2", x86, &["x86-64-v3"]), Some(PathBuf::from("/opt/v3/libnccl.so.2")));
        let both = ["x86-64-v4", "x86-64-v3", "x86-64-v2"];
        assert_eq!(c.lookup(b"libnccl.so.2", x86, &both), Some(PathBuf::from("/opt/v4/libnccl.so.2")));
        // Another architecture's entries, and names not listed.
        assert_eq!(c.lookup(b"libm.so.6", x86, &both), None);
        assert_eq!(c.lookup(b"libm.so.6", 0x0003, &[]), Some(PathBuf::from("/lib32/libm.so.6")));
        assert_eq!(c.lookup(b"libnone.so", x86, &[]), None);
    }

    #[test]
    fn caches_glibc_would_not_use_are_none_and_bad_entries_are_skipped() {
        let good = cache(&[("libnccl.so.2", "/opt/libnccl.so.2", 0x0303, 0)], &[]);
        assert!(LdCache::parse(good.clone()).is_some());
        let mut big_endian = good.clone();
        big_endian[28] = 3;
        assert!(LdCache::parse(big_endian).is_none());
        assert!(LdCache::parse(b"glibc-ld.so.cache1.0".to_vec()).is_none());
        // More entries than bytes.
        let mut many = good.clone();
        many[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(LdCache::parse(many).is_none());
        // A name offset past the end: the entry is skipped, not read.
        let mut stray = good.clone();
        stray[HEADER_BYTES + 4..HEADER_BYTES + 8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(LdCache::parse(stray).unwrap().entries().count(), 0);
        // Every prefix parses or not, without a panic.
        for n in 0..good.len() {
            if let Some(c) = LdCache::parse(good[..n].to_vec()) {
                let _ = c.lookup(b"libnccl.so.2", 0x0303, &["x86-64-v2"]);
            }
        }
        // The old format in front of the new one.
        let mut old = OLD_MAGIC.to_vec();
        old.push(0);
        old.extend_from_slice(&1u32.to_le_bytes());
        old.extend_from_slice(&[0; OLD_ENTRY_BYTES]);
        old.resize(32, 0);
        let shifted = {
            let mut nested = cache(&[("libnccl.so.2", "/opt/libnccl.so.2", 0x0303, 0)], &[]);
            // String offsets count from the new table's start: unchanged.
            let mut v = old.clone();
            v.append(&mut nested);
            v
        };
        let c = LdCache::parse(shifted).unwrap();
        assert_eq!(c.lookup(b"libnccl.so.2", 0x0303, &[]), Some(PathBuf::from("/opt/libnccl.so.2")));
    }

    /// A cache ldconfig 2.36 wrote (tests/data/ld-so-cache/README.md says how): libm, and
    /// libz twice, once in the `x86-64-v3` hwcaps subfolder.
    #[test]
    fn a_cache_ldconfig_wrote_is_read_as_the_loader_reads_it() {
        let bytes = include_bytes!("../../tests/data/ld-so-cache/ldconfig-2.36-x86_64.cache");
        let c = LdCache::parse(bytes.to_vec()).unwrap();
        assert_eq!(c.entries().count(), 3);
        let z = |h: &[&str]| c.lookup(b"libz.so.1", 0x0303, h).unwrap();
        assert_eq!(z(&[]), PathBuf::from("/lib/x86_64-linux-gnu/libz.so.1"));
        assert_eq!(
            z(&["x86-64-v4", "x86-64-v3"]),
            PathBuf::from("/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/libz.so.1")
        );
        assert_eq!(
            c.lookup(b"libm.so.6", 0x0303, &["x86-64-v3"]),
            Some(PathBuf::from("/lib/x86_64-linux-gnu/libm.so.6"))
        );
        assert_eq!(c.lookup(b"libm.so.6", 0x0a03, &[]), None);
    }

    #[test]
    #[cfg_attr(miri, ignore = "reads the machine's /etc/ld.so.cache")]
    fn this_machines_cache_lists_the_c_library() {
        let Ok(bytes) = std::fs::read("/etc/ld.so.cache") else { return };
        let (Some(c), Some(flags)) = (LdCache::parse(bytes), native_flags()) else { return };
        // Under qemu-user the host's cache has no entry of the emulated architecture.
        if c.entries().any(|e| e.flags == flags) {
            let libc = c.lookup(b"libc.so.6", flags, &[]).expect("libc.so.6 in the cache");
            assert!(libc.ends_with("libc.so.6"), "{}", libc.display());
        }
    }
}
