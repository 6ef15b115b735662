//! Instructions per wake+poll when a `PollWatch` observes every poll: the
//! cost of the stall watchdog, counted like `wake_cost.rs` counts the plain
//! `tick` (QEMU `-icount shift=0`, 1,000 and 11,000 rounds, difference over
//! 10,000). A binary of its own, so that neither measurement changes how
//! the other is compiled.
#![no_std]
#![no_main]

use core::pin::pin;

use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::entry;
use defmt::info;
use dinah_core::{AsyncExecutor, Clock, PollWatch, ReadyQueue, yield_now};
use dinah_qemu::{TARGET, check, exit_success};

static QUEUE: ReadyQueue<1> = ReadyQueue::new();

const LM3S6965_CORE_HZ: u64 = 12_000_000;
const SHORT: u32 = 1_000;
const LONG: u32 = 11_000;

/// The SysTick counter as the watch's clock (it counts down; this counts up).
struct SysTickNow;

impl Clock for SysTickNow {
    fn now(&self) -> u64 {
        u64::from(0x00ff_ffff - SYST::get_current())
    }

    fn ticks_per_second(&self) -> u64 {
        LM3S6965_CORE_HZ
    }
}

static WATCH: PollWatch<SysTickNow> = PollWatch::new(SysTickNow);

/// SysTick ticks that `ticks` observed executor ticks take.
fn measure(executor: &mut AsyncExecutor<'_, 1>, ticks: u32) -> u32 {
    let start = SYST::get_current();
    for _ in 0..ticks {
        executor.tick_observed(1, &WATCH);
    }
    let end = SYST::get_current();
    start.wrapping_sub(end) & 0x00ff_ffff
}

#[entry]
fn main() -> ! {
    let mut peripherals = cortex_m::Peripherals::take().unwrap_or_else(|| panic!("taken once"));
    let syst = &mut peripherals.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(0x00ff_ffff);
    syst.clear_current();
    syst.enable_counter();

    let mut task = pin!(Some(async {
        loop {
            yield_now().await;
        }
    }));
    let mut executor: AsyncExecutor<'_, 1> =
        AsyncExecutor::new(&QUEUE).unwrap_or_else(|_| panic!("first executor"));
    check(executor.spawn(task.as_mut()).is_ok(), "spawn");
    executor.tick_observed(1, &WATCH);

    let short = measure(&mut executor, SHORT);
    let long = measure(&mut executor, LONG);
    check(long > short, "more ticks take longer");
    info!("target {=str}", TARGET);
    info!(
        "observed wake+poll: SysTick ticks for {=u32} and {=u32} rounds: {=u32} and {=u32}",
        SHORT, LONG, short, long
    );
    if TARGET.starts_with("thumbv7m") {
        let hundredths = u64::from(long - short) * 1_000_000_000 / LM3S6965_CORE_HZ * 100
            / u64::from(LONG - SHORT);
        info!(
            "instructions per observed wake+poll (valid under -icount shift=0): {=u64}.{=u64:02}",
            hundredths / 100,
            hundredths % 100
        );
    }
    exit_success()
}
