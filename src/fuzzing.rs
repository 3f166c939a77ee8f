//! The parsers of outside input, reachable by the fuzz targets in `fuzz/` (compiled only under
//! cargo fuzz's `--cfg fuzzing`; no API promise). What is public already (Slurm host lists,
//! `World::from_vars`, the config encoders, `Aggregate`, `UniqueId`) the targets call
//! directly; this module reaches the rest: the rendezvous's frames on both sides and its file
//! record, driven from scripts (`launch::rendezvous::harness`, whose `check`s state the
//! protocol's promises), and the field tables the config encoders write from.

pub use crate::launch::rendezvous::harness::{
    drive_rank, drive_root, key as rendezvous_key, served_id, RankOutcome, RankResult, RankStep, RootOutcome, RootStep,
};
#[cfg(unix)]
pub use crate::launch::rendezvous::harness::{file_record, parse_file_record, read_file_record};

use crate::nccl::Version;
use crate::nccl::{FieldInfo, Kind, COLL_CONFIG_FIELDS, CONFIG_FIELDS};

/// One field of a versioned struct as the encoders' tables declare it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldFact {
    /// The C name.
    pub name: &'static str,
    /// Its offset on 64-bit Linux.
    pub offset: usize,
    /// Its bytes.
    pub width: usize,
    /// Whether it is an `int` (the others are pointers or a `uint64_t`).
    pub int: bool,
    /// The version that added it.
    pub since: Version,
}

fn facts(fields: &[FieldInfo]) -> Vec<FieldFact> {
    fields
        .iter()
        .map(|f| FieldFact {
            name: f.name,
            offset: f.offset,
            width: f.kind.width(),
            int: f.kind == Kind::Int,
            since: f.since,
        })
        .collect()
}

/// `ncclConfig_t`'s fields after the header, as `Config::encode` writes them.
pub fn config_fields() -> Vec<FieldFact> {
    facts(CONFIG_FIELDS)
}

/// `ncclCollConfig_t`'s fields after the header, as `CollConfig::encode` writes them.
pub fn coll_config_fields() -> Vec<FieldFact> {
    facts(COLL_CONFIG_FIELDS)
}

/// The ELF reader that checks a library before the system loader maps it
/// (`foreign::elf::Image`), on `bytes` for the machine its header names (so that the seeds of
/// every architecture reach the deep checks): the functions it exports, or the one-line reason
/// it is refused.
pub fn elf_image(bytes: &[u8]) -> Result<Vec<String>, String> {
    let machine = bytes.get(18..20).map_or(0, |m| u16::from_le_bytes([m[0], m[1]]));
    crate::foreign::elf::Image::parse(bytes, machine).map(|i| i.exported_functions()).map_err(|e| e.to_string())
}

/// A cache entry's name and path, and what the two lookups of that name returned.
pub type CacheEntry = (Vec<u8>, Vec<u8>, [Option<std::path::PathBuf>; 2]);

/// glibc's loader cache reader (`foreign::ld_cache`): `None` for a cache glibc would not
/// use, else every entry's name and path, and for the first 32 names what a lookup for this
/// machine, without and with the x86-64 hwcaps subfolders, returns (every lookup walks every
/// entry: bounded work per input).
pub fn ld_so_cache(bytes: &[u8]) -> Option<Vec<CacheEntry>> {
    let cache = crate::foreign::ld_cache::LdCache::parse(bytes.to_vec())?;
    let flags = crate::foreign::ld_cache::native_flags().unwrap_or(0x0303);
    let hwcaps = ["x86-64-v4", "x86-64-v3", "x86-64-v2"];
    Some(
        cache
            .entries()
            .enumerate()
            .map(|(i, e)| (i < 32, e))
            .map(|(look, e)| {
                let lookup = |h: &[&str]| if look { cache.lookup(e.name, flags, h) } else { None };
                let found = [lookup(&[]), lookup(&hwcaps)];
                (e.name.to_vec(), e.path.to_vec(), found)
            })
            .collect(),
    )
}
