//! The symbol versions: the definition (`DT_VERDEF`) and needs (`DT_VERNEED`) lists, each
//! ending, and the version indices they define.

use std::io::{Read, Seek};

use super::input::{u16_at, u32_at};
use super::reader::{Reader, Table};
use super::MAX_VERSION_ENTRIES;
use crate::foreign::error::LoadError;

impl<R: Read + Seek> Reader<R> {
    /// A version definition (`DT_VERDEF`) or needs (`DT_VERNEED`) list: version 1 entries,
    /// names inside the string table, ending within [`MAX_VERSION_ENTRIES`]. The indices it
    /// defines go to `versions`.
    pub(super) fn version_list(
        &mut self,
        at: u64,
        needs: bool,
        strsz: u64,
        versions: &mut Vec<u16>,
        tables: &mut Vec<Table>,
    ) -> Result<(), LoadError> {
        let (what, entry_bytes) = if needs { ("DT_VERNEED", 16) } else { ("DT_VERDEF", 20) };
        let list = if needs { "the version needs" } else { "the version definitions" };
        let (mut lo, mut hi) = (at, at);
        let mut entry = at;
        for _ in 0..MAX_VERSION_ENTRIES {
            let e = self.table(entry, entry_bytes, what)?;
            let (version, name_or_ndx, aux, next) = if needs {
                (u16_at(&e, 0), u64::from(u32_at(&e, 4)), u64::from(u32_at(&e, 8)), u64::from(u32_at(&e, 12)))
            } else {
                (u16_at(&e, 0), u64::from(u16_at(&e, 4)), u64::from(u32_at(&e, 12)), u64::from(u32_at(&e, 16)))
            };
            if version != 1 {
                return Err(LoadError::BadValue { what: "a version entry's format", value: version.into() });
            }
            if needs && name_or_ndx >= strsz {
                return Err(LoadError::BadValue { what: "a DT_VERNEED file name's offset", value: name_or_ndx });
            }
            if !needs {
                versions.push(name_or_ndx as u16 & 0x7fff);
            }
            lo = lo.min(entry);
            hi = hi.max(entry + entry_bytes);
            // The auxiliary entries: a needed version's index, a definition's name.
            let mut a = entry.checked_add(aux).ok_or(LoadError::Outside { what, at: entry })?;
            let mut ended = false;
            for _ in 0..MAX_VERSION_ENTRIES {
                let (aux_bytes, name_at, next_at) = if needs { (16, 8, 12) } else { (8, 0, 4) };
                let x = self.table(a, aux_bytes, what)?;
                let name = u64::from(u32_at(&x, name_at));
                if name >= strsz {
                    return Err(LoadError::BadValue { what: "a version name's offset", value: name });
                }
                if needs {
                    versions.push(u16_at(&x, 6) & 0x7fff);
                }
                lo = lo.min(a);
                hi = hi.max(a + aux_bytes);
                let next_aux = u64::from(u32_at(&x, next_at));
                // A definition's names after the first are its parents, which the loader does
                // not read; a needed version's list is walked to its end.
                if next_aux == 0 || !needs {
                    ended = true;
                    break;
                }
                a = a.checked_add(next_aux).ok_or(LoadError::Outside { what, at: a })?;
            }
            if !ended {
                return Err(LoadError::Unterminated { what: list });
            }
            if next == 0 {
                tables.push(Table { start: lo, end: hi, what: "inside the version tables" });
                return Ok(());
            }
            entry = entry.checked_add(next).ok_or(LoadError::Outside { what, at: entry })?;
        }
        Err(LoadError::Unterminated { what: list })
    }
}
