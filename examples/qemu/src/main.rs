//! dinah-core on a microcontroller: a fixed-capacity task queue drained by
//! the queue's `drain`, `static` metrics and trace ring, and a SysTick
//! interrupt that cancels a long cooperative task.
//!
//! Every line it logs is independent of timing, so CI compares the decoded
//! log line by line with `ci/expected/`. It exits 0 only if every check held.
#![no_std]
#![no_main]

use core::mem::size_of;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::{entry, exception};
use defmt::info;
use dinah_core::queue::QueuePushError;
use dinah_core::queue::drain;
use dinah_core::telemetry::{MetricsSnapshot, RuntimeMetrics32, Sink, TraceEvent, TraceEventKind};
use dinah_core::{CancellationToken, RuntimeMetrics, TaskId, TaskQueue, TaskState, TraceRing};
use dinah_qemu::{TARGET, check, exit_success};

/// The counters this build records with; `--features metrics32` picks the
/// 32-bit ones.
#[cfg(not(feature = "metrics32"))]
type Metrics = RuntimeMetrics;
#[cfg(feature = "metrics32")]
type Metrics = RuntimeMetrics32;

/// A queued task: a plain function returning its value or its error.
type Task = fn() -> Result<u32, u32>;

const QUEUE_CAPACITY: usize = 4;
/// Four tasks leave three events each (submitted, started, finished).
const TRACE_CAPACITY: usize = 3 * QUEUE_CAPACITY;

static METRICS: Metrics = Metrics::new();
static TRACE: TraceRing<TRACE_CAPACITY> = TraceRing::new();
static STOP: CancellationToken = CancellationToken::new();

const LONG_TASK: TaskId = match TaskId::new(100) {
    Ok(id) => id,
    Err(_) => panic!("100 is non-zero"),
};

fn task_id(n: u64) -> TaskId {
    TaskId::new(n).unwrap_or(TaskId::MIN)
}

/// Records what every task does first.
fn begin(n: u64) {
    record(TraceEvent::new(task_id(n), TraceEventKind::Started));
}

/// Records `event` once: the pair fans it out to the metrics and the trace
/// ring (which counts a refusal if it is full).
fn record(event: TraceEvent) {
    (&METRICS, &TRACE).record(event);
}

/// Queued task number `N`: it records its start and returns `N * 10`;
/// task 3 returns that as its error.
fn counted_task<const N: u32>() -> Result<u32, u32> {
    begin(u64::from(N));
    if N == 3 { Err(N * 10) } else { Ok(N * 10) }
}

/// The task that does not fit. It has no side effects, so the firmware can
/// call the refused copy to prove it came back intact.
fn task_5() -> Result<u32, u32> {
    Ok(50)
}

fn size_report() {
    info!("target {=str}", TARGET);
    info!(
        "size of a queue slot (fn task): {=usize} bytes",
        size_of::<Task>()
    );
    info!(
        "size of TaskQueue<Task, {=usize}>: {=usize} bytes",
        QUEUE_CAPACITY,
        size_of::<TaskQueue<Task, QUEUE_CAPACITY>>()
    );
    info!(
        "size of TraceEvent: {=usize} bytes",
        size_of::<TraceEvent>()
    );
    info!(
        "size of TraceRing<{=usize}>: {=usize} bytes",
        TRACE_CAPACITY,
        size_of::<TraceRing<TRACE_CAPACITY>>()
    );
    info!(
        "size of RuntimeMetrics: {=usize} bytes",
        size_of::<RuntimeMetrics>()
    );
    info!(
        "size of RuntimeMetrics32: {=usize} bytes",
        size_of::<RuntimeMetrics32>()
    );
    info!(
        "size of CancellationToken: {=usize} bytes",
        size_of::<CancellationToken>()
    );
    info!("size of TaskState: {=usize} bytes", size_of::<TaskState>());
}

fn queue_and_drain() {
    let mut queue: TaskQueue<Task, QUEUE_CAPACITY> = TaskQueue::new();
    let tasks: [Task; 5] = [
        counted_task::<1>,
        counted_task::<2>,
        counted_task::<3>,
        counted_task::<4>,
        task_5,
    ];
    for (n, task) in (1..).zip(tasks) {
        match queue.try_push(task) {
            Ok(()) => {
                record(TraceEvent::new(task_id(n), TraceEventKind::Submitted));
            }
            Err(QueuePushError::Full(back)) => {
                info!(
                    "queue full at {=usize}/{=usize}: task {=u64} handed back",
                    queue.len(),
                    queue.capacity(),
                    n
                );
                check!(back() == Ok(50), "the refused task comes back intact");
            }
            Err(_) => check!(false, "a full queue refuses with Full"),
        }
    }
    check!(queue.is_full(), "queue is full after four pushes");

    let mut results = [Ok(0); QUEUE_CAPACITY];
    let ran = drain(&mut queue, |index, result| {
        let id = task_id(index as u64 + 1);
        match result {
            Ok(value) => {
                record(TraceEvent::new(id, TraceEventKind::Completed));
                info!("task {} completed with {=u32}", id, value);
            }
            Err(error) => {
                record(TraceEvent::new(id, TraceEventKind::Failed));
                info!("task {} failed with {=u32}", id, error);
            }
        }
        if let Some(slot) = results.get_mut(index) {
            *slot = result;
        }
    });
    check!(ran == QUEUE_CAPACITY, "the drain ran every queued task");
    check!(queue.is_empty(), "the queue is empty after the drain");
    check!(
        results == [Ok(10), Ok(20), Err(30), Ok(40)],
        "results come back in FIFO order",
    );
    info!("drain ran {=usize} tasks in FIFO order", ran);

    // The ring is now exactly full; one more event is refused and counted.
    check!(TRACE.is_full(), "trace ring is full after the drain");
    let extra = TraceEvent::new(task_id(5), TraceEventKind::Submitted);
    check!(
        TRACE.record(extra).is_err(),
        "a full ring refuses a new event",
    );
    info!("trace ring {}", TRACE);
    for event in TRACE.drain() {
        info!("trace: {}", event);
    }
    check!(TRACE.rejected() == 1, "the refusal was counted");
}

/// One unit of cooperative work: a little integer mixing.
fn work_step(x: u32) -> u32 {
    let x = x ^ (x << 13);
    let x = x ^ (x >> 17);
    x ^ (x << 5)
}

/// A long task that polls the token between units of work and stops at the
/// next safe point after cancellation is requested. Returns how many units
/// it finished, or `None` if it ran out of work without seeing a request.
fn long_task(token: &CancellationToken) -> Option<u32> {
    let mut x = 1u32;
    for steps in 0..50_000_000u32 {
        if token.is_cancellation_requested() {
            core::hint::black_box(x);
            return Some(steps);
        }
        x = work_step(x);
    }
    None
}

fn cancellation_from_an_interrupt(syst: &mut cortex_m::peripheral::SYST) {
    let mut state = TaskState::Pending;
    check!(
        state.transition_to(TaskState::Running).is_ok(),
        "Pending -> Running",
    );
    info!("long task {}: {}", LONG_TASK, state);
    record(TraceEvent::new(LONG_TASK, TraceEventKind::Started));

    // SysTick requests cancellation from interrupt context.
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(20_000);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
    let steps = long_task(&STOP);
    syst.disable_interrupt();
    syst.disable_counter();

    check!(
        STOP.is_cancellation_requested(),
        "the interrupt requested cancellation",
    );
    check!(steps.is_some(), "the long task observed the request");
    info!("long task stopped at a safe point after the request");
    check!(
        state.transition_to(TaskState::Cancelled).is_ok(),
        "Running -> Cancelled",
    );
    record(TraceEvent::new(
        LONG_TASK,
        TraceEventKind::CancellationAcknowledged,
    ));
    info!("long task {}: {}", LONG_TASK, state);

    match state.transition_to(TaskState::Running) {
        Ok(()) => check!(false, "a terminal state must not move again"),
        Err(refused) => {
            info!("refused: {}", refused);
            check!(
                refused.from() == TaskState::Cancelled,
                "diagnostic keeps from",
            );
            check!(refused.to() == TaskState::Running, "diagnostic keeps to");
        }
    }
    check!(
        state == TaskState::Cancelled,
        "a refused transition leaves the state alone",
    );

    for event in TRACE.drain() {
        info!("trace: {}", event);
    }
}

#[exception]
fn SysTick() {
    if STOP.request_cancellation() {
        record(TraceEvent::new(
            LONG_TASK,
            TraceEventKind::CancellationRequested,
        ));
    }
}

/// Either width of snapshot, as 64-bit counters.
fn widen(snapshot: impl Into<MetricsSnapshot>) -> MetricsSnapshot {
    snapshot.into()
}

#[entry]
fn main() -> ! {
    let mut peripherals = cortex_m::Peripherals::take().unwrap_or_else(|| panic!("taken once"));
    size_report();
    queue_and_drain();
    cancellation_from_an_interrupt(&mut peripherals.SYST);

    let snapshot = METRICS.snapshot();
    info!("metrics: {}", snapshot);
    let mut expected = MetricsSnapshot::default();
    expected.submitted = 4;
    expected.started = 5;
    expected.completed = 3;
    expected.failed = 1;
    expected.cancellation_requested = 1;
    expected.cancellation_acknowledged = 1;
    check!(widen(snapshot) == expected, "metrics match the run");
    info!("all checks passed");
    exit_success()
}
