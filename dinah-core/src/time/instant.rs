//! [`Instant`]: a reading of a timer driver's clock, as a type of its own.
#![forbid(unsafe_code)]

/// A point in time on one [`TimerDriver`](super::TimerDriver)'s clock:
/// ticks since the clock began. Deadlines of the timer futures are
/// `Instant`s, so that a deadline cannot be passed where a count, a length
/// or a duration is meant, nor one of those where a deadline is.
///
/// A span of time is a [`core::time::Duration`]: the driver turns it into
/// ticks (rounded up) with [`TimerDriver::after`](super::TimerDriver::after)
/// and [`ticks_in`](super::ticks_in). The raw ticks stay reachable with
/// [`ticks`](Self::ticks) and [`from_ticks`](Self::from_ticks), for a clock
/// of the binary's own or a log line.
///
/// Not promised: that two drivers' `Instant`s compare meaningfully (each
/// counts its own clock's ticks from its own start; the type does not say
/// which clock it belongs to), nor any rate: the driver's
/// [`ticks_per_second`](super::TimerDriver::ticks_per_second) gives it.
///
/// Why not `fugit`'s instants: they fix the tick rate in the type, as a
/// constant the crate is compiled with, where dinah's drivers report
/// theirs when they run (the hosted timers count microseconds, a
/// firmware's clock counts what its counter counts), and `dinah-core`
/// keeps to its four dependencies. A firmware that wants `fugit`'s types
/// converts at its edge with [`ticks`](Self::ticks).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Instant(u64);

impl Instant {
    /// The clock's start: tick 0.
    pub const ZERO: Self = Self(0);
    /// The last tick there is; a deadline that saturates lands here, which
    /// no clock reaches in practice (a 1 GHz counter takes 584 years).
    pub const MAX: Self = Self(u64::MAX);

    /// The instant `ticks` ticks after the clock's start.
    #[must_use]
    pub const fn from_ticks(ticks: u64) -> Self {
        Self(ticks)
    }

    /// Ticks since the clock's start.
    #[must_use]
    pub const fn ticks(self) -> u64 {
        self.0
    }

    /// `ticks` later, saturating at [`MAX`](Self::MAX).
    #[must_use]
    pub const fn saturating_add_ticks(self, ticks: u64) -> Self {
        Self(self.0.saturating_add(ticks))
    }

    /// `ticks` later, or `None` past [`MAX`](Self::MAX).
    #[must_use]
    pub const fn checked_add_ticks(self, ticks: u64) -> Option<Self> {
        match self.0.checked_add(ticks) {
            Some(later) => Some(Self(later)),
            None => None,
        }
    }

    /// Ticks from `earlier` to this instant; 0 when `earlier` is not
    /// earlier.
    #[must_use]
    pub const fn ticks_since(self, earlier: Self) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}
