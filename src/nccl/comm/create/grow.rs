//! Scalable init (`ncclCommInitRankScalable`, 2.23.4: several ids spread the bootstrap root's
//! load) and growing a communicator (`ncclCommGrow` with `ncclCommGetUniqueId`, 2.29.2).
//!
//! Both are made like an init: NCCL stores the new handle through the caller's out-pointer
//! before its work starts and again from its own thread when done (NCCL v2.30.7-1
//! src/init.cc:3321 `*newcomm = newComm`, `job->newcomm = newcomm` at :3351, stored by
//! ncclCommInitRankFunc at :1959-1962; scalable init goes through ncclCommInitRankDev,
//! :2695-2726), and the NEW communicator's async state reports progress (`job->comm = newComm`,
//! :3347; src/group.cc:728-731). So the out-pointer is a [`Slots`] slot owned by the
//! [`Pending`] creation, progress is polled on the new handle, and a creation given up is
//! aborted through the new communicator (its abort flag stops the job).

use std::sync::Arc;

use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::create::pending::Pending;
use crate::nccl::comm::create::{check_rank, new_child, predicted_nonblocking, CallArgs, CommOptions, Origin, Slots};
use crate::nccl::comm::grouped::refuse_in_group;
use crate::nccl::comm::shared::Allow;
use crate::nccl::comm::shared::Shared;
use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::error::Error;
use crate::nccl::types::unique_id::UniqueId;

impl Communicator {
    /// `ncclCommInitRankScalable` (2.23.4): joins a communicator of `nranks` as `rank`, its
    /// bootstrap spread over `ids` (one or more ids, the same ones in the same order on every
    /// rank; at most one per rank). Without a config NCCL uses its defaults. Within the
    /// creation timeout; refused inside an open group.
    pub fn init_rank_scalable(
        nccl: &Nccl,
        nranks: i32,
        rank: i32,
        ids: &[UniqueId],
        options: &CommOptions,
    ) -> Result<Self, Error> {
        let made = Self::begin_init_rank_scalable(nccl, nranks, rank, ids, options)?.wait()?;
        made.ok_or(Error::ImpossibleOutput { function: "ncclCommInitRankScalable", what: "no communicator" })
    }

    /// Starts a scalable init and returns at once; finish it with [`Pending::wait`].
    pub fn begin_init_rank_scalable(
        nccl: &Nccl,
        nranks: i32,
        rank: i32,
        ids: &[UniqueId],
        options: &CommOptions,
    ) -> Result<Pending<'static>, Error> {
        check_rank(nranks, rank)?;
        let n_ids = i32::try_from(ids.len()).map_err(|_| Error::TooMany { what: "unique ids", count: ids.len() })?;
        if n_ids < 1 || n_ids > nranks {
            return Err(Error::UniqueIdCount { count: ids.len(), nranks });
        }
        refuse_in_group("ncclCommInitRankScalable")?;
        if !nccl.has_sym(Sym::CommInitRankScalable) {
            return Err(nccl.unsupported(Sym::CommInitRankScalable));
        }
        let timeouts = options.timeouts.unwrap_or_default();
        let config_blocking = options.config.as_ref().and_then(|c| c.blocking_setting());
        let nonblocking = predicted_nonblocking(nccl.version(), config_blocking);
        let mut args = CallArgs { config: options.config.as_ref().map(|c| c.encode(nccl.version())).transpose()? };
        // NCCL reads the ids during the call (copied into its job: src/init.cc ncclCommInitRankDev);
        // the closure owns this copy for the whole call.
        let mut ids = ids.to_vec();
        Pending::start(
            nccl,
            Origin::new(Sym::CommInitRankScalable, "init_scalable", nranks, Some(rank)),
            Slots::new(1),
            vec![new_child(nccl, nonblocking, timeouts)],
            Vec::new(),
            timeouts,
            move |nccl, slots| {
                let (out, cfg, list) = (slots.out(0), args.config_ptr(), ids.as_mut_ptr());
                let f = &nccl.functions().comm_init_rank_scalable;
                // SAFETY: `out` an owned slot (Slots); `list` points at `n_ids` ids and `cfg` is
                // null or a config buffer, both owned by this closure for the whole call.
                unsafe { f.call(nccl, (out, nranks, rank, n_ids, list, cfg)) }
            },
        )
    }

    /// `ncclCommGetUniqueId` (2.29.2): the id a [`grow`](Self::grow) uses, made by the grow's
    /// root (one existing rank) and sent by NCCL to the communicator's boundary ranks. Give it
    /// to the new ranks ([`Communicator::join_grow`]); one id per grow, used once.
    pub fn grow_unique_id(&self) -> Result<UniqueId, Error> {
        let nccl = &self.shared.nccl;
        let mut id = UniqueId::from_bytes(&[0u8; crate::nccl::types::unique_id::UNIQUE_ID_BYTES])?;
        let (comm, out) = (self.shared.handle(), &mut id as *mut UniqueId);
        // SAFETY: this communicator's handle under its call lock; `out` a valid `ncclUniqueId*`.
        let r = unsafe { self.shared.call(&nccl.functions().comm_get_unique_id, (comm, out), Allow::Ready) }?;
        if !r.is_success() {
            return Err(nccl.failure(Sym::CommGetUniqueId, r, comm));
        }
        Ok(id)
    }

    /// `ncclCommGrow` (2.29.2) on an existing rank: a new communicator of `nranks` (more than
    /// now) keeping this rank's number. The grow's root passes the id it made with
    /// [`grow_unique_id`](Self::grow_unique_id); the other existing ranks pass `None`. Without
    /// a config the new communicator copies this one's (src/init.cc copyCommConfig); it
    /// inherits this one's timeouts. This communicator stays usable.
    pub fn grow(&self, nranks: i32, id: Option<&UniqueId>, options: &CommOptions) -> Result<Communicator, Error> {
        let made = self.start_grow(nranks, id, options)?.wait()?;
        made.ok_or(Error::ImpossibleOutput { function: "ncclCommGrow", what: "no communicator" })
    }

    /// Starts a grow and returns at once; this communicator stays borrowed until it finishes.
    pub fn begin_grow(
        &mut self,
        nranks: i32,
        id: Option<&UniqueId>,
        options: &CommOptions,
    ) -> Result<Pending<'_>, Error> {
        self.start_grow(nranks, id, options)
    }

    fn start_grow(&self, nranks: i32, id: Option<&UniqueId>, options: &CommOptions) -> Result<Pending<'_>, Error> {
        refuse_in_group("ncclCommGrow")?;
        self.shared.enter("ncclCommGrow", Allow::Ready).map(drop)?;
        let nccl = self.shared.nccl.clone();
        if !nccl.has_sym(Sym::CommGrow) {
            return Err(nccl.unsupported(Sym::CommGrow));
        }
        let current = self.count()?;
        if nranks <= current {
            return Err(Error::GrowNotLarger { nranks, current });
        }
        let (child, timeouts, mut args) = self.child_of(options)?;
        let parent = Arc::clone(&self.shared);
        let id = id.cloned();
        let origin = Origin::new(Sym::CommGrow, "grow", nranks, self.shared.info.get().map(|i| i.rank));
        Pending::start(&nccl, origin, Slots::new(1), vec![child], Vec::new(), timeouts, move |nccl, slots| {
            let mut guard = parent.enter("ncclCommGrow", Allow::Ready)?;
            let (comm, out, cfg) = (parent.handle(), slots.out(0), args.config_ptr());
            let id_ptr = id.as_ref().map_or(core::ptr::null(), |i| i as *const UniqueId);
            // SAFETY: the existing communicator's handle under its call lock, rank -1 as NCCL
            // wants from existing ranks; `out` an owned slot; `id_ptr` null or an id and `cfg`
            // null or a config buffer, both owned by this closure for the whole call.
            let r = unsafe { nccl.functions().comm_grow.call(nccl, (comm, nranks, id_ptr, -1, out, cfg)) }?;
            guard.note(Sym::CommGrow, r);
            Ok(r)
        })
    }

    /// `ncclCommGrow` (2.29.2) on a NEW rank: joins the grown communicator of `nranks` as
    /// `rank` (a rank the existing ones do not hold) with the id the grow's root made. Without
    /// a config NCCL uses its defaults.
    pub fn join_grow(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        options: &CommOptions,
    ) -> Result<Communicator, Error> {
        let made = Self::begin_join_grow(nccl, nranks, id, rank, options)?.wait()?;
        made.ok_or(Error::ImpossibleOutput { function: "ncclCommGrow", what: "no communicator" })
    }

    /// Starts joining a grow and returns at once.
    pub fn begin_join_grow(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        options: &CommOptions,
    ) -> Result<Pending<'static>, Error> {
        check_rank(nranks, rank)?;
        refuse_in_group("ncclCommGrow")?;
        if !nccl.has_sym(Sym::CommGrow) {
            return Err(nccl.unsupported(Sym::CommGrow));
        }
        let timeouts = options.timeouts.unwrap_or_default();
        let config_blocking = options.config.as_ref().and_then(|c| c.blocking_setting());
        let nonblocking = predicted_nonblocking(nccl.version(), config_blocking);
        let mut args = CallArgs { config: options.config.as_ref().map(|c| c.encode(nccl.version())).transpose()? };
        let id = id.clone();
        let child: Arc<Shared> = new_child(nccl, nonblocking, timeouts);
        let origin = Origin::new(Sym::CommGrow, "join_grow", nranks, Some(rank));
        Pending::start(nccl, origin, Slots::new(1), vec![child], Vec::new(), timeouts, move |nccl, slots| {
            let (out, cfg, id_ptr) = (slots.out(0), args.config_ptr(), &id as *const UniqueId);
            // SAFETY: no communicator (a new rank); `id_ptr` and `cfg` owned by this closure for
            // the whole call; `out` an owned slot.
            unsafe { nccl.functions().comm_grow.call(nccl, (core::ptr::null_mut(), nranks, id_ptr, rank, out, cfg)) }
        })
    }
}
