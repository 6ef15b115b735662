//! dinah-core's timers on a microcontroller, tickless: SysTick is both the
//! clock and the alarm (`dinah_qemu::tickless`), and the run loop's
//! `Tickless` idle fires due timers and sets SysTick's reload to the next
//! deadline before `WFI`, so no periodic tick runs while nothing is due.
//!
//! - Three tasks sleep 3, 1 and 2 ms: they wake shortest first.
//! - An `Interval` of 2 ms with the `Skip` rule falls behind a 5 ms chunk of
//!   work: the late tick comes at once, the missed one is dropped, and the
//!   schedule resumes on its grid.
//! - One `timeout` fires (3 ms on a 10 ms sleep) and one does not (5 ms on
//!   a 1 ms sleep).
//! - The timers' figures: fired, cancelled, and the expiry lag (deadline to
//!   the poll that saw the timer complete): within microseconds, except for
//!   the timers that came due during the chunk, which wait behind it.
//!
//! It runs under QEMU's `-icount shift=0,sleep=off`: virtual time counts
//! instructions and jumps over `WFI`, so every run logs the same lines, and
//! CI compares the decoded log with `ci/expected/`. It exits 0 only if
//! every check held.
#![no_std]
#![no_main]

use core::pin::pin;
use core::time::Duration;
use portable_atomic::{AtomicU32, Ordering};

use cortex_m_rt::{entry, exception};
use defmt::info;
use dinah_core::telemetry::Clock;
use dinah_core::time::{
    Divisor, Elapsed, MissedTicks, Sleep, Tickless, TimerDriver, Timers, ticks_in,
};
use dinah_core::{AsyncExecutor, ReadyQueue};
use dinah_qemu::tickless::{self, SysTickAlarm, SysTickClock};
use dinah_qemu::{TARGET, check, exit_success};

const SLOTS: usize = 5;
/// The timers' clock rate, as a `Divisor` worked out at compile time.
const PER_SECOND: Divisor = Divisor::new(tickless::core_hz());
/// Clock ticks per microsecond (both boards' clocks count whole ones).
const TICKS_PER_MICRO: u64 = tickless::core_hz() / 1_000_000;

static TIMERS: Timers<8, SysTickClock> = Timers::new(SysTickClock);
static QUEUE: ReadyQueue<SLOTS> = ReadyQueue::new();
/// Tasks finished.
static DONE: AtomicU32 = AtomicU32::new(0);
/// The order the sleepers woke in, one decimal digit each.
static WOKE: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    tickless::on_systick();
}

/// Milliseconds from `start` to `ticks`, on the timers' clock (through a
/// `Divisor`: no 64-bit division routine is linked). Out of line: the
/// interval's ticks and the largest lag share one copy.
#[inline(never)]
fn millis(start: u64, ticks: u64) -> u32 {
    PER_SECOND.div_rem((ticks - start) * 1_000).0 as u32
}

/// Waits for `sleep`, which is `ms` milliseconds long, and logs it. The
/// caller makes the sleep from a constant duration, so converting it to
/// ticks folds at compile time (a duration known only at run time is
/// converted with a 64-bit multiply and a division by a billion).
async fn sleeper(ms: u32, sleep: Sleep<&'static Timers<8, SysTickClock>>) {
    sleep.await;
    info!("sleeper of {=u32} ms woke", ms);
    WOKE.store(WOKE.load(Ordering::Relaxed) * 10 + ms, Ordering::Relaxed);
    DONE.fetch_add(1, Ordering::Relaxed);
}

#[entry]
fn main() -> ! {
    let peripherals = cortex_m::Peripherals::take().unwrap_or_else(|| defmt::panic!("taken once"));
    info!("target {=str}", TARGET);
    tickless::start(peripherals.SYST);
    TIMERS.set_late_after(1_000);

    let mut short = pin!(Some(sleeper(1, TIMERS.sleep(Duration::from_millis(1)))));
    let mut middle = pin!(Some(sleeper(2, TIMERS.sleep(Duration::from_millis(2)))));
    let mut long = pin!(Some(sleeper(3, TIMERS.sleep(Duration::from_millis(3)))));
    let mut ticker = pin!(Some(async {
        let mut interval = TIMERS
            .interval(Duration::from_millis(2), MissedTicks::Skip)
            .unwrap_or_else(|_| defmt::panic!("2 ms is many ticks"));
        let start = interval.next_due();
        // Bytes, compared one by one: a `[u32; 5]` is cleared and compared
        // by calls to `memset` and `memcmp`, which would be linked for it.
        let mut due = [0u8; 5];
        for (round, slot) in due.iter_mut().enumerate() {
            *slot = millis(start, interval.tick().await) as u8;
            if round == 1 {
                // A chunk of work that does not yield: 5 ms.
                let until = SysTickClock.now()
                    + ticks_in(Duration::from_millis(5), SysTickClock.ticks_per_second());
                while SysTickClock.now() < until {
                    core::hint::spin_loop();
                }
            }
        }
        info!("interval (2 ms, Skip) ticks due at {} ms", due);
        check!(
            due.iter()
                .zip([0, 2, 4, 8, 10])
                .all(|(due, expected)| *due == expected),
            "Skip drops the missed tick and keeps the grid",
        );
        DONE.fetch_add(1, Ordering::Relaxed);
    }));
    let mut timeouts = pin!(Some(async {
        let fired = TIMERS
            .timeout(
                Duration::from_millis(3),
                TIMERS.sleep(Duration::from_millis(10)),
            )
            .await;
        info!(
            "timeout of 3 ms on a 10 ms sleep: elapsed = {=bool}",
            fired == Err(Elapsed)
        );
        check!(fired == Err(Elapsed), "the short timeout fires");
        let kept = TIMERS
            .timeout(Duration::from_millis(5), async {
                TIMERS.sleep(Duration::from_millis(1)).await;
                7u32
            })
            .await;
        info!("timeout of 5 ms on a 1 ms sleep: {=?}", kept.ok());
        check!(kept == Ok(7), "the long timeout does not fire");
        DONE.fetch_add(1, Ordering::Relaxed);
    }));

    let mut executor: AsyncExecutor<'_, SLOTS> =
        AsyncExecutor::new(&QUEUE).unwrap_or_else(|_| defmt::panic!("first executor"));
    let spawned = [
        executor.try_spawn(long.as_mut()).is_ok(),
        executor.try_spawn(short.as_mut()).is_ok(),
        executor.try_spawn(middle.as_mut()).is_ok(),
        executor.try_spawn(ticker.as_mut()).is_ok(),
        executor.try_spawn(timeouts.as_mut()).is_ok(),
    ];
    check!(spawned == [true; 5], "five tasks fit five slots");
    let idle = Tickless::new(&TIMERS, SysTickAlarm, cortex_m::asm::wfi);
    let interrupts_before = tickless::interrupts();
    executor.run_until(TIMERS.sleep(Duration::from_millis(20)), 8, idle);

    check!(DONE.load(Ordering::Relaxed) == 5, "every task finished");
    check!(
        WOKE.load(Ordering::Relaxed) == 123,
        "the sleepers woke shortest first",
    );
    // Read in place: a copy of the figures would link `memcpy`. The timers
    // due during the 5 ms chunk complete late, behind it; the others within
    // microseconds of their deadline.
    let (fired, cancelled, armed, late, quick, completions, largest) =
        TIMERS.read_figures(|figures| {
            let lag = &figures.lag_micros;
            (
                figures.fired,
                figures.cancelled,
                figures.armed,
                figures.late,
                lag.buckets()[..8].iter().sum::<u64>(),
                lag.count(),
                lag.max(),
            )
        });
    info!(
        "timers: fired {=u64}, cancelled {=u64}, armed {=u64}, late {=u64}",
        fired, cancelled, armed, late
    );
    info!(
        "expiry lag: {=u64} of {=u64} completions within 128 us; {=u64} late (over 1 ms, behind the chunk); largest {=u32} ms",
        quick,
        completions,
        late,
        // Whole milliseconds, through the one division the firmware has
        // (the microseconds themselves move with every change of code
        // under QEMU's instruction-counted time).
        millis(0, largest * TICKS_PER_MICRO)
    );
    check!(
        quick + late == completions,
        "each completion is prompt or behind the chunk",
    );
    check!(largest < 6_000, "nothing waits longer than the chunk");
    // Tickless: far fewer SysTick interrupts than a 1 kHz tick over 20 ms.
    let interrupts = tickless::interrupts() - interrupts_before;
    info!("SysTick interrupts: {=u32}", interrupts);
    check!(interrupts < 20, "no periodic tick");
    info!("all timer checks passed");
    exit_success()
}
