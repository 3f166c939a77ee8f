//! `ncclTeam`: a set of ranks of a communicator as the device API sees it (2.28.3), and the
//! host helpers that return one BY VALUE or take one by value (`ncclTeamWorld`, `ncclTeamLsa`,
//! `ncclTeamRail`, `ncclTeamRankToWorld`, `ncclTeamRankToLsa`; `ncclTeamCft`,
//! `ncclTeamCftMultimem` since 2.31.2).
//!
//! `struct ncclTeam { int nRanks, rank, stride; }` is 12 bytes, alignment 4: returned in rax:rdx
//! on x86-64 (SysV: two eightbytes of class INTEGER, the second holding `stride` in its low
//! half) and in x0:x1 on AArch64 (a composite of at most 16 bytes), and passed by value in two
//! registers the same way. The typed bindings carry it as a [`Team`] (an aggregate [`CArg`] and
//! [`CRet`]); the call core places it, as the C compiler would.

use crate::engine::typed::{CArg, CArgs, CRet, ValueAt};
use crate::ctype::types::{Aggregate, Type};
use crate::nccl::communicator::Communicator;
use crate::nccl::error::Error;
use crate::nccl::functions::Function;
use crate::nccl::library::Nccl;
use crate::nccl::state::Allow;

/// `ncclTeam_t`: `n_ranks` ranks, this rank's index among them, and the distance between
/// consecutive members in the world's rank numbering.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Team {
    /// `nRanks`.
    pub n_ranks: i32,
    /// `rank`: this rank's index in the team.
    pub rank: i32,
    /// `stride`.
    pub stride: i32,
}

/// The C type of `ncclTeam`: three `int`s.
pub(crate) fn team_type() -> Type {
    Type::Aggregate(
        Aggregate::builder().field(Type::I32).field(Type::I32).field(Type::I32).build().expect("a 12-byte struct"),
    )
}

static_assertions::const_assert_eq!(core::mem::size_of::<Team>(), 12);
static_assertions::const_assert_eq!(core::mem::align_of::<Team>(), 4);

// SAFETY: `Team` is `#[repr(C)]` of three i32 at 0, 4 and 8: `team_type()` exactly. Its word is
// its address (the default), as for every aggregate.
unsafe impl CArg for Team {
    const AGGREGATE: bool = true;
    fn c_type() -> Type {
        team_type()
    }
}

// SAFETY: as above; every bit pattern is a valid `Team`, so the typed layer may store any
// returned bytes into one.
unsafe impl CRet for Team {
    fn c_type() -> Option<Type> {
        Some(team_type())
    }
}

/// `ncclCftTeamMode_t` (2.31.2), for [`Communicator::team_cft`]: an open newtype.
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

impl Communicator {
    /// Calls a team helper on this communicator's handle, under its call lock (the helpers
    /// return their answer, not an `ncclResult_t`).
    ///
    /// # Safety
    ///
    /// NCCL's contract for `function` holds for the arguments `args` makes.
    unsafe fn team_call<A: CArgs, R: CRet>(
        &self,
        function: &Function<A, R>,
        args: impl FnOnce(*mut core::ffi::c_void) -> A,
    ) -> Result<R, Error> {
        let _guard = self.shared.enter(Nccl::name(function.sym()), Allow::Ready)?;
        // SAFETY: the caller's contract; the handle is live while the call lock is held.
        unsafe { function.call(&self.shared.nccl, args(self.shared.handle())) }
    }

    /// `ncclTeamWorld` (2.28.3): every rank, this one at its world rank, stride 1.
    pub fn team_world(&self) -> Result<Team, Error> {
        // SAFETY: this communicator's live handle.
        unsafe { self.team_call(&self.shared.nccl.functions().team_world, |comm| (comm,)) }
    }

    /// `ncclTeamLsa` (2.28.3): the ranks this one reaches by load/store (its NVLink domain).
    /// NCCL sets up its device runtime on the first call; if that fails it returns an empty
    /// team (all zero) and reports the error on the next call that needs the runtime.
    pub fn team_lsa(&self) -> Result<Team, Error> {
        // SAFETY: this communicator's live handle.
        unsafe { self.team_call(&self.shared.nccl.functions().team_lsa, |comm| (comm,)) }
    }

    /// `ncclTeamRail` (2.28.3): the ranks at this one's position in every load/store domain.
    pub fn team_rail(&self) -> Result<Team, Error> {
        // SAFETY: this communicator's live handle.
        unsafe { self.team_call(&self.shared.nccl.functions().team_rail, |comm| (comm,)) }
    }

    /// `ncclTeamCft` (2.31.2) in `mode`.
    pub fn team_cft(&self, mode: CftTeamMode) -> Result<Team, Error> {
        // SAFETY: this communicator's live handle; any mode value (NCCL checks it).
        unsafe { self.team_call(&self.shared.nccl.functions().team_cft, |comm| (comm, mode)) }
    }

    /// `ncclTeamCftMultimem` (2.31.2).
    pub fn team_cft_multimem(&self) -> Result<Team, Error> {
        // SAFETY: this communicator's live handle.
        unsafe { self.team_call(&self.shared.nccl.functions().team_cft_multimem, |comm| (comm,)) }
    }

    /// `ncclTeamRankToWorld` (2.28.3): the world rank of `team`'s member `rank` (NCCL computes
    /// `comm.rank + (rank - team.rank) * team.stride`, trusting both).
    pub fn team_rank_to_world(&self, team: &Team, rank: i32) -> Result<i32, Error> {
        let team = ValueAt::new(team);
        // SAFETY: this communicator's live handle; the team is read during the call.
        unsafe { self.team_call(&self.shared.nccl.functions().team_rank_to_world, |comm| (comm, team, rank)) }
    }

    /// `ncclTeamRankToLsa` (2.28.3): the load/store-domain rank of `team`'s member `rank` (-1
    /// where NCCL could not set up its device runtime).
    pub fn team_rank_to_lsa(&self, team: &Team, rank: i32) -> Result<i32, Error> {
        let team = ValueAt::new(team);
        // SAFETY: this communicator's live handle; the team is read during the call.
        unsafe { self.team_call(&self.shared.nccl.functions().team_rank_to_lsa, |comm| (comm, team, rank)) }
    }
}

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
}
