//! Ending a communicator within a deadline: finalize, destroy, and abort when either does not
//! finish in time. What `Drop` runs; see [`Communicator`](crate::nccl::Communicator)'s docs.

use core::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::nccl::bounded::run_bounded;
use crate::nccl::error::Error;
use crate::nccl::functions::Sym;
use crate::nccl::functions::{Function, Functions};
use crate::nccl::library::Nccl;
use crate::nccl::state::{Cause, CommState, Deadline};
use crate::nccl::types::NcclResult;

use super::{CallGuard, Shared};

impl Shared {
    /// Graceful end within `limit`, else abort: what `Drop` does. See [`Communicator`]'s docs.
    pub(crate) fn teardown(self: &Arc<Self>, limit: Option<Duration>) -> Result<(), Error> {
        if self.lost.load(Ordering::Acquire) {
            return Ok(());
        }
        let deadline = Deadline::after(limit);
        match self.state() {
            CommState::Ready => {}
            CommState::Aborted(_) | CommState::Destroyed | CommState::Lost(_) => return Ok(()),
            CommState::Creating | CommState::Failed(_) | CommState::Revoked => {
                return self.request_abort(Cause::Requested)
            }
        }
        // Work still running (known from the watchdog's events) is aborted, not waited for
        // inside NCCL: a kernel spinning on a dead peer never finishes.
        if let Some(w) = self.watchdog.get() {
            if let Err(cause) = w.drain(deadline) {
                return self.request_abort(cause);
            }
            w.stop();
        }
        if let Err(e) = self.finalize_within(deadline) {
            return match e {
                Error::Unusable { .. } => Ok(()),
                _ if self.lost.load(Ordering::Acquire) => Err(e),
                _ => self.request_abort(Cause::Timeout { operation: "ncclCommFinalize", waited: deadline.waited() }),
            };
        }
        self.destroy_within(deadline)
    }

    /// `ncclCommFinalize` within `deadline`: non-blocking, NCCL returns at once and the state is
    /// polled; blocking, the call runs on a bounded thread (abandoned at the deadline).
    pub(crate) fn finalize_within(self: &Arc<Self>, deadline: Deadline) -> Result<(), Error> {
        if !self.nccl.has_sym(Sym::CommFinalize) {
            return Ok(());
        }
        let r = self.bounded_call(|f| &f.comm_finalize, deadline)?;
        if r == NcclResult::IN_PROGRESS {
            self.saw_in_progress();
            return self.wait_done(Sym::CommFinalize, deadline);
        }
        if r.is_success() {
            Ok(())
        } else {
            Err(self.nccl.failure(Sym::CommFinalize, r, self.handle()))
        }
    }

    /// `ncclCommDestroy` on a bounded thread (it can wait for peers); abandoned at the deadline.
    pub(crate) fn destroy_within(self: &Arc<Self>, deadline: Deadline) -> Result<(), Error> {
        let r = self.bounded_call(|f| &f.comm_destroy, deadline)?;
        if r.is_success() {
            Ok(())
        } else {
            Err(self.nccl.failure(Sym::CommDestroy, r, core::ptr::null_mut()))
        }
    }

    /// Runs the one-argument call `function(comm)` on a thread with the communicator's context, under
    /// the call lock, waiting at most until `deadline`. At the deadline the call is abandoned
    /// (the communicator becomes `Lost`). `ncclCommDestroy` marks it destroyed when it returns.
    fn bounded_call(
        self: &Arc<Self>,
        function: fn(&Functions) -> &Function<(*mut c_void,), NcclResult>,
        deadline: Deadline,
    ) -> Result<NcclResult, Error> {
        let sym = function(self.nccl.functions()).sym();
        let me = Arc::clone(self);
        let destroys = sym == Sym::CommDestroy;
        let operation = Nccl::name(sym);
        let outcome = run_bounded(
            self.nccl.cuda_if_any().cloned().zip(self.context),
            deadline,
            &|| self.has_pending_abort.load(Ordering::Acquire),
            move || -> Result<NcclResult, Error> {
                let mut guard = me.enter_even_if_lost(operation)?;
                let comm = me.handle();
                // SAFETY: the handle is this communicator's, under its call lock.
                let r = unsafe { function(me.nccl.functions()).call(&me.nccl, (comm,)) }?;
                if destroys {
                    guard.set(CommState::Destroyed);
                } else {
                    guard.note(sym, r);
                }
                Ok(r)
            },
            || self.abandon(Cause::Timeout { operation, waited: deadline.waited() }),
            {
                let me = Arc::clone(self);
                move |_| me.finish_abandoned(destroys)
            },
        );
        match outcome {
            Some(r) => r,
            None if deadline.passed() => Err(Error::Timeout { operation, waited: deadline.waited() }),
            None => Err(Error::Unusable { operation, state: self.state() }),
        }
    }

    /// The call lock for a call the owner started before it may have abandoned it.
    fn enter_even_if_lost(&self, op: &'static str) -> Result<CallGuard<'_>, Error> {
        let guard = self.lock();
        match &*guard {
            CommState::Ready | CommState::Failed(_) | CommState::Revoked => {
                Ok(CallGuard { shared: self, state: Some(guard) })
            }
            s => Err(Error::Unusable { operation: op, state: s.clone() }),
        }
    }
}
