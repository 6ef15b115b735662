//! Careless and hostile input: queues that misreport their length, results
//! whose destructors panic, several tasks panicking at once. Nothing accepted
//! may be lost, and the process must never abort.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};

use dinah::BoundedQueue;
use dinah::queue::{run_parallel, run_until_empty};

mod support;
use support::HookedQueue;

const TASKS: usize = 12;

/// What a misreporting queue says its length is, given the true one.
type LenLie = fn(actual: usize) -> usize;

type Task = Box<dyn FnOnce() -> usize + Send>;

fn misreporting(reported_len: LenLie) -> HookedQueue<Task> {
    let mut queue = HookedQueue::new((0..TASKS).map(|index| Box::new(move || index) as Task));
    queue.reported_len = reported_len;
    queue
}

/// Every way a `len()` can be wrong that still claims something is queued.
const NONZERO_LIES: [(&str, LenLie); 4] = [
    ("one", |_| 1),
    ("too small", |actual| actual / 2),
    ("too large", |actual| actual * 1000),
    ("usize::MAX", |_| usize::MAX),
];

#[test]
fn a_wrong_len_never_changes_what_the_sequential_drains_run() {
    for (name, lie) in NONZERO_LIES
        .into_iter()
        .chain([("zero", (|_| 0) as LenLie)])
    {
        let mut queue = misreporting(lie);
        assert_eq!(
            run_until_empty(&mut queue),
            (0..TASKS).collect::<Vec<_>>(),
            "len {name}"
        );
        assert!(queue.inner.is_empty(), "len {name}");
    }
}

#[test]
fn run_parallel_trusts_pop_not_len_for_what_runs() {
    for workers in [1, 2, 5] {
        for (name, lie) in NONZERO_LIES {
            let mut queue = misreporting(lie);
            let results = run_parallel(&mut queue, workers).unwrap();
            assert_eq!(
                results,
                (0..TASKS).collect::<Vec<_>>(),
                "len {name}, {workers} workers"
            );
            assert!(queue.inner.is_empty(), "len {name}, {workers} workers");
        }
    }
}

#[test]
fn run_parallel_treats_a_zero_len_as_empty_and_keeps_every_task_queued() {
    let mut queue = misreporting(|_| 0);
    assert!(run_parallel(&mut queue, 4).unwrap().is_empty());
    assert_eq!(queue.inner.len(), TASKS, "nothing was removed");
    assert_eq!(
        run_until_empty(&mut queue.inner),
        (0..TASKS).collect::<Vec<_>>()
    );
}

const TASK_PANIC: &str = "the task itself failed";
const DROP_PANIC: &str = "a result's destructor failed";

/// A result whose destructor panics, counting how often it ran.
#[derive(Debug)]
struct Explosive<'a> {
    drops: &'a AtomicUsize,
}

impl Drop for Explosive<'_> {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        panic!("{}", DROP_PANIC);
    }
}

#[test]
fn a_task_panic_reaches_the_caller_even_when_finished_results_panic_on_drop() {
    support::quiet_panics_containing(&[TASK_PANIC, DROP_PANIC, "task 0", "task 1"]);
    type Exploding<'a> = Box<dyn FnOnce() -> Explosive<'a> + Send + 'a>;
    let drops = AtomicUsize::new(0);
    for workers in [1, 2] {
        drops.store(0, Ordering::SeqCst);
        let mut queue: BoundedQueue<Exploding<'_>> = BoundedQueue::new(TASKS).unwrap();
        for index in 0..TASKS {
            let drops = &drops;
            // Several finished results whose destructors panic: before the
            // fix, the first replaced the task's payload and the second
            // aborted the process.
            queue
                .try_push(Box::new(move || {
                    assert_ne!(index, 4, "{}", TASK_PANIC);
                    Explosive { drops }
                }))
                .unwrap_or_else(|_| unreachable!());
        }
        let payload = panic::catch_unwind(AssertUnwindSafe(|| run_parallel(&mut queue, workers)))
            .expect_err("the task panic reaches the caller");
        let message = payload
            .downcast_ref::<String>()
            .expect("assert_ne! formats");
        assert!(message.contains(TASK_PANIC), "{workers} workers: {message}");
        // Each finished result was dropped exactly once, before the resume.
        let removed = TASKS - queue.len();
        assert!(removed >= 5);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            removed - 1,
            "{workers} workers"
        );
        // The tasks never removed are still queued, in order.
        drop(queue);
    }
}

#[test]
fn when_several_tasks_panic_the_one_removed_first_wins() {
    support::quiet_panics_containing(&[TASK_PANIC, DROP_PANIC, "task 0", "task 1"]);
    let both_running = Barrier::new(2);
    for _ in 0..8 {
        let tasks: Vec<Box<dyn FnOnce() + Send + '_>> = vec![
            Box::new(|| {
                both_running.wait();
                // Let the second task panic first as often as not.
                std::thread::yield_now();
                panic!("task 0");
            }),
            Box::new(|| {
                both_running.wait();
                panic!("task 1");
            }),
        ];
        let mut queue = BoundedQueue::new(2).unwrap();
        for task in tasks {
            queue.try_push(task).unwrap_or_else(|_| unreachable!());
        }
        let payload = panic::catch_unwind(AssertUnwindSafe(|| run_parallel(&mut queue, 2)))
            .expect_err("both tasks panic");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"task 0"));
    }
}
