//! The bounded input: reads at offsets of any `Read + Seek`, each checked against the input's
//! length and bounded by [`MAX_TABLE_BYTES`], and the little-endian field reads of what it
//! returns.

use std::io::{Read, Seek, SeekFrom};

use super::MAX_TABLE_BYTES;
use crate::foreign::error::LoadError;

/// An input read at offsets, every read checked against its length and bounded.
pub(crate) struct Input<R> {
    reader: R,
    pub(super) len: u64,
}

impl<R: Read + Seek> Input<R> {
    /// Takes `reader`; its length is where its end is now.
    pub(crate) fn new(mut reader: R) -> Result<Self, LoadError> {
        let len = reader.seek(SeekFrom::End(0))?;
        Ok(Input { reader, len })
    }

    /// `size` bytes at `offset`: [`LoadError::Truncated`] naming `what` if they run past the
    /// end, [`LoadError::TooLarge`] past [`MAX_TABLE_BYTES`].
    pub(super) fn read(&mut self, offset: u64, size: u64, what: &'static str) -> Result<Vec<u8>, LoadError> {
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

pub(super) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}
