//! The ELF header and the program headers: the file's identification and type, the load
//! segments (kept as [`Segment`]s, in order, inside the file) and the other segments the
//! loader reads, inside them.

use std::io::{Read, Seek};

use super::image::Image;
use super::input::{u16_at, u32_at, u64_at};
use super::machine::target_mismatch;
use super::reader::{Reader, Segment};
use super::{MAX_PROGRAM_HEADERS, MAX_TLS_ALIGN, MAX_TLS_BYTES, MAX_VERSION_ENTRIES};
use crate::foreign::error::LoadError;

pub(super) const EHDR_BYTES: u64 = 64;
const PHDR_BYTES: u64 = 56;

pub(super) const ET_DYN: u16 = 3;

pub(super) const PT_LOAD: u32 = 1;
pub(super) const PT_DYNAMIC: u32 = 2;
pub(super) const PT_PHDR: u32 = 6;
pub(super) const PT_TLS: u32 = 7;
pub(super) const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
pub(super) const PT_GNU_RELRO: u32 = 0x6474_e552;
pub(super) const PT_GNU_PROPERTY: u32 = 0x6474_e553;

impl<R: Read + Seek> Reader<R> {
    pub(super) fn image(mut self) -> Result<Image, LoadError> {
        let len = self.input.len;
        let head = self.input.read(0, len.min(EHDR_BYTES), "the ELF header")?;
        if head.len() < 4 || head[..4] != *b"\x7fELF" {
            return Err(LoadError::NotElf);
        }
        if head.len() < EHDR_BYTES as usize {
            return Err(LoadError::Truncated { what: "the ELF header", end: EHDR_BYTES, len });
        }
        if let Some(mismatch) = target_mismatch(&head, self.machine) {
            return Err(LoadError::OtherTarget(mismatch));
        }
        if head[6] != 1 || u32_at(&head, 20) != 1 {
            return Err(LoadError::BadValue { what: "the ELF version", value: u64::from(u32_at(&head, 20)) });
        }
        let e_type = u16_at(&head, 16);
        if e_type != ET_DYN {
            return Err(LoadError::NotSharedLibrary { e_type });
        }
        let (phoff, phentsize, phnum) = (u64_at(&head, 32), u16_at(&head, 54), u16_at(&head, 56));
        if u64::from(phentsize) != PHDR_BYTES {
            return Err(LoadError::BadValue { what: "the program header size", value: phentsize.into() });
        }
        if phnum == 0 {
            return Err(LoadError::Missing { what: "the program headers" });
        }
        if phnum > MAX_PROGRAM_HEADERS {
            return Err(LoadError::BadValue { what: "the number of program headers", value: phnum.into() });
        }
        let phdrs = self.input.read(phoff, u64::from(phnum) * PHDR_BYTES, "the program headers")?;
        let mut others: Vec<(u32, u64, u64, u64)> = Vec::new();
        for ph in phdrs.chunks_exact(PHDR_BYTES as usize) {
            let (p_type, flags) = (u32_at(ph, 0), u32_at(ph, 4));
            let (offset, vaddr, filesz, memsz, align) =
                (u64_at(ph, 8), u64_at(ph, 16), u64_at(ph, 32), u64_at(ph, 40), u64_at(ph, 48));
            if p_type == PT_LOAD {
                self.load_segment(Segment { vaddr, memsz, offset, filesz, flags }, align)?;
            } else {
                others.push((p_type, vaddr, filesz.max(memsz), align));
            }
        }
        if self.loads.is_empty() {
            return Err(LoadError::Missing { what: "a load segment" });
        }
        let mut dynamic = None;
        for &(p_type, vaddr, size, align) in &others {
            match p_type {
                PT_DYNAMIC if dynamic.is_some() => return Err(LoadError::Duplicate { what: "PT_DYNAMIC" }),
                PT_DYNAMIC => dynamic = Some((vaddr, size)),
                PT_PHDR => {
                    let wanted = u64::from(phnum) * PHDR_BYTES;
                    let seg =
                        self.file_backed(vaddr, wanted).ok_or(LoadError::Outside { what: "PT_PHDR", at: vaddr })?;
                    if seg.offset + (vaddr - seg.vaddr) != phoff {
                        return Err(LoadError::Disagrees { what: "PT_PHDR", at: vaddr });
                    }
                }
                PT_TLS => self.tls_segment(&phdrs, vaddr, align)?,
                PT_GNU_EH_FRAME if self.file_backed(vaddr, size).is_none() => {
                    return Err(LoadError::Outside { what: "PT_GNU_EH_FRAME", at: vaddr })
                }
                PT_GNU_EH_FRAME => self.eh_frame = Some((vaddr, size)),
                PT_GNU_RELRO => {
                    let inside = vaddr
                        .checked_add(size)
                        .is_some_and(|end| self.loads.iter().any(|s| s.vaddr <= vaddr && end <= s.mem_end()));
                    if !inside {
                        return Err(LoadError::Outside { what: "PT_GNU_RELRO", at: vaddr });
                    }
                }
                PT_GNU_PROPERTY => self.property_notes(vaddr, size, align)?,
                _ => {}
            }
        }
        let (dyn_addr, dyn_size) = dynamic.ok_or(LoadError::Missing { what: "the dynamic section" })?;
        let dynamic = self.dynamic(dyn_addr, dyn_size)?;
        self.check(dyn_addr, dyn_size, dynamic)
    }

    /// Checks one `PT_LOAD` and keeps it.
    fn load_segment(&mut self, s: Segment, align: u64) -> Result<(), LoadError> {
        let len = self.input.len;
        let end = s.offset.saturating_add(s.filesz);
        if end > len {
            return Err(LoadError::Truncated { what: "a load segment", end, len });
        }
        if s.filesz > s.memsz {
            return Err(LoadError::BadValue {
                what: "a load segment's file size (above its memory size)",
                value: s.filesz,
            });
        }
        if s.vaddr.checked_add(s.memsz).is_none() {
            return Err(LoadError::BadValue { what: "a load segment's address", value: s.vaddr });
        }
        if align > 1 && !align.is_power_of_two() {
            return Err(LoadError::BadValue { what: "a load segment's alignment", value: align });
        }
        // mmap maps whole pages: the address and the offset must agree within a page.
        if s.vaddr.wrapping_sub(s.offset) % 4096 != 0 {
            return Err(LoadError::BadValue {
                what: "a load segment's offset (not page-aligned with its address)",
                value: s.offset,
            });
        }
        if let Some(prev) = self.loads.last() {
            if s.vaddr < prev.mem_end() {
                return Err(LoadError::BadValue {
                    what: "a load segment's address (below the end of the one before)",
                    value: s.vaddr,
                });
            }
        }
        self.loads.push(s);
        Ok(())
    }

    /// `PT_TLS`: the initialisation image inside the file, a power-of-two alignment, sizes
    /// the loader can allocate.
    fn tls_segment(&self, phdrs: &[u8], vaddr: u64, align: u64) -> Result<(), LoadError> {
        let Some(ph) = phdrs.chunks_exact(PHDR_BYTES as usize).find(|ph| u32_at(ph, 0) == PT_TLS) else {
            return Ok(());
        };
        let (filesz, memsz) = (u64_at(ph, 32), u64_at(ph, 40));
        if align > MAX_TLS_ALIGN || (align > 1 && !align.is_power_of_two()) {
            return Err(LoadError::BadValue { what: "the TLS segment's alignment", value: align });
        }
        if filesz > memsz || memsz > MAX_TLS_BYTES {
            return Err(LoadError::BadValue { what: "the TLS segment's size", value: memsz });
        }
        if filesz > 0 && self.file_backed(vaddr, filesz).is_none() {
            return Err(LoadError::Outside { what: "the TLS initialisation image", at: vaddr });
        }
        Ok(())
    }

    /// `PT_GNU_PROPERTY`: glibc (x86-64, AArch64) walks its notes in memory and reads each
    /// property array by the note's own size; every note must lie inside the segment.
    fn property_notes(&mut self, vaddr: u64, size: u64, align: u64) -> Result<(), LoadError> {
        const WHAT: &str = "PT_GNU_PROPERTY";
        let notes = self.table(vaddr, size, WHAT)?;
        if align != 8 {
            return Ok(()); // glibc skips a misaligned note segment
        }
        let mut at = 0usize;
        let mut count = 0usize;
        let align_up = |n: u64| n.checked_add(7).map(|n| n & !7);
        while at + 12 < notes.len() {
            let (namesz, descsz) = (u64::from(u32_at(&notes, at)), u64::from(u32_at(&notes, at + 4)));
            // ELF_NOTE_NEXT_OFFSET: the descriptor starts at the header and name rounded up
            // to 8, the next note after the descriptor rounded up to 8.
            let next = align_up(12 + namesz)
                .and_then(|desc| desc.checked_add(align_up(descsz)?))
                .and_then(|n| n.checked_add(at as u64));
            match next {
                Some(next) if next <= notes.len() as u64 => at = next as usize,
                _ => return Err(LoadError::Outside { what: "a PT_GNU_PROPERTY note", at: vaddr + at as u64 }),
            }
            count += 1;
            if count > MAX_VERSION_ENTRIES {
                return Err(LoadError::Unterminated { what: "the PT_GNU_PROPERTY notes" });
            }
        }
        Ok(())
    }
}

/// `PT_TLS`'s memory size (0 without one), for thread-local symbols.
pub(super) fn tls_memsz<R: Read + Seek>(reader: &mut Reader<R>) -> Result<u64, LoadError> {
    let head = reader.input.read(0, EHDR_BYTES, "the ELF header")?;
    let (phoff, phnum) = (u64_at(&head, 32), u16_at(&head, 56));
    let phdrs = reader.input.read(phoff, u64::from(phnum) * PHDR_BYTES, "the program headers")?;
    Ok(phdrs.chunks_exact(PHDR_BYTES as usize).find(|p| u32_at(p, 0) == PT_TLS).map_or(0, |p| u64_at(p, 40)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foreign::elf::dynamic::DT_INIT_ARRAYSZ;
    use crate::foreign::elf::machine::EM_X86_64;
    use crate::foreign::elf::testing::{layout, AARCH64, RELR_SYSV, X86_64};

    /// Every prefix that cuts into what the loader maps is refused as truncated; none panics.
    #[test]
    fn every_truncation_of_the_mapped_part_is_refused() {
        for bytes in [X86_64, AARCH64, RELR_SYSV] {
            let l = layout(bytes);
            let mapped_end = l
                .phdrs()
                .filter(|(_, t)| *t == PT_LOAD)
                .map(|(at, _)| u64_at(bytes, at + 8) + u64_at(bytes, at + 32))
                .max()
                .unwrap() as usize;
            for n in 0..bytes.len() {
                let result = Image::parse(&bytes[..n], u16_at(bytes, 18));
                match (n, result) {
                    (0..=3, Err(LoadError::NotElf)) => {}
                    (4..=63, Err(LoadError::Truncated { what: "the ELF header", .. })) => {}
                    (n, Err(LoadError::Truncated { len, .. })) if n < mapped_end => assert_eq!(len, n as u64),
                    (n, r) if n < mapped_end => panic!("a prefix of {n} bytes: {r:?}"),
                    // Past the mapped part only the section headers are cut: they are
                    // skipped or, cut part way, read as far as they go.
                    (_, r) => assert!(r.is_ok(), "{r:?}"),
                }
            }
        }
        let msg = Image::parse(&X86_64[..4096], EM_X86_64).unwrap_err().to_string();
        assert!(
            msg.starts_with("truncated: a load segment ends at byte ") && msg.ends_with(", the file has 4096 bytes"),
            "{msg}"
        );
    }

    #[test]
    fn header_and_program_header_corruptions_name_what_is_wrong() {
        let mut l = layout(X86_64);
        l.0[16] = 2;
        assert_eq!(l.error(), "not a shared library (ELF type 2, an executable)");
        let mut l = layout(X86_64);
        l.0[54] = 55;
        assert_eq!(l.error(), "corrupt: the program header size is 55");
        let mut l = layout(X86_64);
        l.0[56..58].copy_from_slice(&[0, 0]);
        assert_eq!(l.error(), "corrupt: the program headers is missing");
        let mut l = layout(X86_64);
        let load = l.phdr(PT_LOAD);
        l.put(load + 32, 1 << 40);
        l.put(load + 40, 1 << 40);
        assert!(l.error().starts_with("truncated: a load segment ends at byte 1099511627776"), "{}", l.error());
        let mut l = layout(X86_64);
        let dynamic = l.phdr(PT_DYNAMIC);
        l.put(dynamic + 16, 0x10_0000);
        assert_eq!(l.error(), "corrupt: the dynamic section at 0x100000 lies outside the file's load segments");
        let mut l = layout(X86_64);
        let tls = l.phdr(PT_TLS);
        l.put(tls + 48, 3);
        assert_eq!(l.error(), "corrupt: the TLS segment's alignment is 3");
        // Values shifted inside their valid range, which only the section headers tell
        // apart: the data segment's file part cut short (its last initialised bytes would
        // read as zeros), an initialiser array one slot shorter.
        let mut l = layout(X86_64);
        let (data, _) = l.phdrs().filter(|(_, t)| *t == PT_LOAD).nth(1).unwrap();
        let filesz = u64_at(&l.0, data + 32);
        l.put(data + 32, filesz - 0x10);
        assert!(l.error().contains("disagrees with the section headers"), "{}", l.error());
        let mut l = layout(X86_64);
        let at = l.entry(DT_INIT_ARRAYSZ);
        l.put(at + 8, 8);
        assert!(l.error().starts_with("corrupt: DT_INIT_ARRAY at "), "{}", l.error());
    }
}
