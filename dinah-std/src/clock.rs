//! [`StdClock`]: the host's monotonic clock for telemetry.

use std::time::Instant;

use dinah_core::Clock;

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
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn ticks_per_second(&self) -> u64 {
        1_000_000_000
    }
}
