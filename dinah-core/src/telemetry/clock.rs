//! [`Clock`], the one tick source of dinah's telemetry, and [`NoClock`].
#![forbid(unsafe_code)]

/// A monotonic tick source: the one clock of dinah's telemetry and, later,
/// its timers. SysTick, a DWT cycle counter or a timer on firmware (a type
/// the binary writes), `Instant` on a host (`StdClock`), or a clock a test
/// moves by hand (`ManualClock`).
///
/// Guarantees the implementer makes: [`now`](Clock::now) never decreases,
/// and [`ticks_per_second`](Clock::ticks_per_second) is constant and not
/// zero. Nothing here guarantees a resolution or a starting point; only
/// differences between two readings of one clock mean anything. A tick
/// counter that wraps must be widened to 64 bits by its implementer.
///
/// A clock read where no instance can be carried (the wake path of a
/// [`Timed`](crate::telemetry::Timed) queue: a waker holds only a pointer) is
/// a zero-sized type whose every instance reads the same source, built with
/// `Default`; its `now` must then be quick and safe from any thread or
/// interrupt handler that can wake a task.
///
/// ```
/// use dinah::telemetry::Clock;
///
/// /// A 1 kHz tick counter an interrupt advances (on firmware, SysTick's).
/// #[derive(Clone, Copy, Default)]
/// struct Millis;
/// static TICKS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
/// impl Clock for Millis {
///     fn now(&self) -> u64 {
///         u64::from(TICKS.load(core::sync::atomic::Ordering::Relaxed))
///     }
///     fn ticks_per_second(&self) -> u64 {
///         1_000
///     }
/// }
/// assert_eq!(Millis.ticks_to_micros(3), 3_000);
/// ```
pub trait Clock {
    /// Ticks since the clock's own origin.
    fn now(&self) -> u64;

    /// How many ticks make a second.
    fn ticks_per_second(&self) -> u64;

    /// Converts a number of ticks to whole microseconds, rounding down and
    /// saturating at `u64::MAX`.
    fn ticks_to_micros(&self, ticks: u64) -> u64 {
        let per_second = u128::from(self.ticks_per_second().max(1));
        let micros = u128::from(ticks) * 1_000_000 / per_second;
        u64::try_from(micros).unwrap_or(u64::MAX)
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> u64 {
        (**self).now()
    }

    fn ticks_per_second(&self) -> u64 {
        (**self).ticks_per_second()
    }
}

/// The clock of a system that has none: it always reads zero, so every
/// duration measured with it is zero while counts still work.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct NoClock;

impl Clock for NoClock {
    fn now(&self) -> u64 {
        0
    }

    fn ticks_per_second(&self) -> u64 {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_converts_ticks_and_no_clock_reads_zero() {
        struct Cycles;
        impl Clock for Cycles {
            fn now(&self) -> u64 {
                42
            }
            fn ticks_per_second(&self) -> u64 {
                8_000_000
            }
        }
        assert_eq!(Cycles.ticks_to_micros(8), 1);
        assert_eq!(Cycles.ticks_to_micros(7), 0, "rounds down");
        assert_eq!(Cycles.ticks_to_micros(u64::MAX), u64::MAX / 8);
        assert_eq!((NoClock.now(), NoClock.ticks_to_micros(5)), (0, 5_000_000));
    }
}
