//! The system loader's search for a bare name such as `libnccl.so.2`, done the way glibc's
//! loader does it (glibc 2.36 `elf/dl-load.c`, `_dl_map_object`), so that the file it would
//! map can be checked first and then loaded by descriptor. In order:
//!
//! 1. the folders glibc's loader itself reports for the object this crate is linked into
//!    (`dlinfo(RTLD_DI_SERINFO)`): that object's `DT_RPATH` (without a `DT_RUNPATH`),
//!    `LD_LIBRARY_PATH` as it was when the program started (the loader reads it then, and
//!    ignores it for setuid programs), its `DT_RUNPATH`, and the default folders
//!    (`/lib/<triplet>`, `/usr/lib/<triplet>`, `/lib`, `/usr/lib` on Debian; the loader knows
//!    its own). Each folder's `glibc-hwcaps` subfolders come first: on x86-64 the
//!    `x86-64-v4`, `-v3` and `-v2` that this CPU supports;
//! 2. `/etc/ld.so.cache` ([`LdCache`]), just before the default folders, for entries of this
//!    architecture.
//!
//! A file of another class or machine is passed over, as the loader passes over it; a name
//! that is not there, or not readable, is passed over too; anything else the search reaches is
//! the answer (checked afterwards). Not modelled: the legacy hwcaps subfolders (`tls/`,
//! `x86_64/`; glibc 2.37 removed them), `GLIBC_TUNABLES` that turn hwcaps off, and a program
//! that changes `LD_LIBRARY_PATH` while it runs (the loader does not see that either). On a
//! C library without `RTLD_DI_SERINFO` (musl), `LD_LIBRARY_PATH` and the default folders are
//! searched and there is no cache.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::foreign::elf::native_machine;
use crate::foreign::error::LoadError;
use crate::foreign::file::{open_regular, read_regular};
use crate::foreign::ld_cache::{native_flags, LdCache};

/// The loader's cache, and the most of it that is read.
const CACHE: &str = "/etc/ld.so.cache";
const MAX_CACHE_BYTES: u64 = 64 << 20;

/// A file the search found, open.
#[derive(Debug)]
pub(crate) struct Found {
    /// Where: the search folder joined with the name (not resolved further).
    pub(crate) path: PathBuf,
    /// The file, opened once; what is checked and loaded.
    pub(crate) file: File,
}

/// The file the system loader maps for the bare name `name`, opened.
pub(crate) fn find(name: &str) -> Result<Found, LoadError> {
    let machine = native_machine().ok_or(LoadError::NotFound)?;
    let dirs = loader_dirs().unwrap_or_else(fallback_dirs);
    let cache_at = cache_position(&dirs);
    let hwcaps = active_hwcaps();
    for (i, dir) in dirs.iter().enumerate() {
        if i == cache_at {
            if let Some(found) = from_cache(name, machine, &hwcaps)? {
                return Ok(found);
            }
        }
        for sub in &hwcaps {
            if let Some(found) = candidate(dir.join("glibc-hwcaps").join(sub).join(name), machine)? {
                return Ok(found);
            }
        }
        if let Some(found) = candidate(dir.join(name), machine)? {
            return Ok(found);
        }
    }
    if cache_at == dirs.len() {
        if let Some(found) = from_cache(name, machine, &hwcaps)? {
            return Ok(found);
        }
    }
    Err(LoadError::NotFound)
}

/// The cache's file for `name`, if it lists one this loader would take.
fn from_cache(name: &str, machine: u16, hwcaps: &[&str]) -> Result<Option<Found>, LoadError> {
    let (Ok(bytes), Some(flags)) = (read_regular(Path::new(CACHE), MAX_CACHE_BYTES), native_flags()) else {
        return Ok(None); // no cache, or one that cannot be read: the loader goes on without
    };
    match LdCache::parse(bytes).and_then(|c| c.lookup(name.as_bytes(), flags, hwcaps)) {
        Some(path) => candidate(path, machine),
        None => Ok(None),
    }
}

/// `path` if the search stops there: a regular file that is not an ELF object of another
/// class or machine.
fn candidate(path: PathBuf, machine: u16) -> Result<Option<Found>, LoadError> {
    let file = match open_regular(&path) {
        Ok(file) => file,
        Err(LoadError::NoSuchFile) => return Ok(None),
        Err(LoadError::NotRegular { kind }) => return Err(LoadError::FoundNotRegular { path, kind }),
        Err(LoadError::Read { source })
            if source.kind() == std::io::ErrorKind::PermissionDenied || is_not_a_directory(&source) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let mut head = [0u8; 20];
    let n = std::io::Read::read(&mut (&file), &mut head)?;
    let other = n == 20
        && head[..4] == *b"\x7fELF"
        && (head[4] != 2 || head[5] != 1 || u16::from_le_bytes([head[18], head[19]]) != machine);
    Ok((!other).then_some(Found { path, file }))
}

fn is_not_a_directory(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(libc::ENOTDIR)
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// The multiarch triplet Debian and Ubuntu name their library folders with.
fn triplet() -> Option<&'static str> {
    match std::env::consts::ARCH {
        "x86_64" => Some("x86_64-linux-gnu"),
        "aarch64" => Some("aarch64-linux-gnu"),
        "riscv64" => Some("riscv64-linux-gnu"),
        _ => None,
    }
}

/// Folders a glibc loader may have as its defaults: the multiarch ones (Debian, Ubuntu), the
/// `lib64` ones (Fedora, SUSE), then `/lib` and `/usr/lib`.
fn default_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(t) = triplet() {
        out.push(Path::new("/lib").join(t));
        out.push(Path::new("/usr/lib").join(t));
    }
    for d in ["/lib64", "/usr/lib64", "/lib", "/usr/lib"] {
        out.push(PathBuf::from(d));
    }
    out
}

/// Where the cache is consulted: before the run of default folders that ends the list.
fn cache_position(dirs: &[PathBuf]) -> usize {
    let defaults = default_dirs();
    let trailing = dirs.iter().rev().take_while(|d| defaults.iter().any(|x| x == *d)).count();
    dirs.len() - trailing
}

/// Without the loader's own list: `LD_LIBRARY_PATH`, then the default folders.
fn fallback_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect())
        .unwrap_or_default();
    dirs.extend(default_dirs());
    dirs
}

/// The `glibc-hwcaps` subfolders this CPU activates, best first (glibc's x86-64 ISA levels of
/// the psABI; none on AArch64 and riscv64 in glibc 2.36).
fn active_hwcaps() -> Vec<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        let v2 = std::is_x86_feature_detected!("cmpxchg16b")
            && std::is_x86_feature_detected!("popcnt")
            && std::is_x86_feature_detected!("sse3")
            && std::is_x86_feature_detected!("sse4.1")
            && std::is_x86_feature_detected!("sse4.2")
            && std::is_x86_feature_detected!("ssse3");
        let v3 = v2
            && std::is_x86_feature_detected!("avx")
            && std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("bmi1")
            && std::is_x86_feature_detected!("bmi2")
            && std::is_x86_feature_detected!("f16c")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("lzcnt")
            && std::is_x86_feature_detected!("movbe")
            && std::is_x86_feature_detected!("xsave");
        let v4 = v3
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512cd")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512vl");
        [(v4, "x86-64-v4"), (v3, "x86-64-v3"), (v2, "x86-64-v2")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec::new()
    }
}

/// The search folders glibc's loader reports for the object this code is linked into.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn loader_dirs() -> Option<Vec<PathBuf>> {
    use core::ffi::{c_char, c_uint, c_void};
    use std::ffi::CStr;

    /// `Dl_serinfo`'s header and `Dl_serpath` (`<dlfcn.h>`).
    #[repr(C)]
    struct SerinfoHead {
        dls_size: usize,
        dls_cnt: c_uint,
    }
    #[repr(C)]
    struct Serpath {
        dls_name: *const c_char,
        dls_flags: c_uint,
    }
    const MAX_SERINFO_BYTES: usize = 1 << 20;

    // SAFETY: `Dl_info` is plain data the call fills.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    let here = loader_dirs as *const c_void;
    // SAFETY: dladdr reads the loader's tables for an address of this program.
    let named = unsafe { libc::dladdr(here, &mut info) } != 0 && !info.dli_fname.is_null();
    // The object holding this code (a shared library when the crate is in one, whose own
    // DT_RUNPATH the loader uses for its dlopen calls); the main program when that is it.
    let mut handle = if named {
        // SAFETY: RTLD_NOLOAD only looks the name up among loaded objects; `dli_fname` is a
        // NUL-terminated name the loader keeps.
        unsafe { libc::dlopen(info.dli_fname, libc::RTLD_LAZY | libc::RTLD_NOLOAD) }
    } else {
        core::ptr::null_mut()
    };
    if handle.is_null() {
        // SAFETY: dlopen(NULL) returns the main program's handle.
        handle = unsafe { libc::dlopen(core::ptr::null(), libc::RTLD_LAZY) };
    }
    if handle.is_null() {
        return None;
    }
    let mut head = SerinfoHead { dls_size: 0, dls_cnt: 0 };
    // SAFETY: RTLD_DI_SERINFOSIZE writes a `Dl_serinfo`'s first two fields.
    let sized = unsafe { libc::dlinfo(handle, libc::RTLD_DI_SERINFOSIZE, (&mut head as *mut SerinfoHead).cast()) } == 0;
    let mut dirs = None;
    let header = core::mem::size_of::<SerinfoHead>().next_multiple_of(core::mem::align_of::<Serpath>());
    let entries_end = header + head.dls_cnt as usize * core::mem::size_of::<Serpath>();
    if sized && head.dls_size >= entries_end && head.dls_size <= MAX_SERINFO_BYTES {
        let mut buf = vec![0u64; head.dls_size.div_ceil(8)];
        let p = buf.as_mut_ptr().cast::<u8>();
        // SAFETY: `buf` holds `dls_size` bytes, 8-aligned; glibc reads the size and count
        // from the header and fills the entries and their strings inside it.
        let filled = unsafe {
            p.cast::<SerinfoHead>().write(SerinfoHead { dls_size: head.dls_size, dls_cnt: head.dls_cnt });
            libc::dlinfo(handle, libc::RTLD_DI_SERINFO, p.cast()) == 0
        };
        if filled {
            let list = (0..head.dls_cnt as usize)
                .filter_map(|i| {
                    // SAFETY: entry `i` lies below `entries_end <= dls_size`, written above.
                    let entry = unsafe { p.add(header + i * core::mem::size_of::<Serpath>()).cast::<Serpath>().read() };
                    let _ = entry.dls_flags;
                    if entry.dls_name.is_null() {
                        return None;
                    }
                    // SAFETY: glibc points each name at a NUL-terminated string in `buf`.
                    let name = unsafe { CStr::from_ptr(entry.dls_name) };
                    Some(PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes())))
                })
                .collect();
            dirs = Some(list);
        }
    }
    // SAFETY: balances the dlopen above (the object stays loaded: it holds this code).
    unsafe { libc::dlclose(handle) };
    dirs
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn loader_dirs() -> Option<Vec<PathBuf>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_goes_before_the_trailing_default_folders() {
        let d = |s: &str| PathBuf::from(s);
        let defaults = default_dirs();
        assert_eq!(cache_position(&defaults), 0);
        let mut dirs = vec![d("/opt/nccl/lib"), d("/usr/lib")];
        dirs.extend(default_dirs());
        // `/usr/lib` from LD_LIBRARY_PATH before the defaults counts as a default: the cache
        // is consulted one folder early, where it lists the same files.
        assert_eq!(cache_position(&dirs), 1);
        assert_eq!(cache_position(&[d("/opt/a")]), 1);
    }

    #[test]
    #[cfg_attr(miri, ignore = "asks the C library's loader (dlinfo)")]
    fn the_c_library_is_found_where_the_loader_maps_it() {
        if native_machine().is_none() {
            return;
        }
        let found = find("libc.so.6").expect("the C library");
        assert!(found.path.ends_with("libc.so.6"), "{}", found.path.display());
        assert!(matches!(find("libnccl-trampoline-no-such.so.9"), Err(LoadError::NotFound)));
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            let dirs = loader_dirs().expect("glibc reports its search folders");
            assert!(!dirs.is_empty());
        }
    }
}
