//! Time: futures that wait for a deadline ([`Sleep`], `timeout`,
//! [`Interval`]), the store that serves them on firmware ([`Timers`]), a
//! 32-bit counter widened to 64 bits ([`WideCounter`]), the tickless
//! idle that sets the binary's alarm ([`Tickless`], [`Alarm`]), and
//! division by a fixed number without a division routine ([`Divisor`]),
//! which the timers' conversions use so that a 32-bit core links none.
//!
//! # The path of a timer
//!
//! A timer future records a deadline in ticks of one [`Clock`]; on its
//! first poll it takes an entry of a timer store and arms it there with its
//! task's waker. Whoever drives the store (the [`Tickless`] idle of a
//! firmware's run loop, or the hosted executor) reads the clock, fires the
//! entries that are due and wakes their tasks. The woken task polls the
//! future, which completes. Dropping the future gives its entry back, and
//! cancels the timer if it is still armed. A firmware's fixed store keeps
//! its armed timers in a binary heap (O(log N) for a store of `N`, and its
//! next expiry is the earliest deadline, so the alarm is set for deadlines
//! only); a host's growing store in a timer wheel (O(1)).
//!
//! # Clock policy
//!
//! - Deadlines are [`Instant`]s: ticks of the store's [`Clock`], which is
//!   monotonic (it never goes back; a wall clock that can be set is not a
//!   `Clock`). A 32-bit hardware counter is widened with [`WideCounter`].
//!   Spans are [`Duration`]s, turned into ticks by the driver.
//! - A duration becomes ticks rounded **up**, so a timer never completes
//!   before its duration has passed: **early** never happens.
//! - **Lag** is the time from the deadline to the poll that sees the timer
//!   complete, in the store's clock; it is recorded for each completion
//!   ([`TimerFigures::lag_micros`]). A completion is **late** when its lag
//!   exceeds the store's threshold. Lag has three sources: the clock's
//!   resolution, the wait between the alarm and the next check of the
//!   timers, and the wait in the ready queue behind other tasks (or behind
//!   a poll that holds the thread).
//!
//! # What is not promised
//!
//! Timers due at the same tick fire in no promised order. A timer store
//! serves the tasks of one executor; its wakers may be anyone's.
#![forbid(unsafe_code)]

use core::future::Future;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::raw::timer::TimerKey;
#[cfg(doc)]
use crate::telemetry::Clock;

mod alarm;
#[cfg(feature = "embedded-hal-async")]
mod delay;
mod error;
mod instant;
mod interval;
mod sleep;
mod timers;
mod wide;

pub use crate::raw::timer::Divisor;
pub use crate::raw::timer::TimerFigures;
pub use alarm::{Alarm, Tickless};
#[cfg(feature = "embedded-hal-async")]
pub use delay::Delay;
pub use error::{Elapsed, TimerFull, ZeroPeriod};
pub use instant::Instant;
pub use interval::{Interval, MissedTicks};
pub use sleep::Sleep;
pub use timers::Timers;
pub use wide::WideCounter;

/// What serves timer futures: a clock and a store of timers. A firmware's
/// `&Timers` is one; the hosted executor's timer handle is another.
///
/// The timer futures ([`Sleep`], [`Interval`], [`timeout`](Self::timeout))
/// are written once against this trait.
///
/// Contract for implementers: [`now`](Self::now) is monotonic;
/// [`poll_timer`](Self::poll_timer) returns `Ready` only once the deadline
/// is reached by the clock (or by the store's own time, which never runs
/// ahead of the clock), and otherwise arranges for the waker to be woken
/// once it is; [`release`](Self::release) cancels.
pub trait TimerDriver: Clone + Unpin {
    /// The clock's reading.
    fn now(&self) -> Instant;

    /// The clock's ticks per second.
    fn ticks_per_second(&self) -> u64;

    /// Takes an entry for a timer, or `None` when the store is full.
    fn reserve(&self) -> Option<TimerKey>;

    /// One poll of a timer for `deadline`: whether it reached the deadline,
    /// and if not, armed to wake `cx`'s waker. `key` is the timer's entry,
    /// or `None` on its first poll, when an entry is reserved first (in the
    /// same step, so that a store behind a lock takes it once). Returns the
    /// key to keep, which is `None` (with `Pending`, and nothing armed) when
    /// the store is full.
    fn poll_timer(
        &self,
        key: Option<TimerKey>,
        deadline: Instant,
        cx: &mut Context<'_>,
    ) -> (Option<TimerKey>, Poll<()>);

    /// Gives `key`'s entry back, cancelling its timer.
    fn release(&self, key: TimerKey);

    /// The instant `duration` from now, rounded up to a whole tick (so a
    /// deadline made from it never comes early), saturating at
    /// [`Instant::MAX`].
    fn after(&self, duration: Duration) -> Instant {
        self.now()
            .saturating_add_ticks(ticks_in(duration, self.ticks_per_second()))
    }

    /// A future that completes once `duration` has passed, counted from
    /// now. If the store is full when it is first polled, see [`Sleep`].
    fn sleep(self, duration: Duration) -> Sleep<Self>
    where
        Self: Sized,
    {
        let deadline = self.after(duration);
        Sleep::new(self, deadline, None)
    }

    /// A future that completes once the clock reads `deadline` (at once if
    /// it does already).
    fn sleep_until(self, deadline: Instant) -> Sleep<Self>
    where
        Self: Sized,
    {
        Sleep::new(self, deadline, None)
    }

    /// [`sleep`](Self::sleep) with its entry taken now.
    ///
    /// # Errors
    ///
    /// [`TimerFull`] when the store has no free entry.
    fn try_sleep(self, duration: Duration) -> Result<Sleep<Self>, TimerFull>
    where
        Self: Sized,
    {
        let key = self.reserve().ok_or(TimerFull)?;
        let deadline = self.after(duration);
        Ok(Sleep::new(self, deadline, Some(key)))
    }

    /// Runs `future` for at most `duration`: its output, or [`Elapsed`]
    /// when the time ran out first (then `future` is dropped unfinished).
    /// `future` is polled before the timer, so a future that is ready in
    /// the same poll as the deadline wins.
    fn timeout<F: Future>(
        self,
        duration: Duration,
        future: F,
    ) -> impl Future<Output = Result<F::Output, Elapsed>>
    where
        Self: Sized,
    {
        race_deadline(self.sleep(duration), future)
    }

    /// Runs `future` until the clock reads `deadline`: its output, or
    /// [`Elapsed`] when the deadline came first (then `future` is dropped
    /// unfinished). As [`timeout`](Self::timeout), `future` is polled
    /// before the timer.
    fn timeout_at<F: Future>(
        self,
        deadline: Instant,
        future: F,
    ) -> impl Future<Output = Result<F::Output, Elapsed>>
    where
        Self: Sized,
    {
        race_deadline(self.sleep_until(deadline), future)
    }

    /// An [`Interval`] whose first tick is due now and every later one
    /// `period` after the one before, with `missed` as its rule for ticks
    /// it fell behind on.
    ///
    /// # Errors
    ///
    /// [`ZeroPeriod`] when `period` is shorter than one tick.
    fn interval(self, period: Duration, missed: MissedTicks) -> Result<Interval<Self>, ZeroPeriod>
    where
        Self: Sized,
    {
        let start = self.now();
        Interval::new(self, start, period, missed)
    }
}

/// Polls `future`, then `sleep`, until one is done.
pub(crate) async fn race_deadline<D: TimerDriver, F: Future>(
    mut sleep: Sleep<D>,
    future: F,
) -> Result<F::Output, Elapsed> {
    let mut future = core::pin::pin!(future);
    core::future::poll_fn(move |cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match core::pin::Pin::new(&mut sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// `duration` in ticks of a clock of `ticks_per_second`, rounded up and
/// saturating at `u64::MAX`.
#[must_use]
pub fn ticks_in(duration: Duration, ticks_per_second: u64) -> u64 {
    const BILLION: Divisor = Divisor::new(1_000_000_000);
    let whole = duration.as_secs().saturating_mul(ticks_per_second);
    let part =
        BILLION.div_ceil(u64::from(duration.subsec_nanos()).saturating_mul(ticks_per_second));
    whole.saturating_add(part)
}

// Loom builds make the ready queue's constructor non-`const`; these tests
// use it in `static`s and are not models.
#[cfg(all(test, not(loom)))]
mod tests;
