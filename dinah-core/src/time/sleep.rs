//! [`Sleep`]: a future that completes at a deadline.
#![forbid(unsafe_code)]

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use super::{Instant, TimerDriver};
use crate::raw::timer::TimerKey;

/// A future that completes once its driver's clock reaches its deadline;
/// made by [`TimerDriver::sleep`] and its kin.
///
/// # Guarantees
///
/// - It never completes before the deadline (durations round up to whole
///   ticks), and it completes once polled at or after it.
/// - While it waits, its timer is armed with the waker of its latest poll:
///   the task is woken when the timer fires, with no polling in between.
/// - Dropping it cancels its timer and gives its entry back: O(1) in a
///   host's store, O(log N) in a firmware's store of `N`.
///
/// # A full store
///
/// If the store has no free entry on a poll, the future stays correct but
/// stops being cheap: it wakes its own task at once (so the executor polls
/// it again in its next tick) and tries again, until an entry frees up or
/// the deadline passes. No wake is lost; each such poll counts in
/// [`TimerFigures::refused`](super::TimerFigures::refused).
/// [`TimerDriver::try_sleep`] takes the entry up front instead and reports
/// a full store as [`TimerFull`](super::TimerFull).
///
/// Not promised: how late it completes (see the [module docs](super) on
/// lag).
pub struct Sleep<D: TimerDriver> {
    driver: D,
    deadline: Instant,
    key: Option<TimerKey>,
    done: bool,
}

impl<D: TimerDriver> Sleep<D> {
    pub(super) fn new(driver: D, deadline: Instant, key: Option<TimerKey>) -> Self {
        Self {
            driver,
            deadline,
            key,
            done: false,
        }
    }

    /// The deadline, on the driver's clock.
    #[must_use]
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether it has completed.
    #[must_use]
    pub fn is_elapsed(&self) -> bool {
        self.done
    }

    /// Waits for `deadline` instead, keeping its entry (if it has one): a
    /// completed sleep can be waited on again.
    pub fn reset(&mut self, deadline: Instant) {
        self.deadline = deadline;
        self.done = false;
    }

    /// The driver that serves it.
    #[must_use]
    pub fn driver(&self) -> &D {
        &self.driver
    }
}

impl<D: TimerDriver> Future for Sleep<D> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(());
        }
        let (key, poll) = this.driver.poll_timer(this.key, this.deadline, cx);
        this.key = key;
        let poll = match (key, poll) {
            (None, _) if this.driver.now() >= this.deadline => Poll::Ready(()),
            (None, _) => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            (Some(_), poll) => poll,
        };
        this.done = poll.is_ready();
        poll
    }
}

impl<D: TimerDriver> Drop for Sleep<D> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.driver.release(key);
        }
    }
}

impl<D: TimerDriver> fmt::Debug for Sleep<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}
