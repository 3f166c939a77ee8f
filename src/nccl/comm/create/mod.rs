//! Creating communicators, memory-safe and bounded in both NCCL modes: init (rank, config,
//! all: `init`), split, split_all and shrink (`split`), scalable init and grow (`grow`), all
//! finished through one [`Pending`] creation (`pending`).
//!
//! NCCL may write a new handle through the caller's out-pointer after the call returned: a
//! non-blocking split or shrink stores the child from NCCL's own thread when it is done (NCCL
//! v2.30.7-1 src/init.cc:1959-1962, job->newcomm kept at :3139), and before 2.18 a non-blocking
//! init reads and rewrites `*newcomm` late (v2.17.1-1 src/init.cc:1091-1092, 1272-1273). So every
//! out-pointer given to NCCL points into [`Slots`], shared memory owned by the [`Pending`]
//! creation (and by the thread running the call), released only once NCCL is done with it: the
//! creation completed, failed, or NCCL's work was joined by an abort.
//!
//! Each creating call runs on its own thread ([`crate::nccl::bounded`]) with the caller's CUDA
//! context current. A blocking call returns when creation is done; a non-blocking one returns
//! `ncclInProgress` at once, and completion is polled through `ncclCommGetAsyncError` on the
//! new communicator (init) or on the parent (split and shrink: NCCL reports a child's creation
//! in its parent's state, src/group.cc:728-731). Whichever mode NCCL actually applies — the
//! config, or `NCCL_COMM_BLOCKING` in the environment — both paths are safe; the mode is never
//! assumed.

mod creation;
mod grow;
mod init;
mod pending;
mod split;

use core::ffi::c_void;
use core::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::nccl::comm::shared::Shared;
use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::config::{Config, ConfigBuffer};
use crate::nccl::types::error::Error;
use crate::nccl::types::state::Timeouts;
use crate::nccl::types::version::Version;

pub use pending::Pending;
pub use split::ShrinkMode;

/// How a communicator is made: its config and its timeouts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommOptions {
    pub(super) config: Option<Config>,
    pub(super) timeouts: Option<Timeouts>,
}

impl CommOptions {
    /// NCCL's defaults; the default [`Timeouts`] (a split or shrink inherits its parent's).
    pub fn new() -> Self {
        Self::default()
    }

    /// An `ncclConfig_t` (written for the loaded library). Without one, init uses NCCL's
    /// defaults and a split or shrink copies its parent's config.
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// The new communicator's timeouts; creation itself waits at most `timeouts.create`.
    pub fn timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = Some(timeouts);
        self
    }

    /// Shorthand: how long creation may take (`None`: no limit), other timeouts as they are.
    pub fn create_timeout(mut self, limit: Option<Duration>) -> Self {
        let mut t = self.timeouts.unwrap_or_default();
        t.create = limit;
        self.timeouts = Some(t);
        self
    }
}

/// Memory NCCL writes new handles into, owned until NCCL is done with it. `AtomicPtr<T>` has
/// the representation of `*mut T`, so a slot is a valid `ncclComm_t*`.
pub(crate) struct Slots(Box<[AtomicPtr<c_void>]>);

impl Slots {
    pub(super) fn new(n: usize) -> Arc<Self> {
        Arc::new(Slots((0..n).map(|_| AtomicPtr::new(ptr::null_mut())).collect()))
    }

    /// The out-pointer for handle `i` (`ncclComm_t*`).
    pub(super) fn out(&self, i: usize) -> *mut *mut c_void {
        self.0[i].as_ptr()
    }

    /// Handle `i` as NCCL stored it (it stores with release ordering).
    pub(super) fn get(&self, i: usize) -> *mut c_void {
        self.0[i].load(Ordering::Acquire)
    }
}

/// The mode NCCL will give a new communicator: `NCCL_COMM_BLOCKING=0|1` in the environment
/// overrides the config (NCCL v2.30.7-1 src/init.cc:1998-1999, read since 2.14), whose unset
/// `blocking` means blocking. Before 2.14 there is no non-blocking mode.
pub(crate) fn predicted_nonblocking(version: Version, config_blocking: Option<bool>) -> bool {
    if version < Version::new(2, 14, 0) {
        return false;
    }
    match std::env::var("NCCL_COMM_BLOCKING").ok().and_then(|v| v.trim().parse::<i64>().ok()) {
        Some(0) => true,
        Some(1) => false,
        _ => config_blocking == Some(false),
    }
}

/// What a creation is, for its `Debug` form and its events: the NCCL function, the facade's
/// (`init`, `split`, ...) and the ranks as known when it starts (an init's own; the parent's for a split,
/// shrink or grow, whose new count is NCCL's to tell; the devices of `init_all`, which has no one
/// rank).
#[derive(Clone, Copy, Debug)]
pub(super) struct Origin {
    pub(super) op: Sym,
    pub(super) function: &'static str,
    pub(super) nranks: i32,
    pub(super) rank: Option<i32>,
}

impl Origin {
    pub(super) fn new(op: Sym, function: &'static str, nranks: i32, rank: Option<i32>) -> Self {
        Origin { op, function, nranks, rank }
    }

    /// A creation from `parent`: its count and rank (none for a parent not yet made).
    pub(super) fn from_parent(op: Sym, function: &'static str, parent: &Shared) -> Self {
        let info = parent.info.get();
        Origin { op, function, nranks: info.map_or(0, |i| i.nranks), rank: info.map(|i| i.rank) }
    }
}

/// The arguments the creating thread owns while NCCL may read them.
pub(super) struct CallArgs {
    pub(super) config: Option<ConfigBuffer>,
}

impl CallArgs {
    pub(super) fn config_ptr(&mut self) -> *mut c_void {
        self.config.as_mut().map_or(ptr::null_mut(), ConfigBuffer::as_ptr)
    }
}

pub(super) fn check_rank(nranks: i32, rank: i32) -> Result<(), Error> {
    if nranks < 1 || rank < 0 || rank >= nranks {
        return Err(Error::RankOutOfRange { rank, nranks });
    }
    Ok(())
}

/// A new communicator's shared state, in state `Creating`, on the calling thread's context.
pub(super) fn new_child(nccl: &Nccl, nonblocking: bool, timeouts: Timeouts) -> Arc<Shared> {
    let context = nccl.cuda_if_any().and_then(|d| d.current_context().ok().flatten());
    Arc::new(Shared::new(nccl.clone(), nonblocking, context, timeouts))
}
