//! Loom models of the `run_parallel` dispatch protocol: two workers, a few
//! tasks, every interleaving.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test --release -p dinah-std --test loom_dispatch`.
#![cfg(loom)]

use std::panic;
use std::sync::Once;

use dinah_std::BoundedQueue;
use dinah_std::loom_support::{Dispatch, Outcome, work};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

type Task = Box<dyn FnOnce() -> usize + Send>;

const PANIC_MESSAGE: &str = "modelled task panic";

/// Keeps the expected task panics out of the test output.
fn quiet_expected_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&PANIC_MESSAGE) {
                default(info);
            }
        }));
    });
}

/// Tasks `0..count` that count their runs; task `panicking` panics instead
/// of returning.
fn queue(
    count: usize,
    runs: &Arc<Vec<AtomicUsize>>,
    panicking: Option<usize>,
) -> BoundedQueue<Task> {
    let mut queue = BoundedQueue::new(count).unwrap();
    for index in 0..count {
        let runs = Arc::clone(runs);
        let task: Task = Box::new(move || {
            runs[index].fetch_add(1, Ordering::Relaxed);
            if Some(index) == panicking {
                panic!("{}", PANIC_MESSAGE);
            }
            index
        });
        queue.try_push(task).unwrap_or_else(|_| unreachable!());
    }
    queue
}

fn two_workers(dispatch: &Arc<Dispatch<BoundedQueue<Task>>>) -> [Outcome<usize>; 2] {
    let other = Arc::clone(dispatch);
    let handle = thread::spawn(move || work(&*other, 2));
    let mine = work(&**dispatch, 2);
    [mine, handle.join().unwrap()]
}

#[test]
fn every_task_runs_exactly_once_with_its_fifo_index() {
    loom::model(|| {
        const TASKS: usize = 3;
        let runs = Arc::new((0..TASKS).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
        let dispatch = Arc::new(Dispatch::new(queue(TASKS, &runs, None)));

        let mut seen = Vec::new();
        for outcome in two_workers(&dispatch) {
            assert!(outcome.panic.is_none(), "no task panics here");
            let done = outcome.done;
            // Within one worker, indices increase: it claims in FIFO order.
            assert!(done.windows(2).all(|pair| pair[0].0 < pair[1].0));
            seen.extend(done);
        }
        seen.sort_unstable();
        // Task i got FIFO index i and returned i.
        assert_eq!(seen, (0..TASKS).map(|i| (i, i)).collect::<Vec<_>>());
        assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
        assert_eq!((dispatch.claimed(), dispatch.remaining()), (TASKS, 0));
    });
}

#[test]
fn after_a_panic_the_queue_holds_exactly_the_tasks_not_removed() {
    quiet_expected_panics();
    loom::model(|| {
        const TASKS: usize = 4;
        let runs = Arc::new((0..TASKS).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
        let dispatch = Arc::new(Dispatch::new(queue(TASKS, &runs, Some(1))));

        let outcomes = two_workers(&dispatch);
        let panics: Vec<usize> = outcomes
            .iter()
            .filter_map(|o| o.panic.as_ref().map(|(index, _)| *index))
            .collect();
        assert_eq!(
            panics,
            [1],
            "task 1 always runs: one worker claims it before any stop"
        );

        let removed = dispatch.claimed();
        // Every finished result came back to the caller, none was dropped
        // on a worker: the finished tasks are exactly the removed ones but 1.
        let mut finished: Vec<usize> = outcomes
            .iter()
            .flat_map(|o| o.done.iter().map(|&(index, _)| index))
            .collect();
        finished.sort_unstable();
        assert_eq!(
            finished,
            (0..removed).filter(|&i| i != 1).collect::<Vec<_>>()
        );
        assert!((2..=TASKS).contains(&removed));
        // Every removed task ran exactly once; nothing else ran.
        for (index, runs) in runs.iter().enumerate() {
            let expected = usize::from(index < removed);
            assert_eq!(runs.load(Ordering::Relaxed), expected, "task {index}");
        }
        // What is left is exactly the unremoved suffix, still in order.
        let left: Vec<usize> = dispatch
            .take_remaining()
            .into_iter()
            .map(|task| task())
            .collect();
        assert_eq!(left, (removed..TASKS).collect::<Vec<_>>());
    });
}
