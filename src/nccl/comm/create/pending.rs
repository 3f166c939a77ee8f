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

use core::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::nccl::comm::bounded::{spawn_bounded, BoundedCall, Exit};
use crate::nccl::comm::communicator::{AbortHandle, Communicator};
use crate::nccl::comm::create::{Origin, Slots};
use crate::nccl::comm::shared::QUERY_GRACE;
use crate::nccl::comm::shared::{retire, Home, Shared};
use crate::nccl::library::load::Nccl;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::nccl::types::state::{Cause, CommState, Timeouts};
use crate::time::Backoff;
use crate::time::Deadline;
use crate::trace::trace_event;

use super::creation::{CallResult, Creation, Progress};

enum Stage {
    /// The creating call is running on its own thread.
    Calling,
    /// It returned; NCCL's own thread may still be making the communicators.
    Polling,
    /// Finished: handed out (`None`) or failed, stopped or abandoned (the error, which every
    /// later step returns again); the thread is released.
    Done(Option<Error>),
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
                    trace_event!(
                        nccl,
                        INFO,
                        "creation.done",
                        function = creation.origin.function,
                        operation = Nccl::name(creation.op),
                        made = true,
                        nranks = info.nranks,
                        rank = info.rank,
                        device = info.device,
                        nonblocking = child.is_nonblocking(),
                        took_ms = crate::trace::ms(self.deadline.waited()),
                        "a communicator was made"
                    );
                    child.complete(creation.slots.get(i), info)
                }
                // NCCL_SPLIT_NOCOLOR: no child on this rank.
                None => {
                    trace_event!(
                        nccl,
                        INFO,
                        "creation.done",
                        function = creation.origin.function,
                        operation = Nccl::name(creation.op),
                        made = false,
                        took_ms = crate::trace::ms(self.deadline.waited()),
                        "a split left this rank out (no color)"
                    );
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
            waited_ms = crate::trace::ms(self.deadline.waited()), error = %err.for_events(),
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
                    trace_event!(
                        nccl,
                        INFO,
                        "creation.dropped",
                        function = creation.origin.function,
                        operation = Nccl::name(creation.op),
                        stage = "calling",
                        left_to_thread = true,
                        "an unfinished creation was dropped: its call is left to its thread"
                    );
                    return;
                }
            }
            Stage::Polling => {}
        }
        trace_event!(
            nccl,
            INFO,
            "creation.dropped",
            function = self.creation.origin.function,
            operation = Nccl::name(self.creation.op),
            stage = if matches!(self.stage, Stage::Polling) { "polling" } else { "calling" },
            left_to_thread = false,
            "an unfinished creation was dropped: what NCCL made is aborted"
        );
        self.stop(Cause::Requested, false);
    }
}
