//! One dynamic symbol (`Elf64_Sym`) and the ELF numbers of its type, binding, visibility and
//! section.

pub(super) const SYM_BYTES: u64 = 24;

pub(super) const STT_OBJECT: u8 = 1;
pub(super) const STT_FUNC: u8 = 2;
pub(super) const STT_TLS: u8 = 6;
pub(super) const STT_GNU_IFUNC: u8 = 10;
/// Bindings other objects link to: `STB_GLOBAL` (1) and `STB_WEAK` (2).
const EXPORTED_BINDINGS: [u8; 2] = [1, 2];
/// Visibilities other objects see: `STV_DEFAULT` (0) and `STV_PROTECTED` (3).
const VISIBLE: [u8; 2] = [0, 3];
pub(super) const SHN_UNDEF: u16 = 0;
pub(super) const SHN_LORESERVE: u16 = 0xff00;
pub(super) const SHN_ABS: u16 = 0xfff1;

/// One `.dynsym` entry.
#[derive(Clone, Copy, Debug)]
pub(super) struct Symbol {
    pub(super) name: u32,
    pub(super) info: u8,
    pub(super) other: u8,
    pub(super) shndx: u16,
    pub(super) value: u64,
    /// `st_size`: an object's bytes.
    pub(super) size: u64,
}

impl Symbol {
    pub(super) fn kind(&self) -> u8 {
        self.info & 0xf
    }
    pub(super) fn defined(&self) -> bool {
        self.shndx != SHN_UNDEF
    }
    pub(super) fn exported(&self) -> bool {
        EXPORTED_BINDINGS.contains(&(self.info >> 4)) && VISIBLE.contains(&(self.other & 3)) && self.defined()
    }
}
