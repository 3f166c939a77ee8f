//! `ncclGroupSimulateEnd` (2.22.3): ends a group without launching it and returns NCCL's
//! estimate of how long the group's work would take.
//!
//! `ncclSimInfo_t` is versioned like `ncclConfig_t`: `size`, `magic` (0x74685283, not the
//! config's), `version`, then the fields. NCCL copies at most its own `sizeof` of the caller's
//! struct, refuses a wrong magic with `ncclInvalidArgument`, and copies the result back over the
//! caller's `size` bytes (NCCL v2.30.7-1 src/group.cc:792-800, :864). The struct has not grown
//! since 2.22 (`ncclSimInfo_v22200` in 2.32.3's nccl.h), so one layout serves every version.

use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::ops::group::Group;
use crate::nccl::types::error::Error;

/// `NCCL_SIM_INFO_INITIALIZER`'s magic.
pub const SIM_INFO_MAGIC: u32 = 0x7468_5283;

/// `ncclSimInfo_t` as nccl.h lays it out (`ncclSimInfo_v22200`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct RawSimInfo {
    size: usize,
    magic: u32,
    version: u32,
    estimated_time: f32,
    /// The tail padding, zeroed (NCCL copies `size` bytes: no uninitialised byte crosses).
    padding: u32,
}

static_assertions::const_assert_eq!(core::mem::size_of::<RawSimInfo>(), 24);
static_assertions::const_assert_eq!(core::mem::offset_of!(RawSimInfo, estimated_time), 16);

/// What a simulated group end reports.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct SimInfo {
    /// NCCL's estimate of the group's time in microseconds (`estimatedTime`); `None` where NCCL
    /// left it at `NCCL_UNDEF_FLOAT` (-1.0: nothing to estimate, e.g. an empty group).
    pub estimated_time_us: Option<f32>,
}

impl Group<'_> {
    /// `ncclGroupSimulateEnd` (2.22.3): ends this group like [`end`](Group::end) but launches
    /// nothing; NCCL plans the queued operations and reports its time estimate.
    /// Where the library lacks it, the group stays open (and is ended by `ncclGroupEnd` when
    /// dropped) and the error is [`Error::Unsupported`].
    pub fn simulate_end(mut self) -> Result<SimInfo, Error> {
        if !self.library().has_sym(Sym::GroupSimulateEnd) {
            return Err(self.library().unsupported(Sym::GroupSimulateEnd));
        }
        let nccl: &Nccl = self.close_simulated();
        let mut raw = RawSimInfo {
            size: core::mem::size_of::<RawSimInfo>(),
            magic: SIM_INFO_MAGIC,
            version: nccl.version().code() as u32,
            estimated_time: -1.0,
            padding: 0,
        };
        let ptr: *mut RawSimInfo = &mut raw;
        // SAFETY: a valid `ncclSimInfo_t*` (the header's layout, initialised as the header's
        // initializer does), on the thread that opened the group.
        let r = unsafe { nccl.functions().group_simulate_end.call(nccl, (ptr.cast(),)) }?;
        if !r.is_success() {
            return Err(nccl.failure(Sym::GroupSimulateEnd, r, core::ptr::null_mut()));
        }
        let t = raw.estimated_time;
        Ok(SimInfo { estimated_time_us: (t >= 0.0).then_some(t) })
    }
}
