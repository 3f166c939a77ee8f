//! Opening a file that outside input names without blocking on it or touching a device.
//!
//! `open(2)` of a FIFO for reading waits for a writer for ever, and opening some devices has
//! effects of its own. The path is looked at first (`stat`), then opened with `O_NONBLOCK`
//! (so a FIFO put in its place in between does not block either), and what was opened is
//! looked at again (`fstat`): only a regular file is used.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::foreign::error::LoadError;

/// The regular file at `path`, opened for reading (close-on-exec).
pub(crate) fn open_regular(path: &Path) -> Result<File, LoadError> {
    // A path `stat` does not find is still opened (and then looked at): under qemu-user's `-L`
    // prefix, `statx` sees the host's tree while `open` sees the emulated one.
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => return Err(LoadError::NotRegular { kind: kind(&meta) }),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(LoadError::Read { source: e }),
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::NoSuchFile,
        _ => LoadError::Read { source: e },
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(LoadError::NotRegular { kind: kind(&meta) });
    }
    Ok(file)
}

/// The contents of the regular file at `path`, if it has at most `limit` bytes.
pub(crate) fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, LoadError> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(LoadError::TooLarge { what: "the file", size: bytes.len() as u64 });
    }
    Ok(bytes)
}

/// The (device, inode) of an open file: what names it whatever path led to it.
#[cfg(target_os = "linux")]
pub(crate) fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// What a file that is not a regular one is, for messages.
fn kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a file"
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "makes a FIFO (mkfifo), which Miri cannot run")]
    fn a_fifo_a_directory_and_a_device_are_refused_without_blocking() {
        let dir = std::env::temp_dir().join(format!("nccl-trampoline-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("libnccl.so.2");
        let _ = std::fs::remove_file(&fifo);
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Without the checks this open would wait for a writer for ever.
        assert_eq!(open_regular(&fifo).unwrap_err().to_string(), "not a regular file but a FIFO");
        assert_eq!(open_regular(&dir).unwrap_err().to_string(), "not a regular file but a directory");
        assert_eq!(
            open_regular(Path::new("/dev/null")).unwrap_err().to_string(),
            "not a regular file but a character device"
        );
        assert_eq!(open_regular(&dir.join("none")).unwrap_err().to_string(), "no such file");
        std::fs::write(dir.join("small"), b"12345").unwrap();
        assert_eq!(read_regular(&dir.join("small"), 5).unwrap(), b"12345");
        assert!(read_regular(&dir.join("small"), 4).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
