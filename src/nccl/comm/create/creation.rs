//! What a creation shares with its thread: the slots NCCL writes the new handles into, the
//! communicators being made and the parents NCCL makes them from, how far NCCL got, and what
//! the thread does when the creation is stopped or its call abandoned (`pending` has the
//! caller's side, and why one thread serves a creation for its whole life).

use core::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use crate::nccl::comm::bounded::{CallThread, Exit};
use crate::nccl::comm::create::{Origin, Slots};
use crate::nccl::comm::shared::Shared;
use crate::nccl::comm::shared::{async_state, Allow, RankInfo};
use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::nccl::types::state::{Cause, CommState};
use crate::nccl::types::version::Version;
use crate::time::Deadline;
use crate::trace::trace_event;

/// What the creating call returned, from its thread.
pub(super) type CallResult = Result<NcclResult, Error>;

/// What a creation shares with its thread: the slots, the communicators being made, the
/// parents NCCL makes them from, and how far NCCL got.
pub(super) struct Creation {
    pub(super) nccl: Nccl,
    pub(super) op: Sym,
    pub(super) origin: Origin,
    pub(super) slots: Arc<Slots>,
    /// One per slot: the communicators being made, in state `Creating`.
    pub(super) children: Vec<Arc<Shared>>,
    /// Split and shrink: the parents whose async state reports the children's progress.
    pub(super) parents: Vec<Arc<Shared>>,
    pub(super) teardown: Option<Duration>,
    pub(super) progress: Mutex<Progress>,
    /// The creation's thread, released by whoever ends the creation.
    pub(super) thread: OnceLock<CallThread>,
}

#[derive(Default)]
pub(super) struct Progress {
    /// NCCL's own thread may be running a job for this creation: the call returned
    /// `ncclInProgress` (or a non-blocking split's success), and the job was not seen over.
    pub(super) background: bool,
    /// Why the call was abandoned, for its thread's cleanup.
    pub(super) abandoned: Option<Cause>,
    /// The creation was stopped (its cause), and how its thread may end.
    pub(super) stopped: Option<(Cause, Exit)>,
}

impl Creation {
    pub(super) fn state(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every communicator the creation involves.
    pub(super) fn involved(&self) -> impl Iterator<Item = &Arc<Shared>> {
        self.children.iter().chain(&self.parents)
    }

    /// On the creation's thread, when the call returned `r`: does NCCL's job go on?
    pub(super) fn returned(&self, r: &CallResult) {
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
    pub(super) fn cancelled(&self) -> bool {
        self.state().stopped.is_some()
            || self.children.iter().any(|c| c.has_abort_request() || matches!(c.state(), CommState::Aborted(_)))
    }

    /// The cause the creation was stopped with, if it was.
    pub(super) fn stopped(&self) -> Option<Cause> {
        self.state().stopped.as_ref().map(|(c, _)| c.clone())
    }

    /// Stops the creation, on its thread: NCCL's job (through the parents, for a split or
    /// shrink, unless `job_over`: NCCL finished it) and every communicator NCCL made. Frees
    /// nothing NCCL may still write, and releases the thread as NCCL's job allows. Runs once;
    /// later calls return the first outcome.
    pub(super) fn stop(self: &Arc<Self>, cause: Cause, job_over: bool) -> Exit {
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
            trace_event!(
                nccl,
                WARN,
                "creation.leaked",
                function = self.origin.function,
                operation = Nccl::name(self.op),
                what = "slots",
                slots = self.slots.0.len(),
                "a creation given up: NCCL may still store a handle, its slots stay allocated for good"
            );
            core::mem::forget(Arc::clone(&self.slots));
        }
        let storage_free = !background || job_joined || self.nccl.version() >= Version::new(2, 27, 0);
        let exit = if storage_free { Exit::AfterWork } else { Exit::Never };
        if exit == Exit::Never {
            trace_event!(
                nccl,
                WARN,
                "creation.leaked",
                function = self.origin.function,
                operation = Nccl::name(self.op),
                what = "thread",
                "a creation given up: NCCL's job lives in its thread's storage, the thread stays for good"
            );
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
    pub(super) fn after_abandon(self: &Arc<Self>, r: CallResult) -> Exit {
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
    pub(super) fn poll_nccl(&self) -> Result<bool, Error> {
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
            // SAFETY: a handle NCCL stored (final: the slot says so).
            let state = unsafe { async_state(&creation.nccl, handle) }?;
            drop(guard);
            match state {
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
    pub(super) fn read_children(&self) -> Result<Vec<Option<RankInfo>>, Error> {
        (0..self.children.len())
            .map(|i| match self.slots.get(i) {
                h if h.is_null() => Ok(None),
                // SAFETY: a handle NCCL stored for this creation, not released: its thread owns it.
                h => child_ready(&self.nccl, h).and_then(|()| unsafe { RankInfo::read(&self.nccl, h) }).map(Some),
            })
            .collect()
    }
}

/// A new communicator's own state: NCCL stores a child even when its creation failed
/// (src/init.cc:1959-1962 runs on the failure path too).
pub(super) fn child_ready(nccl: &Nccl, handle: *mut c_void) -> Result<(), Error> {
    // SAFETY: a handle NCCL stored.
    match unsafe { async_state(nccl, handle) }? {
        s if s.is_success() => Ok(()),
        s => Err(nccl.failure(Sym::CommGetAsyncError, s, handle)),
    }
}
