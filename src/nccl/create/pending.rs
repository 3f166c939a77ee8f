//! The creation in progress: [`Pending`] owns the slots NCCL writes new handles into, drives
//! the creating call (bounded, on its own thread) and the polling of NCCL's async state, and on
//! failure, timeout, cancel or drop aborts whatever NCCL made.

use core::ffi::c_void;
use core::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::cuda::Backoff;
use crate::nccl::bounded::{spawn_bounded, BoundedCall};
use crate::nccl::communicator::{AbortHandle, Communicator};
use crate::nccl::create::Slots;
use crate::nccl::error::Error;
use crate::nccl::functions::{Function, Sym};
use crate::nccl::library::Nccl;
use crate::nccl::shared::Shared;
use crate::nccl::state::{Allow, Cause, CommState, Deadline, RankInfo, Timeouts};
use crate::nccl::types::NcclResult;

/// What the creating call returned, from its thread.
pub(super) type CallResult = Result<NcclResult, Error>;

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

impl<'p> Pending<'p> {
    /// Starts `call` (which gets the slots) on its own thread. `context` is current there.
    pub(super) fn start(
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
    pub(super) fn wait_all(&mut self) -> Result<Vec<Option<Communicator>>, Error> {
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
                    if r == Ok(NcclResult::IN_PROGRESS) {
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
