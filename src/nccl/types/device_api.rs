//! The device API's C structs that the host passes to NCCL or gets back by value: `ncclTeam_t`
//! (2.28.3) and `ncclCftTeamMode_t` (2.31.2), `ncclMultimemHandle_t` and `ncclWaitSignalDesc_t`
//! (2.29.2). The declaration table (`nccl::library::functions`) names them in its prototypes;
//! the calls that use them are `nccl::host_api`.
//!
//! `struct ncclTeam { int nRanks, rank, stride; }` is 12 bytes, alignment 4: returned in rax:rdx
//! on x86-64 (SysV: two eightbytes of class INTEGER, the second holding `stride` in its low
//! half) and in x0:x1 on AArch64 (a composite of at most 16 bytes), and passed by value in two
//! registers the same way. The typed bindings carry it as a [`Team`] (an aggregate [`CArg`] and
//! [`CRet`](crate::CRet)); the call core places it, as the C compiler would.
//!
//! Each struct is declared once with [`c_struct!`](crate::c_struct), which gives it its C type
//! and the traits that pass it by value, return it and hand it to a typed callback.

use core::ffi::c_void;

use crate::ctype::types::Type;
use crate::engine::typed::CArg;

crate::c_struct! {
    /// `ncclTeam_t`: `n_ranks` ranks, this rank's index among them, and the distance between
    /// consecutive members in the world's rank numbering.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct Team {
        /// `nRanks`.
        pub n_ranks: i32,
        /// `rank`: this rank's index in the team.
        pub rank: i32,
        /// `stride`.
        pub stride: i32,
    }
}

/// The C type of `ncclTeam`: three `int`s.
#[cfg(test)]
pub(crate) fn team_type() -> Type {
    Team::c_type()
}

static_assertions::const_assert_eq!(core::mem::size_of::<Team>(), 12);
static_assertions::const_assert_eq!(core::mem::align_of::<Team>(), 4);

/// `ncclCftTeamMode_t` (2.31.2), for
/// [`Communicator::team_cft`](crate::nccl::Communicator::team_cft): an open newtype.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CftTeamMode(pub i32);

impl CftTeamMode {
    /// `NCCL_CFT_TEAM_FLAT`, the default.
    pub const FLAT: Self = Self(0);
    /// `NCCL_CFT_TEAM_HIER_MULTIMEM`.
    pub const HIER_MULTIMEM: Self = Self(1);
    /// `NCCL_CFT_TEAM_HIER_LSA`.
    pub const HIER_LSA: Self = Self(2);
}

// SAFETY: a transparent i32 (a C enum), passed as one.
unsafe impl CArg for CftTeamMode {
    fn c_type() -> Type {
        Type::I32
    }
    #[inline(always)]
    fn word(&self) -> u64 {
        self.0.word()
    }
}

crate::c_struct! {
    /// `ncclMultimemHandle_t`: `{ void *mcBasePtr; }`, passed BY VALUE to
    /// `ncclGetMultimemDevicePointer`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct MultimemHandle {
        /// `mcBasePtr`: the multicast mapping's base.
        pub mc_base_ptr: *mut c_void,
    }
}

crate::c_struct! {
    /// `ncclWaitSignalDesc_t`: wait for `op_count` signals from `peer` on signal `sig_idx` of
    /// context `ctx`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct WaitSignalDesc {
        /// `opCnt`.
        pub op_count: i32,
        /// `peer`.
        pub peer: i32,
        /// `sigIdx`.
        pub sig_idx: i32,
        /// `ctx`.
        pub ctx: i32,
    }
}

static_assertions::const_assert_eq!(core::mem::size_of::<WaitSignalDesc>(), 16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_is_three_ints() {
        let Type::Aggregate(a) = team_type() else { panic!("an aggregate") };
        assert_eq!((a.size(), a.align()), (12, 4));
        assert_eq!(a.scalars(), vec![(0, Type::I32), (4, Type::I32), (8, Type::I32)]);
        assert_eq!(core::mem::offset_of!(Team, stride), 8);
    }

    /// Every struct's C type, checked against its Rust layout by `c_struct!` when first made.
    #[test]
    fn the_c_types_match_the_rust_layouts() {
        use crate::ctype::types::Aggregate;
        let agg = |b: crate::ctype::types::AggregateBuilder| Type::Aggregate(b.build().unwrap());
        let ints = |n| (0..n).fold(Aggregate::builder(), |b, _| b.field(Type::I32));
        assert_eq!(Team::c_type(), agg(ints(3)));
        assert_eq!(MultimemHandle::c_type(), agg(Aggregate::builder().field(Type::Pointer)));
        assert_eq!(WaitSignalDesc::c_type(), agg(ints(4)));
        assert_eq!(<Team as crate::CRet>::c_type(), Some(team_type()));
    }
}
