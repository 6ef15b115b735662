//! Time on the hosted executor: [`sleep`], [`timeout`], [`interval`] and
//! their kin, served by the timers of the
//! [`LocalExecutor`](crate::executor::LocalExecutor) that polls them, and a
//! clock a test can pause ([`ExecutorConfig::start_paused`](crate::executor::ExecutorConfig::start_paused)).
//!
//! Each executor keeps one store of timers (a growing store ordered by a
//! timer wheel, see [`dinah_core::raw::timer::Wheel`]) and drives it itself: at the start of each
//! tick it fires the timers that are due, and when no task is ready it
//! parks until the next deadline; a wake from another thread cuts that
//! park short. There is no timer thread. The clock is the host's monotonic
//! clock, read in microseconds.
//!
//! The futures are dinah-core's ([`Sleep`],
//! [`Interval`]) over a [`TimerHandle`]; the
//! free functions here find the handle of the executor that runs on this
//! thread.
//!
//! # What a timer costs
//!
//! A sleep made, polled once and dropped on its executor's thread (the
//! timeout that did not fire) reads the clock once and takes the store's
//! lock twice, and touches no reference count in the common case:
//!
//! - the lock is a spin lock whose unlock is a plain store (a thread that
//!   finds it held yields; it is held only for the wheel's O(1) work, never
//!   while user code runs);
//! - a released entry keeps its task's waker, so the task's next timer in
//!   that entry needs no waker clone (kept wakers are let go when the
//!   executor ends; a waker an entry replaces is dropped after the lock);
//! - a handle dropped on the thread of its (current) executor is kept for
//!   the next [`current`] (a few per thread), so the free functions do not
//!   count references either.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use dinah_core::raw::timer::{TimerBook, TimerKey};
pub use dinah_core::time::Instant;
use dinah_core::time::{
    Elapsed, Interval, MissedTicks, Sleep, TimerDriver, TimerFigures, ZeroPeriod,
};

use crate::runtime::timers::{HostTimers, MICROS};
use crate::runtime::{Driver, context};

/// A handle to one executor's timers: a [`TimerDriver`], so it makes
/// sleeps, timeouts and intervals (the free functions of this module use
/// the handle of the executor running on this thread). `Send + Sync`,
/// cheap to clone.
///
/// Its clock reads microseconds since the executor was made; it is the
/// host's monotonic clock, or, for an executor made with
/// [`start_paused`](crate::executor::ExecutorConfig::start_paused), a
/// clock that moves only when the executor is idle (to the next deadline)
/// or when [`advance`](Self::advance) moves it.
///
/// A handle of the current executor dropped on its thread is kept for the
/// next [`current`] (up to a few per thread), so a task that makes timers
/// in a loop pays no reference count for their handles.
pub struct TimerHandle {
    /// `Some` until the handle's drop takes it, to keep it for reuse.
    shared: Option<Arc<Driver>>,
}

impl TimerHandle {
    pub(crate) fn new(driver: Arc<Driver>) -> Self {
        Self {
            shared: Some(driver),
        }
    }

    #[inline]
    fn driver(&self) -> &Arc<Driver> {
        match &self.shared {
            Some(driver) => driver,
            None => taken(),
        }
    }

    #[inline]
    fn timers(&self) -> &HostTimers {
        self.driver().timers()
    }

    /// The clock's reading: microseconds since the executor's clock began
    /// ([`Instant::ticks`]).
    #[must_use]
    pub fn now(&self) -> Instant {
        Instant::from_ticks(self.timers().now())
    }

    /// Whether the clock is paused (virtual).
    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.timers().paused_clock().is_some()
    }

    /// Moves a paused clock forward by `by`. Timers that come due fire at
    /// the executor's next tick.
    ///
    /// # Errors
    ///
    /// [`ClockNotPaused`] when the clock is the real one.
    pub fn advance(&self, by: Duration) -> Result<(), ClockNotPaused> {
        let clock = self.timers().paused_clock().ok_or(ClockNotPaused)?;
        clock.advance(by);
        Ok(())
    }

    /// The timers' figures: armed, fired, cancelled, refused, late, lag.
    #[must_use]
    pub fn figures(&self) -> TimerFigures {
        self.timers().figures()
    }

    /// Whether two handles reach the same timers.
    #[must_use]
    pub fn same_timers(&self, other: &Self) -> bool {
        Arc::ptr_eq(self.driver(), other.driver())
    }

    /// A poll of `key`'s timer, against the clock.
    fn poll_armed(&self, key: TimerKey, deadline: u64, cx: &mut Context<'_>) -> Poll<()> {
        let timers = self.timers();
        let now = timers.now();
        let (poll, earlier, replaced) = timers.with(|book| {
            let poll = book.poll(key, deadline, now, MICROS, cx.waker());
            let earlier = poll.is_pending() && timers.armed_for(deadline);
            (poll, earlier, book.store_mut().replaced.take())
        });
        drop(replaced);
        self.cut_wait_short(earlier);
        if poll.is_pending() && timers.noting() {
            context::note_armed(deadline.saturating_sub(now));
        }
        poll
    }

    /// A timer's first poll: its entry and its arming in one lock, against
    /// the wheel's time (no clock read).
    fn first_poll(&self, deadline: u64, cx: &mut Context<'_>) -> (Option<TimerKey>, Poll<()>) {
        let timers = self.timers();
        let (key, poll, earlier, wheel_time, replaced) = timers.with(|book| {
            let (key, poll) = book.start(deadline, cx.waker());
            let earlier = key.is_some() && poll.is_pending() && timers.armed_for(deadline);
            (
                key,
                poll,
                earlier,
                book.queue().elapsed(),
                book.store_mut().replaced.take(),
            )
        });
        drop(replaced);
        self.cut_wait_short(earlier);
        if key.is_some() && poll.is_pending() && timers.noting() {
            // Against the wheel's time, a lower bound of the clock: the
            // telemetry may think the timer due a little later than it is.
            context::note_armed(deadline.saturating_sub(wheel_time));
        }
        (key, poll)
    }

    /// After a timer was armed earlier than the store's next work: the
    /// executor's thread may be waiting until a later deadline (or none),
    /// so it is made to wait anew. On its own thread, where it is running,
    /// this costs one swap and one more look before it waits.
    #[inline]
    fn cut_wait_short(&self, earlier: bool) {
        if earlier {
            self.driver().unpark();
        }
    }
}

impl TimerDriver for TimerHandle {
    fn now(&self) -> Instant {
        TimerHandle::now(self)
    }

    fn ticks_per_second(&self) -> u64 {
        1_000_000
    }

    fn reserve(&self) -> Option<TimerKey> {
        self.timers().with(TimerBook::reserve)
    }

    fn poll_timer(
        &self,
        key: Option<TimerKey>,
        deadline: Instant,
        cx: &mut Context<'_>,
    ) -> (Option<TimerKey>, Poll<()>) {
        let deadline = deadline.ticks();
        match key {
            Some(key) => (Some(key), self.poll_armed(key, deadline, cx)),
            None => self.first_poll(deadline, cx),
        }
    }

    fn release(&self, key: TimerKey) {
        let waker = self.timers().with(|book| book.release(key));
        drop(waker);
    }
}

/// A handle's timers were used after its drop took them: not reachable
/// (only `drop` takes them).
#[cold]
fn taken() -> ! {
    unreachable!("dinah: a timer handle's timers were taken by its drop")
}

impl Clone for TimerHandle {
    fn clone(&self) -> Self {
        Self::new(Arc::clone(self.driver()))
    }
}

impl Drop for TimerHandle {
    /// Keeps the reference for the next [`current`] when it is to this
    /// thread's current executor and fewer than eight are kept; otherwise
    /// lets it go.
    fn drop(&mut self) {
        if let Some(driver) = self.shared.take() {
            context::keep(driver);
        }
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHandle")
            .field("now", &self.now())
            .field("paused", &self.is_paused())
            .finish_non_exhaustive()
    }
}

/// [`TimerHandle::advance`] was asked to move the real clock.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct ClockNotPaused;

impl fmt::Display for ClockNotPaused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("only a paused clock can be advanced")
    }
}

impl std::error::Error for ClockNotPaused {}

/// The timers of the executor made, or entered (by `block_on` or `tick`),
/// last on this thread, or `None` when there is none or it was dropped.
/// So `executor.block_on(time::sleep(d))` uses `executor`'s timers, and a
/// task always uses those of the executor that polls it.
#[must_use]
pub fn try_current() -> Option<TimerHandle> {
    context::current().map(TimerHandle::new)
}

/// [`try_current`], for the free functions.
///
/// # Panics
///
/// When no live executor was made or entered on this thread.
#[must_use]
pub fn current() -> TimerHandle {
    try_current().unwrap_or_else(|| {
        panic!(
            "dinah: no executor on this thread (a LocalExecutor made or entered here, or a \
             MultiExecutor's task or block_on), so there are no timers to wait on; call time \
             functions from its tasks, or use a TimerHandle"
        )
    })
}

/// The current executor's clock: microseconds since it began
/// ([`Instant::ticks`]).
///
/// # Panics
///
/// As [`current`].
#[must_use]
pub fn now() -> Instant {
    current().now()
}

/// A future that completes once `duration` has passed (see
/// [`Sleep`]), on the timers of the executor
/// running on this thread.
///
/// # Panics
///
/// As [`current`]: outside a task or `block_on` of a live executor.
#[must_use]
pub fn sleep(duration: Duration) -> Sleep<TimerHandle> {
    current().sleep(duration)
}

/// A future that completes once the current executor's clock reads
/// `deadline` (in microseconds: [`Instant::from_ticks`]).
///
/// # Panics
///
/// As [`current`].
#[must_use]
pub fn sleep_until(deadline: Instant) -> Sleep<TimerHandle> {
    current().sleep_until(deadline)
}

/// Runs `future` for at most `duration`: its output, or [`Elapsed`] (and
/// `future` dropped) when the time ran out first. Works for any future,
/// including a pool's [`JoinHandle`](crate::task::JoinHandle).
///
/// # Panics
///
/// As [`current`].
pub fn timeout<F: Future>(
    duration: Duration,
    future: F,
) -> impl Future<Output = Result<F::Output, Elapsed>> {
    current().timeout(duration, future)
}

/// An interval on the current executor's timers: first tick now, then one
/// every `period` (rounded up to whole microseconds, the clock's tick),
/// with `missed` as its rule for ticks it fell behind on (see
/// [`MissedTicks`] for when that is).
///
/// # Errors
///
/// [`ZeroPeriod`] when `period` is under a microsecond (one tick).
///
/// # Panics
///
/// As [`current`].
pub fn interval(
    period: Duration,
    missed: MissedTicks,
) -> Result<Interval<TimerHandle>, ZeroPeriod> {
    current().interval(period, missed)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::runtime::context::{SPARES, enter, leave};

    fn driver() -> Arc<Driver> {
        Arc::new(Driver::new(crate::primitives::current(), true, false))
    }

    #[test]
    fn dropped_handles_are_kept_for_the_next_only_while_their_timers_are_current() {
        let (mine, other) = (driver(), driver());
        enter(&mine);
        assert_eq!(Arc::strong_count(&mine), 2, "the current reference");
        let handles: Vec<TimerHandle> = (0..SPARES + 2).map(|_| current()).collect();
        assert_eq!(Arc::strong_count(&mine), 2 + SPARES + 2);
        drop(handles);
        // At most `SPARES` kept; the others let go.
        assert_eq!(Arc::strong_count(&mine), 2 + SPARES);
        let reused = current();
        assert_eq!(
            Arc::strong_count(&mine),
            2 + SPARES,
            "taken from the spares"
        );
        // A handle of other timers is not kept.
        drop(TimerHandle::new(Arc::clone(&other)));
        assert_eq!(Arc::strong_count(&other), 1);
        // Entering other timers lets the spares go; so does leaving.
        enter(&other);
        assert_eq!(Arc::strong_count(&mine), 2, "the test's and `reused`");
        drop(reused);
        assert_eq!(Arc::strong_count(&mine), 1, "not kept: no longer current");
        leave(&other);
        assert_eq!(Arc::strong_count(&other), 1);
        assert!(try_current().is_none());
    }
}
