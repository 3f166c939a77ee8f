//! NCCL calls with a deadline that NCCL cannot interrupt: a blocking `ncclCommInitRank` waiting
//! for a peer that died, `ncclCommFinalize` or `ncclCommDestroy` behind a hung kernel. Such a
//! call runs on a thread of its own, with the caller's CUDA context current there (NCCL uses the
//! calling thread's device); the caller waits at most until its deadline. A call still running
//! then is abandoned: the thread keeps everything the call may touch alive (every argument it
//! owns, the memory NCCL writes into), and when the call returns — if it ever does — it cleans
//! up what it made, because nobody else will.
//!
//! NCCL offers no safe way to stop a blocking call from another thread: `ncclCommAbort` frees
//! the communicator the call is still using (NCCL v2.30.7-1 src/init.cc:3025-3060 reclaims it
//! after `ncclCommEnsureReady`, which joins only non-blocking group jobs). Abandoning is the
//! only memory-safe bound; non-blocking communicators are bounded by a real abort instead.
//!
//! **The thread outlives its call.** Before 2.27, NCCL keeps a non-blocking call's group job in
//! the thread-local storage of the thread that made the call (v2.26.6-1 src/group.cc:20-23,
//! the job's address handed to NCCL's own thread at :575), and NCCL's thread writes into it
//! until it ends; before 2.19 only an abort *from that thread* joins the job (`ncclGroupJobAbort`
//! on the thread's own `ncclGroupJobMainPtr`, v2.18.3-1 src/group.cc). So after the call returns
//! the thread stays, running the [`Work`] its owner hands it (the abort that stops NCCL's job,
//! the call that joins it), until its owner [releases](BoundedCall::release) it; a thread whose
//! job NCCL may still be running is told to stay for good ([`Exit::Never`]) rather than free
//! storage NCCL writes.
//!
//! **Cleanups finish before the process does.** An abandoned call until its cleanup is done,
//! and the work these threads do after a call — a creation's stop, an abort on a thread of its
//! own — are counted while they run ([`Busy`]), and the process's exit waits for them, at most
//! [`EXIT_WAIT`] (so a program whose call never returns, a blocking init waiting for a dead
//! peer, takes that long to exit): a program that returns from `main` right after a creation timed out would
//! otherwise tear the CUDA driver down under NCCL's abort (seen on an H200 with NCCL 2.28.9:
//! "Cuda failure 'driver shutting down'", then a segmentation fault at exit). The wait is an
//! `atexit` handler registered on first use, after the CUDA driver's own, so it runs first.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::cuda::{Context, Driver};
use crate::time::Deadline;

/// Something to run on a bounded call's thread after its call returned.
pub(crate) type Work = Box<dyn FnOnce() + Send>;

/// When a released thread ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Once the work handed to it has run.
    AfterWork,
    /// Never: NCCL may still write the thread's storage (a job that nothing could join).
    Never,
}

enum Outcome<T> {
    Running,
    /// The call returned; the work handed to the thread meanwhile runs before the value is
    /// handed over (it can no longer be abandoned).
    Returning,
    Done(T),
    Taken,
    Abandoned,
}

struct Inner<T> {
    outcome: Outcome<T>,
    work: VecDeque<Work>,
    /// Set by [`BoundedCall::release`] (or its drop): end once the work is done.
    exit: Option<Exit>,
    /// The thread has ended (or never started): work handed to it would never run.
    gone: bool,
    /// Held from the abandon until the cleanup is done.
    abandoned: Option<Busy>,
}

struct Handoff<T> {
    inner: Mutex<Inner<T>>,
    ready: Condvar,
}

impl<T> Handoff<T> {
    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How often a waiting caller checks `cancel`.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// How long the process's exit waits for cleanups in progress.
#[cfg(all(unix, not(miri)))]
pub(crate) const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Cleanups running on the facade's own threads, which the process's exit waits for.
static CLEANUPS: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

/// A cleanup in progress (see the module's documentation): counted while it lives.
pub(crate) struct Busy(());

impl Busy {
    pub(crate) fn start() -> Busy {
        // (Miri has no `atexit`: its runs only count.)
        #[cfg(all(unix, not(miri)))]
        {
            static AT_EXIT: std::sync::Once = std::sync::Once::new();
            AT_EXIT.call_once(|| {
                // SAFETY: `wait_for_cleanups` is an `extern "C" fn()` that never unwinds.
                unsafe {
                    libc::atexit(wait_for_cleanups);
                }
            });
        }
        *CLEANUPS.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        Busy(())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut n = CLEANUPS.0.lock().unwrap_or_else(PoisonError::into_inner);
        *n -= 1;
        if *n == 0 {
            CLEANUPS.1.notify_all();
        }
    }
}

/// At exit: waits until no cleanup runs, at most [`EXIT_WAIT`].
#[cfg(all(unix, not(miri)))]
extern "C" fn wait_for_cleanups() {
    let deadline = Deadline::after(Some(EXIT_WAIT));
    let mut n = CLEANUPS.0.lock().unwrap_or_else(PoisonError::into_inner);
    while *n > 0 {
        let Some(left) = deadline.left().filter(|l| !l.is_zero()) else { return };
        n = CLEANUPS.1.wait_timeout(n, left).unwrap_or_else(PoisonError::into_inner).0;
    }
}

/// A call running on its own thread; see [`spawn_bounded`]. Dropping it releases the thread
/// ([`Exit::AfterWork`]) unless it was released already.
pub(crate) struct BoundedCall<T> {
    handoff: Arc<Handoff<T>>,
    /// Given up by [`into_thread`](Self::into_thread): dropping it releases nothing.
    detached: bool,
}

/// Hands work to a bounded call's thread from anywhere, and releases it (see
/// [`BoundedCall::thread`], [`BoundedCall::into_thread`]).
#[derive(Clone)]
pub(crate) struct CallThread(Arc<dyn Control>);

/// What a [`CallThread`] reaches, whatever the call's value type.
trait Control: Send + Sync {
    fn hand(&self, work: Work) -> bool;
    fn release(&self, exit: Exit);
    fn call_returned(&self) -> bool;
}

impl core::fmt::Debug for CallThread {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CallThread")
    }
}

/// Starts `call` on a new thread with `context` current. If the caller abandons it, `cleanup`
/// runs on that thread with the value, if the call ever returns, and the thread ends after the
/// work handed to it. An error if no thread could be started (nothing ran).
pub(crate) fn spawn_bounded<T: Send + 'static>(
    context: Option<(Arc<Driver>, Context)>,
    call: impl FnOnce() -> T + Send + 'static,
    cleanup: impl FnOnce(T) -> Exit + Send + 'static,
) -> std::io::Result<BoundedCall<T>> {
    let handoff = Arc::new(Handoff {
        inner: Mutex::new(Inner {
            outcome: Outcome::Running,
            work: VecDeque::new(),
            exit: None,
            gone: false,
            abandoned: None,
        }),
        ready: Condvar::new(),
    });
    let theirs = Arc::clone(&handoff);
    std::thread::Builder::new().name("nccl-bounded-call".into()).spawn(move || {
        if let Some((driver, ctx)) = &context {
            // Without its context NCCL would run on device 0; a failure shows in NCCL's result.
            let _ = driver.set_current(Some(*ctx));
        }
        let value = call();
        let mut inner = theirs.lock();
        if !matches!(inner.outcome, Outcome::Abandoned) {
            // Work handed while the call ran (an abort that had to wait for it) runs before
            // the owner sees the value, so the owner sees what it did.
            inner.outcome = Outcome::Returning;
            while let Some(work) = inner.work.pop_front() {
                drop(inner);
                let busy = Busy::start();
                work();
                drop(busy);
                inner = theirs.lock();
            }
        }
        if matches!(inner.outcome, Outcome::Abandoned) {
            drop(inner);
            let exit = cleanup(value);
            inner = theirs.lock();
            inner.abandoned = None;
            inner.exit = Some(inner.exit.map_or(exit, |e| if exit == Exit::Never { exit } else { e }));
        } else {
            inner.outcome = Outcome::Done(value);
            theirs.ready.notify_all();
        }
        serve(&theirs, inner);
    })?;
    Ok(BoundedCall { handoff, detached: false })
}

/// The thread's life after its call: run the work handed to it until released.
fn serve<'h, T>(handoff: &'h Handoff<T>, mut inner: MutexGuard<'h, Inner<T>>) {
    loop {
        if let Some(work) = inner.work.pop_front() {
            drop(inner);
            let busy = Busy::start();
            work();
            drop(busy);
            inner = handoff.lock();
            continue;
        }
        match inner.exit {
            Some(Exit::AfterWork) => break,
            // NCCL may still write this thread's storage: it never ends (and never spins).
            Some(Exit::Never) | None => {
                inner = handoff.ready.wait(inner).unwrap_or_else(PoisonError::into_inner);
            }
        }
    }
    inner.gone = true;
    handoff.ready.notify_all();
}

impl<T: Send + 'static> BoundedCall<T> {
    /// Waits until the call returns (its value), or until `deadline` passes or `cancel()` turns
    /// true: then the call is abandoned, `abandon` runs here (before any cleanup can), and the
    /// result is `None`.
    pub(crate) fn wait(&self, deadline: Deadline, cancel: &dyn Fn() -> bool, abandon: impl FnOnce()) -> Option<T> {
        let mut inner = self.handoff.lock();
        loop {
            if let Some(v) = take(&mut inner) {
                return Some(v);
            }
            if matches!(inner.outcome, Outcome::Abandoned | Outcome::Taken) {
                return None;
            }
            if matches!(inner.outcome, Outcome::Running) && (deadline.passed() || cancel()) {
                inner.outcome = Outcome::Abandoned;
                inner.abandoned = Some(Busy::start());
                abandon();
                return None;
            }
            let wait = match deadline.left() {
                Some(left) if !left.is_zero() => left.min(CANCEL_POLL),
                _ => CANCEL_POLL,
            };
            inner = self.handoff.ready.wait_timeout(inner, wait).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// The value if the call has returned, without waiting.
    pub(crate) fn try_take(&self) -> Option<T> {
        take(&mut self.handoff.lock())
    }

    /// Abandons the call now unless it has returned (then its value); `abandon` runs here first.
    pub(crate) fn abandon(&self, abandon: impl FnOnce()) -> Option<T> {
        self.wait(Deadline::after(Some(Duration::ZERO)), &|| true, abandon)
    }

    /// A handle that hands work to this thread from anywhere.
    pub(crate) fn thread(&self) -> CallThread {
        CallThread(Arc::clone(&self.handoff) as Arc<dyn Control>)
    }

    /// Gives up ownership without releasing the thread: whoever holds a [`CallThread`] of it
    /// releases it (until then it waits for work).
    pub(crate) fn into_thread(mut self) -> CallThread {
        self.detached = true;
        self.thread()
    }

    /// Lets the thread end as `exit` says once the work handed to it has run.
    pub(crate) fn release(&self, exit: Exit) {
        self.handoff.release(exit);
    }
}

impl<T: Send> Control for Handoff<T> {
    fn hand(&self, work: Work) -> bool {
        let mut inner = self.lock();
        // An abandoned call's thread runs its cleanup, then the work already handed to it.
        if inner.gone || inner.exit == Some(Exit::AfterWork) {
            return false;
        }
        inner.work.push_back(work);
        self.ready.notify_all();
        true
    }

    fn release(&self, exit: Exit) {
        let mut inner = self.lock();
        if inner.exit != Some(Exit::Never) {
            inner.exit = Some(exit);
        }
        self.ready.notify_all();
    }

    fn call_returned(&self) -> bool {
        !matches!(self.lock().outcome, Outcome::Running | Outcome::Returning | Outcome::Abandoned)
    }
}

impl<T> Drop for BoundedCall<T> {
    fn drop(&mut self) {
        if self.detached {
            return;
        }
        let mut inner = self.handoff.lock();
        if inner.exit.is_none() && !matches!(inner.outcome, Outcome::Abandoned) {
            inner.exit = Some(Exit::AfterWork);
        }
        self.handoff.ready.notify_all();
    }
}

fn take<T>(inner: &mut Inner<T>) -> Option<T> {
    if !matches!(inner.outcome, Outcome::Done(_)) {
        return None;
    }
    match core::mem::replace(&mut inner.outcome, Outcome::Taken) {
        Outcome::Done(v) => Some(v),
        _ => None,
    }
}

impl CallThread {
    /// Hands `work` to the thread; it runs after the call (and any earlier work). Returns false
    /// if the thread has ended, or will end without running it (abandoned and cleaned up, or
    /// released).
    pub(crate) fn hand(&self, work: Work) -> bool {
        self.0.hand(work)
    }

    /// True once the call returned and its owner has it: work handed now runs at once.
    pub(crate) fn call_returned(&self) -> bool {
        self.0.call_returned()
    }

    /// Lets the thread end as `exit` says once the work handed to it has run.
    pub(crate) fn release(&self, exit: Exit) {
        self.0.release(exit);
    }

    /// Runs `work` on the thread and waits for its value until `deadline`: `None` if the
    /// thread has ended, or the deadline passed first (the work still runs later, if the thread
    /// gets to it).
    pub(crate) fn run<R: Send + 'static>(
        &self,
        deadline: Deadline,
        work: impl FnOnce() -> R + Send + 'static,
    ) -> Option<R> {
        let reply: Arc<(Mutex<Option<R>>, Condvar)> = Arc::new((Mutex::new(None), Condvar::new()));
        let theirs = Arc::clone(&reply);
        let handed = self.0.hand(Box::new(move || {
            let value = work();
            *theirs.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(value);
            theirs.1.notify_all();
        }));
        if !handed {
            return None;
        }
        let mut slot = reply.0.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(v) = slot.take() {
                return Some(v);
            }
            let wait = match deadline.left() {
                Some(Duration::ZERO) => return None,
                Some(left) => left,
                None => Duration::from_secs(3600),
            };
            slot = reply.1.wait_timeout(slot, wait).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Runs `call` on a new thread with `context` current and waits for it until `deadline`, or
    /// until `cancel()` turns true. Returns its value, or `None` when it was abandoned: then
    /// `abandon` has run on this thread before any `cleanup` can, and `cleanup` runs on the call's
    /// thread with the value, if the call ever returns. The thread ends with the call.
    fn run_bounded<T: Send + 'static>(
        context: Option<(Arc<Driver>, Context)>,
        deadline: Deadline,
        cancel: &dyn Fn() -> bool,
        call: impl FnOnce() -> T + Send + 'static,
        abandon: impl FnOnce(),
        cleanup: impl FnOnce(T) + Send + 'static,
    ) -> Option<T> {
        let cleanup = move |v| {
            cleanup(v);
            Exit::AfterWork
        };
        match spawn_bounded(context, call, cleanup) {
            Ok(c) => c.wait(deadline, cancel, abandon),
            Err(_) => {
                abandon();
                None
            }
        }
    }

    #[test]
    fn a_call_that_returns_in_time_gives_its_value() {
        let v = run_bounded(None, Deadline::after(Some(Duration::from_secs(5))), &|| false, || 7, || panic!(), |_| {});
        assert_eq!(v, Some(7));
    }

    #[test]
    fn a_call_past_its_deadline_is_abandoned_and_cleans_up_when_it_returns() {
        let cleaned = Arc::new(AtomicBool::new(false));
        let c = Arc::clone(&cleaned);
        let started = std::time::Instant::now();
        let mut abandoned = false;
        let v = run_bounded(
            None,
            Deadline::after(Some(Duration::from_millis(50))),
            &|| false,
            || {
                std::thread::sleep(Duration::from_millis(300));
                5
            },
            || abandoned = true,
            move |v| c.store(v == 5, Ordering::SeqCst),
        );
        assert_eq!(v, None);
        assert!(abandoned);
        assert!(started.elapsed() < Duration::from_millis(250), "{:?}", started.elapsed());
        std::thread::sleep(Duration::from_millis(400));
        assert!(cleaned.load(Ordering::SeqCst), "the abandoned call's value was cleaned up");
    }

    #[test]
    fn cancel_abandons_before_the_deadline_and_no_limit_does_not_overflow() {
        let started = std::time::Instant::now();
        let v = run_bounded(
            None,
            Deadline::after(Some(Duration::MAX)),
            &|| started.elapsed() > Duration::from_millis(30),
            || std::thread::sleep(Duration::from_millis(200)),
            || {},
            |_| {},
        );
        assert_eq!(v, None);
        assert!(started.elapsed() < Duration::from_millis(150));
    }

    /// Work handed to the thread runs there, after the call and in order, until release.
    #[test]
    fn the_thread_outlives_its_call_and_runs_work_on_itself_until_released() {
        let call = spawn_bounded(None, || std::thread::current().id(), |_| Exit::AfterWork).unwrap();
        let deadline = Deadline::after(Some(Duration::from_secs(5)));
        let caller = call.wait(deadline, &|| false, || {}).unwrap();
        let thread = call.thread();
        assert_eq!(thread.run(deadline, || std::thread::current().id()), Some(caller), "the call's own thread");
        let order = Arc::new(AtomicUsize::new(0));
        for i in 0..3 {
            let o = Arc::clone(&order);
            assert!(call.thread().hand(Box::new(move || assert_eq!(o.fetch_add(1, Ordering::SeqCst), i))));
        }
        call.release(Exit::AfterWork);
        assert_eq!(thread.run(deadline, || ()), None, "released: nothing more is taken");
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(order.load(Ordering::SeqCst), 3, "work handed before the release ran");
    }

    /// Work handed while the call runs waits for it; a run past its deadline is `None`.
    #[test]
    fn work_waits_for_the_call_and_a_run_past_its_deadline_gives_none() {
        let call = spawn_bounded(None, || std::thread::sleep(Duration::from_millis(300)), |_| Exit::AfterWork).unwrap();
        let thread = call.thread();
        let started = std::time::Instant::now();
        assert_eq!(thread.run(Deadline::after(Some(Duration::from_millis(50))), || 1), None);
        assert!(started.elapsed() < Duration::from_millis(200));
        assert_eq!(thread.run(Deadline::after(Some(Duration::from_secs(5))), || 2), Some(2));
        assert!(started.elapsed() >= Duration::from_millis(300), "after the call");
    }

    /// An abandoned call's thread runs its cleanup when the call returns, then the work
    /// already handed to it, and ends on its own.
    #[test]
    fn an_abandoned_call_cleans_up_then_runs_the_work_handed_to_it() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s1, s2) = (Arc::clone(&seen), Arc::clone(&seen));
        let call = spawn_bounded(
            None,
            || std::thread::sleep(Duration::from_millis(100)),
            move |()| {
                s1.lock().unwrap().push("cleanup");
                Exit::AfterWork
            },
        )
        .unwrap();
        assert_eq!(call.abandon(|| {}), None);
        assert!(call.thread().hand(Box::new(move || s2.lock().unwrap().push("work"))));
        drop(call);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(*seen.lock().unwrap(), ["cleanup", "work"]);
    }
}
