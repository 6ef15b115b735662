//! [`Delay`]: `embedded-hal-async`'s `DelayNs` on any [`TimerDriver`], so
//! that the ecosystem's async drivers wait on dinah's timers (a firmware's
//! `&Timers`, the hosted executor's timer handle) instead of spinning.
#![forbid(unsafe_code)]

use core::fmt;
use core::time::Duration;

use embedded_hal_async::delay::DelayNs;

use super::TimerDriver;

/// A delay provider over a [`TimerDriver`]: `embedded_hal_async`'s
/// [`DelayNs`], and [`delay`](Self::delay) for a [`Duration`].
///
/// # Guarantees
///
/// - A delay of `d` lasts at least `d`: `d` becomes ticks rounded up, plus
///   one tick, because the clock's reading when the delay starts may be up
///   to a tick behind the true time. So it lasts at most `d` plus two
///   ticks, plus the timer's lag (see the [module docs](super)).
/// - A delay of zero completes at once, without a timer.
/// - While it waits, its task sleeps: it is woken when the timer fires, as
///   by a [`Sleep`](super::Sleep), and a full store is handled as a
///   `Sleep` handles it.
///
/// Not promised: nanosecond resolution. A delay is as fine as its
/// driver's clock, so a `delay_ns(100)` on a 32,768 Hz clock waits one to
/// two ticks (31 to 61 µs).
#[derive(Clone)]
pub struct Delay<D: TimerDriver> {
    driver: D,
}

impl<D: TimerDriver> Delay<D> {
    /// A delay provider that waits on `driver`'s timers.
    pub fn new(driver: D) -> Self {
        Self { driver }
    }

    /// The driver it waits on.
    pub fn driver(&self) -> &D {
        &self.driver
    }

    /// Waits at least `duration` (see the type's guarantees).
    pub async fn delay(&mut self, duration: Duration) {
        if duration.is_zero() {
            return;
        }
        // One tick more than `after` gives: see the guarantees.
        let deadline = self.driver.after(duration).saturating_add_ticks(1);
        self.driver.clone().sleep_until(deadline).await;
    }
}

impl<D: TimerDriver> DelayNs for Delay<D> {
    async fn delay_ns(&mut self, ns: u32) {
        self.delay(Duration::from_nanos(u64::from(ns))).await;
    }

    async fn delay_us(&mut self, us: u32) {
        self.delay(Duration::from_micros(u64::from(us))).await;
    }

    async fn delay_ms(&mut self, ms: u32) {
        self.delay(Duration::from_millis(u64::from(ms))).await;
    }
}

impl<D: TimerDriver> fmt::Debug for Delay<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delay").finish_non_exhaustive()
    }
}
