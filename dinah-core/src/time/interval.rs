//! [`Interval`]: ticks at a fixed period, with a rule for missed ticks.
#![forbid(unsafe_code)]

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use super::{Instant, Sleep, TimerDriver, ZeroPeriod, ticks_in};
use crate::raw::timer::bitwise_div_rem;

/// What an [`Interval`] does when it fell behind: when a tick completes
/// more than one period late, so that the due time of the tick after it
/// has already passed. (A tick completed exactly one period late is not
/// behind: the next tick is due that instant and the schedule stays.)
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MissedTicks {
    /// Every missed tick is delivered, one after another without waiting,
    /// until the interval is back on its schedule (the default; tokio's
    /// `Burst`).
    #[default]
    Burst,
    /// The schedule moves: the next tick is due one period after the late
    /// one completed.
    Delay,
    /// Missed ticks are dropped: the next tick is the first one of the
    /// original schedule that is not yet past (one due at that very
    /// instant counts).
    Skip,
}

/// Ticks every `period`, from a start; made by [`TimerDriver::interval`].
///
/// [`tick`](Self::tick) completes at each due time and returns it (in
/// ticks of the driver's clock). Ticks that fall behind follow the
/// interval's [`MissedTicks`] rule, which says when that is.
///
/// The period is counted in whole ticks of the driver's clock, rounded up
/// as a sleep's duration is (a 1.5 µs period on a microsecond clock is
/// 2 µs); a period shorter than one tick is refused with [`ZeroPeriod`].
///
/// Not promised: how late each tick completes (see the [module
/// docs](super) on lag). The interval keeps one timer entry from its first
/// tick to its drop.
pub struct Interval<D: TimerDriver> {
    sleep: Sleep<D>,
    period: u64,
    missed: MissedTicks,
}

impl<D: TimerDriver> Interval<D> {
    pub(super) fn new(
        driver: D,
        start: Instant,
        period: Duration,
        missed: MissedTicks,
    ) -> Result<Self, ZeroPeriod> {
        let per_second = driver.ticks_per_second();
        // Shorter than one tick: under a second, and its nanoseconds times
        // the rate under a billion (no division needed).
        if period.as_secs() == 0
            && u64::from(period.subsec_nanos()).saturating_mul(per_second) < 1_000_000_000
        {
            return Err(ZeroPeriod);
        }
        let period = ticks_in(period, per_second);
        Ok(Self {
            sleep: Sleep::new(driver, start, None),
            period,
            missed,
        })
    }

    /// The period, in ticks.
    #[must_use]
    pub fn period(&self) -> u64 {
        self.period
    }

    /// The rule for missed ticks.
    #[must_use]
    pub fn missed_ticks(&self) -> MissedTicks {
        self.missed
    }

    /// When the next tick is due.
    #[must_use]
    pub fn next_due(&self) -> Instant {
        self.sleep.deadline()
    }

    /// Completes at the next due time and returns it.
    ///
    /// Dropping the future before it completes leaves the schedule as it
    /// was: the next `tick` waits for the same due time.
    pub fn tick(&mut self) -> impl Future<Output = Instant> + '_ {
        core::future::poll_fn(|cx| self.poll_tick(cx))
    }

    /// [`tick`](Self::tick) as a poll: `Ready` with the due time once it is
    /// reached, after which the next one is scheduled.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        if Pin::new(&mut self.sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        let due = self.sleep.deadline().ticks();
        let now = self.sleep.driver().now().ticks();
        let next = due.saturating_add(self.period);
        // Behind only once the next due time is past (see `MissedTicks`).
        let next = if now <= next {
            next
        } else {
            match self.missed {
                MissedTicks::Burst => next,
                MissedTicks::Delay => now.saturating_add(self.period),
                MissedTicks::Skip => {
                    // The first tick of the grid after `now`: `now` less
                    // how far it is past a tick, plus a period. Rare (ticks
                    // were missed), so the small bitwise division rather
                    // than a library call.
                    let past = bitwise_div_rem(now - due, self.period).1;
                    if past == 0 {
                        now
                    } else {
                        (now - past).saturating_add(self.period)
                    }
                }
            }
        };
        self.sleep.reset(Instant::from_ticks(next));
        Poll::Ready(Instant::from_ticks(due))
    }
}

impl<D: TimerDriver> fmt::Debug for Interval<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interval")
            .field("next_due", &self.sleep.deadline())
            .field("period", &self.period)
            .field("missed", &self.missed)
            .finish()
    }
}
