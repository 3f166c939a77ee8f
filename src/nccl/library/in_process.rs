//! The NCCL already loaded in this process, and only that: what a communicator made by other
//! code (PyTorch, a C++ program) must be used with (docs/adr/0029-adopting-communicators.md).
//!
//! The files are read from `/proc/self/maps` (the kernel's record of what is mapped, which names
//! the real file even when the loader was given another name), and each is opened with
//! `RTLD_NOLOAD`, so the system loader hands back the object it already has and maps nothing:
//! a file that is not loaded is refused, never loaded.

use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
use crate::foreign::file::identity;
use crate::foreign::loader;
use crate::nccl::library::discovery::{Candidate, Source};
use crate::nccl::library::load::Nccl;
use crate::nccl::types::error::Error;

impl Nccl {
    /// The NCCL (or RCCL) library already loaded in this process — inside PyTorch, PyTorch's
    /// own — never another: nothing is loaded. The one to adopt a communicator of that process
    /// with ([`Communicator::from_raw`](crate::nccl::Communicator::from_raw)).
    ///
    /// # Errors
    ///
    /// [`Error::NotLoaded`] when no `libnccl.so*` or `librccl.so*` is mapped (a program that
    /// links NCCL statically has none); [`Error::SeveralLoaded`] when different files are (pick
    /// one with [`loaded_from`](Self::loaded_from)); [`Error::LibraryLoad`] when the one found
    /// is not a usable NCCL.
    pub fn loaded() -> Result<Nccl, Error> {
        Self::native_target()?;
        match loaded_files().as_slice() {
            [] => Err(Error::NotLoaded),
            [(path, _)] => Self::open_loaded(path),
            several => {
                Err(Error::SeveralLoaded { paths: several.iter().map(|(p, _)| p.display().to_string()).collect() })
            }
        }
    }

    /// The library at `path`, if this process has already loaded that very file (the same
    /// device and inode); never loads it. For a process with several NCCL files loaded.
    ///
    /// # Errors
    ///
    /// [`Error::LibraryLoad`] when the file is not loaded in this process, or is not a usable
    /// NCCL.
    pub fn loaded_from(path: impl AsRef<Path>) -> Result<Nccl, Error> {
        Self::native_target()?;
        let path = path.as_ref();
        let refused = |reason: String| Error::LibraryLoad { path: path.display().to_string(), variable: None, reason };
        let id = file_identity(path).map_err(|e| refused(e.to_string()))?;
        if !loaded_files().iter().any(|(_, loaded)| *loaded == id) {
            return Err(refused(
                "not loaded in this process (Nccl::loaded_from never loads a library; Nccl::load_from does)".into(),
            ));
        }
        Self::open_loaded(path)
    }

    /// Opens a file that is loaded already, with `RTLD_NOLOAD` (the loader maps nothing).
    fn open_loaded(path: &Path) -> Result<Nccl, Error> {
        let candidate = Candidate { source: Source::AlreadyLoaded, path: path.to_path_buf() };
        Self::open_with(&candidate, loader::NOLOAD).map_err(|r| r.into_error(path, None))
    }
}

/// The NCCL and RCCL files mapped into this process, one entry per file (device and inode):
/// `/proc/self/maps` lines whose file is named `libnccl.so*` or `librccl.so*` and still is the
/// file that was mapped (a file replaced on disk since is left out: its path names another).
#[cfg(target_os = "linux")]
fn loaded_files() -> Vec<(PathBuf, (u64, u64))> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return Vec::new() };
    let mut out: Vec<(PathBuf, (u64, u64))> = Vec::new();
    for line in maps.lines() {
        let Some(mapping) = Mapping::parse(line) else { continue };
        let path = Path::new(mapping.path);
        let name = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
        if !(name.starts_with("libnccl.so") || name.starts_with("librccl.so")) {
            continue;
        }
        let Ok(meta) = std::fs::metadata(path) else { continue };
        let id = identity(&meta);
        if mapping.is(id) && !out.iter().any(|(_, seen)| *seen == id) {
            out.push((path.to_path_buf(), id));
        }
    }
    out
}

/// Elsewhere there is no `/proc/self/maps` to read: nothing is known to be loaded (and these
/// targets have no call trampoline: `native_target` refuses first).
#[cfg(not(target_os = "linux"))]
fn loaded_files() -> Vec<(PathBuf, (u64, u64))> {
    Vec::new()
}

/// A file's device and inode, what `/proc/self/maps` names a mapped file by.
#[cfg(target_os = "linux")]
fn file_identity(path: &Path) -> std::io::Result<(u64, u64)> {
    std::fs::metadata(path).map(|m| identity(&m))
}

#[cfg(not(target_os = "linux"))]
fn file_identity(_: &Path) -> std::io::Result<(u64, u64)> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "no /proc/self/maps on this system"))
}

/// One line of `/proc/self/maps`: `address perms offset dev inode path`, the path last and
/// possibly holding spaces (a virtual environment's folder may), the device as `major:minor`
/// in hexadecimal (proc(5)).
#[cfg(target_os = "linux")]
struct Mapping<'a> {
    major: u64,
    minor: u64,
    inode: u64,
    path: &'a str,
}

#[cfg(target_os = "linux")]
impl<'a> Mapping<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        let mut rest = line;
        let mut field = || {
            let t = rest.trim_start();
            let end = t.find(char::is_whitespace).unwrap_or(t.len());
            rest = &t[end..];
            Some(&t[..end]).filter(|f| !f.is_empty())
        };
        let (_address, _perms, _offset, dev, inode) = (field()?, field()?, field()?, field()?, field()?);
        let (major, minor) = dev.split_once(':')?;
        Some(Mapping {
            major: u64::from_str_radix(major, 16).ok()?,
            minor: u64::from_str_radix(minor, 16).ok()?,
            inode: inode.parse().ok()?,
            path: Some(rest.trim()).filter(|p| p.starts_with('/'))?,
        })
    }

    /// True when the mapping is of the file whose `(st_dev, st_ino)` is `id`.
    fn is(&self, (dev, ino): (u64, u64)) -> bool {
        self.inode == ino && self.major == u64::from(libc::major(dev)) && self.minor == u64::from(libc::minor(dev))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_keep_paths_with_spaces_and_the_device() {
        let line = "7f2a1c000000-7f2a1c200000 r-xp 00000000 fd:01 1311235                    \
                    /home/a user/venv 3.12/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2";
        let m = Mapping::parse(line).unwrap();
        assert_eq!((m.major, m.minor, m.inode), (0xfd, 1, 1_311_235));
        assert_eq!(m.path, "/home/a user/venv 3.12/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2");
        // Anonymous and special mappings name no file.
        assert!(Mapping::parse("7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0                          [stack]")
            .is_none());
        assert!(Mapping::parse("7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0").is_none());
        // The device is compared, not only the inode.
        let here = std::fs::metadata("/proc/self/exe").map(|m| identity(&m)).unwrap();
        let m = Mapping {
            major: u64::from(libc::major(here.0)),
            minor: u64::from(libc::minor(here.0)),
            inode: here.1,
            path: "/x",
        };
        assert!(m.is(here));
        assert!(!Mapping { minor: m.minor + 1, ..m }.is(here));
        assert!(!Mapping { inode: m.inode + 1, ..m }.is(here));
    }
}
