//! The watchdog: an opt-in thread per communicator that knows when each operation finished (a
//! CUDA event recorded after each enqueue on its stream), polls NCCL's asynchronous error, and
//! on a timeout or an error aborts the communicator (or marks it failed) and reports which
//! operation did not finish within how long. PyTorch's ProcessGroupNCCL watchdog works the
//! same way. The report never contains the unique id.
//!
//! Why: a peer that dies over NVLink or P2P is usually invisible to `ncclCommGetAsyncError`
//! (the kernel spins, the stream never drains); only the operation's age tells.

use core::ffi::c_void;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use crate::cuda::{Context, Driver};
use crate::nccl::types::enums::{DataType, NcclResult};
use crate::nccl::types::error::Error;
use crate::nccl::types::state::{Cause, Problem, WatchdogReport};
use crate::time::Deadline;
use crate::trace::trace_event;

/// What the watchdog does when an operation does not finish in time or NCCL reports an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchdogAction {
    /// `ncclCommAbort`: the spinning kernels exit, waits on the stream end, every later call
    /// returns [`Error::Unusable`]. The default; refused on a borrowed communicator
    /// ([`Ownership::Borrowed`](crate::nccl::Ownership::Borrowed)), which only its owner ends.
    Abort,
    /// Mark the communicator failed without calling NCCL: waits through the facade
    /// ([`Communicator::wait`](crate::nccl::Communicator::wait)) return at once, and the
    /// communicator stays allocated for
    /// [`Communicator::shrink`](crate::nccl::Communicator::shrink) with
    /// [`ShrinkMode::Abort`](crate::nccl::ShrinkMode::Abort) or a revoke.
    MarkFailed,
}

/// How the watchdog watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchdogConfig {
    /// How long an operation may run, from its enqueue to the end of its work on the stream.
    pub timeout: Duration,
    /// How often it looks (default: a twentieth of the timeout, between 1 ms and 100 ms).
    pub poll: Duration,
    /// What it does then.
    pub action: WatchdogAction,
}

impl WatchdogConfig {
    /// Abort on an operation older than `timeout`.
    pub fn new(timeout: Duration) -> Self {
        let poll = (timeout / 20).clamp(Duration::from_millis(1), Duration::from_millis(100));
        WatchdogConfig { timeout, poll, action: WatchdogAction::Abort }
    }

    /// The action.
    pub fn action(mut self, action: WatchdogAction) -> Self {
        self.action = action;
        self
    }

    /// The polling interval.
    pub fn poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }
}

/// What one enqueued operation was: enough to say which one did not finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpInfo {
    pub(crate) name: &'static str,
    pub(crate) count: usize,
    pub(crate) data_type: DataType,
    /// The root or peer, for the operations that have one.
    pub(crate) peer: Option<i32>,
}

/// What the watchdog acts on: a communicator, seen only through the three things the watchdog
/// does to it. The communicator's shared part implements it, so the watchdog knows nothing of
/// how a communicator is made or ended.
pub(crate) trait Watched: Send + Sync {
    /// `ncclCommGetAsyncError` if no other NCCL call is running on the communicator now.
    fn try_async_error(&self) -> Option<NcclResult>;
    /// Aborts the communicator (from this thread; pending while a blocking call holds it).
    fn abort(self: Arc<Self>, cause: Cause);
    /// Marks the communicator failed without calling NCCL.
    fn fail(&self, cause: Cause);
}

/// Events a watchdog makes when it starts.
const INITIAL_EVENTS: usize = 64;

/// Operations on one stream enqueued within this fraction of the timeout of the first are
/// tracked by one event, recorded again after each (see [`Watchdog::record`]); at most
/// [`MAX_SPAN`].
const SPAN_DIVISOR: u32 = 100;
const MAX_SPAN: Duration = Duration::from_millis(10);

/// One event and the operations it tracks: enqueued on one stream, the first at `enqueued`.
#[derive(Clone, Copy)]
struct Tracked {
    /// The first operation's number.
    sequence: u64,
    /// The first operation (the oldest, which a report names).
    op: OpInfo,
    event: *mut c_void,
    stream: *mut c_void,
    enqueued: Instant,
    /// The newest operation's number: a query's answer is about the recording it followed, so
    /// an entry is retired only if it was not recorded again meanwhile.
    last: u64,
    /// How many operations the event tracks.
    ops: u64,
}

struct Inner {
    queue: VecDeque<Tracked>,
    spare: Vec<*mut c_void>,
    next: u64,
    stopped: bool,
    report: Option<WatchdogReport>,
}

/// A communicator's watchdog (shared between the communicator, which records, and the thread).
pub(crate) struct Watchdog {
    driver: Arc<Driver>,
    context: Option<Context>,
    config: WatchdogConfig,
    inner: Mutex<Inner>,
    wake: Condvar,
}

// SAFETY: the raw pointers are CUDA event handles, used only under the mutex; the driver may
// be called from any thread.
unsafe impl Send for Watchdog {}
// SAFETY: as above.
unsafe impl Sync for Watchdog {}

impl Watchdog {
    /// A watchdog of the communicator whose NCCL device is `context`, with its first events made
    /// (not on the first operations' path); not yet watching.
    pub(crate) fn new(
        driver: Arc<Driver>,
        context: Option<Context>,
        config: WatchdogConfig,
    ) -> Result<Arc<Self>, Error> {
        let dog = Arc::new(Watchdog {
            driver,
            context,
            config,
            inner: Mutex::new(Inner {
                queue: VecDeque::new(),
                spare: Vec::new(),
                next: 0,
                stopped: false,
                report: None,
            }),
            wake: Condvar::new(),
        });
        let spare = (0..INITIAL_EVENTS).map(|_| dog.new_event()).collect::<Result<Vec<_>, Error>>();
        match spare {
            Ok(events) => dog.lock().spare = events,
            Err(e) => {
                dog.discard();
                return Err(e);
            }
        }
        Ok(dog)
    }

    /// Starts the thread that watches `watched`.
    pub(crate) fn spawn(self: &Arc<Self>, watched: Weak<dyn Watched>) -> Result<(), Error> {
        let theirs = Arc::clone(self);
        std::thread::Builder::new()
            .name("nccl-watchdog".into())
            .spawn(move || theirs.run(watched))
            .map_err(|e| Error::Thread { name: "nccl-watchdog", source: e.into() })?;
        Ok(())
    }

    /// Releases the events of a watchdog that never started.
    pub(crate) fn discard(&self) {
        self.release_events(&mut self.lock());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records an event after `op`, just enqueued on `stream`.
    ///
    /// The operations a stream runs finish in order, so the event recorded after the newest
    /// tracks every earlier one on it too. An operation enqueued on the stream of the newest
    /// entry, within a hundredth of the timeout (at most 10 ms) of that entry's first operation,
    /// records the entry's event again instead of taking one: no event query and no new entry
    /// on the hot path, one `cuEventRecord`. The entry keeps its first operation's enqueue time,
    /// so its age is that of its oldest operation; an operation is reported late at most that
    /// span early.
    pub(crate) fn record(&self, op: OpInfo, stream: *mut c_void) -> Result<(), Error> {
        self.record_ops(op, stream, 1)
    }

    /// [`record`](Self::record) after `ops` operations just enqueued on `stream`, `first` the
    /// first of them (a group's operations on one stream, at its end).
    pub(crate) fn record_ops(&self, first: OpInfo, stream: *mut c_void, ops: u64) -> Result<(), Error> {
        let now = Instant::now();
        let mut inner = self.lock();
        if inner.stopped {
            return Ok(());
        }
        inner.next += ops;
        let number = inner.next;
        let span = (self.config.timeout / SPAN_DIVISOR).min(MAX_SPAN);
        if let Some(newest) = inner.queue.back_mut().filter(|t| t.stream == stream && now - t.enqueued < span) {
            // SAFETY: a live event (the lock keeps the watchdog thread from destroying it) and
            // the stream the operation was just enqueued on.
            unsafe { self.driver.event_record_raw(newest.event, stream) }?;
            newest.last = number;
            newest.ops += ops;
            return Ok(());
        }
        // No event is created on this path while one can be reused: a spare one, else the
        // oldest outstanding one if its work is done (the GPU keeps up; the watchdog's thread
        // looks only every poll interval).
        let event = match inner.spare.pop() {
            Some(e) => e,
            // SAFETY: a live event: the lock keeps the watchdog thread from destroying it.
            None if inner
                .queue
                .front()
                .is_some_and(|f| unsafe { self.driver.event_query_raw(f.event) } == Ok(true)) =>
            {
                inner.queue.pop_front().expect("front exists").event
            }
            None => self.new_event()?,
        };
        // SAFETY: a live event and the stream the operation was just enqueued on.
        if let Err(e) = unsafe { self.driver.event_record_raw(event, stream) } {
            inner.spare.push(event);
            return Err(e.into());
        }
        let sequence = number + 1 - ops;
        inner.queue.push_back(Tracked { sequence, op: first, event, stream, enqueued: now, last: number, ops });
        Ok(())
    }

    /// The number of the newest operation recorded so far (see [`finished`](Self::finished)).
    pub(crate) fn recorded_so_far(&self) -> u64 {
        self.lock().next
    }

    /// Work queued on `stream` before an operation numbered `through` was recorded is known
    /// finished (a wait on the stream saw it): the entries it makes up are retired, so that an
    /// operation enqueued later starts an entry of its own and a report never names finished
    /// work.
    pub(crate) fn finished(&self, stream: *mut c_void, through: u64) {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let spare = &mut inner.spare;
        inner.queue.retain(|t| {
            let done = t.stream == stream && t.last <= through;
            if done {
                spare.push(t.event);
            }
            !done
        });
    }

    /// A new event on the communicator's context (an event and the stream it is recorded on
    /// must share a context; the thread's current one may be another GPU's, at a group's end).
    fn new_event(&self) -> Result<*mut c_void, Error> {
        let before = self.driver.current_context()?;
        let switch = self.context.is_some() && before != self.context;
        if switch {
            self.driver.set_current(self.context)?;
        }
        // SAFETY: a context is current; the event is destroyed by `stop`.
        let event = unsafe { self.driver.event_create_raw() };
        if switch {
            self.driver.set_current(before)?;
        }
        Ok(event?)
    }

    /// Stops watching; the thread exits at its next look and destroys the events (only that
    /// thread destroys them: it queries them without the lock).
    pub(crate) fn stop(&self) {
        self.lock().stopped = true;
        self.wake.notify_all();
    }

    pub(crate) fn wake(&self) {
        self.wake.notify_all();
    }

    fn release_events(&self, inner: &mut Inner) {
        for t in inner.queue.drain(..) {
            // SAFETY: created by this watchdog; destroying a recorded event is allowed (CUDA
            // releases it once its work completes).
            unsafe { self.driver.event_destroy_raw(t.event) };
        }
        for e in inner.spare.drain(..) {
            // SAFETY: as above.
            unsafe { self.driver.event_destroy_raw(e) };
        }
    }

    /// The report, once the watchdog acted.
    pub(crate) fn report(&self) -> Option<WatchdogReport> {
        self.lock().report.clone()
    }

    /// Retires finished operations; a report for the oldest one past the timeout, if any. The
    /// lock is not held while the driver is asked, so recording never waits behind a query.
    fn check(&self) -> Option<WatchdogReport> {
        loop {
            let t = *self.lock().queue.front()?;
            let sequence = t.sequence;
            // SAFETY: a live event of this watchdog: only this thread destroys events (when it
            // exits), and `drain` retires them under the lock.
            let done = unsafe { self.driver.event_query_raw(t.event) };
            let enqueued = t.enqueued;
            match done {
                Ok(true) => {
                    let mut inner = self.lock();
                    // Retired only if still the same entry, not recorded again since the query.
                    if inner.queue.front().map(|f| (f.sequence, f.last)) == Some((sequence, t.last)) {
                        let retired = inner.queue.pop_front().expect("front exists");
                        inner.spare.push(retired.event);
                    }
                }
                Ok(false) if enqueued.elapsed() < self.config.timeout => return None,
                // The recording thread may have retired and reused this event meanwhile: only a
                // front that is still this operation is late.
                Ok(false) if self.lock().queue.front().map(|f| f.sequence) != Some(sequence) => continue,
                Ok(false) => return Some(report(&t, Problem::NotFinished)),
                Err(crate::cuda::Error::Driver { code, .. }) => return Some(report(&t, Problem::Cuda { code })),
                Err(_) => return Some(report(&t, Problem::Cuda { code: -1 })),
            }
        }
    }

    /// The report for an asynchronous error, naming the oldest outstanding operation.
    fn async_report(&self, r: NcclResult, since: Instant) -> WatchdogReport {
        let inner = self.lock();
        match inner.queue.front() {
            Some(t) => report(t, Problem::AsyncError(r)),
            None => WatchdogReport {
                operation: None,
                sequence: inner.next,
                later: 0,
                count: 0,
                data_type: None,
                peer: None,
                waited: since.elapsed(),
                problem: Problem::AsyncError(r),
            },
        }
    }

    /// Waits (polling, within `deadline`) until every recorded operation finished: what `Drop`
    /// does before a graceful destroy. `Err`: the cause to abort with. Queries under the lock,
    /// so the watchdog thread cannot destroy an event meanwhile.
    pub(crate) fn drain(&self, deadline: Deadline) -> Result<(), Cause> {
        loop {
            {
                let mut inner = self.lock();
                while let Some(front) = inner.queue.front() {
                    // SAFETY: a live event: the lock keeps the watchdog thread from destroying it.
                    match unsafe { self.driver.event_query_raw(front.event) } {
                        Ok(true) => {
                            let retired = inner.queue.pop_front().expect("front exists");
                            inner.spare.push(retired.event);
                        }
                        Ok(false) if front.enqueued.elapsed() < self.config.timeout => break,
                        Ok(false) => return Err(Cause::Watchdog(Box::new(report(front, Problem::NotFinished)))),
                        Err(_) => return Err(Cause::Watchdog(Box::new(report(front, Problem::Cuda { code: -1 })))),
                    }
                }
                if inner.queue.is_empty() {
                    return Ok(());
                }
            }
            if deadline.passed() {
                return Err(Cause::Timeout { operation: "outstanding work at drop", waited: deadline.waited() });
            }
            std::thread::sleep(self.config.poll.min(deadline.left().unwrap_or(self.config.poll)));
        }
    }

    fn run(self: Arc<Self>, watched: Weak<dyn Watched>) {
        if self.context.is_some() {
            let _ = self.driver.set_current(self.context);
        }
        self.watch(watched);
        let mut inner = self.lock();
        inner.stopped = true;
        self.release_events(&mut inner);
    }

    fn watch(&self, watched: Weak<dyn Watched>) {
        let started = Instant::now();
        loop {
            {
                let inner = self.lock();
                if inner.stopped {
                    return;
                }
                let _ = self.wake.wait_timeout(inner, self.config.poll).unwrap_or_else(PoisonError::into_inner);
            }
            let Some(watched) = watched.upgrade() else { return };
            if self.lock().stopped {
                return;
            }
            let mut found = self.check();
            if found.is_none() {
                if let Some(r) = watched.try_async_error() {
                    if !r.is_success() && r != NcclResult::IN_PROGRESS {
                        found = Some(self.async_report(r, started));
                    }
                }
            }
            let Some(report) = found else { continue };
            trace_event!(
                nccl,
                ERROR,
                "watchdog.report",
                operation = report.operation,
                sequence = report.sequence,
                count = report.count,
                data_type = report.data_type.map(|t| t.0),
                peer = report.peer,
                waited_ms = crate::trace::ms(report.waited),
                problem = ?report.problem,
                action = ?self.config.action,
                report = %report,
                "the watchdog acts on a communicator"
            );
            self.lock().report = Some(report.clone());
            let cause = Cause::Watchdog(Box::new(report));
            match self.config.action {
                WatchdogAction::Abort => watched.abort(cause),
                WatchdogAction::MarkFailed => watched.fail(cause),
            }
            self.stop();
            return;
        }
    }
}

fn report(t: &Tracked, problem: Problem) -> WatchdogReport {
    WatchdogReport {
        operation: Some(t.op.name),
        sequence: t.sequence,
        later: t.ops - 1,
        count: t.op.count,
        data_type: Some(t.op.data_type),
        peer: t.op.peer,
        waited: t.enqueued.elapsed(),
        problem,
    }
}
