//! Virtual time for the core's timers: a clock that moves only when told
//! to, and an alarm that moves it, so a tickless run loop jumps straight to
//! the next deadline and a test takes no real time.

use std::sync::atomic::{AtomicU64, Ordering};

use critical_section::CriticalSection;
use dinah::telemetry::Clock;
use dinah::time::Alarm;

/// A millisecond clock that moves only when told to.
#[derive(Debug, Default)]
pub(crate) struct VirtualClock(pub(crate) AtomicU64);

impl Clock for VirtualClock {
    fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    fn ticks_per_second(&self) -> u64 {
        1_000
    }
}

/// An alarm that is virtual time itself: setting it moves the clock to the
/// alarm's time and reports it reached, so the run loop fires the timers
/// instead of sleeping.
pub(crate) struct JumpingAlarm(pub(crate) &'static VirtualClock);

impl Alarm for JumpingAlarm {
    fn set(&mut self, at: u64, _: CriticalSection<'_>) -> bool {
        self.0.0.fetch_max(at, Ordering::Relaxed);
        false
    }
    fn clear(&mut self, _: CriticalSection<'_>) {}
}
