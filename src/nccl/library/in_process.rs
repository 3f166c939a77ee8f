//! The NCCL already loaded in this process, and only that: what a communicator made by other
//! code (PyTorch, a C++ program) must be used with (docs/adr/0029-adopting-communicators.md).
//!
//! The files are read from `/proc/self/maps` (the kernel's record of what is mapped, which names
//! the real file even when the loader was given another name), and each is opened with
//! `RTLD_NOLOAD`, so the system loader hands back the object it already has and maps nothing:
//! a file that is not loaded is refused, never loaded.

use std::path::{Path, PathBuf};

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
        let id = std::fs::metadata(path).map(|m| identity(&m)).map_err(|e| refused(e.to_string()))?;
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
fn loaded_files() -> Vec<(PathBuf, (u64, u64))> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return Vec::new() };
    let mut out: Vec<(PathBuf, (u64, u64))> = Vec::new();
    for line in maps.lines() {
        // address perms offset dev inode path
        let mut fields = line.split_whitespace();
        let (Some(inode), Some(path)) = (fields.nth(4), fields.next()) else { continue };
        let path = Path::new(path);
        let name = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
        if !(name.starts_with("libnccl.so") || name.starts_with("librccl.so")) {
            continue;
        }
        let Ok(meta) = std::fs::metadata(path) else { continue };
        let id = identity(&meta);
        if inode.parse::<u64>().ok() == Some(id.1) && !out.iter().any(|(_, seen)| *seen == id) {
            out.push((path.to_path_buf(), id));
        }
    }
    out
}
