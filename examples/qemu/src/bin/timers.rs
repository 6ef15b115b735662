//! dinah-core's timers on a microcontroller, tickless: SysTick is both the
//! clock and the alarm (`dinah_cortex_m::systick`), and the run loop's
//! `Tickless` idle fires due timers and sets SysTick's reload to the next
//! deadline before `WFI`, so no periodic tick runs while nothing is due.
//! Built with the `periodic` feature, SysTick runs a fixed 250 µs period
//! instead, the alarm sets nothing, and the same tasks log the same lines
//! but for the count of SysTick interrupts.
//!
//! - Three tasks sleep 3, 1 and 2 ms: they wake shortest first.
//! - An `Interval` of 2 ms with the `Skip` rule falls behind a 5 ms chunk of
//!   work: the late tick comes at once, the missed one is dropped, and the
//!   schedule resumes on its grid (ticks due at 0, 2, 4, 8 and 10 ms).
//! - One `timeout` fires (3 ms on a 10 ms sleep) and one does not (5 ms on
//!   a 1 ms sleep).
//! - The expiry lag (deadline to the poll that saw the timer complete):
//!   within microseconds, except for the timers that came due during the
//!   chunk, which wait behind it.
//!
//! It runs under QEMU's `-icount shift=0,sleep=off`: virtual time counts
//! instructions and jumps over `WFI`, so every run logs the same lines, and
//! CI compares the decoded log with `ci/expected/`: that comparison checks
//! the order of the wakes and the interval's ticks. The firmware checks the
//! rest itself (the timeouts, the largest lag, the count of SysTick
//! interrupts) and exits 0 only if they held.
//!
//! Written for a Cortex-M0's 8 KiB: the sleepers make their sleeps when
//! they first run (a sleep passed in would be kept twice in each task's
//! state, and copied), the two timeouts are one race run twice, and spans
//! are converted with 32-bit multiplies (the core has no divide).
#![no_std]
#![no_main]

use core::pin::pin;
use core::time::Duration;

use cortex_m_rt::{entry, exception};
use defmt::info;
use dinah_core::telemetry::Clock;
use dinah_core::time::{Elapsed, Instant, MissedTicks, Sleep, Tickless, TimerDriver, Timers};
use dinah_core::{AsyncExecutor, ReadyQueue};
use dinah_cortex_m::systick::{self, SysTickAlarm};
use dinah_qemu::{BOARD_CLOCK, BoardClock, CORE_HZ, TARGET, check, exit_success};

const SLOTS: usize = 5;
/// Clock ticks per microsecond (both boards' clocks count whole ones).
const TICKS_PER_MICRO: u64 = CORE_HZ / 1_000_000;
/// Clock ticks per millisecond.
const TICKS_PER_MILLI: u64 = CORE_HZ / 1_000;

static TIMERS: Timers<8, BoardClock> = Timers::new(BOARD_CLOCK);
static QUEUE: ReadyQueue<SLOTS> = ReadyQueue::new();

#[exception]
fn SysTick() {
    systick::on_interrupt();
}

/// `millis` milliseconds in ticks of the timers' clock, with a 32-bit
/// multiply (a Cortex-M0 has one; a 64-bit one is a library call): for the
/// firmware's spans of milliseconds (the product wraps past 2^32 ticks,
/// over four minutes on these boards).
fn ticks(millis: u32) -> u64 {
    u64::from(millis * TICKS_PER_MILLI as u32)
}

/// A sleep of `millis` milliseconds from now. Out of line: the sleeps of
/// the firmware share one copy of the clock read and the sum.
#[inline(never)]
fn sleep(millis: u32) -> Sleep<&'static Timers<8, BoardClock>> {
    TIMERS.sleep_until(Instant::from_ticks(BOARD_CLOCK.now() + ticks(millis)))
}

/// Whole milliseconds in `ticks` of the timers' clock, for the short spans
/// (under 2^24 ticks, about a second) the firmware logs; longer ones read
/// as `u32::MAX`. A multiply by the reciprocal, exact in that range: a
/// Cortex-M0 has no divide instruction, and a 64-bit division would link a
/// library routine several times this size. Out of line: the interval's
/// ticks and the largest lag share one copy.
#[inline(never)]
fn millis(ticks: u64) -> u32 {
    // 2^40 / TICKS_PER_MILLI, rounded up: its error over 2^24 ticks stays
    // below the gap between whole milliseconds.
    const RECIPROCAL: u64 = (1 << 40) / TICKS_PER_MILLI + 1;
    if ticks >= 1 << 24 {
        return u32::MAX;
    }
    ((ticks * RECIPROCAL) >> 40) as u32
}

/// Sleeps `ms` milliseconds and logs it.
async fn sleeper(ms: u32) {
    sleep(ms).await;
    info!("sleeper of {=u32} ms woke", ms);
}

#[cfg(not(feature = "periodic"))]
fn start(syst: cortex_m::peripheral::SYST) {
    systick::start_tickless(syst);
}

/// SysTick's fixed period when built with `periodic`: 250 µs.
#[cfg(feature = "periodic")]
const PERIOD: systick::Period = match systick::Period::from_ticks(250 * TICKS_PER_MICRO as u32) {
    Ok(period) => period,
    Err(_) => panic!("SysTick counts 250 µs"),
};

#[cfg(feature = "periodic")]
fn start(syst: cortex_m::peripheral::SYST) {
    systick::start_periodic(syst, PERIOD);
}

#[entry]
fn main() -> ! {
    let peripherals = cortex_m::Peripherals::take().unwrap_or_else(|| defmt::panic!("taken once"));
    info!("target {=str}", TARGET);
    start(peripherals.SYST);

    let mut short = pin!(Some(sleeper(1)));
    let mut middle = pin!(Some(sleeper(2)));
    let mut long = pin!(Some(sleeper(3)));
    let mut ticker = pin!(Some(async {
        let mut interval = TIMERS
            .interval(Duration::from_millis(2), MissedTicks::Skip)
            .unwrap_or_else(|_| defmt::panic!("2 ms is many ticks"));
        let start = interval.next_due();
        for round in 0..5u8 {
            let due = millis(interval.tick().await.ticks() - start.ticks());
            info!("interval (2 ms, Skip) tick due at {=u32} ms", due);
            if round == 1 {
                // A chunk of work that does not yield: 5 ms.
                let until = BOARD_CLOCK.now() + 5 * TICKS_PER_MILLI;
                while BOARD_CLOCK.now() < until {
                    core::hint::spin_loop();
                }
            }
        }
    }));
    let mut timeouts = pin!(Some(async {
        // One race, run twice: a 3 ms limit on a 10 ms sleep fires, a 5 ms
        // limit on a 1 ms sleep does not.
        for (limit, length) in [(3u32, 10u32), (5, 1)] {
            let now = BOARD_CLOCK.now();
            let limit_at = Instant::from_ticks(now + ticks(limit));
            let sleep = TIMERS.sleep_until(Instant::from_ticks(now + ticks(length)));
            let result = TIMERS.timeout_at(limit_at, sleep).await;
            let elapsed = result == Err(Elapsed);
            info!(
                "timeout of {=u32} ms on a {=u32} ms sleep: elapsed = {=bool}",
                limit, length, elapsed
            );
            check!(
                elapsed == (limit < length),
                "a timeout fires only if it is shorter"
            );
        }
    }));

    let mut executor: AsyncExecutor<'_, SLOTS> =
        AsyncExecutor::new(&QUEUE).unwrap_or_else(|_| defmt::panic!("first executor"));
    let spawned = executor.try_spawn(long.as_mut()).is_ok()
        & executor.try_spawn(short.as_mut()).is_ok()
        & executor.try_spawn(middle.as_mut()).is_ok()
        & executor.try_spawn(ticker.as_mut()).is_ok()
        & executor.try_spawn(timeouts.as_mut()).is_ok();
    check!(spawned, "five tasks fit five slots");
    let idle = Tickless::new(&TIMERS, SysTickAlarm, cortex_m::asm::wfi);
    executor.run_until(sleep(20), 8, idle);

    // Read in place: a copy of the figures would link `memcpy`. The timers
    // due during the 5 ms chunk complete late, behind it; the others within
    // microseconds of their deadline.
    let (quick, completions, largest) = TIMERS.read_figures(|figures| {
        let lag = &figures.lag_micros;
        (
            lag.buckets()[..8].iter().sum::<u64>(),
            lag.count(),
            lag.max(),
        )
    });
    info!(
        "expiry lag: {=u64} of {=u64} completions within 128 us; largest {=u32} ms",
        quick,
        completions,
        // Whole milliseconds (the microseconds themselves move with every
        // change of code under QEMU's instruction-counted time).
        millis(largest * TICKS_PER_MICRO)
    );
    check!(largest < 6_000, "nothing waits longer than the chunk");
    let interrupts = systick::interrupts();
    info!("SysTick interrupts: {=u32}", interrupts);
    // Tickless: far fewer SysTick interrupts than a 1 kHz tick over 20 ms.
    #[cfg(not(feature = "periodic"))]
    check!(interrupts < 20, "no periodic tick");
    // Periodic: one every 250 µs over the 20 ms run.
    #[cfg(feature = "periodic")]
    check!(interrupts >= 80, "a tick every period");
    info!("all timer checks passed");
    exit_success()
}
