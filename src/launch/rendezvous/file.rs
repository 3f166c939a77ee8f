//! The file rendezvous: the id published atomically with its time and an HMAC, read back only
//! from a regular file of the right owner and mode, newer than the job and made with its key.

use std::io::{Read, Write};
#[cfg(unix)]
use std::path::{Path, PathBuf};
use std::time::Duration;
#[cfg(unix)]
use std::time::{SystemTime, UNIX_EPOCH};

use crate::nccl::{UniqueId, UNIQUE_ID_BYTES};

use super::*;
use crate::trace::trace_event;

#[cfg(unix)]
pub(super) fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(unix)]
pub(super) fn file_message(id: &UniqueId, key: &RendezvousKey, at: SystemTime) -> [u8; FILE_MESSAGE] {
    let time = unix_nanos(at).to_be_bytes();
    let tag = key.mac(b"file", &[&time, id.as_bytes()]);
    let mut m = [0u8; FILE_MESSAGE];
    m[..8].copy_from_slice(FILE_MAGIC);
    m[8..16].copy_from_slice(&time);
    m[16..16 + UNIQUE_ID_BYTES].copy_from_slice(id.as_bytes());
    m[16 + UNIQUE_ID_BYTES..].copy_from_slice(&tag);
    m
}

/// Removes a temporary file unless disarmed (a failed publication leaves nothing behind).
#[cfg(unix)]
pub(super) struct TempFile {
    path: Option<PathBuf>,
}

#[cfg(unix)]
impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Writes `id` to `path` for the other ranks: created under an unguessable temporary name in
/// the same directory (owner-only, exclusive, not through a link), synced, then renamed into
/// place, so a reader never sees a partial file; on any failure the temporary file is removed.
#[cfg(unix)]
pub fn publish_file(path: &Path, id: &UniqueId, key: &RendezvousKey) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path
        .file_name()
        .ok_or_else(|| Error::File { path: path.to_path_buf(), reason: "the path names no file".into() })?;
    let mut suffix = [0u8; 16];
    random(&mut suffix)?;
    let hex: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = path.with_file_name(format!(".{}.{hex}.tmp", name.to_string_lossy()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .map_err(|source| Error::FileIo { what: "cannot create the rendezvous file", path: tmp.clone(), source })?;
    let mut guard = TempFile { path: Some(tmp.clone()) };
    f.write_all(&file_message(id, key, SystemTime::now()))
        .and_then(|()| f.sync_all())
        .map_err(io_err("cannot write the rendezvous file"))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|source| Error::FileIo {
        what: "cannot move the rendezvous file into place",
        path: path.to_path_buf(),
        source,
    })?;
    guard.path = None;
    trace_event!(launch, INFO, "rendezvous.file_published", path = %path.display(),
        "the unique id was published in the rendezvous file");
    Ok(())
}

/// Removes the file [`publish_file`] wrote for `id`, if it is still that file (the root calls
/// this once every rank has joined, so no later job finds it).
#[cfg(unix)]
pub fn remove_file(path: &Path, id: &UniqueId, key: &RendezvousKey) -> Result<(), Error> {
    match read_checked(path)? {
        Some(m) if parse_file(&m, key).is_some_and(|(got, _)| &got == id) => {
            std::fs::remove_file(path).map_err(io_err("cannot remove the rendezvous file"))?;
            trace_event!(launch, DEBUG, "rendezvous.file_removed", path = %path.display(),
                "the rendezvous file was removed");
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(unix)]
/// The id and publication time of a file message made with `key`.
pub(super) fn parse_file(m: &[u8], key: &RendezvousKey) -> Option<(UniqueId, SystemTime)> {
    if m.len() != FILE_MESSAGE || &m[..8] != FILE_MAGIC {
        return None;
    }
    let (time, rest) = m[8..].split_at(8);
    let (id, tag) = rest.split_at(UNIQUE_ID_BYTES);
    if !key.verify(b"file", &[time, id], tag) {
        return None;
    }
    let nanos = u64::from_be_bytes(time.try_into().expect("8 bytes"));
    Some((UniqueId::from_bytes(id).ok()?, UNIX_EPOCH + Duration::from_nanos(nanos)))
}

/// Opens `path` as a rendezvous file may be opened and reads at most one message and one
/// byte: `None` when it does not exist (yet). Refuses, as [`Error::File`], a path
/// that is a link, not a regular file, another user's, or writable by group or others.
#[cfg(unix)]
pub(super) fn read_checked(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let refuse = |reason: String| {
        trace_event!(launch, WARN, "rendezvous.file_refused", path = %path.display(), reason = %reason,
            "the rendezvous file is refused");
        Error::File { path: path.to_path_buf(), reason }
    };
    // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(refuse("a symbolic link; refused".into())),
        Err(e) => return Err(io_err("cannot open the rendezvous file")(e)),
    };
    let meta = f.metadata().map_err(io_err("cannot inspect the rendezvous file"))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if let Some(reason) = refusal(kind(&meta), meta.uid(), meta.mode(), me) {
        return Err(refuse(reason));
    }
    let mut m = Vec::with_capacity(FILE_MESSAGE + 1);
    f.take(FILE_MESSAGE as u64 + 1).read_to_end(&mut m).map_err(io_err("cannot read the rendezvous file"))?;
    Ok(Some(m))
}

/// Why a file of this kind, owner and mode is refused as a rendezvous file, if it is: only a
/// regular file of this user (`me`) that neither group nor others may write is taken.
#[cfg(unix)]
pub(super) fn refusal(kind: &str, uid: u32, mode: u32, me: u32) -> Option<String> {
    if kind != "a regular file" {
        return Some(format!("not a regular file ({kind}); refused"));
    }
    if uid != me {
        return Some(format!("owned by uid {uid}, not by this user (uid {me}); refused"));
    }
    if mode & 0o022 != 0 {
        return Some(format!("mode {:o} lets group or others write it; refused", mode & 0o777));
    }
    None
}

#[cfg(unix)]
pub(super) fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// Waits for `path` to hold an id published with `key` at or after `not_before` (the job's
/// start), at most `timeout` (`Duration::MAX`: no limit). A file that is missing, of another
/// key (another job) or older than the job is waited past (the root will replace it); a file
/// that is refused (see [`publish_file`]) is an error at once.
#[cfg(unix)]
pub fn wait_file(
    path: &Path,
    key: &RendezvousKey,
    not_before: SystemTime,
    timeout: Duration,
) -> Result<UniqueId, Error> {
    let deadline = Deadline::within(timeout);
    let mut seen = "no file";
    loop {
        if let Some(m) = read_checked(path)? {
            match parse_file(&m, key) {
                Some((id, at)) if at >= not_before => {
                    trace_event!(launch, INFO, "rendezvous.file_read", path = %path.display(),
                        waited_ms = crate::trace::ms(deadline.waited()),
                        "the unique id was read from the rendezvous file");
                    return Ok(id);
                }
                Some(_) => seen = "a file older than the job",
                None => seen = "a file of another job or format",
            }
        }
        if deadline.passed() {
            trace_event!(launch, WARN, "rendezvous.file_timed_out", path = %path.display(), seen,
                waited_ms = crate::trace::ms(deadline.waited()),
                "no unique id in the rendezvous file before the deadline");
            return Err(Error::Protocol {
                what: "no unique id in the rendezvous file before the deadline",
                detail: format!("{} after {:?}: {seen}", path.display(), timeout),
            });
        }
        std::thread::sleep(RETRY.min(deadline.left().unwrap_or(RETRY)));
    }
}
