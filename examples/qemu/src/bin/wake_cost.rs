//! Instructions per wake+poll of a trivial task on dinah-core's
//! `AsyncExecutor`, counted under QEMU with `-icount shift=0` (one
//! instruction per nanosecond of virtual time; `./run.sh` adds it unless
//! `QEMU_REALTIME=1`).
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
use cortex_m_rt::entry;
use dinah_core::{AsyncExecutor, ReadyQueue};
use dinah_qemu::cost::{self, LONG, SHORT};
use dinah_qemu::{check, exit_success};

static QUEUE: ReadyQueue<1> = ReadyQueue::new();

/// SysTick ticks (counting down, 24 bits) that `ticks` executor ticks take.
fn measure(executor: &mut AsyncExecutor<'_, 1>, ticks: u32) -> u32 {
    let start = SYST::get_current();
    for _ in 0..ticks {
        executor.tick(1);
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
    executor.tick(1);

    let short = measure(&mut executor, SHORT);
    let long = measure(&mut executor, LONG);
    cost::report("wake+poll", short, long);
    exit_success()
}
