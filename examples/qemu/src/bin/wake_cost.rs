//! Instructions per wake+poll of a trivial task on dinah-core's
//! `AsyncExecutor`, counted under QEMU with `-icount shift=0` (one
//! instruction per nanosecond of virtual time; `./run.sh` adds it when
//! `QEMU_ICOUNT=1`).
//!
//! One task yields forever: each `tick(1)` takes its self-wake off the
//! queue and polls it once, which wakes it again. SysTick counts core clock
//! ticks over 1,000 and over 11,000 ticks; the difference divided by 10,000
//! is the cost of one wake+poll with the loop and the measurement cancelled
//! out. The count is deterministic under `-icount`, so CI can hold it to a
//! budget; without `-icount` the figure is noise and only the log's shape
//! is checked.
#![no_std]
#![no_main]

use core::pin::pin;

use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::entry;
use defmt::info;
use dinah_core::{AsyncExecutor, ReadyQueue, yield_now};
use dinah_qemu::{TARGET, check, exit_success};

static QUEUE: ReadyQueue<1> = ReadyQueue::new();

/// Core clock ticks per second of SysTick on QEMU's lm3s6965evb (the
/// thumbv7m board). The microbit board's is not verified, so on thumbv6m
/// only the raw SysTick counts are reported.
const LM3S6965_CORE_HZ: u64 = 12_000_000;
const SHORT: u32 = 1_000;
const LONG: u32 = 11_000;

/// SysTick ticks (counting down, 24 bits) that `ticks` executor ticks take.
fn measure(executor: &mut AsyncExecutor<'_, 1>, ticks: u32) -> u32 {
    let start = SYST::get_current();
    for _ in 0..ticks {
        executor.tick(1);
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
    executor.tick(1);

    let short = measure(&mut executor, SHORT);
    let long = measure(&mut executor, LONG);
    check(long > short, "more ticks take longer");
    info!("target {=str}", TARGET);
    info!(
        "wake+poll: SysTick ticks for {=u32} and {=u32} rounds: {=u32} and {=u32}",
        SHORT, LONG, short, long
    );
    if TARGET.starts_with("thumbv7m") {
        let hundredths = u64::from(long - short) * 1_000_000_000 / LM3S6965_CORE_HZ * 100
            / u64::from(LONG - SHORT);
        info!(
            "instructions per wake+poll (valid under -icount shift=0): {=u64}.{=u64:02}",
            hundredths / 100,
            hundredths % 100
        );
    }
    exit_success()
}
