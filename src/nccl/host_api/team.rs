//! `ncclTeam`: a set of ranks of a communicator as the device API sees it (2.28.3), and the
//! host helpers that return one BY VALUE or take one by value (`ncclTeamWorld`, `ncclTeamLsa`,
//! `ncclTeamRail`, `ncclTeamRankToWorld`, `ncclTeamRankToLsa`; `ncclTeamCft`,
//! `ncclTeamCftMultimem` since 2.31.2).
//! The team and its C layout are `nccl::types::device_api`.

use crate::engine::typed::{CArgs, CRet, ValueAt};
use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::shared::Allow;
use crate::nccl::library::functions::Function;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::device_api::{CftTeamMode, Team};
use crate::nccl::types::error::Error;

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
