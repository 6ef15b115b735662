//! Two priorities on one core: an urgent task on an `InterruptExecutor`
//! run by `PendSV` preempts a slow task that is in the middle of a long
//! poll on the thread-mode executor.
//!
//! - SysTick (from `dinah-cortex-m`, a periodic tick) is the device: while
//!   the slow task is in its long poll, the tick stamps the time and
//!   raises an `io::Event`.
//! - The event's wake reaches the urgent task's queue, whose pender makes
//!   `PendSV` pending; when SysTick's handler returns, `PendSV` runs
//!   `HIGH.on_interrupt()`, which polls the urgent task: it reads the clock
//!   and keeps the latency, then the long poll goes on.
//! - The slow task makes two long polls, one three times the other: the
//!   urgent task's latency is the same in both, within SysTick's
//!   resolution of one cycle (it does not wait for the poll), and bounded. It is counted in cycles of the core clock
//!   (SysTick's ticks), and logged with the instructions it stands for
//!   under `-icount`: SysTick's resolution is one cycle, tens of
//!   instructions in QEMU's virtual time.
//!
//! It runs under QEMU's `-icount shift=0,sleep=off`: the latencies are
//! instruction counts, the same in every run, and CI compares the decoded
//! log with `ci/expected/`. It exits 0 only if every check held.
#![no_std]
#![no_main]

use cortex_m::peripheral::SCB;
use cortex_m_rt::{entry, exception};
use defmt::info;
use dinah_core::executor::{AsyncExecutor, InterruptExecutor, InterruptTasks, ReadyQueue};
use dinah_core::io::Event;
use dinah_core::telemetry::Clock;
use dinah_cortex_m::systick::{self, Period};
use dinah_qemu::{BOARD_CLOCK, TARGET, check, exit_success};
use portable_atomic::{AtomicU32, Ordering};

/// The urgent task's executor, run by `PendSV` (whose priority, left at its
/// reset value, is 0: above thread mode).
static HIGH: InterruptExecutor = InterruptExecutor::new("pendsv", 0);
/// Its queue: a wake from anywhere makes `PendSV` pending.
static HIGH_QUEUE: ReadyQueue<1> = ReadyQueue::with_pender(SCB::set_pendsv);
/// The thread-mode executor's queue.
static LOW_QUEUE: ReadyQueue<1> = ReadyQueue::new();
/// What the "device" (SysTick) raises.
static DEVICE: Event<1> = Event::new();

/// The long poll in progress (1 or 2), or 0.
static ROUND: AtomicU32 = AtomicU32::new(0);
/// The round SysTick last raised the event for.
static RAISED: AtomicU32 = AtomicU32::new(0);
/// The clock (low 32 bits) when SysTick raised the event.
static STAMP: AtomicU32 = AtomicU32::new(0);
/// The round whose long poll the urgent task ran in, and its latency.
static SERVED: AtomicU32 = AtomicU32::new(0);
static LATENCY: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];

/// The long polls, in ticks of the core clock.
const LONG_POLLS: [u32; 2] = [60_000, 180_000];
/// SysTick's period: several ticks fall in each long poll.
const TICK: Period = match Period::from_ticks(20_000) {
    Ok(period) => period,
    Err(_) => panic!("SysTick counts 20,000 ticks"),
};
/// The most the urgent task may wait, in ticks of the core clock (a few
/// microseconds): the handlers' work, not the long poll's.
const BOUND: u32 = 64;
/// Instructions per thousand ticks of the core clock under QEMU's
/// `-icount shift=0` (one instruction per nanosecond).
const INSTRUCTIONS_PER_KILOTICK: u32 = (1_000_000_000_000 / dinah_qemu::CORE_HZ) as u32;

#[exception]
fn SysTick() {
    systick::on_interrupt();
    let round = ROUND.load(Ordering::Relaxed);
    if round != 0 && RAISED.load(Ordering::Relaxed) != round {
        RAISED.store(round, Ordering::Relaxed);
        STAMP.store(BOARD_CLOCK.now() as u32, Ordering::Relaxed);
        DEVICE.raise();
    }
}

#[exception]
fn PendSV() {
    HIGH.on_interrupt();
}

/// The urgent task: on each raise, how long since the interrupt.
async fn urgent() {
    let mut seen = 0;
    while let Ok(raises) = DEVICE.wait_from(seen).await {
        seen = seen.wrapping_add(raises);
        let latency = (BOARD_CLOCK.now() as u32).wrapping_sub(STAMP.load(Ordering::Relaxed));
        let round = ROUND.load(Ordering::Relaxed);
        if let Some(slot) = (round as usize)
            .checked_sub(1)
            .and_then(|at| LATENCY.get(at))
        {
            slot.store(latency, Ordering::Relaxed);
        }
        SERVED.store(round, Ordering::Relaxed);
    }
}

/// The slow task: two long polls that do not yield.
async fn slow() {
    for (round, ticks) in (1..).zip(LONG_POLLS) {
        ROUND.store(round, Ordering::Relaxed);
        let until = BOARD_CLOCK.now() + u64::from(ticks);
        while BOARD_CLOCK.now() < until {
            core::hint::spin_loop();
        }
        // Still in the same poll: the urgent task ran inside it.
        let served = SERVED.load(Ordering::Relaxed) == round;
        ROUND.store(0, Ordering::Relaxed);
        check!(served, "the urgent task ran during the long poll");
        dinah_core::yield_now().await;
    }
    DEVICE.close();
}

#[entry]
fn main() -> ! {
    let peripherals = cortex_m::Peripherals::take().unwrap_or_else(|| defmt::panic!("taken once"));
    info!("target {=str}", TARGET);
    systick::start_periodic(peripherals.SYST, TICK);

    let mut urgent = core::pin::pin!(Some(urgent()));
    let mut high: InterruptTasks<'_, 1> =
        InterruptTasks::new(&HIGH_QUEUE).unwrap_or_else(|_| defmt::panic!("first executor"));
    check!(
        high.try_spawn_named("urgent", urgent.as_mut()).is_ok(),
        "one task fits one slot"
    );
    let mut low: AsyncExecutor<'_, 1> =
        AsyncExecutor::new(&LOW_QUEUE).unwrap_or_else(|_| defmt::panic!("first executor"));

    // `serve` pends PendSV once: the urgent task's first poll.
    let served = HIGH.serve(&mut high, || {
        low.run_until(slow(), 4, cortex_m::asm::wfi);
    });
    check!(served.is_ok(), "the interrupt executor serves the tasks");

    let latency = [
        LATENCY[0].load(Ordering::Relaxed),
        LATENCY[1].load(Ordering::Relaxed),
    ];
    for (round, ticks) in LONG_POLLS.iter().enumerate() {
        info!(
            "long poll of {=u32} cycles: the urgent task ran inside it, {=u32} cycles after its interrupt (fewer than {=u32} instructions under -icount)",
            ticks,
            latency[round],
            (latency[round] + 1) * INSTRUCTIONS_PER_KILOTICK / 1_000
        );
    }
    // The same but for SysTick's resolution: a tick is tens of
    // instructions, and where the interrupt lands in the spinning loop
    // moves the stamp within one.
    check!(
        latency[0].abs_diff(latency[1]) <= 1,
        "the latency does not depend on the long poll"
    );
    check!(
        latency[0] > 0 && latency[0] < BOUND,
        "the latency is bounded"
    );
    info!("{}", HIGH.figures());
    info!("all priority checks passed");
    exit_success()
}
