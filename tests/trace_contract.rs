//! The trace-log contract, written once and run against the core's
//! `TraceRing` and the hosted `TraceBuffer`.
//!
//! The two differ only in where their storage lives (inline and `static`
//! friendly, or on the heap with a run-time capacity) and in the collection
//! their copying methods return; `TraceLog` papers over the latter so every
//! test below is written once.

use std::sync::Barrier;
use std::thread;

use dinah::telemetry::{TraceBuffer, TraceRecordError, TraceRing};

mod support;
use support::models::{self, CAP, TraceLog, event};

fn starts_empty<L: TraceLog>() {
    let log = L::empty();
    assert_eq!((log.len(), log.capacity(), log.rejected()), (0, CAP, 0));
    assert!(log.is_empty() && !log.is_full());
    assert_eq!(log.pop(), None);
    assert!(log.snapshot().is_empty() && log.drain().is_empty());
}

fn full_log_refuses_counts_and_never_overwrites<L: TraceLog>() {
    let log = L::empty();
    let accepted: Vec<_> = (0..CAP).map(|step| event(1, step)).collect();
    for &e in &accepted {
        log.record(e).unwrap();
    }
    assert!(log.is_full());
    let late = event(2, 0);
    assert_eq!(log.record(late), Err(TraceRecordError::Full(late)));
    assert_eq!(log.record(late).unwrap_err().into_event(), late);
    assert_eq!(log.rejected(), 2);
    assert_eq!(log.snapshot(), accepted, "history intact");
}

fn pop_drain_and_clear<L: TraceLog>() {
    let log = L::empty();
    for step in 0..CAP {
        log.record(event(1, step)).unwrap();
    }
    assert!(log.record(event(9, 0)).is_err());
    assert_eq!(log.pop(), Some(event(1, 0)));
    assert!(!log.is_full());
    log.record(event(3, 0)).unwrap();

    let mut expected: Vec<_> = (1..CAP).map(|step| event(1, step)).collect();
    expected.push(event(3, 0));
    assert_eq!(log.drain(), expected);
    assert!(log.is_empty());
    assert_eq!(log.rejected(), 1, "drain keeps the rejection count");

    log.record(event(4, 0)).unwrap();
    log.clear();
    assert!(log.is_empty());
    assert_eq!(log.rejected(), 0, "clear starts afresh");
}

fn snapshot_into_copies_the_oldest_without_removing<L: TraceLog>() {
    let log = L::empty();
    for task in 1..=3 {
        log.record(event(task, 0)).unwrap();
    }
    let filler = event(99, 3);
    let mut small = [filler; 2];
    assert_eq!(log.snapshot_into(&mut small), 2);
    assert_eq!(small, [event(1, 0), event(2, 0)]);
    let mut large = [filler; CAP + 2];
    assert_eq!(log.snapshot_into(&mut large), 3);
    assert_eq!(&large[..3], &[event(1, 0), event(2, 0), event(3, 0)]);
    assert!(
        large[3..].iter().all(|&e| e == filler),
        "slots past len untouched"
    );
    assert_eq!(log.snapshot_into(&mut []), 0);
    assert_eq!(log.len(), 3);
}

fn concurrent_producers_lose_nothing_and_keep_their_order<L: TraceLog>() {
    const PRODUCERS: u64 = 4;
    const PER_PRODUCER: usize = 5;
    let log = L::empty();
    let start = Barrier::new(PRODUCERS as usize);
    let refused: usize = thread::scope(|s| {
        let handles: Vec<_> = (1..=PRODUCERS)
            .map(|task| {
                let (log, start) = (&log, &start);
                s.spawn(move || {
                    start.wait();
                    (0..PER_PRODUCER)
                        .filter(|&step| log.record(event(task, step)).is_err())
                        .count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let sent = PRODUCERS as usize * PER_PRODUCER;
    assert_eq!(log.len(), CAP);
    assert_eq!(refused, sent - CAP);
    assert_eq!(log.rejected(), refused as u64);
    // What each producer got in is a prefix of what it sent, in order.
    let events = log.drain();
    for task in 1..=PRODUCERS {
        let mine: Vec<_> = events.iter().filter(|e| e.task.get() == task).collect();
        for (step, e) in mine.into_iter().enumerate() {
            assert_eq!(*e, event(task, step));
        }
    }
}

/// Behaves like a bounded `VecDeque` plus a refusal count, for random
/// operation sequences.
fn matches_the_model<L: TraceLog>() {
    support::for_random_bytes(1024, 80, models::check_trace::<L>);
}

support::contract!(
    [trace_ring: TraceRing<CAP>, trace_buffer: TraceBuffer],
    [
        starts_empty,
        full_log_refuses_counts_and_never_overwrites,
        pop_drain_and_clear,
        snapshot_into_copies_the_oldest_without_removing,
        concurrent_producers_lose_nothing_and_keep_their_order,
        matches_the_model,
    ]
);
