//! Instructions per wake+poll when a `PollWatch` observes every poll: the
//! cost of the stall watchdog, counted like `wake_cost.rs` counts the plain
//! `tick` (QEMU `-icount shift=0`, 1,000 and 11,000 rounds, difference over
//! 10,000). A binary of its own, so that neither measurement changes how
//! the other is compiled.
#![no_std]
#![no_main]

use core::pin::pin;

use cortex_m::peripheral::SYST;
use cortex_m_rt::entry;
use dinah_core::telemetry::{Clock, PollWatch};
use dinah_core::{AsyncExecutor, ReadyQueue};
use dinah_qemu::cost::{self, LONG, SHORT};
use dinah_qemu::{check, exit_success};

static QUEUE: ReadyQueue<1> = ReadyQueue::new();

/// The SysTick counter as the watch's clock (it counts down; this counts up).
struct SysTickNow;

impl Clock for SysTickNow {
    fn now(&self) -> u64 {
        u64::from(0x00ff_ffff - SYST::get_current())
    }

    fn ticks_per_second(&self) -> u64 {
        cost::LM3S6965_CORE_HZ
    }
}

static WATCH: PollWatch<SysTickNow> = PollWatch::new(SysTickNow);

/// SysTick ticks that `ticks` observed executor ticks take.
fn measure(executor: &mut AsyncExecutor<'_, 1>, ticks: u32) -> u32 {
    let start = SYST::get_current();
    for _ in 0..ticks {
        executor.tick_observed(1, &WATCH);
    }
    cost::since(start)
}

#[entry]
fn main() -> ! {
    cost::start();
    let mut task = pin!(Some(cost::yield_forever()));
    let mut executor: AsyncExecutor<'_, 1> =
        AsyncExecutor::new(&QUEUE).unwrap_or_else(|_| panic!("first executor"));
    check!(executor.try_spawn(task.as_mut()).is_ok(), "spawn");
    executor.tick_observed(1, &WATCH);

    let short = measure(&mut executor, SHORT);
    let long = measure(&mut executor, LONG);
    cost::report("observed wake+poll", short, long);
    exit_success()
}
