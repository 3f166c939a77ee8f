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

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::cuda::{Context, Driver};
use crate::nccl::state::Deadline;

enum Outcome<T> {
    Running,
    Done(T),
    Abandoned,
}

struct Handoff<T> {
    outcome: Mutex<Outcome<T>>,
    ready: Condvar,
}

/// How often a waiting caller checks `cancel`.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// A call running on its own thread; see [`spawn_bounded`].
pub(crate) struct BoundedCall<T> {
    handoff: Arc<Handoff<T>>,
}

/// Starts `call` on a new thread with `context` current. If the caller abandons it, `cleanup`
/// runs on that thread with the value, if the call ever returns. `None` if no thread could be
/// started (nothing ran).
pub(crate) fn spawn_bounded<T: Send + 'static>(
    context: Option<(Arc<Driver>, Context)>,
    call: impl FnOnce() -> T + Send + 'static,
    cleanup: impl FnOnce(T) + Send + 'static,
) -> Option<BoundedCall<T>> {
    let handoff = Arc::new(Handoff { outcome: Mutex::new(Outcome::Running), ready: Condvar::new() });
    let theirs = Arc::clone(&handoff);
    std::thread::Builder::new()
        .name("nccl-bounded-call".into())
        .spawn(move || {
            if let Some((driver, ctx)) = &context {
                // Without its context NCCL would run on device 0; a failure shows in NCCL's result.
                let _ = driver.set_current(Some(*ctx));
            }
            let value = call();
            let mut outcome = theirs.outcome.lock().unwrap_or_else(PoisonError::into_inner);
            if matches!(*outcome, Outcome::Abandoned) {
                drop(outcome);
                cleanup(value);
            } else {
                *outcome = Outcome::Done(value);
                theirs.ready.notify_all();
            }
        })
        .ok()?;
    Some(BoundedCall { handoff })
}

impl<T> BoundedCall<T> {
    /// Waits until the call returns (its value), or until `deadline` passes or `cancel()` turns
    /// true: then the call is abandoned, `abandon` runs here (before any cleanup can), and the
    /// result is `None`.
    pub(crate) fn wait(&self, deadline: Deadline, cancel: &dyn Fn() -> bool, abandon: impl FnOnce()) -> Option<T> {
        let mut outcome = self.handoff.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if matches!(*outcome, Outcome::Done(_)) {
                let Outcome::Done(v) = core::mem::replace(&mut *outcome, Outcome::Running) else { unreachable!() };
                return Some(v);
            }
            if deadline.passed() || cancel() {
                *outcome = Outcome::Abandoned;
                abandon();
                return None;
            }
            let wait = deadline.left().map_or(CANCEL_POLL, |l| l.min(CANCEL_POLL));
            outcome = self.handoff.ready.wait_timeout(outcome, wait).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// The value if the call has returned, without waiting.
    pub(crate) fn try_take(&self) -> Option<T> {
        let mut outcome = self.handoff.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        match core::mem::replace(&mut *outcome, Outcome::Running) {
            Outcome::Done(v) => Some(v),
            other => {
                *outcome = other;
                None
            }
        }
    }

    /// Abandons the call now unless it has returned (then its value); `abandon` runs here first.
    pub(crate) fn abandon(&self, abandon: impl FnOnce()) -> Option<T> {
        self.wait(Deadline::after(Some(Duration::ZERO)), &|| true, abandon)
    }
}

/// Runs `call` on a new thread with `context` current and waits for it until `deadline`, or
/// until `cancel()` turns true. Returns its value, or `None` when it was abandoned: then
/// `abandon` has run on this thread before any `cleanup` can, and `cleanup` runs on the call's
/// thread with the value, if the call ever returns.
pub(crate) fn run_bounded<T: Send + 'static>(
    context: Option<(Arc<Driver>, Context)>,
    deadline: Deadline,
    cancel: &dyn Fn() -> bool,
    call: impl FnOnce() -> T + Send + 'static,
    abandon: impl FnOnce(),
    cleanup: impl FnOnce(T) + Send + 'static,
) -> Option<T> {
    match spawn_bounded(context, call, cleanup) {
        Some(c) => c.wait(deadline, cancel, abandon),
        None => {
            abandon();
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

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
}
