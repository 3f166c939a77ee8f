//! Deadlines and the pause between polls: one notion of "until when" for every wait in the
//! crate (the CUDA driver's stream waits, the facade's calls and teardown, the rendezvous, the
//! launchers), and one way of waiting for a condition that another thread or NCCL changes.

use std::time::{Duration, Instant};

/// A point in time after which a wait gives up; none for "no limit". Any `Duration`, including
/// `Duration::MAX`, is accepted (it never overflows an `Instant`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    start: Instant,
    limit: Option<Duration>,
}

impl Deadline {
    /// `limit` from now; `None` waits without limit.
    pub(crate) fn after(limit: Option<Duration>) -> Self {
        Deadline { start: Instant::now(), limit }
    }

    /// `timeout` from now, where a timeout too large to be a point in time (`Duration::MAX`, as
    /// the rendezvous and the launchers take it) means no limit.
    pub(crate) fn within(timeout: Duration) -> Self {
        let start = Instant::now();
        Deadline { start, limit: start.checked_add(timeout).map(|_| timeout) }
    }

    /// The limit it was made with (`None`: none).
    pub(crate) fn limit(&self) -> Option<Duration> {
        self.limit
    }

    /// Time left (`Some(ZERO)` once passed), or `None` without a limit.
    pub(crate) fn left(&self) -> Option<Duration> {
        self.limit.map(|l| l.saturating_sub(self.start.elapsed()))
    }

    pub(crate) fn passed(&self) -> bool {
        self.left() == Some(Duration::ZERO)
    }

    pub(crate) fn waited(&self) -> Duration {
        self.start.elapsed()
    }

    /// This deadline moved `by` later (no limit stays no limit).
    pub(crate) fn later(self, by: Duration) -> Self {
        Deadline { start: self.start, limit: self.limit.map(|l| l.saturating_add(by)) }
    }

    /// This deadline, or `grace` from now if that is later: a query issued at the deadline
    /// still gets a moment to return.
    pub(crate) fn with_grace(self, grace: Duration) -> Self {
        match self.left() {
            Some(left) if left < grace => Deadline::after(Some(grace)),
            _ => self,
        }
    }

    /// The earlier of this deadline and `limit` from now, as a point in time.
    pub(crate) fn capped(&self, limit: Duration) -> Instant {
        let now = Instant::now();
        let by_limit = now.checked_add(limit).unwrap_or(now);
        match self.left() {
            Some(left) => now + left.min(by_limit.saturating_duration_since(now)),
            None => by_limit,
        }
    }
}

/// The pause between polls of something another thread (or NCCL, or the GPU) changes: a few
/// rounds of yielding, then sleeps growing from 20 µs to 1 ms, never past the deadline.
pub(crate) struct Backoff {
    round: u32,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff { round: 0 }
    }

    /// Pauses before the next poll; `left` is the time until the deadline, if any.
    pub(crate) fn pause(&mut self, left: Option<Duration>) {
        self.round = self.round.saturating_add(1);
        if self.round < 64 {
            core::hint::spin_loop();
            std::thread::yield_now();
            return;
        }
        let step = Duration::from_micros(20u64 << (self.round - 64).min(6)).min(Duration::from_millis(1));
        std::thread::sleep(left.map_or(step, |l| step.min(l)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_too_large_for_an_instant_is_no_limit() {
        let d = Deadline::within(Duration::MAX);
        assert_eq!(d.left(), None);
        assert!(!d.passed());
        assert_eq!(Deadline::after(Some(Duration::MAX)).left().map(|l| l > Duration::from_secs(1 << 40)), Some(true));
    }

    #[test]
    fn a_zero_limit_has_passed_and_grace_extends_it() {
        let d = Deadline::after(Some(Duration::ZERO));
        assert!(d.passed());
        let g = d.with_grace(Duration::from_secs(5));
        assert!(!g.passed());
        assert!(d.later(Duration::from_secs(5)).left().is_some_and(|l| l > Duration::from_secs(4)));
    }

    #[test]
    fn capped_takes_the_earlier() {
        let now = Instant::now();
        let short = Deadline::within(Duration::from_secs(1)).capped(Duration::from_secs(60));
        assert!(short <= now + Duration::from_secs(2));
        let long = Deadline::within(Duration::MAX).capped(Duration::from_secs(3));
        assert!(long >= now + Duration::from_secs(2) && long <= Instant::now() + Duration::from_secs(3));
    }
}
