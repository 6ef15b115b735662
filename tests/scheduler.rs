//! Executor and scheduler regressions: overlap, exactly-once, error identity,
//! panic propagation, FIFO with one worker, and the worker bound.

use std::collections::HashSet;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::thread;

use dinah::queue::{ParallelError, run_next, run_parallel, run_until_empty};
use dinah::{BoundedQueue, TaskQueue};

mod support;
use support::HookedQueue;

type Task<'a, R> = Box<dyn FnOnce() -> R + Send + 'a>;

fn queue_of<'a, R>(tasks: Vec<Task<'a, R>>) -> BoundedQueue<Task<'a, R>> {
    let mut queue = BoundedQueue::new(tasks.len().max(1)).unwrap();
    for task in tasks {
        queue
            .try_push(task)
            .unwrap_or_else(|_| unreachable!("sized to fit"));
    }
    queue
}

#[test]
fn run_next_runs_the_oldest_once_and_returns_its_error_unchanged() {
    let calls = AtomicUsize::new(0);
    let mut queue: TaskQueue<Box<dyn FnOnce() -> Result<u8, String> + '_>, 2> = TaskQueue::new();
    queue
        .try_push(Box::new(|| {
            calls.fetch_add(1, Ordering::Relaxed);
            Err("kept as is".to_owned())
        }))
        .unwrap_or_else(|_| unreachable!());
    queue
        .try_push(Box::new(|| Ok(2)))
        .unwrap_or_else(|_| unreachable!());
    assert_eq!(run_next(&mut queue), Some(Err("kept as is".to_owned())));
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    assert_eq!(run_next(&mut queue), Some(Ok(2)));
    assert_eq!(run_next(&mut queue), None);
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

#[test]
fn run_next_panics_reach_the_caller_and_leave_the_rest_queued() {
    let mut queue: TaskQueue<fn() -> u8, 2> = TaskQueue::new();
    queue
        .try_push(|| panic!("queued task"))
        .unwrap_or_else(|_| unreachable!());
    queue.try_push(|| 7).unwrap_or_else(|_| unreachable!());
    let payload =
        panic::catch_unwind(AssertUnwindSafe(|| run_next(&mut queue))).expect_err("must unwind");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"queued task"));
    assert_eq!(queue.len(), 1);
    assert_eq!(run_next(&mut queue), Some(7));
}

#[test]
fn run_next_runs_on_the_callers_thread() {
    let caller = thread::current().id();
    let mut queue: TaskQueue<fn() -> thread::ThreadId, 1> = TaskQueue::new();
    queue
        .try_push(|| thread::current().id())
        .unwrap_or_else(|_| unreachable!());
    assert_eq!(run_next(&mut queue), Some(caller));
}

#[test]
fn sequential_drain_keeps_fifo_and_task_errors() {
    let mut queue = BoundedQueue::new(5).unwrap();
    for n in 0..5u32 {
        queue
            .try_push(move || {
                if n % 2 == 1 {
                    Err(format!("odd {n}"))
                } else {
                    Ok(n)
                }
            })
            .unwrap_or_else(|_| unreachable!());
    }
    let results = run_until_empty(&mut queue);
    assert_eq!(
        results,
        [
            Ok(0),
            Err("odd 1".into()),
            Ok(2),
            Err("odd 3".into()),
            Ok(4)
        ]
    );
    assert!(queue.is_empty());
    assert!(run_until_empty(&mut queue).is_empty());
}

#[test]
fn sequential_drain_needs_no_send() {
    let shared = Rc::new(5);
    let mut queue = BoundedQueue::new(1).unwrap();
    let captured = Rc::clone(&shared);
    queue
        .try_push(move || *captured + 1)
        .unwrap_or_else(|_| unreachable!());
    assert_eq!(run_until_empty(&mut queue), [6]);
}

#[test]
fn sequential_drain_panic_leaves_later_tasks_queued() {
    let ran = Mutex::new(Vec::new());
    let tasks: Vec<Task<'_, u32>> = (0..5u32)
        .map(|n| {
            let ran = &ran;
            Box::new(move || {
                ran.lock().unwrap().push(n);
                assert_ne!(n, 2, "task 2 fails");
                n
            }) as Task<'_, u32>
        })
        .collect();
    let mut queue = queue_of(tasks);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| run_until_empty(&mut queue)));
    assert!(outcome.is_err());
    assert_eq!(*ran.lock().unwrap(), [0, 1, 2]);
    assert_eq!(queue.len(), 2);
    assert_eq!(run_until_empty(&mut queue), [3, 4]);
}

#[test]
fn run_parallel_overlaps_two_tasks() {
    // Each task waits for the other: this returns only if both run at once.
    let both_running = Barrier::new(2);
    let tasks: Vec<Task<'_, &str>> = vec![
        Box::new(|| {
            both_running.wait();
            "first"
        }),
        Box::new(|| {
            both_running.wait();
            "second"
        }),
    ];
    let mut queue = queue_of(tasks);
    assert_eq!(run_parallel(&mut queue, 2).unwrap(), ["first", "second"]);
    assert!(queue.is_empty());
}

#[test]
fn run_parallel_runs_each_task_exactly_once() {
    let counts: Vec<AtomicUsize> = (0..200).map(|_| AtomicUsize::new(0)).collect();
    for workers in [1, 2, 3, 8] {
        let tasks: Vec<Task<'_, usize>> = (0..counts.len())
            .map(|i| {
                let counts = &counts;
                Box::new(move || {
                    counts[i].fetch_add(1, Ordering::Relaxed);
                    i
                }) as Task<'_, usize>
            })
            .collect();
        let mut queue = queue_of(tasks);
        let results = run_parallel(&mut queue, workers).unwrap();
        assert_eq!(results, (0..counts.len()).collect::<Vec<_>>());
    }
    assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 4));
}

#[test]
fn run_parallel_preserves_task_error_identity() {
    #[derive(Debug, PartialEq)]
    struct Rejected {
        task: usize,
        reason: &'static str,
    }
    let tasks: Vec<Task<'_, Result<usize, Rejected>>> = (0..10)
        .map(|task| {
            Box::new(move || {
                if task % 3 == 0 {
                    Err(Rejected {
                        task,
                        reason: "multiple of three",
                    })
                } else {
                    Ok(task)
                }
            }) as Task<'_, _>
        })
        .collect();
    let mut queue = queue_of(tasks);
    let results = run_parallel(&mut queue, 3).unwrap();
    for (task, result) in results.into_iter().enumerate() {
        if task % 3 == 0 {
            assert_eq!(
                result,
                Err(Rejected {
                    task,
                    reason: "multiple of three"
                })
            );
        } else {
            assert_eq!(result, Ok(task));
        }
    }
}

#[test]
fn run_parallel_rejects_zero_workers_and_leaves_the_queue_alone() {
    let ran = AtomicUsize::new(0);
    let tasks: Vec<Task<'_, ()>> = vec![Box::new(|| {
        ran.fetch_add(1, Ordering::Relaxed);
    })];
    let mut queue = queue_of(tasks);
    assert!(matches!(
        run_parallel(&mut queue, 0),
        Err(ParallelError::ZeroMaxWorkers)
    ));
    assert_eq!((queue.len(), ran.load(Ordering::Relaxed)), (1, 0));
}

#[test]
fn run_parallel_on_an_empty_queue_returns_nothing() {
    let mut queue: BoundedQueue<fn() -> u8> = BoundedQueue::new(4).unwrap();
    assert!(run_parallel(&mut queue, 4).unwrap().is_empty());
}

#[test]
fn one_worker_keeps_fifo_across_the_whole_call() {
    let started = Mutex::new(Vec::new());
    let tasks: Vec<Task<'_, usize>> = (0..50usize)
        .map(|i| {
            let started = &started;
            Box::new(move || {
                started.lock().unwrap().push(i);
                i * 2
            }) as Task<'_, usize>
        })
        .collect();
    let mut queue = queue_of(tasks);
    let results = run_parallel(&mut queue, 1).unwrap();
    assert_eq!(*started.lock().unwrap(), (0..50).collect::<Vec<_>>());
    assert_eq!(results, (0..50).map(|i| i * 2).collect::<Vec<_>>());
}

#[test]
fn never_more_than_max_workers_tasks_run_at_once() {
    for limit in [1, 2, 3, 5] {
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        // The first `limit` tasks meet at a barrier, so the peak is reached.
        let first_wave = Barrier::new(limit);
        let tasks: Vec<Task<'_, usize>> = (0..60)
            .map(|i| {
                let (running, peak, first_wave) = (&running, &peak, &first_wave);
                Box::new(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    if i < limit {
                        first_wave.wait();
                    }
                    for _ in 0..(i % 4) {
                        thread::yield_now();
                    }
                    running.fetch_sub(1, Ordering::SeqCst);
                    i
                }) as Task<'_, usize>
            })
            .collect();
        let mut queue = queue_of(tasks);
        let results = run_parallel(&mut queue, limit).unwrap();
        assert_eq!(results, (0..60).collect::<Vec<_>>());
        assert_eq!(peak.load(Ordering::SeqCst), limit, "limit {limit}");
    }
}

#[test]
fn workers_are_at_most_the_queued_tasks_and_never_the_caller() {
    let caller = thread::current().id();
    let threads = Mutex::new(HashSet::new());
    let tasks: Vec<Task<'_, ()>> = (0..3)
        .map(|_| {
            let threads = &threads;
            Box::new(move || {
                threads.lock().unwrap().insert(thread::current().id());
            }) as Task<'_, ()>
        })
        .collect();
    let mut queue = queue_of(tasks);
    run_parallel(&mut queue, 64).unwrap();
    drop(queue);
    let threads = threads.into_inner().unwrap();
    assert!((1..=3).contains(&threads.len()));
    assert!(!threads.contains(&caller));
}

#[test]
fn one_worker_panic_resumes_and_keeps_the_rest_queued_in_order() {
    let tasks: Vec<Task<'_, u32>> = (0..5u32)
        .map(|n| {
            Box::new(move || {
                if n == 1 {
                    panic!("task one");
                }
                n
            }) as Task<'_, u32>
        })
        .collect();
    let mut queue = queue_of(tasks);
    let payload = panic::catch_unwind(AssertUnwindSafe(|| run_parallel(&mut queue, 1)))
        .expect_err("the task panic reaches the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"task one"));
    assert_eq!(run_until_empty(&mut queue), [2, 3, 4]);
}

#[test]
fn parallel_panic_finishes_removed_tasks_and_keeps_the_rest_in_order() {
    const TASKS: usize = 40;
    let started: Vec<AtomicUsize> = (0..TASKS).map(|_| AtomicUsize::new(0)).collect();
    let finished: Vec<AtomicUsize> = (0..TASKS).map(|_| AtomicUsize::new(0)).collect();
    // Tasks 0 and 1 meet, so both are removed and running when task 1 panics.
    let meet = Barrier::new(2);
    let tasks: Vec<Task<'_, usize>> = (0..TASKS)
        .map(|i| {
            let (started, finished, meet) = (&started, &finished, &meet);
            Box::new(move || {
                started[i].fetch_add(1, Ordering::SeqCst);
                if i < 2 {
                    meet.wait();
                }
                if i == 1 {
                    panic!("task one");
                }
                finished[i].fetch_add(1, Ordering::SeqCst);
                i
            }) as Task<'_, usize>
        })
        .collect();
    let mut queue = queue_of(tasks);
    let payload = panic::catch_unwind(AssertUnwindSafe(|| run_parallel(&mut queue, 2)))
        .expect_err("the task panic reaches the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"task one"));

    // The removed tasks are a FIFO prefix; all of them ran to the end (the
    // workers were joined), except the one that panicked.
    let removed = started
        .iter()
        .take_while(|s| s.load(Ordering::SeqCst) == 1)
        .count();
    assert!(removed >= 2);
    assert!(
        started[removed..]
            .iter()
            .all(|s| s.load(Ordering::SeqCst) == 0)
    );
    for (i, finished) in finished.iter().enumerate().take(removed) {
        let expected = usize::from(i != 1);
        assert_eq!(finished.load(Ordering::SeqCst), expected, "task {i}");
    }
    // Everything not removed is still queued, in order.
    assert_eq!(queue.len(), TASKS - removed);
    assert_eq!(
        run_until_empty(&mut queue),
        (removed..TASKS).collect::<Vec<_>>()
    );
}

#[test]
fn the_fixed_capacity_core_queue_plugs_into_run_parallel() {
    let mut queue: TaskQueue<fn() -> u64, 8> = TaskQueue::new();
    let tasks: [fn() -> u64; 3] = [|| 1, || 2, || 3];
    for task in tasks {
        queue.try_push(task).unwrap();
    }
    assert_eq!(run_parallel(&mut queue, 2).unwrap(), [1, 2, 3]);
    assert!(queue.is_empty());
}

#[test]
fn a_panicking_queue_stops_the_run_instead_of_being_trusted_again() {
    let ran = AtomicUsize::new(0);
    let tasks: Vec<Task<'_, ()>> = (0..10)
        .map(|_| {
            let ran = &ran;
            Box::new(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            }) as Task<'_, ()>
        })
        .collect();
    let mut queue = HookedQueue::new(tasks);
    queue.before_pop = |call| assert_ne!(call, 3, "the queue itself failed");
    let payload = panic::catch_unwind(AssertUnwindSafe(|| run_parallel(&mut queue, 2)))
        .expect_err("the queue's panic reaches the caller");
    assert_eq!(
        payload.downcast_ref::<String>().map(String::as_str),
        Some("assertion `left != right` failed: the queue itself failed\n  left: 3\n right: 3")
    );
    // Two pops succeeded before the failing one; nothing was popped after it.
    assert_eq!(ran.load(Ordering::SeqCst), 2);
    assert_eq!(queue.inner.len(), 8);
}
