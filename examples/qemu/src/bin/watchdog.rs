//! A stall watchdog on dinah-core's `AsyncExecutor`: a task that never
//! yields, seen from the SysTick interrupt.
//!
//! The executor runs with a `PollWatch` as its poll observer, so every poll
//! publishes its task and start tick. A well-behaved task yields a few
//! times; then a task spins without yielding. The SysTick handler counts
//! ticks (the watch's clock) and asks the watch for a poll running three
//! ticks or more: it reports `WorkerBlocked` with the task over defmt, once,
//! and lets the spinning task go. Nothing is reported while tasks yield.
//!
//! The queue is `Timed` with the same SysTick count, so the executor also
//! tells a `PollTimes` how long each poll waited after its wake: the polite
//! task, woken by itself just before the spinner's poll, waits behind it
//! for at least those three ticks. That is the ready-queue age that tells
//! the victims of a blocked poll apart from the blocked poll itself.
//!
//! The watch measures in SysTick ticks and the handler checks after each
//! tick, so the report always says three ticks. Which poll it reports
//! depends on time, though: in real time, a host that stalls QEMU for three
//! ticks during the polite task's short poll makes that poll the blocked
//! one. `run.sh` runs it under `-icount` (virtual time advances with
//! instructions only) unless told otherwise, and then every run logs the
//! same lines; CI compares the decoded log with `ci/expected/`. It exits 0
//! only if every check held.
#![no_std]
#![no_main]

use core::pin::pin;
use portable_atomic::{AtomicBool, AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::{entry, exception};
use defmt::{info, warn};
use dinah_core::telemetry::{Clock, PollTimes, PollWatch, TaskTimes, Timed};
use dinah_core::{AsyncExecutor, ReadyQueue, TaskState, yield_now};
use dinah_qemu::{TARGET, check, exit_success};

const SLOTS: usize = 2;
/// A poll running this many SysTick ticks is reported.
const BLOCKED_TICKS: u64 = 3;

static QUEUE: ReadyQueue<SLOTS, Timed<SysTicks>> = ReadyQueue::new();

/// SysTick interrupts so far: the watch's clock.
static TICKS: AtomicU32 = AtomicU32::new(0);
/// Reports made by the handler.
static REPORTS: AtomicU32 = AtomicU32::new(0);
/// Set by the handler once it has reported: the spinning task stops.
static RELEASED: AtomicBool = AtomicBool::new(false);

/// SysTick ticks, counted by the handler.
#[derive(Default)]
struct SysTicks;

impl Clock for SysTicks {
    fn now(&self) -> u64 {
        u64::from(TICKS.load(Ordering::Relaxed))
    }

    /// Nominal: the reload below gives about 600 ticks a second on the
    /// emulated 12 MHz core.
    fn ticks_per_second(&self) -> u64 {
        600
    }
}

static WATCH: PollWatch<SysTicks> = PollWatch::new(SysTicks);

#[exception]
fn SysTick() {
    TICKS.fetch_add(1, Ordering::Relaxed);
    if let Some(blocked) = WATCH.blocked(BLOCKED_TICKS)
        && !RELEASED.load(Ordering::Relaxed)
    {
        warn!("SysTick: {}", blocked);
        REPORTS.fetch_add(1, Ordering::Relaxed);
        RELEASED.store(true, Ordering::Release);
    }
}

#[entry]
fn main() -> ! {
    let mut peripherals = cortex_m::Peripherals::take().unwrap_or_else(|| panic!("taken once"));
    info!("target {=str}", TARGET);

    let mut polite = pin!(Some(async {
        for round in 0..3u32 {
            info!("polite task: round {=u32}, then yield", round);
            yield_now().await;
        }
    }));
    let mut spinner = pin!(Some(async {
        info!("spinning task: polled; it will not yield");
        while !RELEASED.load(Ordering::Acquire) {
            core::hint::spin_loop();
        }
        info!("spinning task: released by the watchdog, returning");
    }));

    let syst = &mut peripherals.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(20_000);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();

    let mut executor: AsyncExecutor<'_, SLOTS, (), Timed<SysTicks>> =
        AsyncExecutor::new(&QUEUE).unwrap_or_else(|_| panic!("first executor"));
    let times: PollTimes<SysTicks, 16> = PollTimes::new(SysTicks, BLOCKED_TICKS);
    let per_task: TaskTimes<SysTicks, SLOTS> = TaskTimes::new(SysTicks);
    let polite = executor.try_spawn(polite.as_mut()).ok();
    let spinner = executor.try_spawn(spinner.as_mut()).ok();
    check!(
        polite.is_some() && spinner.is_some(),
        "two tasks fit two slots",
    );
    let (polite, spinner) = (
        polite.unwrap_or(dinah_core::TaskId::MIN),
        spinner.unwrap_or(dinah_core::TaskId::MIN),
    );
    info!("spinning task is {}", spinner);

    // Every poll is published to the watch the SysTick handler reads, and
    // timed, with its wait, by `times`.
    let observer = (&WATCH, (&times, &per_task));
    while executor.live_tasks() > 0 {
        executor.tick_observed(SLOTS, &observer);
    }
    peripherals.SYST.disable_interrupt();
    peripherals.SYST.disable_counter();

    check!(
        executor.task_state(polite) == Some(TaskState::Completed)
            && executor.task_state(spinner) == Some(TaskState::Completed),
        "both tasks completed",
    );
    check!(REPORTS.load(Ordering::Relaxed) == 1, "one report");
    check!(WATCH.blocked(0).is_none(), "no poll running after the run");
    let figures = times.figures();
    let (waits, first) = (&figures.wake_to_poll, &figures.first_poll_delay);
    check!(
        first.count() == 2 && waits.count() == 3,
        "two first polls and three woken polls were timed",
    );
    check!(
        waits.max() >= BLOCKED_TICKS,
        "the polite task waited behind the spinner at least as long as it blocked",
    );
    check!(figures.long_polls == 1, "one long poll: the spinner's");
    // Per task: the spinner is the one that ran long, the polite task the
    // one that waited.
    let (culprit, victim) = (per_task.task(spinner), per_task.task(polite));
    check!(
        culprit.is_some_and(|t| t.polls == 1 && t.longest_poll >= BLOCKED_TICKS),
        "the spinner's one poll ran at least as long as it blocked",
    );
    check!(
        victim.is_some_and(|t| t.polls == 4 && t.longest_poll < BLOCKED_TICKS),
        "the polite task's four polls were short",
    );
    check!(
        victim.is_some_and(|t| t.longest_wake_to_poll >= BLOCKED_TICKS),
        "the polite task is the one that waited",
    );
    info!(
        "polite task: ready for at least {=u64} ticks behind the blocked poll",
        BLOCKED_TICKS
    );
    info!("all checks passed");
    exit_success()
}
