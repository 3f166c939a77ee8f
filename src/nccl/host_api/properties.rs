//! `ncclCommQueryProperties` (2.29.2, declared in nccl_device/core.h): what a communicator
//! supports (device API, multimem, GIN) and where it runs.
//!
//! `ncclCommProperties_t` is versioned by `size`, `magic` (NCCL_API_MAGIC, 0xcafebeef) and
//! `version`, but NCCL does not clamp to `size`: it refuses a wrong magic and a `version` newer
//! than itself (`ncclInvalidUsage`), then writes the fields of the layout `version` selects
//! (NCCL v2.30.7-1 src/dev_runtime.cc:1459-1496; the fields after `ginType` only for a version
//! newer than 2.29.3, :1480). The facade asks for the newest layout it knows (2.30.7's, the same
//! as 2.29.7's) or the loaded library's version if older, and hands NCCL a buffer larger than
//! either layout, so a library that writes more than it should writes into owned memory.

use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::shared::Allow;
use crate::nccl::library::functions::Sym;
use crate::nccl::types::error::Error;
use crate::nccl::types::version::Version;

/// NCCL_API_MAGIC.
const MAGIC: u32 = 0xcafe_beef;
/// The newest layout this facade knows.
const NEWEST_LAYOUT: Version = Version::new(2, 30, 7);
/// Bytes handed to NCCL (either layout is at most 56).
const BUFFER: usize = 256;

/// `ncclGinType_t`: GPU-initiated networking. An open newtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GinType(pub i32);

impl GinType {
    /// `NCCL_GIN_TYPE_NONE`.
    pub const NONE: Self = Self(0);
    /// `NCCL_GIN_TYPE_PROXY`.
    pub const PROXY: Self = Self(2);
    /// `NCCL_GIN_TYPE_GDAKI`.
    pub const GDAKI: Self = Self(3);
    /// `NCCL_GIN_TYPE_GPI`.
    pub const GPI: Self = Self(4);
}

/// A communicator's properties as NCCL reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommProperties {
    /// This rank.
    pub rank: i32,
    /// Number of ranks.
    pub nranks: i32,
    /// The CUDA device.
    pub cuda_device: i32,
    /// The NVML device.
    pub nvml_device: i32,
    /// Whether the device API (symmetric memory) is supported.
    pub device_api: bool,
    /// Whether NVLS multicast is available to the whole communicator.
    pub multimem: bool,
    /// The GIN type.
    pub gin_type: GinType,
    /// Number of LSA teams (2.29.4 and later; `None` before).
    pub lsa_teams: Option<i32>,
    /// Whether host-initiated RMA is supported (2.29.4 and later).
    pub host_rma: Option<bool>,
    /// The railed GIN type (2.29.4 and later).
    pub railed_gin_type: Option<GinType>,
}

/// The bytes handed to NCCL, aligned as the struct (its first field is a `size_t`).
#[repr(C, align(8))]
struct PropsBuffer([u8; BUFFER]);

/// The layout NCCL writes for `version`: its `sizeof` and whether it has the 2.29.4 fields.
fn layout(version: Version) -> (usize, bool) {
    if version > Version::new(2, 29, 3) {
        (56, true)
    } else {
        (40, false)
    }
}

impl Communicator {
    /// `ncclCommQueryProperties` (2.29.2).
    pub fn properties(&self) -> Result<CommProperties, Error> {
        let nccl = &self.shared.nccl;
        let version = nccl.version().min(NEWEST_LAYOUT);
        let (size, extended) = layout(version);
        let mut buf = PropsBuffer([0; BUFFER]);
        buf.0[..8].copy_from_slice(&(size as u64).to_ne_bytes());
        buf.0[8..12].copy_from_slice(&MAGIC.to_ne_bytes());
        buf.0[12..16].copy_from_slice(&(version.code() as u32).to_ne_bytes());
        let comm = self.shared.handle();
        let ptr: *mut PropsBuffer = &mut buf;
        // SAFETY: this communicator's handle under its call lock; `ptr` is BUFFER writable
        // bytes, 8-aligned (the struct's `size_t` alignment), more than any layout NCCL writes.
        let r = unsafe { self.shared.call(&nccl.functions().comm_query_properties, (comm, ptr.cast()), Allow::Ready) }?;
        if !r.is_success() {
            return Err(nccl.failure(Sym::CommQueryProperties, r, comm));
        }
        let b = &buf.0;
        let i32_at = |off: usize| i32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]]);
        let bool_at = |off: usize| b[off] != 0;
        Ok(CommProperties {
            rank: i32_at(16),
            nranks: i32_at(20),
            cuda_device: i32_at(24),
            nvml_device: i32_at(28),
            device_api: bool_at(32),
            multimem: bool_at(33),
            gin_type: GinType(i32_at(36)),
            lsa_teams: extended.then(|| i32_at(40)),
            host_rma: extended.then(|| bool_at(44)),
            railed_gin_type: extended.then(|| GinType(i32_at(48))),
        })
    }
}
