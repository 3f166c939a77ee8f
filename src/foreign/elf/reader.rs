//! The reader's state while it checks a file: the input, the load segments checked so far,
//! where relocations write, and the address questions every check asks of the segments
//! (file-backed, writable, code).

use std::collections::BTreeMap;
use std::io::{Read, Seek};

use super::input::{u64_at, Input};
use crate::foreign::error::LoadError;

/// Segment flags (`p_flags`): executable, writable.
const PF_X: u32 = 1;
const PF_W: u32 = 2;

/// One `PT_LOAD`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Segment {
    pub(super) vaddr: u64,
    pub(super) memsz: u64,
    pub(super) offset: u64,
    pub(super) filesz: u64,
    pub(super) flags: u32,
}

impl Segment {
    /// The end of the part the file backs (no overflow: checked when read).
    pub(super) fn file_end(&self) -> u64 {
        self.vaddr + self.filesz
    }
    pub(super) fn mem_end(&self) -> u64 {
        self.vaddr + self.memsz
    }
    pub(super) fn writable(&self) -> bool {
        self.flags & PF_W != 0
    }
    pub(super) fn executable(&self) -> bool {
        self.flags & PF_X != 0
    }
}

/// A range of addresses the loader reads as a table; relocations must not write into it.
pub(super) struct Table {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) what: &'static str,
}

/// Reads and checks the file, keeping the checked layout while it goes.
pub(super) struct Reader<R> {
    pub(super) input: Input<R>,
    pub(super) machine: u16,
    pub(super) loads: Vec<Segment>,
    /// Each writable segment's file bytes, read when first needed (RELR addends, slots).
    pub(super) data: BTreeMap<u64, Vec<u8>>,
    /// `PT_GNU_EH_FRAME`: address and size.
    pub(super) eh_frame: Option<(u64, u64)>,
    /// Where the relocations write, and how many bytes: no two may overlap.
    pub(super) written: Vec<(u64, u64)>,
    /// Where the PLT's relocations (`DT_JMPREL`) write.
    pub(super) plt_written: Vec<u64>,
    /// `PT_TLS`'s memory size (0 without one).
    pub(super) tls_size: u64,
}

impl<R: Read + Seek> Reader<R> {
    /// The load segment whose file-backed part holds `[addr, addr + size)`.
    pub(super) fn file_backed(&self, addr: u64, size: u64) -> Option<&Segment> {
        let end = addr.checked_add(size)?;
        self.loads.iter().find(|s| s.vaddr <= addr && end <= s.file_end())
    }

    /// `size` bytes at address `addr`, which must be file-backed.
    pub(super) fn table(&mut self, addr: u64, size: u64, what: &'static str) -> Result<Vec<u8>, LoadError> {
        let seg = *self.file_backed(addr, size).ok_or(LoadError::Outside { what, at: addr })?;
        self.input.read(seg.offset + (addr - seg.vaddr), size, what)
    }

    pub(super) fn writable(&self, addr: u64, size: u64) -> bool {
        addr.checked_add(size)
            .is_some_and(|end| self.loads.iter().any(|s| s.writable() && s.vaddr <= addr && end <= s.mem_end()))
    }

    pub(super) fn is_code(&self, addr: u64) -> bool {
        is_code(&self.loads, addr)
    }

    /// The 8 bytes the file holds at writable address `addr`, if the file backs it.
    pub(super) fn word_at(&mut self, addr: u64) -> Result<Option<u64>, LoadError> {
        let Some(seg) = self
            .loads
            .iter()
            .find(|s| s.writable() && s.vaddr <= addr && addr.checked_add(8).is_some_and(|e| e <= s.file_end()))
            .copied()
        else {
            return Ok(None);
        };
        if !self.data.contains_key(&seg.vaddr) {
            let bytes = self.input.read(seg.offset, seg.filesz, "a writable segment")?;
            self.data.insert(seg.vaddr, bytes);
        }
        let bytes = &self.data[&seg.vaddr];
        let at =
            usize::try_from(addr - seg.vaddr).map_err(|_| LoadError::Outside { what: "a relocated word", at: addr })?;
        Ok(bytes.get(at..at + 8).map(|b| u64_at(b, 0)))
    }
}

fn is_code(loads: &[Segment], addr: u64) -> bool {
    loads.iter().any(|s| s.executable() && s.vaddr <= addr && addr < s.file_end())
}
