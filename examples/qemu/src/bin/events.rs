//! An interrupt's news carried to two tasks by a static `io::Event`, with
//! no hand-made waker cell.
//!
//! - SysTick stands in for a device: each interrupt takes a "sample" (the
//!   interrupt's count squared) into an atomic, then raises `SAMPLES`.
//! - Two tasks wait on that one event. The logger is quick: it logs every
//!   sample it sees. The averager is slow (it does three chunks of work per
//!   wake), so some interrupts come while it works and not waits. It keeps
//!   its own count of raises (`wait_from`), so none is lost: its next wait
//!   ends at once and says how many came.
//! - After eight interrupts the event is closed: both tasks see the end
//!   and report. Each saw all eight raises, counted once each.
//!
//! It runs under QEMU's `-icount shift=0,sleep=off`, so every run logs the
//! same lines, and CI compares the decoded log with `ci/expected/`. It
//! exits 0 only if every check held.
#![no_std]
#![no_main]

use core::mem::size_of;
use core::pin::pin;
use portable_atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::{entry, exception};
use defmt::info;
use dinah_core::io::Event;
use dinah_core::sync::Refusal;
use dinah_core::task::yield_now;
use dinah_core::{AsyncExecutor, ReadyQueue};
use dinah_qemu::{TARGET, check, exit_success};

const SLOTS: usize = 2;
const INTERRUPTS: u32 = 8;

static QUEUE: ReadyQueue<SLOTS> = ReadyQueue::new();
// Unnamed and all zeros: `.bss`, no flash.
/// Raised by SysTick for each sample.
static SAMPLES: Event<2> = Event::new();
/// The last sample the interrupt took.
static LAST: AtomicU32 = AtomicU32::new(0);
/// SysTick interrupts so far.
static TICKS: AtomicU32 = AtomicU32::new(0);
/// Raises each task counted.
static LOGGED: AtomicU32 = AtomicU32::new(0);
static AVERAGED: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    let tick = TICKS.fetch_add(1, Ordering::Relaxed) + 1;
    if tick <= INTERRUPTS {
        LAST.store(tick * tick, Ordering::Relaxed);
        SAMPLES.raise();
    }
    if tick == INTERRUPTS {
        SAMPLES.close();
    }
}

/// Logs every sample it sees, until the event closes.
async fn logger() {
    let mut seen = 0;
    loop {
        match SAMPLES.wait_from(seen).await {
            Ok(raises) => {
                seen = seen.wrapping_add(raises);
                LOGGED.fetch_add(raises, Ordering::Relaxed);
                info!(
                    "logger: sample {=u32} ({=u32} raise)",
                    LAST.load(Ordering::Relaxed),
                    raises
                );
            }
            Err(refusal) => {
                check!(refusal == Refusal::Closed, "the logger sees the end");
                info!("logger: closed");
                return;
            }
        }
    }
}

/// Slow: three chunks of work per wake, so it misses raises and counts
/// them.
async fn averager() {
    let mut sum = 0u32;
    let mut seen = 0;
    loop {
        // Its own count: raises that come while it works are not lost.
        match SAMPLES.wait_from(seen).await {
            Ok(raises) => {
                seen = seen.wrapping_add(raises);
                AVERAGED.fetch_add(raises, Ordering::Relaxed);
                sum += LAST.load(Ordering::Relaxed);
                info!("averager: woke for {=u32} raises", raises);
                for _ in 0..3 {
                    yield_now().await;
                }
            }
            Err(_) => {
                info!("averager: closed, {=u32} summed", sum);
                return;
            }
        }
    }
}

#[entry]
fn main() -> ! {
    let mut peripherals = cortex_m::Peripherals::take().unwrap_or_else(|| panic!("taken once"));
    info!("target {=str}", TARGET);
    let (one, two) = (size_of::<Event<1>>(), size_of::<Event<2>>());
    let (waiter, fixed) = (two - one, one - (two - one));
    info!(
        "size of an Event: {=usize} bytes and {=usize} per waiter",
        fixed, waiter
    );
    check!(fixed <= 16, "an Event's fixed part takes at most 16 bytes");

    let mut logger = pin!(Some(logger()));
    let mut averager = pin!(Some(averager()));
    let mut executor: AsyncExecutor<'_, SLOTS> =
        AsyncExecutor::new(&QUEUE).unwrap_or_else(|_| panic!("first executor"));
    check!(
        executor.try_spawn_named("logger", logger.as_mut()).is_ok()
            && executor
                .try_spawn_named("averager", averager.as_mut())
                .is_ok(),
        "two tasks fit two slots",
    );
    // Both wait before the first interrupt.
    executor.tick(SLOTS);

    let syst = &mut peripherals.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(2_000);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
    // SysTick keeps firing, so a wake that lands between the look and the
    // `wfi` is seen at the next interrupt at the latest.
    while executor.live_tasks() > 0 {
        executor.tick(SLOTS);
        if executor.live_tasks() > 0 {
            cortex_m::asm::wfi();
        }
    }
    syst.disable_interrupt();
    syst.disable_counter();

    let (logged, averaged) = (
        LOGGED.load(Ordering::Relaxed),
        AVERAGED.load(Ordering::Relaxed),
    );
    info!(
        "raised {=u32}; the logger counted {=u32}, the averager {=u32}",
        SAMPLES.raised(),
        logged,
        averaged
    );
    check!(
        logged == INTERRUPTS && averaged == INTERRUPTS,
        "each waiter counted every raise once",
    );
    exit_success();
}
