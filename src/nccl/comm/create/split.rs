//! Children of a communicator: `ncclCommSplit` (one rank, or several in one group with
//! [`Nccl::split_all`]) and `ncclCommShrink`.

use core::ptr;
use std::sync::Arc;

use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::create::pending::Pending;
use crate::nccl::comm::create::{predicted_nonblocking, CallArgs, CommOptions, Origin, Slots};
use crate::nccl::comm::grouped::refuse_in_group;
use crate::nccl::comm::shared::Allow;
use crate::nccl::comm::shared::Shared;
use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::config::Config;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::nccl::types::state::{CommState, Timeouts};

/// `ncclCommShrink`'s flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShrinkMode {
    /// `NCCL_SHRINK_DEFAULT`: the parent is healthy; the child may share its resources.
    Default,
    /// `NCCL_SHRINK_ABORT`: the parent failed (a peer died); its in-flight work is aborted first.
    Abort,
}

impl ShrinkMode {
    fn flags(self) -> i32 {
        match self {
            ShrinkMode::Default => 0,
            ShrinkMode::Abort => 1,
        }
    }
}

impl Communicator {
    /// `ncclCommSplit` (2.18). `color` -1 (`NCCL_SPLIT_NOCOLOR`) leaves this rank out: `None`.
    /// Without a config the child copies the parent's; it inherits the parent's timeouts.
    /// Refused inside an open group (use [`Nccl::split_all`]).
    pub fn split(&self, color: i32, key: i32, config: Option<&Config>) -> Result<Option<Communicator>, Error> {
        let mut options = CommOptions::new().timeouts(self.timeouts());
        if let Some(c) = config {
            options = options.config(c.clone());
        }
        self.start_split(color, key, &options)?.wait()
    }

    /// `ncclCommSplit` with options.
    pub fn split_with(&self, color: i32, key: i32, options: &CommOptions) -> Result<Option<Communicator>, Error> {
        self.start_split(color, key, options)?.wait()
    }

    /// Starts a split and returns at once; the parent stays borrowed until it finishes.
    pub fn begin_split(&mut self, color: i32, key: i32, options: &CommOptions) -> Result<Pending<'_>, Error> {
        self.start_split(color, key, options)
    }

    fn start_split(&self, color: i32, key: i32, options: &CommOptions) -> Result<Pending<'_>, Error> {
        refuse_in_group("ncclCommSplit")?;
        self.shared.enter("ncclCommSplit", Allow::Ready).map(drop)?;
        let nccl = self.shared.nccl.clone();
        if !nccl.has_sym(Sym::CommSplit) {
            return Err(nccl.unsupported(Sym::CommSplit));
        }
        let (child, timeouts, mut args) = self.child_of(options)?;
        let parent = Arc::clone(&self.shared);
        Pending::start(
            &nccl,
            Origin::from_parent(Sym::CommSplit, "split", &parent),
            Slots::new(1),
            vec![child],
            vec![Arc::clone(&parent)],
            timeouts,
            move |nccl, slots| {
                let mut guard = parent.enter("ncclCommSplit", Allow::Ready)?;
                let (comm, out, cfg) = (parent.handle(), slots.out(0), args.config_ptr());
                // SAFETY: the parent's handle under its call lock; `out` an owned slot; `cfg`
                // null or a config buffer kept alive with `args`.
                let r = unsafe { nccl.functions().comm_split.call(nccl, (comm, color, key, out, cfg)) }?;
                guard.note(Sym::CommSplit, r);
                Ok(r)
            },
        )
    }

    /// `ncclCommShrink` (2.27): a new communicator without the ranks in `exclude`, which is
    /// copied (NCCL sorts the list it is given in place). [`ShrinkMode::Abort`] first aborts
    /// the parent's in-flight work: the way to continue after a peer died. Allowed on a failed
    /// or revoked parent; `Abort` is refused on a borrowed one ([`Error::NotOwned`]).
    pub fn shrink(&self, exclude: &[i32], config: Option<&Config>, mode: ShrinkMode) -> Result<Communicator, Error> {
        let mut options = CommOptions::new().timeouts(self.timeouts());
        if let Some(c) = config {
            options = options.config(c.clone());
        }
        self.shrink_with(exclude, mode, &options)
    }

    /// `ncclCommShrink` with options.
    pub fn shrink_with(&self, exclude: &[i32], mode: ShrinkMode, options: &CommOptions) -> Result<Communicator, Error> {
        let made = self.start_shrink(exclude, mode, options)?.wait()?;
        made.ok_or(Error::ImpossibleOutput { function: "ncclCommShrink", what: "no communicator" })
    }

    /// Starts a shrink and returns at once; the parent stays borrowed until it finishes.
    pub fn begin_shrink(
        &mut self,
        exclude: &[i32],
        mode: ShrinkMode,
        options: &CommOptions,
    ) -> Result<Pending<'_>, Error> {
        self.start_shrink(exclude, mode, options)
    }

    fn start_shrink(&self, exclude: &[i32], mode: ShrinkMode, options: &CommOptions) -> Result<Pending<'_>, Error> {
        refuse_in_group("ncclCommShrink")?;
        if mode == ShrinkMode::Abort {
            // It aborts the parent's in-flight work: the owner's to decide for a borrowed one.
            self.shared.refuse_borrowed("ncclCommShrink (ShrinkMode::Abort)")?;
        }
        let count = i32::try_from(exclude.len())
            .map_err(|_| Error::TooMany { what: "ranks to exclude", count: exclude.len() })?;
        if count == 0 {
            return Err(Error::Empty { operation: "ncclCommShrink", what: "rank to exclude" });
        }
        self.shared.enter("ncclCommShrink", Allow::Recovery).map(drop)?;
        let nccl = self.shared.nccl.clone();
        if !nccl.has_sym(Sym::CommShrink) {
            return Err(nccl.unsupported(Sym::CommShrink));
        }
        let (child, timeouts, mut args) = self.child_of(options)?;
        let parent = Arc::clone(&self.shared);
        // NCCL sorts this copy in place (src/init.cc:3088); the caller's slice is never written.
        let mut list = exclude.to_vec();
        let flags = mode.flags();
        if let Some(w) = self.shared.watchdog.get() {
            w.stop();
        }
        Pending::start(
            &nccl,
            Origin::from_parent(Sym::CommShrink, "shrink", &parent),
            Slots::new(1),
            vec![child],
            vec![Arc::clone(&parent)],
            timeouts,
            move |nccl, slots| {
                let mut guard = parent.enter("ncclCommShrink", Allow::Recovery)?;
                let (comm, out, cfg, ranks) = (parent.handle(), slots.out(0), args.config_ptr(), list.as_mut_ptr());
                let shrink = &nccl.functions().comm_shrink;
                // SAFETY: as for a split; `ranks` is `count` ints this closure owns (NCCL sorts
                // them in place).
                let r = unsafe { shrink.call(nccl, (comm, ranks, count, out, cfg, flags)) }?;
                guard.note(Sym::CommShrink, r);
                if r.is_success() || r == NcclResult::IN_PROGRESS {
                    // A shrink with NCCL_SHRINK_ABORT leaves the parent's kernels aborted.
                    if flags != 0 {
                        guard.set(CommState::Revoked);
                    }
                }
                Ok(r)
            },
        )
    }

    /// A child's shared state, timeouts and encoded config for split or shrink.
    pub(super) fn child_of(&self, options: &CommOptions) -> Result<(Arc<Shared>, Timeouts, CallArgs), Error> {
        let nccl = &self.shared.nccl;
        let timeouts = options.timeouts.unwrap_or_else(|| self.timeouts());
        let nonblocking = match &options.config {
            Some(c) => predicted_nonblocking(nccl.version(), c.blocking_setting()),
            None => self.shared.is_nonblocking(),
        };
        let args = CallArgs { config: options.config.as_ref().map(|c| c.encode(nccl.version())).transpose()? };
        let child = Arc::new(Shared::new(nccl.clone(), nonblocking, self.shared.context, timeouts));
        Ok((child, timeouts, args))
    }
}

impl Nccl {
    /// `ncclCommSplit` for several ranks driven by this thread, in one group: `parts` holds
    /// (parent, color, key) per rank. NCCL fills the children at `ncclGroupEnd` (or later, from
    /// its thread, in non-blocking mode) into memory owned here until it is done. A child is
    /// `None` for color -1. Within the parents' creation timeout.
    pub fn split_all(
        &self,
        parts: &[(&Communicator, i32, i32)],
        config: Option<&Config>,
    ) -> Result<Vec<Option<Communicator>>, Error> {
        refuse_in_group("ncclCommSplit")?;
        let Some((first, _, _)) = parts.first() else { return Ok(Vec::new()) };
        if parts.iter().any(|(p, _, _)| !p.shared.nccl.same(self)) {
            return Err(Error::ForeignCommunicator { operation: "split_all" });
        }
        let mut options = CommOptions::new().timeouts(first.timeouts());
        if let Some(c) = config {
            options = options.config(c.clone());
        }
        let mut children = Vec::with_capacity(parts.len());
        let mut configs = Vec::with_capacity(parts.len());
        for (parent, _, _) in parts {
            parent.shared.enter("ncclCommSplit", Allow::Ready).map(drop)?;
            let (child, _, args) = parent.child_of(&options)?;
            children.push(child);
            configs.push(args);
        }
        let parents: Vec<Arc<Shared>> = parts.iter().map(|(p, _, _)| Arc::clone(&p.shared)).collect();
        let colors: Vec<(i32, i32)> = parts.iter().map(|(_, c, k)| (*c, *k)).collect();
        let theirs = parents.clone();
        let mut pending = Pending::start(
            self,
            Origin::from_parent(Sym::CommSplit, "split_all", &first.shared),
            Slots::new(parts.len()),
            children,
            parents,
            first.timeouts(),
            move |nccl, slots| {
                // SAFETY: `ncclGroupStart(void)`.
                unsafe { nccl.check(&nccl.functions().group_start, (), ptr::null_mut()) }?;
                let mut guards = Vec::with_capacity(theirs.len());
                let mut first_error = None;
                for (i, (parent, (color, key))) in theirs.iter().zip(&colors).enumerate() {
                    let mut guard = match parent.enter("ncclCommSplit", Allow::Ready) {
                        Ok(g) => g,
                        Err(e) => {
                            first_error.get_or_insert(e);
                            continue;
                        }
                    };
                    let (comm, out, cfg) = (parent.handle(), slots.out(i), configs[i].config_ptr());
                    let split = &nccl.functions().comm_split;
                    // SAFETY: as in `start_split`, for parent `i`.
                    match unsafe { split.call(nccl, (comm, *color, *key, out, cfg)) } {
                        Ok(r) => guard.note(Sym::CommSplit, r),
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                    guards.push(guard);
                }
                // SAFETY: `ncclGroupEnd(void)`, on the thread that started the group.
                let end = unsafe { nccl.functions().group_end.call(nccl, ()) };
                drop(guards);
                match first_error {
                    Some(e) => Err(e),
                    None => end,
                }
            },
        )?;
        pending.wait_all()
    }
}
