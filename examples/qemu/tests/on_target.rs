//! dinah-core's tests, run on the emulated microcontroller itself.
//!
//! A plain table of test functions: each returns `Ok(())` or the first check
//! that failed. The run logs each result and a final `N passed, N failed`
//! line, and exits 0 only if none failed.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use defmt::{error, info};
use dinah_core::config::CoreError;
use dinah_core::id::{CoreId, CoreIdError, TaskIdError, WorkerIdError};
use dinah_core::queue::QueuePushError;
use dinah_core::task::TaskFailureKind;
use dinah_core::telemetry::{
    MetricsSnapshot, MetricsSnapshot32, RuntimeMetrics32, TraceEvent, TraceEventKind,
    TraceRecordError,
};
use dinah_core::{
    CoreConfig, RuntimeMetrics, TaskFailure, TaskId, TaskQueue, TaskState, TraceRing, WorkerId,
};
use dinah_qemu::{TARGET, exit_failure, exit_success};

type Outcome = Result<(), &'static str>;

fn ensure(holds: bool, what: &'static str) -> Outcome {
    if holds { Ok(()) } else { Err(what) }
}

fn ids_reject_zero_and_keep_their_value() -> Outcome {
    ensure(TaskId::new(0) == Err(TaskIdError), "TaskId rejects zero")?;
    ensure(
        WorkerId::new(0) == Err(WorkerIdError),
        "WorkerId rejects zero",
    )?;
    ensure(CoreId::new(0) == Err(CoreIdError), "CoreId rejects zero")?;
    ensure(
        TaskId::new(u64::MAX) == Err(TaskIdError),
        "TaskId::new refuses the numbers that name slots",
    )?;
    let max = TaskId::new(TaskId::MAX.get()).map_err(|_| "TaskId::MAX is valid")?;
    ensure(max.get() == (1 << 63) - 1, "the value round-trips")?;
    ensure(max.slot().is_none(), "a plain id has no slot")?;
    ensure(TaskId::MIN < max, "IDs order by value")?;
    ensure(
        CoreConfig::new(0) == Err(CoreError::ZeroMaxWorkers),
        "zero workers refused",
    )
}

fn task_state_allows_exactly_five_transitions() -> Outcome {
    use TaskState::*;
    let allowed = [
        (Pending, Running),
        (Pending, Cancelled),
        (Running, Completed),
        (Running, Failed),
        (Running, Cancelled),
    ];
    for from in TaskState::ALL {
        for to in TaskState::ALL {
            let mut state = from;
            let result = state.transition_to(to);
            if allowed.contains(&(from, to)) {
                ensure(
                    result.is_ok() && state == to,
                    "an allowed transition applies",
                )?;
            } else {
                let refused = result
                    .map(|_| ())
                    .err()
                    .ok_or("a forbidden transition is refused")?;
                ensure(
                    refused.from() == from && refused.to() == to,
                    "the refusal keeps both states",
                )?;
                ensure(state == from, "a refused transition leaves the state alone")?;
            }
        }
    }
    Ok(())
}

fn task_failure_keeps_error_and_kind() -> Outcome {
    let failure = TaskFailure::returned(7u8);
    ensure(failure.kind() == TaskFailureKind::ReturnedError, "kind")?;
    let mapped = failure.map_error(u32::from);
    ensure(
        mapped.kind() == TaskFailureKind::ReturnedError,
        "kind survives mapping",
    )?;
    ensure(mapped.into_error() == 7u32, "the error survives mapping")
}

fn full_queue_hands_the_task_back() -> Outcome {
    fn one() -> u8 {
        1
    }
    fn two() -> u8 {
        2
    }
    let mut queue: TaskQueue<fn() -> u8, 1> = TaskQueue::new();
    queue.try_push(one).map_err(|_| "room for one")?;
    match queue.try_push(two) {
        Err(QueuePushError::Full(back)) => ensure(back() == 2, "the refused task is the original")?,
        Ok(()) => return Err("a full queue accepted a task"),
        Err(_) => return Err("a full queue refuses with Full"),
    }
    ensure(queue.len() == 1, "the queue is unchanged")?;
    ensure(queue.pop().map(|task| task()) == Some(1), "FIFO")?;
    ensure(queue.pop().is_none(), "empty")
}

fn metrics_saturate() -> Outcome {
    let mut start = MetricsSnapshot::default();
    start.submitted = u64::MAX - 1;
    let wide = RuntimeMetrics::from_snapshot(start);
    wide.record_submitted();
    wide.record_submitted();
    ensure(
        wide.snapshot().submitted == u64::MAX,
        "64-bit counters stop at u64::MAX",
    )?;
    let mut start = MetricsSnapshot32::default();
    start.failed = u32::MAX;
    let narrow = RuntimeMetrics32::from_snapshot(start);
    narrow.record_failed();
    narrow.record_started();
    let snapshot = narrow.snapshot();
    ensure(
        snapshot.failed == u32::MAX,
        "32-bit counters stop at u32::MAX",
    )?;
    ensure(snapshot.started == 1, "counters are separate")
}

fn trace_ring_full_drain_clear_cycle() -> Outcome {
    static RING: TraceRing<2> = TraceRing::new();
    let task = TaskId::MIN;
    let first = TraceEvent::new(task, TraceEventKind::Submitted);
    let second = TraceEvent::new(task, TraceEventKind::Started);
    let third = TraceEvent::new(task, TraceEventKind::Completed);
    RING.record(first).map_err(|_| "room")?;
    RING.record(second).map_err(|_| "room")?;
    ensure(
        RING.record(third) == Err(TraceRecordError::Full(third)),
        "full ring refuses",
    )?;
    ensure(RING.rejected() == 1, "refusal counted")?;
    let drained = RING.drain();
    ensure(
        drained.as_slice() == [first, second],
        "drain in recording order",
    )?;
    ensure(
        RING.is_empty() && RING.rejected() == 1,
        "drain keeps the count",
    )?;
    RING.record(third).map_err(|_| "room after drain")?;
    RING.clear();
    ensure(
        RING.is_empty() && RING.rejected() == 0,
        "clear starts afresh",
    )
}

/// A named test.
type Test = (&'static str, fn() -> Outcome);

/// Polls `future` once with a waker that does nothing: the tests below
/// drive the static sync types by hand, as an executor would.
fn poll_once<F: core::future::Future>(
    future: core::pin::Pin<&mut F>,
) -> core::task::Poll<F::Output> {
    let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
    future.poll(&mut cx)
}

fn static_mutex_and_signal_hand_values_over() -> Outcome {
    use core::pin::pin;
    use core::task::Poll;
    use dinah_core::sync::{Mutex, Refusal, Signal};

    static BUS: Mutex<u8, 2> = Mutex::new(0);
    static READING: Signal<u16> = Signal::new();

    let mut guard = BUS.try_lock().map_err(|_| "a free mutex locks")?;
    *guard = 7;
    ensure(
        BUS.try_lock().err() == Some(Refusal::WouldWait),
        "a held mutex refuses try_lock",
    )?;
    let mut waiting = pin!(BUS.lock());
    ensure(poll_once(waiting.as_mut()).is_pending(), "a lock waits")?;
    drop(guard);
    match poll_once(waiting.as_mut()) {
        Poll::Ready(Ok(guard)) => ensure(*guard == 7, "the value is handed on")?,
        _ => return Err("the waiting lock gets the value"),
    }
    READING.signal(512);
    READING.signal(640);
    ensure(READING.try_take() == Some(640), "a signal keeps the latest")?;
    let mut wait = pin!(READING.wait());
    ensure(poll_once(wait.as_mut()).is_pending(), "a wait waits")?;
    READING.signal(1);
    ensure(
        poll_once(wait.as_mut()) == Poll::Ready(1),
        "a wait takes the value",
    )
}

fn static_watch_and_pubsub_reach_every_reader() -> Outcome {
    use core::pin::pin;
    use core::task::Poll;
    use dinah_core::sync::{Missed, PubSub, Watch};

    static MODE: Watch<u8, 2> = Watch::new(0);
    static EVENTS: PubSub<u8, 2, 2> = PubSub::new();

    let mut follower = MODE.receiver();
    {
        let mut changed = pin!(follower.changed());
        ensure(poll_once(changed.as_mut()).is_pending(), "no change yet")?;
        MODE.send(3);
        ensure(
            poll_once(changed.as_mut()) == Poll::Ready(Ok(3)),
            "a follower sees the change",
        )?;
    }
    ensure(!follower.has_changed(), "the change is seen")?;
    let mut subscriber = EVENTS.subscriber();
    for message in 1..=3 {
        EVENTS.publish(message);
    }
    ensure(
        subscriber.try_next_message() == Some(Err(Missed::Lagged(1))),
        "a subscriber that fell behind is told how many it missed",
    )?;
    ensure(subscriber.try_next_message() == Some(Ok(2)), "then 2")?;
    ensure(subscriber.try_next_message() == Some(Ok(3)), "then 3")?;
    let mut next = pin!(subscriber.next_message());
    ensure(poll_once(next.as_mut()).is_pending(), "then it waits")?;
    EVENTS.publish(4);
    ensure(
        poll_once(next.as_mut()) == Poll::Ready(Ok(4)),
        "a publish reaches a waiting subscriber",
    )
}

const TESTS: &[Test] = &[
    (
        "ids_reject_zero_and_keep_their_value",
        ids_reject_zero_and_keep_their_value,
    ),
    (
        "task_state_allows_exactly_five_transitions",
        task_state_allows_exactly_five_transitions,
    ),
    (
        "task_failure_keeps_error_and_kind",
        task_failure_keeps_error_and_kind,
    ),
    (
        "full_queue_hands_the_task_back",
        full_queue_hands_the_task_back,
    ),
    ("metrics_saturate", metrics_saturate),
    (
        "trace_ring_full_drain_clear_cycle",
        trace_ring_full_drain_clear_cycle,
    ),
    (
        "static_mutex_and_signal_hand_values_over",
        static_mutex_and_signal_hand_values_over,
    ),
    (
        "static_watch_and_pubsub_reach_every_reader",
        static_watch_and_pubsub_reach_every_reader,
    ),
];

#[entry]
fn main() -> ! {
    info!("on-target tests for {=str}", TARGET);
    let mut failed = 0usize;
    for (name, test) in TESTS {
        match test() {
            Ok(()) => info!("test {=str} ... ok", name),
            Err(what) => {
                error!("test {=str} ... FAILED: {=str}", name, what);
                failed += 1;
            }
        }
    }
    info!(
        "{=usize} passed, {=usize} failed",
        TESTS.len() - failed,
        failed
    );
    if failed == 0 {
        exit_success()
    } else {
        exit_failure()
    }
}
