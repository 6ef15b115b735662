//! Waiting for a timer on time: [`park_fine`] parks the executor's thread
//! until its next deadline with the kernel's timer slack out of the way.
//!
//! Linux lets a timed wait end up to the thread's timer slack late (50 µs
//! by default) so that it can batch wake-ups. For the wait until the next
//! timer, that slack is the timer's lag. So on Linux the wait runs with the
//! thread's slack at 1 ns, and the thread's own setting is put back as soon
//! as the wait ends: nothing the caller's thread does outside it changes.
//! That costs three `prctl` calls per timed wait (read, set, restore), a
//! fraction of a microsecond; a thread whose slack is already that fine
//! makes none. (Measured: expiry lag p50 43 µs before, 18 µs after, on the
//! project's machine: `artifacts/benchmarks/timers-2026-12-07.txt`.)
//! Elsewhere, and under Miri and loom, it is a plain timed park.
#![forbid(unsafe_code)]

use std::time::Duration;

use crate::primitives::park_timeout;

/// The timer slack a timed wait runs with, in nanoseconds.
#[cfg(all(target_os = "linux", not(miri), not(loom)))]
const FINE: u64 = 1;

/// Parks this thread for at most `limit` (or until unparked), with the
/// timer slack at 1 ns on Linux for the wait.
pub(crate) fn park_fine(limit: Duration) {
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    {
        use rustix::thread::{current_timer_slack, set_current_timer_slack};
        let own = current_timer_slack().ok();
        let lowered = own.is_some_and(|own| own > FINE)
            && set_current_timer_slack(std::num::NonZeroU64::new(FINE)).is_ok();
        park_timeout(limit);
        if lowered {
            // `None` would select the thread's default slack, not its own.
            let _ = set_current_timer_slack(own.and_then(std::num::NonZeroU64::new));
        }
        return;
    }
    #[allow(unreachable_code)]
    park_timeout(limit);
}

#[cfg(all(test, target_os = "linux", not(miri), not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_fine_wait_leaves_the_threads_own_slack_as_it_was() {
        std::thread::spawn(|| {
            let set = |ns| {
                rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(ns)).unwrap();
            };
            set(123_000);
            park_fine(Duration::from_micros(50));
            assert_eq!(rustix::thread::current_timer_slack().unwrap(), 123_000);
            set(FINE);
            park_fine(Duration::from_micros(50));
            assert_eq!(rustix::thread::current_timer_slack().unwrap(), FINE);
        })
        .join()
        .unwrap();
    }
}
