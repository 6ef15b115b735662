//! Instructions per wake+poll with the core executor's full poll telemetry:
//! a `Timed` queue stamping every wake with SysTick, and a `PollTimes`
//! keeping poll durations and wake-to-poll delays, counted like
//! `wake_cost.rs` counts the plain `tick` (QEMU `-icount shift=0`, 1,000 and
//! 11,000 rounds, difference over 10,000). A binary of its own, so that
//! neither measurement changes how the other is compiled.
#![no_std]
#![no_main]

use core::pin::pin;

use cortex_m::peripheral::SYST;
use cortex_m_rt::entry;
use dinah_core::telemetry::{Clock, PollTimes, Timed};
use dinah_core::{AsyncExecutor, ReadyQueue};
use dinah_qemu::cost::{self, LONG, SHORT};
use dinah_qemu::{check, exit_success};

/// The SysTick counter as a clock (it counts down; this counts up).
#[derive(Default)]
struct SysTickNow;

impl Clock for SysTickNow {
    fn now(&self) -> u64 {
        u64::from(0x00ff_ffff - SYST::get_current())
    }

    fn ticks_per_second(&self) -> u64 {
        cost::LM3S6965_CORE_HZ
    }
}

static QUEUE: ReadyQueue<1, Timed<SysTickNow>> = ReadyQueue::new();

type Executor<'a> = AsyncExecutor<'a, 1, (), Timed<SysTickNow>>;
type Times = PollTimes<SysTickNow, 16>;

/// SysTick ticks that `ticks` timed executor ticks take.
fn measure(executor: &mut Executor<'_>, times: &Times, ticks: u32) -> u32 {
    let start = SYST::get_current();
    for _ in 0..ticks {
        executor.tick_observed(1, times);
    }
    cost::since(start)
}

#[entry]
fn main() -> ! {
    cost::start();
    let mut task = pin!(Some(cost::yield_forever()));
    let mut executor: Executor<'_> =
        AsyncExecutor::new(&QUEUE).unwrap_or_else(|_| panic!("first executor"));
    let times: Times = PollTimes::new(SysTickNow, u64::MAX);
    check!(executor.try_spawn(task.as_mut()).is_ok(), "spawn");
    executor.tick_observed(1, &times);

    let short = measure(&mut executor, &times, SHORT);
    let long = measure(&mut executor, &times, LONG);
    check!(
        times.figures().wake_to_poll.count() == u64::from(SHORT + LONG),
        "every woken poll was timed",
    );
    cost::report("timed wake+poll", short, long);
    exit_success()
}
