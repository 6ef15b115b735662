//! Repeated concurrent runs must give the same observable results: the same
//! FIFO-indexed result vector, exact totals, and the trace contract. No
//! order between threads is asserted where none is promised.

use std::sync::Barrier;
use std::thread;

use dinah::queue::QueuePushError;
use dinah::queue::run_parallel;
use dinah::sync::Shared;
use dinah::task::{TaskFailure, TaskFailureKind};
use dinah::telemetry::{
    MetricsSnapshot, RuntimeMetrics, TraceBuffer, TraceEvent, TraceEventKind, TraceRecordError,
};
use dinah::{BoundedQueue, TaskId, TaskQueue};

const TASKS: u64 = 64;
/// Miri interprets every instruction: the same checks, fewer rounds.
const REPETITIONS: usize = if cfg!(miri) { 1 } else { 16 };
const SCALE: u64 = if cfg!(miri) { 50 } else { 1 };

/// A deterministic integer mix, `rounds` times.
fn mix(seed: u64, rounds: u64) -> u64 {
    let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

fn task_result(index: u64) -> Result<u64, String> {
    // Different amounts of work per task; every fifth task fails.
    let value = mix(index, (200 + (index * 7919) % 5_000) / SCALE);
    if index % 5 == 3 {
        Err(format!("task {index} failed with {value:x}"))
    } else {
        Ok(value)
    }
}

#[test]
fn run_parallel_gives_the_same_fifo_results_every_time() {
    let expected: Vec<_> = (0..TASKS).map(task_result).collect();
    assert!(expected.iter().any(Result::is_err) && expected.iter().any(Result::is_ok));
    for workers in [1, 2, 3, 7, 64] {
        for repetition in 0..REPETITIONS {
            let mut queue = BoundedQueue::new(TASKS as usize).unwrap();
            for index in 0..TASKS {
                queue
                    .try_push(move || task_result(index))
                    .unwrap_or_else(|_| unreachable!());
            }
            let results = run_parallel(&mut queue, workers).unwrap();
            assert_eq!(
                results, expected,
                "workers {workers}, repetition {repetition}"
            );
            assert!(queue.is_empty());
        }
    }
}

#[test]
fn shared_counts_every_increment_and_releases_its_clones() {
    const THREADS: usize = 8;
    const INCREMENTS: usize = 1_000 / SCALE as usize;
    for _ in 0..REPETITIONS {
        let total = Shared::new(0usize);
        let start = Barrier::new(THREADS);
        thread::scope(|s| {
            for _ in 0..THREADS {
                let (mine, start) = (total.clone(), &start);
                s.spawn(move || {
                    start.wait();
                    for _ in 0..INCREMENTS {
                        *mine.lock().unwrap() += 1;
                    }
                });
            }
        });
        assert_eq!(*total.lock().unwrap(), THREADS * INCREMENTS);
        assert_eq!(total.handle_count(), 1, "every clone was dropped");
    }
}

#[test]
fn metrics_totals_are_exact_under_concurrency() {
    const THREADS: u64 = 6;
    const EVENTS: u64 = 2_000 / SCALE;
    for _ in 0..REPETITIONS {
        let metrics = RuntimeMetrics::new();
        let start = Barrier::new(THREADS as usize);
        thread::scope(|s| {
            for t in 0..THREADS {
                let (metrics, start) = (&metrics, &start);
                s.spawn(move || {
                    start.wait();
                    for n in 0..EVENTS {
                        metrics.record_submitted();
                        metrics.record_started();
                        if (n + t) % 2 == 0 {
                            metrics.record_completed();
                        } else {
                            metrics.record_failed();
                        }
                        if n % 10 == 0 {
                            metrics.record_cancellation_requested();
                        }
                        if n % 20 == 0 {
                            metrics.record_cancellation_acknowledged();
                        }
                    }
                });
            }
        });
        let mut expected = MetricsSnapshot::default();
        expected.submitted = THREADS * EVENTS;
        expected.started = THREADS * EVENTS;
        expected.completed = THREADS * EVENTS / 2;
        expected.failed = THREADS * EVENTS / 2;
        expected.cancellation_requested = THREADS * EVENTS / 10;
        expected.cancellation_acknowledged = THREADS * EVENTS / 20;
        assert_eq!(metrics.snapshot(), expected);
    }
}

#[test]
fn trace_buffer_with_concurrent_producers_keeps_capacity_and_drains() {
    const PRODUCERS: u64 = 4;
    const PER_PRODUCER: u64 = 100;
    const CAPACITY: usize = 250;
    for _ in 0..REPETITIONS {
        let trace = TraceBuffer::new(CAPACITY).unwrap();
        let start = Barrier::new(PRODUCERS as usize);
        let refused: u64 = thread::scope(|s| {
            let handles: Vec<_> = (1..=PRODUCERS)
                .map(|producer| {
                    let (trace, start) = (&trace, &start);
                    s.spawn(move || {
                        start.wait();
                        let task = TaskId::new(producer).unwrap();
                        let mut refused = 0;
                        for _ in 0..PER_PRODUCER {
                            let event = TraceEvent::new(task, TraceEventKind::Started);
                            match trace.record(event) {
                                Ok(()) => {}
                                Err(TraceRecordError::Full(back)) => {
                                    assert_eq!(back, event);
                                    refused += 1;
                                }
                                Err(other) => panic!("only Full is refused: {other}"),
                            }
                        }
                        refused
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(trace.len(), CAPACITY);
        assert_eq!(refused, PRODUCERS * PER_PRODUCER - CAPACITY as u64);
        assert_eq!(trace.rejected(), refused);

        let snapshot = trace.snapshot();
        assert_eq!(
            trace.drain(),
            snapshot,
            "drain returns what snapshot saw, in order"
        );
        assert!(trace.is_empty());
        trace.clear();
        assert_eq!(trace.rejected(), 0);
        let reused = TraceEvent::new(TaskId::MIN, TraceEventKind::Completed);
        trace.record(reused).unwrap();
        assert_eq!(trace.snapshot(), [reused]);
    }
}

#[test]
fn task_queue_rejects_without_mutation_and_is_reusable() {
    let mut queue: TaskQueue<u32, 3> = TaskQueue::new();
    for n in 0..3 {
        queue.try_push(n).unwrap();
    }
    assert_eq!(queue.try_push(99), Err(QueuePushError::Full(99)));
    assert_eq!(queue.len(), 3);
    assert_eq!(queue.pop(), Some(0));
    queue.try_push(3).unwrap();
    let drained: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
    assert_eq!(drained, [1, 2, 3]);
}

#[test]
fn task_failure_keeps_its_kind_through_query_map_and_consume() {
    let failure = TaskFailure::returned(String::from("boom"));
    assert_eq!(failure.kind(), TaskFailureKind::ReturnedError);
    assert_eq!(failure.error(), "boom");
    let mapped = failure.map_error(|e| e.len());
    assert_eq!(mapped.kind(), TaskFailureKind::ReturnedError);
    assert_eq!(mapped.into_error(), 4);
}
