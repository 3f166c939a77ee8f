//! Loading a C library file so that the file checked is the file loaded, and what a failed
//! `dlopen` means, in one line a user can act on.
//!
//! [`load`] opens the file once, by descriptor, without blocking on it (`file`: a FIFO or a
//! device is refused, not opened for reading); for a bare name (`libnccl.so.2`) it first runs
//! the system loader's search (`search`) and opens what that reaches. It checks the open file
//! with the crate's ELF reader (`elf`: a truncated or corrupted file is refused in one line
//! instead of crashing the process inside the loader), then hands the loader that very file
//! as `/proc/self/fd/N`. The descriptor stays open for as long as the process lives (the
//! library is never unloaded): the loader remembers the object under that name, and a name
//! whose number another file reused would find the old object.
//!
//! Two cases load by path instead, after checking that the path still names the file checked
//! (same device and inode, before and after the `dlopen`): a library whose `DT_RPATH`,
//! `DT_RUNPATH` or needed names say `$ORIGIN` (the loader expands it to the folder of the name
//! it was given, which for `/proc/self/fd/N` is `/proc/self/fd`), and a system without
//! `/proc`. Between the check and the loader's own `open` the path could be switched to
//! another file and back; that window is small and needs someone able to write the folder.
//!
//! glibc's messages are terse and sometimes wrong for the case at hand: a library built for
//! another architecture is reported as "cannot open shared object file: No such file or
//! directory" although the file is there, and every message repeats the name it was given
//! ("libcuda.so.1: libcuda.so.1: cannot open ..."). The ELF check tells the first case apart
//! before the loader runs, and the loader's own text is shown without the repeated name. The loader's reports of the libraries
//! the checked file needs (`DT_NEEDED`) come through unchanged: those files are the system
//! loader's to find and map, unchecked.

use core::ffi::c_void;
use std::path::{Path, PathBuf};

use crate::foreign::elf::{Definition, Image};
use crate::foreign::error::LoadError;

/// A library loaded from a checked file.
pub(crate) struct Loaded {
    /// The loader's handle.
    pub(crate) library: libloading::Library,
    /// What the check read from the file: its symbols, soname, needs.
    pub(crate) image: Image,
    /// The file: the path given, or for a bare name the path the search reached.
    pub(crate) path: PathBuf,
    /// The load address (`l_addr`), where the loader reports it.
    base: Option<usize>,
}

impl core::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Loaded").field("path", &self.path).field("base", &self.base).finish()
    }
}

/// `RTLD_NOW | RTLD_LOCAL`, as NCCL loads its plugins; with [`NODELETE`] for a library that
/// must never be unmapped.
#[cfg(unix)]
pub(crate) const NOW_LOCAL: core::ffi::c_int = libc::RTLD_NOW | libc::RTLD_LOCAL;
#[cfg(not(unix))]
pub(crate) const NOW_LOCAL: core::ffi::c_int = 0;
/// `RTLD_NODELETE` (glibc and musl, every architecture).
pub(crate) const NODELETE: core::ffi::c_int = 0x1000;
/// `RTLD_NOLOAD`: the loader returns a library only if it is already loaded, and maps nothing.
#[cfg(unix)]
pub(crate) const NOLOAD: core::ffi::c_int = libc::RTLD_NOLOAD;
#[cfg(not(unix))]
pub(crate) const NOLOAD: core::ffi::c_int = 0;

/// Loads the library at `path` (a path, or a bare name for the system loader's search) with
/// `dlopen` flags `flags`, after checking the file (see the module documentation).
///
/// # Safety
///
/// Loading runs the library's initialisers: the caller trusts the library's code (only the
/// file's structure is checked).
pub(crate) unsafe fn load(path: &Path, flags: core::ffi::c_int) -> Result<Loaded, LoadError> {
    let machine = crate::foreign::elf::native_machine().ok_or(LoadError::OtherTarget(format!(
        "this program runs on {}, for which the loader is not checked",
        std::env::consts::ARCH
    )))?;
    let (path, file) = if is_bare_name(path) {
        let name = path.to_str().ok_or(LoadError::NotFound)?;
        let found = crate::foreign::search::find(name)?;
        (found.path, found.file)
    } else {
        (path.to_path_buf(), crate::foreign::file::open_regular(path)?)
    };
    let image = Image::read(&file, machine)?;
    // SAFETY: the caller's contract.
    let (library, base) = unsafe { platform::dlopen_checked(&path, file, image.uses_origin(), flags) }?;
    Ok(Loaded { library, image, path, base })
}

impl Loaded {
    /// Checks that `address`, which the loader resolved for `symbol`, is a function: the
    /// file must not define `symbol` as anything else (a data object called as a function
    /// crashes), and the address must be the file's definition or lie in executable memory.
    pub(crate) fn check_function(&self, symbol: &str, address: *const c_void) -> Result<(), LoadError> {
        match self.image.definition(symbol) {
            Some(Definition::Other(kind)) => Err(LoadError::NotAFunction { symbol: symbol.to_string(), kind }),
            Some(Definition::Function(value))
                if self.base.is_some_and(|b| b.wrapping_add(value as usize) == address as usize) =>
            {
                Ok(()) // the file's own definition, checked to lie in an executable segment
            }
            _ => match platform::executable(address as usize) {
                Some(false) => Err(LoadError::NotExecutable { symbol: symbol.to_string(), at: address as usize }),
                _ => Ok(()),
            },
        }
    }
}

/// The loader's text for `error`, without the name it was given (dlerror starts with it).
#[cfg(target_os = "linux")]
fn without_name(given: &str, error: &libloading::Error) -> String {
    let text = error.to_string();
    text.split_once(&format!("{given}: ")).map_or(text.as_str(), |(_, rest)| rest).to_string()
}

/// "it needs libfoo.so.1, which the system loader cannot find" for the loader's report that a
/// needed library is missing; the text itself otherwise.
#[cfg(target_os = "linux")]
fn needs(text: String) -> String {
    match text.strip_suffix(": cannot open shared object file: No such file or directory") {
        // The file is fine; a library it needs is not.
        Some(dependency) => format!("it needs {dependency}, which the system loader cannot find"),
        None => text,
    }
}

/// True for a name the system loader searches for (no `/`), such as `libnccl.so.2`.
pub(crate) fn is_bare_name(path: &Path) -> bool {
    !path.as_os_str().as_encoded_bytes().contains(&b'/')
}

#[cfg(target_os = "linux")]
mod platform {
    use core::ffi::{c_int, c_void};
    use std::ffi::CString;
    use std::fs::File;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    use std::path::Path;
    use std::sync::{Mutex, PoisonError};

    use crate::foreign::error::LoadError;
    use crate::foreign::file::identity;

    /// A file loaded through `/proc/self/fd/N`, kept open so that `N` names it for as long as
    /// the loader remembers the name.
    struct Held {
        id: (u64, u64),
        name: CString,
        _file: File,
    }

    static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());

    /// `dlopen` of `file` (opened from `path`, checked): through its descriptor, or by path
    /// when `by_path` (the file uses `$ORIGIN`) or `/proc` is missing.
    ///
    /// # Safety
    ///
    /// As [`super::load`].
    pub(super) unsafe fn dlopen_checked(
        path: &Path,
        file: File,
        by_path: bool,
        flags: c_int,
    ) -> Result<(libloading::Library, Option<usize>), LoadError> {
        // SAFETY: the caller's contract.
        let library = unsafe { dlopen_file(path, file, by_path, flags) }?;
        let handle = library.into_raw();
        let base = load_address(handle);
        // SAFETY: `handle` came from `dlopen` just above and was not closed.
        Ok((unsafe { libloading::os::unix::Library::from_raw(handle) }.into(), base))
    }

    /// # Safety
    ///
    /// As [`super::load`].
    unsafe fn dlopen_file(
        path: &Path,
        file: File,
        by_path: bool,
        flags: c_int,
    ) -> Result<libloading::os::unix::Library, LoadError> {
        let id = identity(&file.metadata()?);
        // The lock is not held across `dlopen`, which runs the library's initialisers.
        let known =
            HELD.lock().unwrap_or_else(PoisonError::into_inner).iter().find(|h| h.id == id).map(|h| h.name.clone());
        if let Some(name) = known {
            // Loaded before through a descriptor that is still open: the loader finds it by
            // that name (and by device and inode).
            // SAFETY: the caller's contract; the file was checked when first loaded.
            return unsafe { open(&name, flags) }.map_err(|e| LoadError::Loader(loader_text(&name, &e)));
        }
        let name = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(|_| LoadError::NotFound)?;
        let proc_names_it =
            std::fs::metadata(std::ffi::OsStr::from_bytes(name.as_bytes())).is_ok_and(|m| identity(&m) == id);
        if by_path || !proc_names_it {
            // SAFETY: the caller's contract.
            return unsafe { by_name(path, id, flags) };
        }
        // SAFETY: the caller's contract; `name` is the checked file itself.
        let library = unsafe { open(&name, flags) }.map_err(|e| LoadError::Loader(loader_text(&name, &e)))?;
        HELD.lock().unwrap_or_else(PoisonError::into_inner).push(Held { id, name, _file: file });
        Ok(library)
    }

    /// `dlopen(path)`, if `path` names file `id` before and after.
    ///
    /// # Safety
    ///
    /// As [`super::load`].
    unsafe fn by_name(path: &Path, id: (u64, u64), flags: c_int) -> Result<libloading::os::unix::Library, LoadError> {
        // Through `open`, as the loader reaches the path.
        let same = || {
            crate::foreign::file::open_regular(path).and_then(|f| Ok(f.metadata()?)).is_ok_and(|m| identity(&m) == id)
        };
        if !same() {
            return Err(LoadError::Changed);
        }
        let name = CString::new(path.as_os_str().as_bytes()).map_err(|_| LoadError::NoSuchFile)?;
        // SAFETY: the caller's contract.
        let library = unsafe { open(&name, flags) }.map_err(|e| LoadError::Loader(loader_text(&name, &e)))?;
        if !same() {
            // Loaded, and it stays: the process cannot take back what its initialisers did.
            std::mem::forget(library);
            return Err(LoadError::Changed);
        }
        Ok(library)
    }

    /// # Safety
    ///
    /// As [`super::load`].
    unsafe fn open(name: &CString, flags: c_int) -> Result<libloading::os::unix::Library, libloading::Error> {
        let path = std::ffi::OsStr::from_bytes(name.as_bytes());
        // SAFETY: the caller's contract.
        unsafe { libloading::os::unix::Library::open(Some(path), flags) }
    }

    /// The loader's error text without the name it was given.
    fn loader_text(name: &CString, error: &libloading::Error) -> String {
        super::needs(super::without_name(&String::from_utf8_lossy(name.as_bytes()), error))
    }

    /// `l_addr` of the loaded object `handle` (glibc's and musl's `dlinfo(RTLD_DI_LINKMAP)`).
    fn load_address(handle: *mut c_void) -> Option<usize> {
        /// The public head of `struct link_map` (`<link.h>`).
        #[repr(C)]
        struct LinkMap {
            l_addr: usize,
        }
        const RTLD_DI_LINKMAP: c_int = 2;
        extern "C" {
            fn dlinfo(handle: *mut c_void, request: c_int, info: *mut c_void) -> c_int;
        }
        let mut map: *const LinkMap = core::ptr::null();
        // SAFETY: `handle` is a live dlopen handle; RTLD_DI_LINKMAP writes a pointer.
        let ok = unsafe { dlinfo(handle, RTLD_DI_LINKMAP, (&mut map as *mut *const LinkMap).cast()) } == 0;
        // SAFETY: the loader's link map lives as long as the object, which stays loaded.
        (ok && !map.is_null()).then(|| unsafe { (*map).l_addr })
    }

    /// Whether `address` lies in an executable mapping of this process (from
    /// `/proc/self/maps`); `None` when that cannot be read.
    pub(super) fn executable(address: usize) -> Option<bool> {
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        Some(maps.lines().any(|line| {
            let mut parts = line.split_whitespace();
            let (Some(range), Some(perms)) = (parts.next(), parts.next()) else { return false };
            let Some((lo, hi)) = range.split_once('-') else { return false };
            let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) else { return false };
            lo <= address && address < hi && perms.as_bytes().get(2) == Some(&b'x')
        }))
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use core::ffi::c_int;
    use std::fs::File;
    use std::path::Path;

    use crate::foreign::error::LoadError;

    /// Outside Linux no trampoline runs and nothing is loaded (`Nccl::load` returns
    /// `UnsupportedTarget` first); this loads by path, unchecked, for completeness.
    ///
    /// # Safety
    ///
    /// As [`super::load`].
    pub(super) unsafe fn dlopen_checked(
        path: &Path,
        _file: File,
        _by_path: bool,
        _flags: c_int,
    ) -> Result<(libloading::Library, Option<usize>), LoadError> {
        // SAFETY: the caller's contract.
        Ok((unsafe { libloading::Library::new(path) }.map_err(|e| LoadError::Loader(e.to_string()))?, None))
    }

    pub(super) fn executable(_address: usize) -> Option<bool> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foreign::elf::elf_mismatch;

    /// The first 20 bytes of an ELF header: class, byte order, type ET_DYN, machine.
    fn header(class: u8, data: u8, machine: u16) -> Vec<u8> {
        let mut h = b"\x7fELF".to_vec();
        h.extend([class, data, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let m = if data == 1 { machine.to_le_bytes() } else { machine.to_be_bytes() };
        h.extend([3, 0]);
        h.extend(m);
        h
    }

    #[test]
    fn another_architecture_is_named() {
        let other = if cfg!(target_arch = "aarch64") { 62 } else { 183 };
        let name = if other == 62 { "x86_64" } else { "aarch64" };
        let msg = elf_mismatch(&header(2, 1, other)).unwrap();
        let this = if cfg!(target_arch = "riscv64") { "riscv" } else { std::env::consts::ARCH };
        assert!(msg.starts_with(&format!("built for {name}, this program runs on {this}")), "{msg}");
        assert!(elf_mismatch(&header(2, 2, 22)).unwrap().starts_with("built for s390x"));
        assert!(elf_mismatch(&header(2, 1, 9999)).unwrap().starts_with("built for ELF machine 9999"));
    }

    #[test]
    fn this_architecture_passes_and_other_files_are_not_libraries() {
        if let Some(own) = crate::foreign::elf::native_machine() {
            assert_eq!(elf_mismatch(&header(2, 1, own)), None);
            assert!(elf_mismatch(&header(1, 1, own)).unwrap().starts_with("a 32-bit library"));
        }
        assert_eq!(elf_mismatch(b"!<arch>\n").unwrap(), "not a shared library (no ELF header)");
        assert_eq!(elf_mismatch(b"").unwrap(), "not a shared library (no ELF header)");
    }

    #[test]
    fn bare_names_are_the_system_loaders() {
        assert!(is_bare_name(Path::new("libnccl.so.2")));
        assert!(!is_bare_name(Path::new("./libnccl.so.2")));
        assert!(!is_bare_name(Path::new("/usr/lib/libnccl.so.2")));
    }
}
