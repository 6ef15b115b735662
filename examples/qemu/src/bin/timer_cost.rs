//! Instructions per timer fire on dinah-core's `Timers`, under QEMU's
//! `-icount shift=0` (one instruction per nanosecond, SysTick at 12 MHz on
//! the lm3s6965evb).
//!
//! One round is a timer's whole life: a sleep is made and polled (it takes
//! an entry and arms it), the clock moves past its deadline, `expire` fires
//! it and wakes its waker, the sleep is polled again (it completes, and its
//! lag is recorded) and dropped (its entry comes back). The clock is a
//! counter the loop moves, so no interrupt runs; the rounds are timed with
//! SysTick, once for 1,000 rounds and once for 11,000, and the difference
//! gives the cost of one.
#![no_std]
#![no_main]

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Waker};
use portable_atomic::{AtomicU64, Ordering};

use cortex_m::peripheral::SYST;
use cortex_m_rt::entry;
use dinah_core::telemetry::Clock;
use dinah_core::time::{Instant, TimerDriver, Timers};
use dinah_qemu::cost::{self, LONG, SHORT};
use dinah_qemu::{check, exit_success};

/// The timers' clock: a counter the loop moves.
static NOW: AtomicU64 = AtomicU64::new(0);

#[derive(Default)]
struct Counter;

impl Clock for Counter {
    fn now(&self) -> u64 {
        NOW.load(Ordering::Relaxed)
    }
    fn ticks_per_second(&self) -> u64 {
        1_000_000
    }
}

static TIMERS: Timers<4, Counter> = Timers::new(Counter);

#[inline(never)]
fn round(cx: &mut Context<'_>) {
    let mut sleep =
        pin!(TIMERS.sleep_until(Instant::from_ticks(NOW.load(Ordering::Relaxed) + 100)));
    let armed = sleep.as_mut().poll(cx).is_pending();
    NOW.fetch_add(100, Ordering::Relaxed);
    let fired = TIMERS.expire();
    let done = sleep.as_mut().poll(cx).is_ready();
    check!(armed && fired == 1 && done, "armed, fired, completed");
}

fn measure(rounds: u32) -> u32 {
    let mut cx = Context::from_waker(Waker::noop());
    let start = SYST::get_current();
    for _ in 0..rounds {
        round(&mut cx);
    }
    cost::since(start)
}

#[entry]
fn main() -> ! {
    cost::start();
    let short = measure(SHORT);
    let long = measure(LONG);
    cost::report("timer fire", short, long);
    let figures = TIMERS.figures();
    check!(
        figures.fired == u64::from(SHORT + LONG) && figures.armed == 0,
        "every round fired once",
    );
    exit_success()
}
