//! Ending a communicator within a deadline: finalize, destroy, and abort when either does not
//! finish in time. What `Drop` runs; see [`Communicator`](crate::nccl::Communicator)'s docs.

use core::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::nccl::comm::bounded::{spawn_bounded, BoundedCall, CallThread, Exit};
use crate::nccl::comm::shared::QUERY_GRACE;
use crate::nccl::library::functions::Sym;
use crate::nccl::library::functions::{Function, Functions};
use crate::nccl::library::load::Nccl;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::nccl::types::state::{Cause, CommState};
use crate::nccl::types::version::Version;
use crate::time::Deadline;
use crate::trace::trace_event;

use super::{CallGuard, Home, Shared};

impl Shared {
    /// Graceful end within `limit`, else abort: what `Drop` does. See [`Communicator`]'s docs.
    pub(crate) fn teardown(self: &Arc<Self>, limit: Option<Duration>) -> Result<(), Error> {
        if self.is_borrowed() {
            // Its owner ends it: no NCCL call at all.
            self.release_borrowed();
            return Ok(());
        }
        if self.is_lost() {
            return Ok(());
        }
        let deadline = Deadline::after(limit);
        match self.state() {
            CommState::Ready => {}
            CommState::Aborted(_) | CommState::Destroyed | CommState::Lost(_) | CommState::Released => return Ok(()),
            CommState::Creating | CommState::Failed(_) | CommState::Revoked => {
                return self.request_abort(Cause::Requested, "drop");
            }
        }
        // Work still running (known from the watchdog's events) is aborted, not waited for
        // inside NCCL: a kernel spinning on a dead peer never finishes.
        if let Some(w) = self.watchdog.get() {
            if let Err(cause) = w.drain(deadline) {
                return self.request_abort(cause, "drop");
            }
            w.stop();
        }
        if self.finalized.load(Ordering::Acquire) {
            return self.destroy_within(deadline);
        }
        if let Err(e) = self.finalize_within(deadline) {
            return match e {
                Error::Unusable { .. } => Ok(()),
                _ if self.is_lost() => {
                    trace_event!(nccl, WARN, "teardown.finalize_failed", rank = self.rank_for_events(),
                        error = %e.for_events(), then = "lost",
                        "finalize at drop did not finish: the communicator is left to its thread");
                    Err(e)
                }
                _ => {
                    let cause = Cause::Timeout { operation: "ncclCommFinalize", waited: deadline.waited() };
                    trace_event!(nccl, WARN, "teardown.finalize_failed", rank = self.rank_for_events(),
                        error = %e.for_events(), then = "abort", "finalize at drop did not finish: the communicator is aborted");
                    self.request_abort(cause, "drop")
                }
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
        let (r, call) = self.bounded_call(|f| &f.comm_finalize, deadline)?;
        if r == NcclResult::IN_PROGRESS {
            self.saw_in_progress();
            self.wait_for_job(Sym::CommFinalize, call, deadline)?;
        }
        self.finalized.store(true, Ordering::Release);
        Ok(())
    }

    /// `ncclCommDestroy` on a bounded thread (it can wait for peers); abandoned at the deadline.
    pub(crate) fn destroy_within(self: &Arc<Self>, deadline: Deadline) -> Result<(), Error> {
        self.bounded_call(|f| &f.comm_destroy, deadline).map(drop)
    }

    /// Waits (until `deadline`) for the background job that the call on `call`'s thread
    /// started. Until NCCL's job is over the thread stays, and every abort of this communicator
    /// runs there ([`Home`]): before 2.27 the job lives in that thread's storage. Done, the
    /// thread is retired; on an error or timeout it stays until the abort that must follow.
    fn wait_for_job(
        self: &Arc<Self>,
        sym: Sym,
        call: BoundedCall<CallResult>,
        deadline: Deadline,
    ) -> Result<(), Error> {
        let thread = call.into_thread();
        let me = Arc::downgrade(self);
        let theirs = thread.clone();
        self.set_home(Some(Home {
            thread: thread.clone(),
            abort: Arc::new(move |cause| {
                let Some(me) = me.upgrade() else { return Ok(()) };
                let r = me.abort_on_this_thread(cause, Deadline::after(me.timeouts().teardown));
                me.set_home(None);
                // Aborted from its own thread, NCCL's job is joined; otherwise it may still run.
                theirs.release(if r.is_ok() { Exit::AfterWork } else { Exit::Never });
                r
            }),
        }));
        // Each poll runs there too: a query stuck inside NCCL holds up only that thread, and
        // aborts handed to it get in between polls.
        let stuck = std::sync::atomic::AtomicBool::new(false);
        let poll = || {
            let me = Arc::clone(self);
            let r = thread.run(deadline.with_grace(QUERY_GRACE), move || me.async_error());
            stuck.store(r.is_none(), Ordering::Release);
            r
        };
        let done = self.wait_done_with(sym, deadline, &poll);
        if stuck.load(Ordering::Acquire) {
            // Left to the thread like an abandoned call: it aborts once the query returns.
            self.abandon(Cause::Timeout { operation: Nccl::name(sym), waited: deadline.waited() });
            let (me, theirs) = (Arc::clone(self), thread.clone());
            thread.hand(Box::new(move || {
                let gone = me.finish_abandoned(false);
                me.set_home(None);
                theirs.release(if gone { Exit::AfterWork } else { Exit::Never });
            }));
        } else if done.is_ok() {
            self.set_home(None);
            retire(&self.nccl, &thread);
        }
        done
    }

    /// Runs the one-argument call `function(comm)` on a thread with the communicator's context,
    /// under the call lock, waiting at most until `deadline`; returns its result (success or
    /// `ncclInProgress`; a failure is the error, NCCL's texts read there too) and the thread,
    /// which waits for work until released (dropped). At the deadline the call is abandoned (the
    /// communicator becomes `Lost`). `ncclCommDestroy` marks it destroyed when it returns.
    fn bounded_call(
        self: &Arc<Self>,
        function: fn(&Functions) -> &Function<(*mut c_void,), NcclResult>,
        deadline: Deadline,
    ) -> Result<(NcclResult, BoundedCall<CallResult>), Error> {
        let sym = function(self.nccl.functions()).sym();
        let me = Arc::clone(self);
        let destroys = sym == Sym::CommDestroy;
        let operation = Nccl::name(sym);
        let cleanup = {
            let me = Arc::clone(self);
            move |_| if me.finish_abandoned(destroys) { Exit::AfterWork } else { Exit::Never }
        };
        let call = spawn_bounded(
            self.nccl.cuda_if_any().cloned().zip(self.context),
            move || -> CallResult {
                let mut guard = me.enter_even_if_lost(operation)?;
                let comm = me.handle();
                // SAFETY: the handle is this communicator's, under its call lock.
                let r = unsafe { function(me.nccl.functions()).call(&me.nccl, (comm,)) }?;
                if destroys {
                    guard.set(CommState::Destroyed);
                } else {
                    guard.note(sym, r);
                }
                match r {
                    r if r.is_success() || r == NcclResult::IN_PROGRESS => Ok(r),
                    r => Err(me.nccl.failure(sym, r, if destroys { core::ptr::null_mut() } else { comm })),
                }
            },
            cleanup,
        );
        let call = call.map_err(|e| Error::Thread { name: "nccl-bounded-call", source: e.into() })?;
        let abandon = || self.abandon(Cause::Timeout { operation, waited: deadline.waited() });
        match call.wait(deadline, &|| self.has_abort_request(), abandon) {
            Some(r) => Ok((r?, call)),
            None if deadline.passed() => {
                trace_event!(
                    nccl,
                    WARN,
                    "comm.call_abandoned",
                    operation,
                    rank = self.rank_for_events(),
                    waited_ms = crate::trace::ms(deadline.waited()),
                    "a blocking finalize or destroy was still inside NCCL at its deadline: the communicator is lost"
                );
                Err(Error::Timeout { operation, waited: deadline.waited() })
            }
            None => Err(Error::Unusable { operation, state: self.state() }),
        }
    }

    /// The call lock for a call the owner started before it may have abandoned it.
    fn enter_even_if_lost(&self, op: &'static str) -> Result<CallGuard<'_>, Error> {
        let held = self.gate.hold();
        match self.state() {
            CommState::Ready | CommState::Failed(_) | CommState::Revoked | CommState::Lost(_) => {
                Ok(CallGuard { shared: self, held: Some(held) })
            }
            s => Err(Error::Unusable { operation: op, state: s }),
        }
    }
}

/// What a call on a bounded thread returned.
type CallResult = Result<NcclResult, Error>;

/// Ends a thread whose call started a non-blocking job now observed done. NCCL 2.14 to 2.18
/// join such a job only when the thread that started it begins its next group
/// (`ncclGroupStartInternal`, v2.18.3-1 src/include/group.h:89-100; v2.14.3-1 src/group.cc
/// `ncclGroupStart`): an empty group there joins it. From 2.19 the successful
/// `ncclCommGetAsyncError` that saw it done joined it (v2.19.3-1 src/init.cc), and from 2.27
/// the job is on the heap.
pub(crate) fn retire(nccl: &Nccl, thread: &CallThread) {
    let v = nccl.version();
    if v >= Version::new(2, 14, 0) && v < Version::new(2, 19, 0) {
        let theirs = nccl.clone();
        thread.hand(Box::new(move || {
            // SAFETY: `ncclGroupStart(void)` and `ncclGroupEnd(void)`, one empty group on this
            // thread; what they return changes nothing here.
            unsafe {
                let _ = theirs.functions().group_start.call(&theirs, ());
                let _ = theirs.functions().group_end.call(&theirs, ());
            }
        }));
    }
    thread.release(Exit::AfterWork);
}
