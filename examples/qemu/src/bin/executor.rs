//! dinah-core's `AsyncExecutor` on a microcontroller: three async tasks in
//! three slots, no heap.
//!
//! - Two chunked workers, `A` and `B`, do one unit per poll and interleave
//!   `A, B, A, B, …` in wake order.
//! - When both are done, the main future arms SysTick. A timer task waits for
//!   three SysTick interrupts (the interrupt wakes it), then for a deadline
//!   that never comes; the SysTick handler cancels it through the executor's
//!   queue, and its destructor runs once.
//! - Whenever nothing is ready the executor sleeps with `WFI`, inside the
//!   critical section in which it found nothing ready, so no wake is lost.
//!
//! Every logged line is independent of timing: CI compares the decoded log
//! with `ci/expected/`. It exits 0 only if every check held.
#![no_std]
#![no_main]

use core::cell::Cell;
use core::future::{Future, poll_fn};
use core::mem::size_of;
use core::pin::pin;
use core::task::{Poll, Waker};
use portable_atomic::{AtomicBool, AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::{entry, exception};
use critical_section::Mutex;
use defmt::info;
use dinah_core::task::chunked;
use dinah_core::{AsyncExecutor, ReadyQueue, TaskId, TaskState};
use dinah_qemu::{TARGET, check, exit_success};

const SLOTS: usize = 3;
/// The queue tells an interrupt handler's wakes from the tasks' own by the
/// active exception (0 in thread mode, where the executor runs).
static QUEUE: ReadyQueue<SLOTS> = ReadyQueue::new().with_context(dinah_qemu::active_exception);

/// SysTick interrupts so far.
static TICKS: AtomicU32 = AtomicU32::new(0);
/// The waker of whoever awaits a SysTick deadline.
static TIMER_WAKER: Mutex<Cell<Option<Waker>>> = Mutex::new(Cell::new(None));
/// The timer task, which the SysTick handler cancels.
static TIMER_TASK: Mutex<Cell<Option<TaskId>>> = Mutex::new(Cell::new(None));
/// Set by the timer task once it waits for the deadline that never comes.
static WAITING_FOREVER: AtomicBool = AtomicBool::new(false);
/// How often the timer task's destructor ran.
static TIMER_TASK_DROPS: AtomicU32 = AtomicU32::new(0);

/// A one-shot flag a future can wait on; setting it wakes the waiter.
struct Flag {
    set: AtomicBool,
    waiter: Mutex<Cell<Option<Waker>>>,
}

impl Flag {
    const fn new() -> Self {
        Self {
            set: AtomicBool::new(false),
            waiter: Mutex::new(Cell::new(None)),
        }
    }

    fn set(&self) {
        self.set.store(true, Ordering::Release);
        if let Some(waker) = critical_section::with(|cs| self.waiter.borrow(cs).take()) {
            waker.wake();
        }
    }

    fn wait(&self) -> impl Future<Output = ()> + '_ {
        poll_fn(|cx| {
            if self.set.load(Ordering::Acquire) {
                return Poll::Ready(());
            }
            critical_section::with(|cs| self.waiter.borrow(cs).set(Some(cx.waker().clone())));
            // Set between the check and the store: the setter found no waker.
            if self.set.load(Ordering::Acquire) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

static WORKERS_DONE: Flag = Flag::new();
static TIMER_TASK_GONE: Flag = Flag::new();

/// Ready once SysTick has fired `deadline` times; the interrupt wakes it.
fn sys_ticks(deadline: u32) -> impl Future<Output = ()> {
    poll_fn(move |cx| {
        critical_section::with(|cs| {
            if TICKS.load(Ordering::Relaxed) >= deadline {
                return Poll::Ready(());
            }
            TIMER_WAKER.borrow(cs).set(Some(cx.waker().clone()));
            Poll::Pending
        })
    })
}

/// Logs and counts the timer task's destruction.
struct TimerTaskGuard;

impl Drop for TimerTaskGuard {
    fn drop(&mut self) {
        let drops = TIMER_TASK_DROPS.fetch_add(1, Ordering::Relaxed) + 1;
        info!("timer task: destructor ran ({=u32} time)", drops);
        TIMER_TASK_GONE.set();
    }
}

#[exception]
fn SysTick() {
    TICKS.fetch_add(1, Ordering::Relaxed);
    if let Some(waker) = critical_section::with(|cs| TIMER_WAKER.borrow(cs).take()) {
        waker.wake();
    }
    if WAITING_FOREVER.load(Ordering::Acquire) {
        // Taken once: later interrupts find nothing to cancel.
        if let Some(task) = critical_section::with(|cs| TIMER_TASK.borrow(cs).take()) {
            check!(
                QUEUE.cancel(task).is_ok(),
                "the interrupt cancels the timer task",
            );
            info!("SysTick: cancel requested for {}", task);
        }
    }
}

#[entry]
fn main() -> ! {
    let mut peripherals = cortex_m::Peripherals::take().unwrap_or_else(|| panic!("taken once"));
    info!("target {=str}", TARGET);
    info!(
        "size of ReadyQueue<{=usize}>: {=usize} bytes",
        SLOTS,
        size_of::<ReadyQueue<SLOTS>>()
    );
    info!(
        "size of AsyncExecutor<{=usize}>: {=usize} bytes",
        SLOTS,
        size_of::<AsyncExecutor<'static, SLOTS>>()
    );
    // RAM one more slot costs, besides the future itself (the queue's cell
    // plus the executor's slot), measured over four slots so padding cancels.
    let per_slot = (size_of::<ReadyQueue<{ SLOTS + 4 }>>() - size_of::<ReadyQueue<SLOTS>>()
        + size_of::<AsyncExecutor<'static, { SLOTS + 4 }>>()
        - size_of::<AsyncExecutor<'static, SLOTS>>())
        / 4;
    info!("RAM per task slot: {=usize} bytes", per_slot);
    check!(per_slot <= 20, "at most 20 bytes of RAM per slot");

    let mut worker_a = pin!(Some(chunked(0..3u32, |unit| info!("A {=u32}", unit))));
    let mut worker_b = pin!(Some(async {
        chunked(0..3u32, |unit| info!("B {=u32}", unit)).await;
        WORKERS_DONE.set();
    }));
    let guard = TimerTaskGuard;
    let mut timer_task = pin!(Some(async move {
        let _guard = guard;
        info!("timer task: waiting for 3 SysTicks");
        sys_ticks(3).await;
        info!("timer task: woken by SysTick after 3 ticks");
        WAITING_FOREVER.store(true, Ordering::Release);
        sys_ticks(u32::MAX).await;
        info!("timer task: unreachable, the deadline never comes");
    }));

    let mut executor: AsyncExecutor<'_, SLOTS> =
        AsyncExecutor::new(&QUEUE).unwrap_or_else(|_| panic!("first executor"));
    let a = executor.try_spawn(worker_a.as_mut()).ok();
    let b = executor.try_spawn(worker_b.as_mut()).ok();
    let timer = executor.try_spawn(timer_task.as_mut()).ok();
    check!(
        a.is_some() && b.is_some() && timer.is_some(),
        "three tasks fit three slots",
    );
    let (a, b, timer) = (
        a.unwrap_or(TaskId::MIN),
        b.unwrap_or(TaskId::MIN),
        timer.unwrap_or(TaskId::MIN),
    );
    critical_section::with(|cs| TIMER_TASK.borrow(cs).set(Some(timer)));

    let syst = &mut peripherals.SYST;
    executor.run_until(
        async {
            WORKERS_DONE.wait().await;
            info!("main: workers done, arming SysTick");
            syst.set_clock_source(SystClkSource::Core);
            syst.set_reload(20_000);
            syst.clear_current();
            syst.enable_interrupt();
            syst.enable_counter();
            TIMER_TASK_GONE.wait().await;
            info!("main: timer task gone");
        },
        SLOTS,
        cortex_m::asm::wfi,
    );
    peripherals.SYST.disable_interrupt();
    peripherals.SYST.disable_counter();

    let states = [
        executor.task_state(a),
        executor.task_state(b),
        executor.task_state(timer),
    ];
    info!(
        "A: {}, B: {}, timer task: {}",
        states[0], states[1], states[2]
    );
    check!(
        states
            == [
                Some(TaskState::Completed),
                Some(TaskState::Completed),
                Some(TaskState::Cancelled),
            ],
        "final states",
    );
    check!(
        TIMER_TASK_DROPS.load(Ordering::Relaxed) == 1,
        "destructor ran once",
    );
    check!(executor.live_tasks() == 0, "no task left");
    info!("all checks passed");
    exit_success()
}
