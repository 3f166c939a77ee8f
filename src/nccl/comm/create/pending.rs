//! The creation in progress: [`Pending`] owns the slots NCCL writes new handles into, drives
//! the creating call (bounded, on its own thread) and the polling of NCCL's async state, and on
//! failure, timeout, cancel or drop aborts whatever NCCL made.
//!
//! **One thread per creation, for the whole creation.** The creating call runs on a thread of
//! its own, and that thread stays until NCCL's job for the creation is over: before 2.27 NCCL
//! keeps a non-blocking creation's group job in that thread's storage, and before 2.19 only an
//! abort from that thread joins it ([`crate::nccl::bounded`]). So every abort of what the
//! creation involves — its new communicators, and for a split or shrink the parents NCCL stops
//! it through — runs on that thread: the creation's own stop on failure, timeout, cancel or
//! drop, and any [`AbortHandle`] of those communicators meanwhile (their [`Home`]).
//!
//! **Slots are freed only once NCCL is done with them**: the call returned in blocking mode, or
//! NCCL's job was seen over, or an abort joined it. When none of these can be shown (an abort
//! that could not run; a library that promised a handle and has not stored it) the slots are
//! leaked, and the thread stays, rather than freed under NCCL.

use core::ffi::c_void;
use core::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use crate::time::Backoff;
use crate::nccl::comm::bounded::{spawn_bounded, BoundedCall, CallThread, Exit};
use crate::nccl::comm::communicator::{AbortHandle, Communicator};
use crate::nccl::comm::create::{Origin, Slots};
use crate::nccl::types::error::Error;
use crate::nccl::library::functions::{Function, Sym};
use crate::nccl::library::load::Nccl;
use crate::nccl::comm::shared::{retire, Home, Shared};
use crate::nccl::comm::shared::{Allow, RankInfo, QUERY_GRACE};
use crate::nccl::types::state::{Cause, CommState, Timeouts};
use crate::time::Deadline;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::version::Version;
use crate::trace::trace_event;

/// What the creating call returned, from its thread.
pub(super) type CallResult = Result<NcclResult, Error>;

enum Stage {
    /// The creating call is running on its own thread.
    Calling,
    /// It returned; NCCL's own thread may still be making the communicators.
    Polling,
    /// Finished: handed out (`None`) or failed, stopped or abandoned (the error, which every
    /// later step returns again); the thread is released.
    Done(Option<Error>),
}

/// What a creation shares with its thread: the slots, the communicators being made, the
/// parents NCCL makes them from, and how far NCCL got.
struct Creation {
    nccl: Nccl,
    op: Sym,
    origin: Origin,
    slots: Arc<Slots>,
    /// One per slot: the communicators being made, in state `Creating`.
    children: Vec<Arc<Shared>>,
    /// Split and shrink: the parents whose async state reports the children's progress.
    parents: Vec<Arc<Shared>>,
    teardown: Option<Duration>,
    progress: Mutex<Progress>,
    /// The creation's thread, released by whoever ends the creation.
    thread: OnceLock<CallThread>,
}

#[derive(Default)]
struct Progress {
    /// NCCL's own thread may be running a job for this creation: the call returned
    /// `ncclInProgress` (or a non-blocking split's success), and the job was not seen over.
    background: bool,
    /// Why the call was abandoned, for its thread's cleanup.
    abandoned: Option<Cause>,
    /// The creation was stopped (its cause), and how its thread may end.
    stopped: Option<(Cause, Exit)>,
}

impl Creation {
    fn state(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every communicator the creation involves.
    fn involved(&self) -> impl Iterator<Item = &Arc<Shared>> {
        self.children.iter().chain(&self.parents)
    }

    /// On the creation's thread, when the call returned `r`: does NCCL's job go on?
    fn returned(&self, r: &CallResult) {
        let background = match r {
            Ok(NcclResult::IN_PROGRESS) => true,
            // A non-blocking split or shrink returns success with the child still being made.
            Ok(r) if r.is_success() => !self.parents.is_empty() && self.parents.iter().any(|p| p.is_nonblocking()),
            _ => false,
        };
        if matches!(r, Ok(NcclResult::IN_PROGRESS)) {
            self.involved().for_each(|c| c.saw_in_progress());
        }
        self.state().background = background;
    }

    /// True once the creation was stopped, or an abort of a communicator being made was asked.
    /// (A parent's abort runs on the creation's thread when the call returns, and stops it.)
    fn cancelled(&self) -> bool {
        self.state().stopped.is_some()
            || self.children.iter().any(|c| c.has_abort_request() || matches!(c.state(), CommState::Aborted(_)))
    }

    /// The cause the creation was stopped with, if it was.
    fn stopped(&self) -> Option<Cause> {
        self.state().stopped.as_ref().map(|(c, _)| c.clone())
    }

    /// Stops the creation, on its thread: NCCL's job (through the parents, for a split or
    /// shrink, unless `job_over`: NCCL finished it) and every communicator NCCL made. Frees
    /// nothing NCCL may still write, and releases the thread as NCCL's job allows. Runs once;
    /// later calls return the first outcome.
    fn stop(self: &Arc<Self>, cause: Cause, job_over: bool) -> Exit {
        if let Some((_, exit)) = &self.state().stopped {
            return *exit;
        }
        let background = self.state().background;
        let deadline = Deadline::after(self.teardown);
        // Parents first: NCCL stops a child only through its parent's abort flag (NCCL
        // v2.30.7-1 src/init.cc:2915-2926), and that abort, from this thread, joins the job.
        let mut parents_aborted = !self.parents.is_empty();
        if !job_over {
            for p in &self.parents {
                let ok = p.abort_on_this_thread(cause.clone(), deadline).is_ok();
                parents_aborted &= ok || p.is_released();
            }
        }
        // Then what NCCL stored: a failed child is stored too (src/init.cc:1959-1962 runs on
        // the failure path).
        let mut children_aborted = true;
        for (i, child) in self.children.iter().enumerate() {
            let handle = self.slots.get(i);
            if handle.is_null() {
                child.mark(CommState::Aborted(cause.clone()));
                children_aborted = false;
                continue;
            }
            child.set_handle(handle);
            let ok = child.abort_on_this_thread(cause.clone(), deadline).is_ok();
            children_aborted &= ok || child.is_released();
        }
        // Init's job is the new communicator's, a split's the parent's: aborted from here, it
        // is joined (every version), and NCCL writes no slot after that.
        let job_joined = if self.parents.is_empty() { children_aborted } else { parents_aborted && !job_over };
        // Before 2.18 a failed init's undo rewrites the slot after the error shows (v2.17.1-1
        // src/init.cc:1272-1273, after groupCleanup sets the async error).
        let over_and_stored = job_over && (!self.parents.is_empty() || self.nccl.version() >= Version::new(2, 18, 0));
        if background && !job_joined && !over_and_stored {
            // NCCL may still store a handle: the slots stay allocated for good.
            trace_event!(nccl, WARN, "creation.leaked", function = self.origin.function,
                operation = Nccl::name(self.op), what = "slots", slots = self.slots.0.len(),
                "a creation given up: NCCL may still store a handle, its slots stay allocated for good");
            core::mem::forget(Arc::clone(&self.slots));
        }
        let storage_free = !background || job_joined || self.nccl.version() >= Version::new(2, 27, 0);
        let exit = if storage_free { Exit::AfterWork } else { Exit::Never };
        if exit == Exit::Never {
            trace_event!(nccl, WARN, "creation.leaked", function = self.origin.function,
                operation = Nccl::name(self.op), what = "thread",
                "a creation given up: NCCL's job lives in its thread's storage, the thread stays for good");
        }
        trace_event!(nccl, INFO, "creation.stopped", function = self.origin.function, operation = Nccl::name(self.op),
            cause = %cause, aborted = self.involved().filter(|c| c.is_released()).count(),
            never_stored = (0..self.children.len()).filter(|&i| self.slots.get(i).is_null()).count(),
            parents = self.parents.len(), job_joined, job_over,
            "what a creation made was aborted on its thread");
        for c in self.involved() {
            c.set_home(None);
        }
        self.state().stopped = Some((cause, exit));
        if let Some(t) = self.thread.get() {
            t.release(exit);
        }
        exit
    }

    /// On the creation's thread when a call abandoned by its owner returned: stop everything.
    fn after_abandon(self: &Arc<Self>, r: CallResult) -> Exit {
        trace_event!(nccl, INFO, "creation.returned_late", function = self.origin.function,
            operation = Nccl::name(self.op), result = ?r,
            "an abandoned creating call returned: its thread aborts what it made");
        self.returned(&r);
        let cause = self.state().abandoned.clone().unwrap_or(Cause::Requested);
        // The owner marked the parents lost; their call (ours) has returned: abort them.
        for p in &self.parents {
            p.finish_abandoned(false);
        }
        self.stop(cause, false)
    }

    /// On the creation's thread: whether NCCL finished the work (`Err` if it failed, or a parent
    /// was aborted meanwhile).
    fn poll_nccl(&self) -> Result<bool, Error> {
        let creation = self;
        let background = creation.state().background;
        let watched: Vec<(*mut c_void, &Arc<Shared>)> = if creation.parents.is_empty() {
            creation.children.iter().enumerate().map(|(i, c)| (creation.slots.get(i), c)).collect()
        } else {
            creation.parents.iter().map(|p| (p.handle(), p)).collect()
        };
        let mut done = true;
        for (handle, owner) in watched {
            if handle.is_null() {
                // NCCL stores an init's handle before its job starts (src/init.cc:2515); a
                // library that has not yet is still working on it.
                done &= !(background && creation.parents.is_empty());
                continue;
            }
            // The new communicator's handle is known now: an abort can reach it.
            if creation.parents.is_empty() {
                owner.set_handle(handle);
            }
            let mut state = 0i32;
            let out: *mut i32 = &mut state;
            let guard = match owner.enter("ncclCommGetAsyncError", Allow::Creating) {
                Ok(g) => g,
                // A parent aborted meanwhile (its abort ran on the creation's thread): the
                // split is over, as aborted.
                Err(Error::Unusable { state: state @ (CommState::Aborted(_) | CommState::Destroyed), .. })
                    if !creation.parents.is_empty() =>
                {
                    return Err(Error::Unusable { operation: Nccl::name(creation.op), state })
                }
                Err(e) => return Err(e),
            };
            // SAFETY: a handle NCCL stored (final: the slot says so), a valid `int *`.
            let r = unsafe { creation.nccl.functions().comm_get_async_error.call(&creation.nccl, (handle, out)) }?;
            drop(guard);
            if !r.is_success() {
                return Err(creation.nccl.failure(Sym::CommGetAsyncError, r, handle));
            }
            match NcclResult(state) {
                NcclResult::IN_PROGRESS => {
                    owner.saw_in_progress();
                    done = false;
                }
                s if s.is_success() => {}
                s => return Err(creation.nccl.failure(creation.op, s, handle)),
            }
        }
        Ok(done)
    }

    /// On the creation's thread, once NCCL's work is done: each child's own state and rank
    /// facts (read once), `None` for a slot NCCL left empty (`NCCL_SPLIT_NOCOLOR`).
    fn read_children(&self) -> Result<Vec<Option<RankInfo>>, Error> {
        (0..self.children.len())
            .map(|i| match self.slots.get(i) {
                h if h.is_null() => Ok(None),
                h => child_ready(&self.nccl, h).and_then(|()| rank_info(&self.nccl, h)).map(Some),
            })
            .collect()
    }
}

/// A communicator (or several, for `init_all` and `split_all`) being made. It owns the memory
/// NCCL writes the new handles into until NCCL is done with it.
///
/// [`wait`](Pending::wait) finishes it within the creation deadline; [`poll`](Pending::poll)
/// checks without waiting. On failure or timeout everything NCCL made is aborted: an init's new
/// communicator; for a split or shrink, NCCL can only stop the child through its parent, so the
/// parent is aborted too. Dropping an unfinished `Pending` cancels it the same way and returns
/// once that abort ran (within the teardown timeout); a blocking call still inside NCCL is left
/// to its thread, which aborts what it made when NCCL returns.
pub struct Pending<'p> {
    creation: Arc<Creation>,
    call: BoundedCall<CallResult>,
    deadline: Deadline,
    stage: Stage,
    _parent: PhantomData<&'p mut Communicator>,
}

impl core::fmt::Debug for Pending<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pending")
            .field("operation", &Nccl::name(self.creation.op))
            .field("function", &self.creation.origin.function)
            .field("nranks", &self.creation.origin.nranks)
            .field("rank", &self.creation.origin.rank)
            .field("children", &self.creation.children.len())
            .finish()
    }
}

impl<'p> Pending<'p> {
    /// Starts `call` (which gets the slots) on its own thread. `context` is current there.
    pub(super) fn start(
        nccl: &Nccl,
        origin: Origin,
        slots: Arc<Slots>,
        children: Vec<Arc<Shared>>,
        parents: Vec<Arc<Shared>>,
        timeouts: Timeouts,
        call: impl FnOnce(&Nccl, &Slots) -> CallResult + Send + 'static,
    ) -> Result<Self, Error> {
        let op = origin.op;
        if timeouts.create == Some(Duration::ZERO) {
            return Err(Error::ZeroTimeout { operation: Nccl::name(op) });
        }
        let deadline = Deadline::after(timeouts.create);
        let context = children.first().and_then(|c| c.context);
        let creation = Arc::new(Creation {
            nccl: nccl.clone(),
            op,
            origin,
            slots,
            children,
            parents,
            teardown: timeouts.teardown,
            progress: Mutex::new(Progress::default()),
            thread: OnceLock::new(),
        });
        let (theirs, cleanup) = (Arc::clone(&creation), Arc::clone(&creation));
        let call = spawn_bounded(
            nccl.cuda_if_any().cloned().zip(context),
            move || {
                let r = call(&theirs.nccl, &theirs.slots);
                theirs.returned(&r);
                // A failure's texts are NCCL's to give, read here too (never on the caller's
                // thread, where a stuck NCCL would hold it).
                match r {
                    Ok(code) if !code.is_success() && code != NcclResult::IN_PROGRESS => {
                        Err(theirs.nccl.failure(theirs.op, code, theirs.slots.get(0)))
                    }
                    r => r,
                }
            },
            move |r| cleanup.after_abandon(r),
        )
        .map_err(|e| Error::Thread { name: "nccl-bounded-call", source: e.into() })?;
        let _ = creation.thread.set(call.thread());
        // Aborts of these communicators run on the creation's thread until it is over.
        let weak = Arc::downgrade(&creation);
        let home = Home {
            thread: call.thread(),
            abort: Arc::new(move |cause| {
                if let Some(c) = weak.upgrade() {
                    c.stop(cause, false);
                }
                Ok(())
            }),
        };
        for c in creation.involved() {
            c.set_home(Some(home.clone()));
        }
        trace_event!(nccl, INFO, "creation.begun", function = origin.function, operation = Nccl::name(op),
            nranks = origin.nranks, rank = origin.rank, communicators = creation.children.len(),
            nonblocking = creation.children.iter().any(|c| c.is_nonblocking()),
            create_timeout = %crate::trace::limit(timeouts.create),
            operation_timeout = %crate::trace::limit(timeouts.operation),
            teardown_timeout = %crate::trace::limit(timeouts.teardown), "a communicator creation began");
        Ok(Pending { creation, call, deadline, stage: Stage::Calling, _parent: PhantomData })
    }

    /// A handle that aborts (cancels) this creation from any thread: what NCCL made is aborted
    /// on the creation's thread (for a split or shrink, with the parent), within the teardown
    /// timeout. While a blocking creating call is still inside NCCL that cannot run yet:
    /// `abort` returns [`Error::AbortPending`], `wait` returns at once, and the call's thread
    /// aborts what it made when NCCL returns.
    pub fn abort_handle(&self) -> Option<AbortHandle> {
        self.creation.children.first().map(|c| AbortHandle::new(Arc::clone(c)))
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
            .creation
            .children
            .iter()
            .map(|c| (!c.handle().is_null()).then(|| Communicator::from_shared(Arc::clone(c))))
            .collect();
        Ok(made)
    }

    /// Marks the call abandoned (its thread cleans up when it returns): the parents are lost
    /// until then.
    fn abandon(&self, cause: Cause) {
        self.creation.state().abandoned = Some(cause.clone());
        for p in &self.creation.parents {
            p.abandon(cause.clone());
        }
    }

    fn timeout_cause(&self) -> Cause {
        Cause::Timeout { operation: Nccl::name(self.creation.op), waited: self.deadline.waited() }
    }

    /// One step; `block`: wait (bounded) instead of returning `Ok(false)`.
    fn step(&mut self, block: bool) -> Result<bool, Error> {
        let returned = match self.stage {
            Stage::Done(None) => return Ok(true),
            Stage::Done(Some(ref e)) => return Err(e.clone()),
            Stage::Polling => return self.poll_progress(block),
            Stage::Calling if block => {
                let creation = &self.creation;
                let cancelled = || creation.cancelled();
                let deadline = self.deadline;
                self.call.wait(deadline, &cancelled, || self.abandon(self.give_up_cause()))
            }
            Stage::Calling => match self.call.try_take() {
                Some(r) => Some(r),
                None if self.deadline.passed() || self.creation.cancelled() => {
                    self.call.abandon(|| self.abandon(self.give_up_cause()))
                }
                None => return Ok(false),
            },
        };
        // Abandoned (the call's thread owns the slots and cleans up when NCCL returns), or
        // stopped by an abort handle on its thread as soon as the call returned.
        let Some(r) = returned.filter(|_| self.creation.stopped().is_none()) else {
            return self.end(self.gave_up());
        };
        match r {
            Err(e) => {
                let cause = match &e {
                    Error::Nccl { function, result, .. } => Cause::Nccl { function, code: *result },
                    _ => Cause::Requested,
                };
                self.fail(e, cause, true)
            }
            Ok(r) => {
                // Success does not mean done: a non-blocking split or shrink returns success
                // while the child is still being made (its NCCLCHECK passes ncclInProgress
                // through: NCCL v2.30.7-1 src/include/checks.h:148-156, src/init.cc:3400-3411),
                // and only the parent's async state says so. The watched states are polled
                // either way; a blocking creation is done at the first poll.
                debug_assert!(r.is_success() || r == NcclResult::IN_PROGRESS);
                self.stage = Stage::Polling;
                self.poll_progress(block)
            }
        }
    }

    /// Polls NCCL's async state until the work is done (or, without `block`, once).
    fn poll_progress(&mut self, block: bool) -> Result<bool, Error> {
        let mut backoff = Backoff::new();
        loop {
            if self.creation.stopped().is_some() {
                // An abort handle stopped it (on its thread).
                return self.end(self.gave_up());
            }
            match self.on_thread(|c| c.poll_nccl()) {
                None => return self.stuck(),
                Some(Ok(true)) => return self.complete(),
                Some(Ok(false)) => {}
                Some(Err(e)) => {
                    // NCCL finished the work with an error (or an abort joined it). A parent
                    // keeps the error in its async state.
                    let code = match &e {
                        Error::Nccl { result, .. } => *result,
                        _ => NcclResult::INTERNAL_ERROR,
                    };
                    let cause = Cause::Nccl { function: Nccl::name(self.creation.op), code };
                    for p in &self.creation.parents {
                        p.fail(cause.clone());
                    }
                    return self.fail(e, cause, true);
                }
            }
            if self.deadline.passed() || self.creation.cancelled() {
                let err = self.gave_up();
                let cause = self.give_up_cause();
                return self.fail(err, cause, false);
            }
            if !block {
                return Ok(false);
            }
            backoff.pause(self.deadline.left());
        }
    }

    /// Creation done: every child gets its handle and rank facts, and the thread is retired.
    fn complete(&mut self) -> Result<bool, Error> {
        let creation = Arc::clone(&self.creation);
        let infos = match self.on_thread(|c| c.read_children()) {
            None => return self.stuck(),
            Some(Err(e)) => return self.fail(e, Cause::Requested, true),
            Some(Ok(infos)) => infos,
        };
        for ((i, child), info) in creation.children.iter().enumerate().zip(infos) {
            match info {
                Some(info) => {
                    trace_event!(nccl, INFO, "creation.done", function = creation.origin.function,
                        operation = Nccl::name(creation.op), made = true, nranks = info.nranks, rank = info.rank,
                        device = info.device, nonblocking = child.is_nonblocking(),
                        took_ms = crate::trace::ms(self.deadline.waited()), "a communicator was made");
                    child.complete(creation.slots.get(i), info)
                }
                // NCCL_SPLIT_NOCOLOR: no child on this rank.
                None => {
                    trace_event!(nccl, INFO, "creation.done", function = creation.origin.function,
                        operation = Nccl::name(creation.op), made = false,
                        took_ms = crate::trace::ms(self.deadline.waited()), "a split left this rank out (no color)");
                    child.mark(CommState::Destroyed)
                }
            }
        }
        // NCCL's job is over and was seen so: nothing aborts through this creation any more.
        let background = {
            let mut p = creation.state();
            core::mem::replace(&mut p.background, false)
        };
        for c in creation.involved() {
            c.set_home(None);
        }
        self.stage = Stage::Done(None);
        if background {
            retire(&creation.nccl, &self.call.thread());
        } else {
            self.call.release(Exit::AfterWork);
        }
        Ok(true)
    }

    /// Runs `query` on the creation's thread (NCCL's queries stay off the caller's thread, and
    /// on the thread NCCL's job belongs to), until the creation deadline: `None` if it did not
    /// return by then.
    fn on_thread<R: Send + 'static>(&self, query: impl FnOnce(&Creation) -> R + Send + 'static) -> Option<R> {
        let creation = Arc::clone(&self.creation);
        self.call.thread().run(self.deadline.with_grace(QUERY_GRACE), move || query(&creation))
    }

    /// A query of NCCL's state did not return by the deadline: it is left to the creation's
    /// thread, like an abandoned call (the parents are lost until it returns), and the
    /// creation stops there once it does.
    fn stuck(&mut self) -> Result<bool, Error> {
        let cause = self.timeout_cause();
        self.abandon(cause.clone());
        let creation = Arc::clone(&self.creation);
        self.call.thread().hand(Box::new(move || {
            for p in &creation.parents {
                p.finish_abandoned(false);
            }
            creation.stop(cause, false);
        }));
        self.end(self.gave_up())
    }

    /// Fails the creation with `err`: stops it on its thread (`job_over`: NCCL's job has ended,
    /// only what it made is aborted) and releases the thread.
    fn fail(&mut self, err: Error, cause: Cause, job_over: bool) -> Result<bool, Error> {
        self.stop(cause, job_over);
        self.end(err)
    }

    /// Ends the creation with `err`, which every later step returns.
    fn end(&mut self, err: Error) -> Result<bool, Error> {
        trace_event!(nccl, WARN, "creation.failed", function = self.creation.origin.function,
            operation = Nccl::name(self.creation.op), nranks = self.creation.origin.nranks,
            rank = self.creation.origin.rank,
            outcome = match &err {
                Error::Timeout { .. } => "deadline",
                Error::Unusable { state: CommState::Aborted(_), .. } => "aborted",
                _ => "error",
            },
            left_to_thread = self.creation.state().abandoned.is_some(),
            waited_ms = crate::trace::ms(self.deadline.waited()), error = %err,
            "a communicator creation failed or was given up");
        self.stage = Stage::Done(Some(err.clone()));
        Err(err)
    }

    /// Stops the creation on its thread (which it then releases), waiting for that within the
    /// teardown timeout.
    fn stop(&mut self, cause: Cause, job_over: bool) {
        let creation = Arc::clone(&self.creation);
        let deadline = Deadline::after(creation.teardown);
        let _ = self.call.thread().run(deadline, move || creation.stop(cause, job_over));
    }

    /// Why the creation is given up now: the deadline, or an abort.
    fn give_up_cause(&self) -> Cause {
        if self.deadline.passed() {
            return self.timeout_cause();
        }
        self.creation.stopped().unwrap_or(Cause::Requested)
    }

    /// The error for a creation given up at the deadline (or cancelled).
    fn gave_up(&self) -> Error {
        let operation = Nccl::name(self.creation.op);
        match self.give_up_cause() {
            Cause::Timeout { waited, .. } => Error::Timeout { operation, waited },
            cause => Error::Unusable { operation, state: CommState::Aborted(cause) },
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        match self.stage {
            Stage::Done(_) => return,
            Stage::Calling => {
                // A non-blocking creating call returns at once: let it (within the teardown
                // timeout) so that what it made is stopped before drop returns. A blocking one
                // may wait for peers for ever: it is abandoned, and its thread cleans up.
                let creation = Arc::clone(&self.creation);
                let nonblocking = creation.involved().any(|c| c.is_nonblocking());
                let returned = if nonblocking {
                    let deadline = Deadline::after(creation.teardown);
                    self.call.wait(deadline, &|| false, || self.abandon(Cause::Requested))
                } else {
                    self.call.abandon(|| self.abandon(Cause::Requested))
                };
                if returned.is_none() {
                    // Abandoned: its thread stops the creation when the call returns.
                    trace_event!(nccl, INFO, "creation.dropped", function = creation.origin.function,
                        operation = Nccl::name(creation.op), stage = "calling", left_to_thread = true,
                        "an unfinished creation was dropped: its call is left to its thread");
                    return;
                }
            }
            Stage::Polling => {}
        }
        trace_event!(nccl, INFO, "creation.dropped", function = self.creation.origin.function,
            operation = Nccl::name(self.creation.op),
            stage = if matches!(self.stage, Stage::Polling) { "polling" } else { "calling" }, left_to_thread = false,
            "an unfinished creation was dropped: what NCCL made is aborted");
        self.stop(Cause::Requested, false);
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
