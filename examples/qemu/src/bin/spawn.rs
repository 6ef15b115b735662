//! Spawning on a microcontroller, with no heap and no macro: a `TaskPool`
//! of two worker tasks runs a job per event, and the workers' storage is
//! reused job after job.
//!
//! - SysTick fires six times. For the first four, the interrupt hands the
//!   event to a task through a static `Channel` (`try_send` from the
//!   handler) and that task spawns a job for it; the last two the interrupt
//!   spawns itself (`TaskPool::try_spawn` from the handler).
//! - Each job logs which worker runs it, yields twice (a chunk of work),
//!   and gives one permit to a static `Semaphore` that the main future
//!   waits on for all six.
//! - Two workers ran six jobs: the pool's figures and the workers' fixed
//!   size are logged, and the idle line hands each event to the worker
//!   that went idle first, so the two alternate.
//!
//! It runs under QEMU's `-icount shift=0,sleep=off`, so every run logs the
//! same lines, and CI compares the decoded log with `ci/expected/`. It
//! exits 0 only if every check held.
#![no_std]
#![no_main]

use core::pin::pin;
use portable_atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::{entry, exception};
use defmt::info;
use dinah_core::executor::TaskPool;
use dinah_core::sync::{Channel, Semaphore};
use dinah_core::task::yield_now;
use dinah_core::{AsyncExecutor, ReadyQueue};
use dinah_qemu::{TARGET, check, exit_success};

const SLOTS: usize = 3;
const EVENTS: u32 = 6;

static QUEUE: ReadyQueue<SLOTS> = ReadyQueue::new();
// Unnamed, so that they are all zeros and cost no flash (`.bss`).
/// Events the interrupt hands to the spawning task.
static EVENTS_IN: Channel<u32, 2> = Channel::new();
/// The workers and the jobs waiting for them.
static JOBS: TaskPool<u32, 4, 2> = TaskPool::new();
/// One permit per job done.
static DONE: Semaphore = Semaphore::new(0);
/// SysTick interrupts so far.
static TICKS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    let event = TICKS.fetch_add(1, Ordering::Relaxed) + 1;
    match event {
        1..=4 => check!(
            EVENTS_IN.try_send(event).is_ok(),
            "the interrupt hands the event on",
        ),
        5..=EVENTS => check!(JOBS.try_spawn(event).is_ok(), "the interrupt spawns a job"),
        _ => {}
    }
}

/// The size of the job `slot` holds (or would hold).
fn stored_size<F>(_: &Option<F>) -> usize {
    size_of::<F>()
}

/// One job: logs its worker, does two chunks of work, reports done.
async fn job(worker: u32, event: u32) {
    info!("worker {=u32} runs the job of event {=u32}", worker, event);
    yield_now().await;
    yield_now().await;
    // One permit per job, far below the semaphore's u32::MAX: it fits.
    let _ = DONE.add_permits(1);
}

#[entry]
fn main() -> ! {
    let mut peripherals =
        cortex_m::Peripherals::take().unwrap_or_else(|| defmt::panic!("taken once"));
    info!("target {=str}", TARGET);

    let (events_tx, mut events) = EVENTS_IN
        .split()
        .unwrap_or_else(|| defmt::panic!("split once"));
    let mut spawner = pin!(Some(async move {
        // The channel's sender stays alive with the interrupt's use of the
        // channel; four events come this way.
        let _sender = events_tx;
        for _ in 0..4 {
            let Some(event) = events.recv().await else {
                break;
            };
            info!("task: event {=u32} spawns a job", event);
            check!(JOBS.try_spawn(event).is_ok(), "the task spawns a job");
        }
    }));
    // One closure type for every worker (each `|event| job(n, event)`
    // written out would be its own type, and its worker's code a copy of
    // the others'), and each worker built where it stays (a `Result`
    // unwrapped and moved into place would be copied).
    let jobs_of = |worker: u32| move |event| job(worker, event);
    let (mut first_job, mut second_job, mut third_job) = (pin!(None), pin!(None), pin!(None));
    let (Ok(first), Ok(second)) = (
        JOBS.worker(jobs_of(1), first_job.as_mut()),
        JOBS.worker(jobs_of(2), second_job.as_mut()),
    ) else {
        defmt::panic!("two workers fit")
    };
    let (mut first, mut second) = (pin!(first), pin!(second));
    check!(
        JOBS.worker(jobs_of(3), third_job.as_mut()).is_err(),
        "a third worker is refused"
    );
    info!(
        "each worker's job storage: {=usize} bytes, reused for every job",
        stored_size(&third_job)
    );

    let mut executor: AsyncExecutor<'_, SLOTS> =
        AsyncExecutor::new(&QUEUE).unwrap_or_else(|_| defmt::panic!("first executor"));
    check!(
        executor.try_spawn_named("worker 1", first.as_mut()).is_ok()
            && executor
                .try_spawn_named("worker 2", second.as_mut())
                .is_ok()
            && executor
                .try_spawn_named("spawner", spawner.as_mut())
                .is_ok(),
        "three tasks fit three slots",
    );

    let syst = &mut peripherals.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(50_000);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
    executor.run_until(
        async {
            let all = DONE.acquire_many(EVENTS).await;
            check!(all.is_ok(), "six jobs done");
            if let Ok(all) = all {
                all.forget();
            }
        },
        SLOTS,
        cortex_m::asm::wfi,
    );
    syst.disable_interrupt();
    syst.disable_counter();

    let figures = JOBS.figures();
    info!(
        "pool: {=u32} workers ran {=u64} jobs ({=u64} spawned, {=u64} refused)",
        figures.workers, figures.finished, figures.spawned, figures.refused
    );
    check!(
        figures.workers == 2 && figures.finished == u64::from(EVENTS) && figures.refused == 0,
        "two workers' storage served every job",
    );
    info!(
        "live tasks: {=usize} (the workers, idle)",
        executor.live_tasks()
    );
    exit_success();
}
