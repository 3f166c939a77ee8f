//! The symbol hash tables (`DT_GNU_HASH`, `DT_HASH`): inside the file, every chain ending, and
//! the symbol count they cover (the symbol table's length is not in the file).

use std::io::{Read, Seek};

use super::input::u32_at;
use super::reader::{Reader, Table};
use super::MAX_TABLE_BYTES;
use crate::foreign::error::LoadError;

impl<R: Read + Seek> Reader<R> {
    /// `DT_GNU_HASH`: the symbol count its chains cover. The loader divides by the bucket
    /// count, masks with the Bloom filter's size (a power of two) and walks each chain until
    /// an entry with its low bit set.
    pub(super) fn gnu_hash(&mut self, at: u64, tables: &mut Vec<Table>) -> Result<u64, LoadError> {
        let head = self.table(at, 16, "DT_GNU_HASH")?;
        let (nbuckets, symoffset, bloom) =
            (u64::from(u32_at(&head, 0)), u64::from(u32_at(&head, 4)), u64::from(u32_at(&head, 8)));
        if nbuckets == 0 {
            return Err(LoadError::BadValue { what: "the GNU hash bucket count", value: 0 });
        }
        if !bloom.is_power_of_two() {
            return Err(LoadError::BadValue { what: "the GNU hash Bloom filter size", value: bloom });
        }
        let fixed = 16 + bloom * 8 + nbuckets * 4;
        let table = self.table(at, fixed, "DT_GNU_HASH")?;
        let buckets: Vec<u64> =
            table[(16 + bloom * 8) as usize..].chunks_exact(4).map(|b| u64::from(u32_at(b, 0))).collect();
        let chains_at = at + fixed;
        let mut count = symoffset;
        let last = buckets.iter().copied().filter(|&b| b != 0).max();
        if let Some(b) = buckets.iter().find(|&&b| b != 0 && b < symoffset) {
            return Err(LoadError::BadValue { what: "a GNU hash bucket", value: *b });
        }
        let mut end = chains_at;
        if let Some(start) = last {
            // Chains are contiguous and walked forward: the walk from the highest bucket ends
            // last, and every other walk ends at or before it.
            let seg = *self
                .file_backed(chains_at, 0)
                .ok_or(LoadError::Outside { what: "the GNU hash chains", at: chains_at })?;
            let first = chains_at + (start - symoffset) * 4;
            let available = seg.file_end().saturating_sub(first).min(MAX_TABLE_BYTES) / 4 * 4;
            if available == 0 {
                return Err(LoadError::Outside { what: "a GNU hash chain", at: first });
            }
            // Read in growing pieces: the chain's length is known only at its end.
            let (mut read, mut piece) = (0u64, 4096u64);
            let len = loop {
                let size = piece.min(available - read);
                let words = self.table(first + read, size, "the GNU hash chains")?;
                if let Some(i) = words.chunks_exact(4).position(|w| u32_at(w, 0) & 1 != 0) {
                    break read / 4 + i as u64;
                }
                read += size;
                if read >= available {
                    return Err(LoadError::Unterminated { what: "a GNU hash chain" });
                }
                piece = piece.saturating_mul(4);
            };
            count = start + len + 1;
            end = first + (len + 1) * 4;
        }
        tables.push(Table { start: at, end, what: "inside the GNU hash table" });
        Ok(count)
    }

    /// `DT_HASH`: `nchain`, the symbol count. Every bucket and chain entry below it, and no
    /// chain loops (the loader walks a chain until index 0).
    pub(super) fn sysv_hash(&mut self, at: u64, tables: &mut Vec<Table>) -> Result<u64, LoadError> {
        let head = self.table(at, 8, "DT_HASH")?;
        let (nbucket, nchain) = (u64::from(u32_at(&head, 0)), u64::from(u32_at(&head, 4)));
        if nbucket == 0 {
            return Err(LoadError::BadValue { what: "the hash table's bucket count", value: 0 });
        }
        let size = 8 + (nbucket + nchain) * 4;
        let table = self.table(at, size, "DT_HASH")?;
        tables.push(Table { start: at, end: at + size, what: "inside the hash table" });
        let words: Vec<u32> = table[8..].chunks_exact(4).map(|w| u32_at(w, 0)).collect();
        let (buckets, chains) = words.split_at(nbucket as usize);
        if let Some(&bad) = words.iter().find(|&&w| u64::from(w) >= nchain && w != 0) {
            return Err(LoadError::BadValue { what: "a hash table entry (not below nchain)", value: bad.into() });
        }
        // The chains form a graph where each index has one successor: mark each index as
        // ending (reaches 0) once, walking each unknown one; a walk that meets itself loops.
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            Unknown,
            Walking,
            Ends,
        }
        let mut marks = vec![Mark::Unknown; chains.len()];
        let mut path = Vec::new();
        for &start in buckets {
            let mut i = start as usize;
            while i != 0 && marks[i] == Mark::Unknown {
                marks[i] = Mark::Walking;
                path.push(i);
                i = chains[i] as usize;
            }
            if i != 0 && marks[i] == Mark::Walking {
                return Err(LoadError::Unterminated { what: "a hash chain" });
            }
            for j in path.drain(..) {
                marks[j] = Mark::Ends;
            }
        }
        Ok(nchain)
    }
}

#[cfg(test)]
mod tests {
    use crate::foreign::elf::dynamic::{DT_GNU_HASH, DT_HASH, DT_SYMTAB, DT_VERNEED, DT_VERSYM};
    use crate::foreign::elf::input::u32_at;
    use crate::foreign::elf::testing::{layout, RELR_SYSV, X86_64};

    #[test]
    fn hash_and_version_corruptions_name_what_is_wrong() {
        let mut l = layout(X86_64);
        let gnu = l.offset(l.value(DT_GNU_HASH));
        l.put32(gnu, 0);
        assert_eq!(l.error(), "corrupt: the GNU hash bucket count is 0");
        let mut l = layout(X86_64);
        l.put32(gnu + 8, 3);
        assert_eq!(l.error(), "corrupt: the GNU hash Bloom filter size is 3");
        // A chain without its end marker: every chain word made even, up to the symbols.
        let mut l = layout(X86_64);
        let (nbuckets, bloom) = (u32_at(&l.0, gnu) as usize, u32_at(&l.0, gnu + 8) as usize);
        let chains = gnu + 16 + bloom * 8 + nbuckets * 4;
        let end = l.offset(l.value(DT_SYMTAB));
        for at in (chains..end).step_by(4) {
            let w = u32_at(&l.0, at);
            l.put32(at, w & !1);
        }
        // The walk runs on into the symbol table, whose words end it at random: an error
        // either way.
        assert!(l.check().is_err());
        // A System V hash chain that loops back on itself; an entry past nchain.
        let mut l = layout(RELR_SYSV);
        let hash = l.offset(l.value(DT_HASH));
        let (nbucket, nchain) = (u32_at(&l.0, hash) as usize, u32_at(&l.0, hash + 4));
        let first = (0..nbucket).map(|b| u32_at(&l.0, hash + 8 + 4 * b)).find(|&i| i != 0).unwrap();
        l.put32(hash + 8 + 4 * nbucket + 4 * first as usize, first);
        assert_eq!(l.error(), "corrupt: a hash chain does not end");
        let mut l = layout(RELR_SYSV);
        l.put32(hash + 8, nchain);
        assert_eq!(l.error(), format!("corrupt: a hash table entry (not below nchain) is {nchain}"));
        // The version needs list going on past its one entry, into what follows it (the
        // loader walks it until an offset of 0; a list of one cannot loop).
        let mut l = layout(X86_64);
        let verneed = l.offset(l.value(DT_VERNEED));
        assert_eq!(u32_at(&l.0, verneed + 12), 0, "the seed needs one library's versions");
        l.put32(verneed + 12, 16);
        assert!(l.check().is_err());
        // Its auxiliary entry's offset to the next one (unsigned: lists only go forward)
        // pointing 4 GiB on, past the file.
        let mut l = layout(X86_64);
        let aux = verneed + u32_at(&l.0, verneed + 8) as usize;
        l.put32(aux + 12, 0u32.wrapping_sub(16));
        assert!(l.check().is_err());
        // A symbol version no entry defines.
        let mut l = layout(X86_64);
        let versym = l.offset(l.value(DT_VERSYM));
        l.0[versym + 2..versym + 4].copy_from_slice(&77u16.to_le_bytes());
        assert_eq!(l.error(), "corrupt: a symbol's version index is 77");
    }
}
