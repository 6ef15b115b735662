//! The host's two [`Clock`]s: [`StdClock`], its monotonic clock, and
//! [`ManualClock`], one that moves only when told to.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dinah_core::telemetry::Clock;

/// The host's monotonic clock, in nanoseconds since the clock was made.
///
/// It reads [`Instant`], so it never goes back; a `u64` of nanoseconds
/// lasts about 584 years before it saturates.
#[derive(Clone, Copy, Debug)]
pub struct StdClock {
    origin: Instant,
}

impl StdClock {
    /// A clock whose origin is now.
    #[must_use]
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for StdClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for StdClock {
    fn now(&self) -> u64 {
        // Seconds and nanoseconds as they are: no 128-bit product on the way.
        let since = self.origin.elapsed();
        since
            .as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(since.subsec_nanos()))
    }

    fn ticks_per_second(&self) -> u64 {
        1_000_000_000
    }
}

/// A clock that moves only when told to: for tests and simulations that
/// must see the same durations on every run. Ticks are nanoseconds.
///
/// Clones share one reading.
///
/// ```
/// use std::time::Duration;
/// use dinah::telemetry::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let same = clock.clone();
/// clock.advance(Duration::from_millis(3));
/// assert_eq!(same.now(), 3_000_000);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading zero.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `by` (saturating).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let mut now = self.nanos.load(Ordering::Relaxed);
        while let Err(actual) = self.nanos.compare_exchange_weak(
            now,
            now.saturating_add(by),
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            now = actual;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> u64 {
        self.nanos.load(Ordering::Relaxed)
    }

    fn ticks_per_second(&self) -> u64 {
        1_000_000_000
    }
}
