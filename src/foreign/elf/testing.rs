//! The unit tests' seeds (small valid libraries for each machine) and the map of where things
//! are in them, to corrupt them one at a time.

use super::dynamic::DT_RELA;
use super::headers::{PT_DYNAMIC, PT_LOAD};
use super::image::Image;
use super::input::{u16_at, u32_at, u64_at};
use crate::foreign::error::LoadError;

/// tests/data/elf/tiny.c built by gcc 12 (Debian 12) for x86-64, AArch64 and riscv64
/// (whose `DT_RELASZ` covers `.rela.plt` too), and for x86-64 with RELR relocations and a
/// System V hash table (the commands are in that folder's README).
pub(super) const X86_64: &[u8] = include_bytes!("../../../tests/data/elf/tiny-x86_64.so");
pub(super) const AARCH64: &[u8] = include_bytes!("../../../tests/data/elf/tiny-aarch64.so");
pub(super) const RISCV64: &[u8] = include_bytes!("../../../tests/data/elf/tiny-riscv64.so");
pub(super) const RELR_SYSV: &[u8] = include_bytes!("../../../tests/data/elf/tiny-relr-sysv-hash.so");

/// Where things are in a (valid) file, to corrupt them one at a time.
pub(super) struct Layout(pub(super) Vec<u8>);

impl Layout {
    pub(super) fn phdrs(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        let (phoff, phnum) = (u64_at(&self.0, 32) as usize, u16_at(&self.0, 56) as usize);
        (0..phnum).map(move |i| (phoff + i * 56, u32_at(&self.0, phoff + i * 56)))
    }
    /// The file offset of the first program header of `p_type`.
    pub(super) fn phdr(&self, p_type: u32) -> usize {
        self.phdrs().find(|(_, t)| *t == p_type).expect("a program header of that type").0
    }
    /// The file offset of address `vaddr`.
    pub(super) fn offset(&self, vaddr: u64) -> usize {
        self.phdrs()
            .filter(|(_, t)| *t == PT_LOAD)
            .map(|(at, _)| (u64_at(&self.0, at + 16), u64_at(&self.0, at + 8), u64_at(&self.0, at + 32)))
            .find(|(v, _, size)| *v <= vaddr && vaddr < v + size)
            .map(|(v, off, _)| (off + vaddr - v) as usize)
            .expect("a file-backed address")
    }
    /// The file offset of the dynamic entry `tag`.
    pub(super) fn entry(&self, tag: u64) -> usize {
        let dynamic = self.offset(u64_at(&self.0, self.phdr(PT_DYNAMIC) + 16));
        (0..).map(|i| dynamic + 16 * i).find(|&at| u64_at(&self.0, at) == tag).expect("the tag")
    }
    pub(super) fn value(&self, tag: u64) -> u64 {
        u64_at(&self.0, self.entry(tag) + 8)
    }
    pub(super) fn put(&mut self, at: usize, value: u64) {
        self.0[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }
    pub(super) fn put32(&mut self, at: usize, value: u32) {
        self.0[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }
    /// The file offset of the `i`th relocation of `DT_RELA`.
    pub(super) fn rela(&self, i: usize) -> usize {
        self.offset(self.value(DT_RELA)) + 24 * i
    }
    pub(super) fn check(&self) -> Result<Image, LoadError> {
        Image::parse(&self.0, u16_at(&self.0, 18))
    }
    pub(super) fn error(&self) -> String {
        self.check().expect_err("a corrupted file").to_string()
    }
}

pub(super) fn layout(bytes: &[u8]) -> Layout {
    Layout(bytes.to_vec())
}
