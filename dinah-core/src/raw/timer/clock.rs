//! [`Clock`], the one tick source of dinah's telemetry, and [`NoClock`].
#![forbid(unsafe_code)]

use super::divisor::Divisor;

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

    /// [`ticks_per_second`](Clock::ticks_per_second) as a ready-made
    /// [`Divisor`], when the clock has one; `None` (the default) when it
    /// does not.
    ///
    /// A clock of a rate fixed when compiling returns a `const` here: a
    /// timer store then converts lags to microseconds with no reciprocal
    /// worked out at run time, and the conversion folds into its caller
    /// (on a Cortex-M0, a few hundred bytes of flash less). It must be the
    /// divisor of `ticks_per_second()`; another one skews the lags the
    /// timers record, nothing else.
    fn per_second(&self) -> Option<Divisor> {
        None
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> u64 {
        (**self).now()
    }

    fn ticks_per_second(&self) -> u64 {
        (**self).ticks_per_second()
    }

    fn ticks_to_micros(&self, ticks: u64) -> u64 {
        (**self).ticks_to_micros(ticks)
    }

    fn per_second(&self) -> Option<Divisor> {
        (**self).per_second()
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
        assert_eq!(Cycles.per_second(), None, "none unless the clock gives one");
    }

    #[test]
    fn a_reference_to_a_clock_is_the_clock() {
        /// A 2 MHz clock with a conversion of its own (rounding up, where
        /// the default rounds down) and a divisor.
        struct HalfMicros;
        impl Clock for HalfMicros {
            fn now(&self) -> u64 {
                7
            }
            fn ticks_per_second(&self) -> u64 {
                2_000_000
            }
            fn ticks_to_micros(&self, ticks: u64) -> u64 {
                ticks.div_ceil(2)
            }
            fn per_second(&self) -> Option<Divisor> {
                const PER_SECOND: Divisor = Divisor::new(2_000_000);
                Some(PER_SECOND)
            }
        }
        /// What a clock of type `C` answers, read through the trait.
        fn read<C: Clock>(clock: C) -> (u64, u64, u64, Option<Divisor>) {
            (
                clock.now(),
                clock.ticks_per_second(),
                clock.ticks_to_micros(3),
                clock.per_second(),
            )
        }
        // `C = &HalfMicros`: the clock's own conversion (2, not the
        // default's 1) and divisor.
        assert_eq!(
            read(&HalfMicros),
            (7, 2_000_000, 2, Some(Divisor::new(2_000_000)))
        );
    }
}
