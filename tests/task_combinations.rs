//! Every combination of how a task ends, when its cancellation is requested,
//! and where it sits in the queue, for each way dinah runs a queue.
//!
//! Whatever happens, every accepted task is accounted for exactly once: it
//! ran (and its result is in its FIFO slot, or the run resumed its panic), or
//! it is still queued in order; a task refused by a full queue is handed back
//! intact.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;

use dinah::{BoundedQueue, CancellationHandle, QueuePushError, Scheduler, SchedulerExt};

mod support;

const TASKS: usize = 5;
const SUBJECT_PANIC: &str = "the subject task panicked";

#[derive(Clone, Copy, Debug)]
enum Outcome {
    Ok,
    Err,
    Panic,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Cancel {
    Never,
    BeforeStart,
    WhileRunning,
}

#[derive(Clone, Copy, Debug)]
enum Position {
    First,
    Middle,
    Last,
}

impl Position {
    fn index(self) -> usize {
        match self {
            Self::First => 0,
            Self::Middle => TASKS / 2,
            Self::Last => TASKS - 1,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Runner {
    Sequential,
    Parallel(usize),
}

/// What a task reports: its FIFO index and whether it saw a cancellation
/// request when it finished.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Report {
    index: usize,
    saw_cancellation: bool,
}

type TaskResult = Result<Report, Report>;
type Task<'a> = Box<dyn FnOnce() -> TaskResult + Send + 'a>;

struct Case {
    outcome: Outcome,
    cancel: Cancel,
    position: Position,
    runner: Runner,
}

fn run_case(case: &Case) {
    let label = format!(
        "{:?} / cancel {:?} / {:?} / {:?}",
        case.outcome, case.cancel, case.position, case.runner
    );
    let subject = case.position.index();
    let runs: Vec<AtomicUsize> = (0..=TASKS).map(|_| AtomicUsize::new(0)).collect();
    let token = CancellationHandle::new();
    let (started_tx, started_rx) = mpsc::channel::<()>();

    let task = |index: usize| -> Task<'_> {
        let (runs, token, started) = (&runs, token.clone(), started_tx.clone());
        let (outcome, cancel) = (case.outcome, case.cancel);
        Box::new(move || {
            runs[index].fetch_add(1, Ordering::SeqCst);
            if index == subject && cancel == Cancel::WhileRunning {
                started.send(()).unwrap();
                // A safe point: the task goes on only once the request
                // lands, which the canceller makes after seeing it start.
                while !token.is_cancellation_requested() {
                    thread::yield_now();
                }
            }
            let report = Report {
                index,
                saw_cancellation: index == subject && token.is_cancellation_requested(),
            };
            match outcome {
                _ if index != subject => Ok(report),
                Outcome::Ok => Ok(report),
                Outcome::Err => Err(report),
                Outcome::Panic => panic!("{}", SUBJECT_PANIC),
            }
        })
    };

    let mut queue: BoundedQueue<Task<'_>> = BoundedQueue::new(TASKS).unwrap();
    for index in 0..TASKS {
        queue
            .try_push(task(index))
            .unwrap_or_else(|_| unreachable!("sized to fit"));
    }
    // One more than fits is handed back, intact and still callable.
    let Err(QueuePushError::Full(handed_back)) = queue.try_push(task(TASKS)) else {
        panic!("{label}: a full queue must refuse");
    };
    if case.cancel == Cancel::BeforeStart {
        token.request_cancellation();
    }

    let outcome = thread::scope(|s| {
        if case.cancel == Cancel::WhileRunning {
            let token = token.clone();
            s.spawn(move || {
                started_rx.recv().unwrap();
                token.request_cancellation();
            });
        }
        panic::catch_unwind(AssertUnwindSafe(|| match case.runner {
            Runner::Sequential => Scheduler::run_until_empty(&mut queue),
            Runner::Parallel(workers) => Scheduler::run_parallel(&mut queue, workers).unwrap(),
        }))
    });

    let saw = case.cancel != Cancel::Never;
    let expected = |index: usize| Report {
        index,
        saw_cancellation: index == subject && saw,
    };
    match (case.outcome, outcome) {
        (Outcome::Panic, Err(payload)) => {
            assert_eq!(
                support::panic_message(&*payload),
                Some(SUBJECT_PANIC),
                "{label}"
            );
            // The tasks that ran form a FIFO prefix containing the subject;
            // the rest is still queued, in order, and runs exactly once now.
            let ran = runs
                .iter()
                .take(TASKS)
                .take_while(|r| r.load(Ordering::SeqCst) == 1)
                .count();
            assert!(ran > subject, "{label}: the subject ran");
            if matches!(case.runner, Runner::Sequential | Runner::Parallel(1)) {
                assert_eq!(ran, subject + 1, "{label}: one at a time stops at once");
            }
            assert_eq!(queue.len(), TASKS - ran, "{label}");
            let rest = Scheduler::run_until_empty(&mut queue);
            assert_eq!(
                rest,
                (ran..TASKS).map(|i| Ok(expected(i))).collect::<Vec<_>>(),
                "{label}"
            );
        }
        (Outcome::Ok | Outcome::Err, Ok(results)) => {
            let wanted: Vec<TaskResult> = (0..TASKS)
                .map(|i| match case.outcome {
                    Outcome::Err if i == subject => Err(expected(i)),
                    _ => Ok(expected(i)),
                })
                .collect();
            assert_eq!(results, wanted, "{label}");
            assert!(queue.is_empty(), "{label}");
        }
        (outcome, result) => panic!("{label}: {outcome:?} ended as {:?}", result.is_ok()),
    }
    // Every queued task ran exactly once, across the run and the re-run.
    for (index, count) in runs.iter().take(TASKS).enumerate() {
        assert_eq!(count.load(Ordering::SeqCst), 1, "{label}: task {index}");
    }
    // The handed-back task never ran until its owner calls it.
    assert_eq!(runs[TASKS].load(Ordering::SeqCst), 0, "{label}");
    assert_eq!(
        handed_back().map(|r| r.index),
        Ok(TASKS),
        "{label}: handed back intact"
    );
}

fn every_case(runner: Runner) {
    support::quiet_panics_containing(&[SUBJECT_PANIC]);
    for outcome in [Outcome::Ok, Outcome::Err, Outcome::Panic] {
        for cancel in [Cancel::Never, Cancel::BeforeStart, Cancel::WhileRunning] {
            for position in [Position::First, Position::Middle, Position::Last] {
                run_case(&Case {
                    outcome,
                    cancel,
                    position,
                    runner,
                });
            }
        }
    }
}

#[test]
fn sequential_drain() {
    every_case(Runner::Sequential);
}

#[test]
fn run_parallel_one_worker() {
    every_case(Runner::Parallel(1));
}

#[test]
fn run_parallel_two_workers() {
    every_case(Runner::Parallel(2));
}

#[test]
fn run_parallel_more_workers_than_tasks() {
    every_case(Runner::Parallel(TASKS + 3));
}
