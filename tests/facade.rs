//! The facade's core surface. Built with and without the `std` feature:
//! `ci/host-tests.sh` runs it both ways, so these are the tests of the
//! firmware-facing (`default-features = false`) build of `dinah`.

use dinah::config::{CoreError, LifecycleState};
use dinah::queue::{FifoQueue, QueuePushError};
use dinah::queue::{drain, run_next};
use dinah::task::{TaskFailure, TaskFailureKind};
use dinah::telemetry::{RuntimeMetrics, TraceEvent, TraceEventKind, TraceRing};
use dinah::{CancellationToken, CoreConfig, TaskId, TaskQueue, TaskState, WorkerId};

#[test]
fn the_core_drain_runs_through_the_facade() {
    let mut queue: TaskQueue<fn() -> Result<u8, u8>, 2> = TaskQueue::new();
    queue.try_push(|| Ok(1)).unwrap();
    queue.try_push(|| Err(2)).unwrap();
    assert!(matches!(
        queue.try_push(|| Ok(3)),
        Err(QueuePushError::Full(_))
    ));
    let mut results = [Ok(0); 2];
    assert_eq!(drain(&mut queue, |i, r| results[i] = r), 2);
    assert_eq!(results, [Ok(1), Err(2)]);
    assert!(FifoQueue::is_empty(&queue));
    let mut one: TaskQueue<fn() -> u8, 1> = TaskQueue::new();
    one.try_push(|| 7).unwrap();
    assert_eq!(run_next(&mut one), Some(7));
}

#[test]
fn statics_and_values_of_the_core_are_reachable() {
    static TOKEN: CancellationToken = CancellationToken::new();
    static METRICS: RuntimeMetrics = RuntimeMetrics::new();
    static TRACE: TraceRing<2> = TraceRing::new();

    assert!(TOKEN.request_cancellation());
    METRICS.record_submitted();
    assert_eq!(METRICS.snapshot().submitted, 1);
    let task = TaskId::new(1).unwrap();
    TRACE
        .record(TraceEvent::new(task, TraceEventKind::Submitted))
        .unwrap();
    assert_eq!(TRACE.len(), 1);

    let mut state = TaskState::Pending;
    state.transition_to(TaskState::Running).unwrap();
    assert!(state.transition_to(TaskState::Pending).is_err());
    let mut lifecycle = LifecycleState::Created;
    lifecycle.transition_to(LifecycleState::Running).unwrap();
    assert_eq!(CoreConfig::new(0), Err(CoreError::ZeroMaxWorkers));
    assert!(WorkerId::new(0).is_err());
    assert_eq!(
        TaskFailure::returned("no").kind(),
        TaskFailureKind::ReturnedError
    );
}

#[cfg(feature = "std")]
#[test]
fn the_std_feature_adds_the_hosted_layer() {
    use dinah::queue::{BoundedQueue, run_until_empty};

    let mut queue = BoundedQueue::new(2).unwrap();
    queue.try_push(|| 1).unwrap_or_else(|_| unreachable!());
    assert_eq!(run_until_empty(&mut queue), [1]);
}
