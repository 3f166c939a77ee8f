//! The parsers of outside input, reachable by the fuzz targets in `fuzz/` (compiled only under
//! cargo fuzz's `--cfg fuzzing`; no API promise). What is public already (Slurm host lists,
//! `World::from_vars`, the config encoders, `Aggregate`, `UniqueId`) the targets call
//! directly; this module reaches the rest: the rendezvous's frames on both sides and its file
//! record, driven from scripts (`nccl::rendezvous::harness`, whose `check`s state the
//! protocol's promises), and the field tables the config encoders write from.

pub use crate::nccl::rendezvous::harness::{
    drive_rank, drive_root, key as rendezvous_key, served_id, RankOutcome, RankResult, RankStep, RootOutcome, RootStep,
};
#[cfg(unix)]
pub use crate::nccl::rendezvous::harness::{file_record, parse_file_record, read_file_record};

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
