//! Creating communicators, memory-safe and bounded in both NCCL modes: init (rank, config,
//! all), split, split_all and shrink.
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

use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::cuda::Backoff;
use crate::nccl::bounded::{spawn_bounded, BoundedCall};
use crate::nccl::communicator::{AbortHandle, Communicator};
use crate::nccl::config::{Config, ConfigBuffer};
use crate::nccl::error::Error;
use crate::nccl::functions::Function;
use crate::nccl::functions::Sym;
use crate::nccl::group::refuse_in_group;
use crate::nccl::library::Nccl;
use crate::nccl::shared::Shared;
use crate::nccl::state::{Allow, Cause, CommState, Deadline, RankInfo, Timeouts};
use crate::nccl::types::{NcclResult, UniqueId};
use crate::nccl::version::Version;
use crate::ValueAt;

/// How a communicator is made: its config and its timeouts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommOptions {
    config: Option<Config>,
    timeouts: Option<Timeouts>,
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

/// Memory NCCL writes new handles into, owned until NCCL is done with it. `AtomicPtr<T>` has
/// the representation of `*mut T`, so a slot is a valid `ncclComm_t*`.
pub(crate) struct Slots(Box<[AtomicPtr<c_void>]>);

impl Slots {
    fn new(n: usize) -> Arc<Self> {
        Arc::new(Slots((0..n).map(|_| AtomicPtr::new(ptr::null_mut())).collect()))
    }

    /// The out-pointer for handle `i` (`ncclComm_t*`).
    fn out(&self, i: usize) -> *mut *mut c_void {
        self.0[i].as_ptr()
    }

    /// Handle `i` as NCCL stored it (it stores with release ordering).
    fn get(&self, i: usize) -> *mut c_void {
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

/// What the creating call returned, from its thread.
type CallResult = Result<NcclResult, Error>;

enum Stage {
    /// The creating call is running on its own thread.
    Calling(BoundedCall<CallResult>),
    /// It returned `ncclInProgress`: NCCL's thread finishes the work.
    Polling,
    /// Finished (taken, failed or cancelled).
    Done,
}

/// A communicator (or several, for `init_all` and `split_all`) being made. It owns the memory
/// NCCL writes the new handles into until NCCL is done with it.
///
/// [`wait`](Pending::wait) finishes it within the creation deadline; [`poll`](Pending::poll)
/// checks without waiting. On failure or timeout everything NCCL made is aborted: an init's new
/// communicator; for a split or shrink, NCCL can only stop the child through its parent, so the
/// parent is aborted too. Dropping an unfinished `Pending` cancels it the same way.
pub struct Pending<'p> {
    nccl: Nccl,
    op: Sym,
    slots: Arc<Slots>,
    /// One per slot: the communicators being made, in state `Creating`.
    children: Vec<Arc<Shared>>,
    /// Split and shrink: the parents whose async state reports the children's progress.
    parents: Vec<Arc<Shared>>,
    deadline: Deadline,
    stage: Stage,
    _parent: PhantomData<&'p mut Communicator>,
}

impl core::fmt::Debug for Pending<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pending")
            .field("operation", &Nccl::name(self.op))
            .field("children", &self.children.len())
            .finish()
    }
}

/// The arguments the creating thread owns while NCCL may read them.
struct CallArgs {
    config: Option<ConfigBuffer>,
}

impl CallArgs {
    fn config_ptr(&mut self) -> *mut c_void {
        self.config.as_mut().map_or(ptr::null_mut(), ConfigBuffer::as_ptr)
    }
}

impl<'p> Pending<'p> {
    /// Starts `call` (which gets the slots) on its own thread. `context` is current there.
    fn start(
        nccl: &Nccl,
        op: Sym,
        slots: Arc<Slots>,
        children: Vec<Arc<Shared>>,
        parents: Vec<Arc<Shared>>,
        timeouts: Timeouts,
        call: impl FnOnce(&Nccl, &Slots) -> CallResult + Send + 'static,
    ) -> Result<Self, Error> {
        let deadline = Deadline::after(timeouts.create);
        let context = children.first().and_then(|c| c.context);
        let (theirs, their_slots) = (nccl.clone(), Arc::clone(&slots));
        let (cleanup_slots, cleanup_parents, cleanup_children) =
            (Arc::clone(&slots), parents.clone(), children.clone());
        let call = spawn_bounded(
            nccl.cuda_if_any().cloned().zip(context),
            move || call(&theirs, &their_slots),
            // Abandoned inside NCCL: nobody else will free what this call made.
            move |_| {
                for p in &cleanup_parents {
                    p.finish_abandoned(false);
                }
                abort_made(&cleanup_slots, &cleanup_children);
            },
        )
        .ok_or(Error::Timeout { operation: Nccl::name(op), waited: Duration::ZERO })?;
        Ok(Pending {
            nccl: nccl.clone(),
            op,
            slots,
            children,
            parents,
            deadline,
            stage: Stage::Calling(call),
            _parent: PhantomData,
        })
    }

    /// A handle that aborts (cancels) this creation from any thread. A non-blocking creation
    /// is aborted in NCCL; a blocking one is abandoned (left to its thread, which aborts what it
    /// made when NCCL returns), and `wait` returns at once.
    pub fn abort_handle(&self) -> Option<AbortHandle> {
        self.children.first().map(|c| AbortHandle::new(Arc::clone(c)))
    }

    /// True if an abort handle asked to cancel.
    fn cancelled(&self) -> bool {
        self.children.iter().any(|c| matches!(c.state(), CommState::Aborted(_)) || c.has_abort_request())
    }

    /// Checks progress without waiting: `Ok(true)` once [`wait`](Self::wait) would return at
    /// once.
    pub fn poll(&mut self) -> Result<bool, Error> {
        self.step(false)
    }

    /// Waits until the communicator is made, or fails, or the creation deadline passes.
    /// `None` only for a split with color `NCCL_SPLIT_NOCOLOR` (-1), which makes none.
    pub fn wait(mut self) -> Result<Option<Communicator>, Error> {
        Ok(self.wait_all()?.pop().flatten())
    }

    /// Every communicator made (several for `init_all` and `split_all`).
    fn wait_all(&mut self) -> Result<Vec<Option<Communicator>>, Error> {
        while !self.step(true)? {}
        let made = self
            .children
            .iter()
            .map(|c| (!c.handle().is_null()).then(|| Communicator::from_shared(Arc::clone(c))))
            .collect();
        self.children.clear();
        Ok(made)
    }

    /// One step; `block`: wait (bounded) instead of returning `Ok(false)`.
    fn step(&mut self, block: bool) -> Result<bool, Error> {
        let outcome = match &self.stage {
            Stage::Done => return Ok(true),
            Stage::Calling(call) => {
                let cancelled = || self.cancelled();
                let returned = if block {
                    let parents = &self.parents;
                    let (op, deadline) = (Nccl::name(self.op), self.deadline);
                    call.wait(deadline, &cancelled, || {
                        for p in parents {
                            p.abandon(Cause::Timeout { operation: op, waited: deadline.waited() });
                        }
                    })
                } else {
                    match call.try_take() {
                        Some(r) => Some(r),
                        None if self.deadline.passed() || cancelled() => call.abandon(|| {
                            for p in &self.parents {
                                p.abandon(Cause::Timeout {
                                    operation: Nccl::name(self.op),
                                    waited: self.deadline.waited(),
                                });
                            }
                        }),
                        None => return Ok(false),
                    }
                };
                match returned {
                    Some(r) => r,
                    None => {
                        // Abandoned: the call's thread owns the slots and cleans up.
                        self.stage = Stage::Done;
                        return Err(self.gave_up());
                    }
                }
            }
            Stage::Polling => Ok(NcclResult::IN_PROGRESS),
        };
        match outcome {
            Err(e) => {
                self.stage = Stage::Done;
                abort_made(&self.slots, &self.children);
                self.fail_children();
                Err(e)
            }
            // Success does not mean done: a non-blocking split or shrink returns ncclSuccess
            // while the child is still being made (its NCCLCHECK passes ncclInProgress through:
            // NCCL v2.30.7-1 src/include/checks.h:148-156, src/init.cc:3400-3411), and only the
            // parent's async state says so. The watched states are polled either way; a
            // blocking creation is done at the first poll.
            Ok(r) if r.is_success() || r == NcclResult::IN_PROGRESS => {
                self.stage = Stage::Polling;
                if r == NcclResult::IN_PROGRESS {
                    for c in self.children.iter().chain(&self.parents) {
                        c.saw_in_progress();
                    }
                }
                self.poll_progress(block)
            }
            Ok(r) => {
                self.stage = Stage::Done;
                let handle = self.slots.get(0);
                let err = self.nccl.failure(self.op, r, handle);
                abort_made(&self.slots, &self.children);
                self.fail_children();
                Err(err)
            }
        }
    }

    /// Polls NCCL's async state until the work is done (or, without `block`, once).
    fn poll_progress(&mut self, block: bool) -> Result<bool, Error> {
        let mut backoff = Backoff::new();
        loop {
            match self.progress() {
                Ok(true) => return self.complete(),
                Ok(false) => {}
                Err(e) => {
                    // NCCL finished the work with an error (or an abort joined it): the slots
                    // are final. A failed child is still stored (src/init.cc:1959-1962 runs on
                    // failure too): abort it. A parent keeps the error in its async state.
                    self.stage = Stage::Done;
                    abort_made(&self.slots, &self.children);
                    let code = match &e {
                        Error::Nccl { result, .. } => *result,
                        _ => NcclResult::INTERNAL_ERROR,
                    };
                    for p in &self.parents {
                        p.fail(Cause::Nccl { function: Nccl::name(self.op), code });
                    }
                    self.fail_children();
                    return Err(e);
                }
            }
            if self.deadline.passed() || self.cancelled() {
                self.stage = Stage::Done;
                let err = self.gave_up();
                let cause = match &err {
                    Error::Timeout { operation, waited } => Cause::Timeout { operation, waited: *waited },
                    _ => Cause::Requested,
                };
                self.stop_in_nccl(cause);
                self.fail_children();
                return Err(err);
            }
            if !block {
                return Ok(false);
            }
            backoff.pause(self.deadline.left());
        }
    }

    /// Whether NCCL finished the work (`Err` if it failed).
    fn progress(&self) -> Result<bool, Error> {
        let watched: Vec<(*mut c_void, &Arc<Shared>)> = if self.parents.is_empty() {
            (0..self.children.len()).map(|i| (self.slots.get(i), &self.children[i])).collect()
        } else {
            self.parents.iter().map(|p| (p.handle(), p)).collect()
        };
        let mut done = true;
        for (handle, owner) in watched {
            if handle.is_null() {
                continue;
            }
            // The new communicator's handle is known now: an abort handle can reach it.
            if self.parents.is_empty() {
                owner.set_handle(handle);
            }
            let mut state = 0i32;
            let out: *mut i32 = &mut state;
            let guard = match owner.enter("ncclCommGetAsyncError", Allow::Creating) {
                Ok(g) => g,
                // A parent aborted meanwhile: its abort joined NCCL's thread, so the child's
                // slot is final; the child's own state decides (in `complete`).
                Err(Error::Unusable { state: CommState::Aborted(_) | CommState::Destroyed, .. })
                    if !self.parents.is_empty() =>
                {
                    continue
                }
                Err(e) => return Err(e),
            };
            // SAFETY: a handle NCCL stored (final: the slot says so), a valid `int *`.
            let r = unsafe { self.nccl.functions().comm_get_async_error.call(&self.nccl, (handle, out)) }?;
            drop(guard);
            if !r.is_success() {
                return Err(self.nccl.failure(Sym::CommGetAsyncError, r, handle));
            }
            match NcclResult(state) {
                NcclResult::IN_PROGRESS => {
                    owner.saw_in_progress();
                    done = false;
                }
                s if s.is_success() => {}
                s => return Err(self.nccl.failure(self.op, s, handle)),
            }
        }
        Ok(done)
    }

    /// Creation done: every child gets its handle and rank facts.
    fn complete(&mut self) -> Result<bool, Error> {
        self.stage = Stage::Done;
        for (i, child) in self.children.iter().enumerate() {
            let handle = self.slots.get(i);
            if handle.is_null() {
                // NCCL_SPLIT_NOCOLOR: no child on this rank.
                child.mark(CommState::Destroyed);
                continue;
            }
            child.set_handle(handle);
            match child_ready(&self.nccl, handle).and_then(|()| rank_info(&self.nccl, handle)) {
                Ok(info) => child.complete(handle, info),
                Err(e) => {
                    abort_made(&self.slots, &self.children);
                    self.fail_children();
                    return Err(e);
                }
            }
        }
        Ok(true)
    }

    /// The error for a creation given up at the deadline (or cancelled).
    fn gave_up(&self) -> Error {
        let operation = Nccl::name(self.op);
        if self.deadline.passed() {
            Error::Timeout { operation, waited: self.deadline.waited() }
        } else {
            Error::Unusable { operation, state: CommState::Aborted(Cause::Requested) }
        }
    }

    /// Stops NCCL's background work and frees what it made. Init: abort the new communicators
    /// (`ncclCommAbort` joins NCCL's thread). Split and shrink: the child can only be stopped
    /// through the parent (its abort flag reaches the child: src/init.cc:2915-2926), so abort
    /// the parents; once their aborts joined NCCL's thread, the slots are final.
    fn stop_in_nccl(&self, cause: Cause) {
        if self.parents.is_empty() {
            abort_made(&self.slots, &self.children);
        } else {
            for p in &self.parents {
                let _ = p.request_abort(cause.clone());
            }
            abort_made(&self.slots, &self.children);
        }
    }

    fn fail_children(&mut self) {
        for c in &self.children {
            c.mark(CommState::Aborted(Cause::Requested));
        }
        self.children.clear();
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        match &self.stage {
            Stage::Done => {}
            Stage::Calling(call) => {
                let parents = &self.parents;
                if let Some(r) = call.abandon(|| {
                    for p in parents {
                        p.abandon(Cause::Requested);
                    }
                }) {
                    if matches!(r, Ok(NcclResult::IN_PROGRESS)) {
                        self.stop_in_nccl(Cause::Requested);
                    } else {
                        abort_made(&self.slots, &self.children);
                    }
                }
            }
            Stage::Polling => self.stop_in_nccl(Cause::Requested),
        }
        for c in &self.children {
            c.mark(CommState::Aborted(Cause::Requested));
        }
    }
}

/// Aborts every communicator NCCL stored in `slots` (made by a creation nobody will complete),
/// through its shared state, so a communicator an abort handle already aborted is not aborted
/// twice.
fn abort_made(slots: &Slots, children: &[Arc<Shared>]) {
    for (i, child) in children.iter().enumerate() {
        let handle = slots.get(i);
        if !handle.is_null() {
            child.set_handle(handle);
            let _ = child.request_abort(Cause::Requested);
        }
    }
}

/// A new communicator's own state: NCCL stores a child even when its creation failed
/// (src/init.cc:1959-1962 runs on the failure path too).
fn child_ready(nccl: &Nccl, handle: *mut c_void) -> Result<(), Error> {
    let mut state = 0i32;
    let out: *mut i32 = &mut state;
    // SAFETY: a handle NCCL stored, a valid `int *`.
    unsafe { nccl.check(&nccl.functions().comm_get_async_error, (handle, out), handle) }?;
    match NcclResult(state) {
        s if s.is_success() => Ok(()),
        s => Err(nccl.failure(Sym::CommGetAsyncError, s, handle)),
    }
}

/// Count, rank and device of a new communicator, read once.
fn rank_info(nccl: &Nccl, handle: *mut c_void) -> Result<RankInfo, Error> {
    let query = |function: &Function<(*mut c_void, *mut i32), NcclResult>| -> Result<i32, Error> {
        let mut v = 0i32;
        let out: *mut i32 = &mut v;
        // SAFETY: a live handle, a valid `int *`.
        unsafe { nccl.check(function, (handle, out), handle) }?;
        Ok(v)
    };
    let functions = nccl.functions();
    Ok(RankInfo {
        nranks: query(&functions.comm_count)?,
        rank: query(&functions.comm_user_rank)?,
        device: query(&functions.comm_cu_device)?,
    })
}

fn check_rank(nranks: i32, rank: i32) -> Result<(), Error> {
    if nranks < 1 || rank < 0 || rank >= nranks {
        return Err(Error::RankOutOfRange { rank, nranks });
    }
    Ok(())
}

/// A new communicator's shared state, in state `Creating`, on the calling thread's context.
fn new_child(nccl: &Nccl, nonblocking: bool, timeouts: Timeouts) -> Arc<Shared> {
    let context = nccl.cuda_if_any().and_then(|d| d.current_context().ok().flatten());
    Arc::new(Shared::new(nccl.clone(), nonblocking, context, timeouts))
}

impl Communicator {
    /// `ncclCommInitRank`: joins communicator `id` as `rank` of `nranks` on the current CUDA
    /// device, within the default creation timeout. The id is passed by value through the call
    /// core (a private copy per call).
    pub fn init_rank(nccl: &Nccl, nranks: i32, id: &UniqueId, rank: i32) -> Result<Self, Error> {
        Self::init_rank_with(nccl, nranks, id, rank, &CommOptions::new())
    }

    /// `ncclCommInitRankConfig` (2.14) with a config written for the loaded library.
    pub fn init_rank_config(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        config: &Config,
    ) -> Result<Self, Error> {
        Self::init_rank_with(nccl, nranks, id, rank, &CommOptions::new().config(config.clone()))
    }

    /// Init with options: `ncclCommInitRankConfig` when there is a config, else
    /// `ncclCommInitRank`. Fails with `Error::Timeout` at the creation deadline, having aborted
    /// (non-blocking) or abandoned (blocking) what NCCL made.
    pub fn init_rank_with(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        options: &CommOptions,
    ) -> Result<Self, Error> {
        let made = Self::begin_init_rank(nccl, nranks, id, rank, options)?.wait()?;
        made.ok_or(Error::ImpossibleOutput {
            function: if options.config.is_some() { "ncclCommInitRankConfig" } else { "ncclCommInitRank" },
            what: "no communicator",
        })
    }

    /// Starts an init and returns at once (the call runs on its own thread); finish it with
    /// [`Pending::wait`] or [`Pending::poll`].
    pub fn begin_init_rank(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        options: &CommOptions,
    ) -> Result<Pending<'static>, Error> {
        check_rank(nranks, rank)?;
        refuse_in_group(if options.config.is_some() { "ncclCommInitRankConfig" } else { "ncclCommInitRank" })?;
        let timeouts = options.timeouts.unwrap_or_default();
        let config_blocking = options.config.as_ref().and_then(Config::blocking_setting);
        let nonblocking = predicted_nonblocking(nccl.version(), config_blocking);
        let mut args = CallArgs { config: options.config.as_ref().map(|c| c.encode(nccl.version())).transpose()? };
        let (op, id) = (if args.config.is_some() { Sym::CommInitRankConfig } else { Sym::CommInitRank }, id.clone());
        if !nccl.has_sym(op) {
            // The Unsupported error, before any thread starts.
            return Err(nccl.unsupported(op));
        }
        Pending::start(
            nccl,
            op,
            Slots::new(1),
            vec![new_child(nccl, nonblocking, timeouts)],
            Vec::new(),
            timeouts,
            move |nccl, slots| {
                let out = slots.out(0);
                let cfg = args.config_ptr();
                let functions = nccl.functions();
                // SAFETY: `out` is the slot that stays owned until the handle is final (Slots);
                // the id is passed by value from where it is (the core copies it); `cfg` is
                // null or a config buffer written for the loaded library, kept alive with
                // `args` for the whole call.
                unsafe {
                    if op == Sym::CommInitRankConfig {
                        functions.comm_init_rank_config.call(nccl, (out, nranks, ValueAt::new(&id), rank, cfg))
                    } else {
                        functions.comm_init_rank.call(nccl, (out, nranks, ValueAt::new(&id), rank))
                    }
                }
            },
        )
    }

    /// `ncclCommInitAll`: one communicator per device of `devices`, in this process, within
    /// the default creation timeout. Refused inside an open group.
    pub fn init_all(nccl: &Nccl, devices: &[i32]) -> Result<Vec<Self>, Error> {
        Self::init_all_with(nccl, devices, Timeouts::default())
    }

    /// `ncclCommInitAll` with timeouts.
    pub fn init_all_with(nccl: &Nccl, devices: &[i32], timeouts: Timeouts) -> Result<Vec<Self>, Error> {
        let n = i32::try_from(devices.len()).map_err(|_| Error::TooMany { what: "devices", count: devices.len() })?;
        if n == 0 {
            return Err(Error::Empty { operation: "ncclCommInitAll", what: "device" });
        }
        refuse_in_group("ncclCommInitAll")?;
        let nonblocking = predicted_nonblocking(nccl.version(), None);
        let children = devices
            .iter()
            .map(|&d| {
                let child = new_child(nccl, nonblocking, timeouts);
                let context = nccl.cuda_if_any().and_then(|driver| driver.primary_context(d).ok());
                Arc::new(Shared::new(nccl.clone(), nonblocking, context.or(child.context), timeouts))
            })
            .collect();
        let devices = devices.to_vec();
        let mut pending = Pending::start(
            nccl,
            Sym::CommInitAll,
            Slots::new(devices.len()),
            children,
            Vec::new(),
            timeouts,
            move |nccl, slots| {
                let (out, list) = (slots.out(0), devices.as_ptr());
                // SAFETY: `out` is `devices.len()` owned slots (Slots), `list` that many ints.
                unsafe { nccl.functions().comm_init_all.call(nccl, (out, n, list)) }
            },
        )?;
        let made = pending.wait_all()?;
        Ok(made.into_iter().flatten().collect())
    }

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
            Sym::CommSplit,
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
    /// or revoked parent.
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
            Sym::CommShrink,
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
    fn child_of(&self, options: &CommOptions) -> Result<(Arc<Shared>, Timeouts, CallArgs), Error> {
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
            Sym::CommSplit,
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
