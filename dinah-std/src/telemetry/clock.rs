//! The host's two [`Clock`]s: [`StdClock`], its monotonic clock, and
//! [`ManualClock`], one that moves only when told to.
#![forbid(unsafe_code)]

use std::fmt;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use dinah_core::telemetry::Clock;

/// The host's monotonic clock, in nanoseconds since the first `StdClock`
/// of the process was made. Every `StdClock` reads the same time, so one
/// made by `Default` anywhere agrees with another.
///
/// It reads the CPU's counter where that counter is invariant (x86-64 with
/// an invariant TSC, aarch64's system counter), through
/// [`quanta`](https://docs.rs/quanta): a few instructions per reading,
/// scaled to nanoseconds by a calibration against the OS clock made once
/// per process (at most 200 ms, usually about 1 ms). Elsewhere, and under
/// Miri and loom, it reads [`Instant`](std::time::Instant). Readings on one
/// thread never go back; across threads they may differ by the counters'
/// skew (tens of nanoseconds), which the runtimes' figures absorb by
/// taking a later stamp's difference from an earlier one as at least 0. A
/// `u64` of nanoseconds lasts about 584 years before it saturates.
#[derive(Clone, Copy)]
pub struct StdClock {
    origin: &'static Origin,
}

impl StdClock {
    /// The process's clock (its origin is fixed by the first call).
    #[must_use]
    pub fn new() -> Self {
        Self { origin: origin() }
    }
}

impl fmt::Debug for StdClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdClock").finish_non_exhaustive()
    }
}

impl Default for StdClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for StdClock {
    #[inline]
    fn now(&self) -> u64 {
        self.origin.nanos()
    }

    fn ticks_per_second(&self) -> u64 {
        1_000_000_000
    }
}

/// Where every `StdClock` counts from.
fn origin() -> &'static Origin {
    static ORIGIN: OnceLock<Origin> = OnceLock::new();
    ORIGIN.get_or_init(Origin::new)
}

#[cfg(not(any(miri, loom)))]
struct Origin {
    clock: quanta::Clock,
    start: u64,
}

#[cfg(not(any(miri, loom)))]
impl Origin {
    fn new() -> Self {
        let clock = quanta::Clock::new();
        let start = clock.raw();
        Self { clock, start }
    }

    #[inline]
    fn nanos(&self) -> u64 {
        self.clock.delta_as_nanos(self.start, self.clock.raw())
    }
}

/// Miri and loom do not run the counter's instructions: the OS clock.
#[cfg(any(miri, loom))]
struct Origin {
    start: std::time::Instant,
}

#[cfg(any(miri, loom))]
impl Origin {
    fn new() -> Self {
        Self {
            start: std::time::Instant::now(),
        }
    }

    fn nanos(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
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
