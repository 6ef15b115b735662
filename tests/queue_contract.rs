//! The queue contract, written once and run against every queue dinah ships:
//! the core's fixed-capacity `TaskQueue` and the hosted `BoundedQueue`.
//!
//! Each test is a generic function over a `Family` of queues;
//! `support::contract!` at the bottom instantiates every test for every family.

use std::panic::{self, AssertUnwindSafe};

use dinah::queue::{FifoQueue, QueuePushError};
use dinah::queue::{drain, run_parallel, run_until_empty};

mod support;
use support::models::{self, Bounded, CAP, Fixed, QueueFamily as Family};

fn starts_empty<F: Family>() {
    let mut queue = F::empty::<u32>();
    assert_eq!((queue.len(), queue.capacity()), (0, CAP));
    assert!(queue.is_empty() && !queue.is_full());
    assert_eq!(queue.pop(), None);
}

fn full_queue_hands_back_the_item_unchanged<F: Family>() {
    let mut queue = F::empty::<String>();
    for n in 0..CAP {
        queue.try_push(n.to_string()).unwrap();
    }
    assert!(queue.is_full());
    let refused = queue.try_push("late".to_owned()).unwrap_err();
    assert_eq!(refused, QueuePushError::Full("late".to_owned()));
    assert_eq!(refused.into_inner(), "late");
    assert_eq!(queue.len(), CAP, "a refusal changes nothing");
    for n in 0..CAP {
        assert_eq!(queue.pop(), Some(n.to_string()));
    }
}

fn fifo_across_wraparound<F: Family>() {
    let mut queue = F::empty::<u32>();
    let mut next_in = 0;
    let mut next_out = 0;
    // Interleave pushes and pops so the storage wraps around several times.
    for round in 0..(CAP * 4) {
        for _ in 0..=(round % CAP) {
            if queue.try_push(next_in).is_ok() {
                next_in += 1;
            }
        }
        for _ in 0..=(round % 3) {
            if let Some(value) = queue.pop() {
                assert_eq!(value, next_out);
                next_out += 1;
            }
        }
    }
    while let Some(value) = queue.pop() {
        assert_eq!(value, next_out);
        next_out += 1;
    }
    assert_eq!(next_out, next_in);
}

fn refused_tasks_are_still_callable<F: Family>() {
    let mut queue = F::empty::<fn() -> u32>();
    for _ in 0..CAP {
        queue.try_push(|| 1).unwrap();
    }
    let refused = queue.try_push(|| 2).unwrap_err().into_inner();
    assert_eq!(refused(), 2);
}

fn sequential_drain_runs_in_fifo_order<F: Family>() {
    let mut queue = F::empty::<Box<dyn FnOnce() -> Result<usize, usize> + Send>>();
    for n in 0..CAP {
        queue
            .try_push(Box::new(move || if n % 2 == 0 { Ok(n) } else { Err(n) }))
            .unwrap_or_else(|_| unreachable!());
    }
    let mut seen = Vec::new();
    assert_eq!(drain(&mut queue, |i, r| seen.push((i, r))), CAP);
    let expected: Vec<_> = (0..CAP)
        .map(|n| (n, if n % 2 == 0 { Ok(n) } else { Err(n) }))
        .collect();
    assert_eq!(seen, expected);
    assert!(queue.is_empty());
}

fn a_panicking_task_leaves_later_ones_queued<F: Family>() {
    let mut queue = F::empty::<fn() -> u32>();
    let tasks: [fn() -> u32; 4] = [|| 0, || 1, || panic!("third task"), || 3];
    for task in tasks {
        queue.try_push(task).unwrap();
    }
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| run_until_empty(&mut queue)));
    assert!(outcome.is_err());
    assert_eq!(queue.len(), 1);
    assert_eq!(run_until_empty(&mut queue), [3]);
}

fn run_parallel_returns_fifo_results<F: Family>() {
    for workers in [1, 2, CAP] {
        let mut queue = F::empty::<Box<dyn FnOnce() -> usize + Send>>();
        for n in 0..CAP {
            queue
                .try_push(Box::new(move || n * 3))
                .unwrap_or_else(|_| unreachable!());
        }
        let results = run_parallel(&mut queue, workers).unwrap();
        assert_eq!(results, (0..CAP).map(|n| n * 3).collect::<Vec<_>>());
        assert!(queue.is_empty());
    }
}

/// Behaves exactly like a `VecDeque` bounded at `CAP`, for random
/// operation sequences.
fn matches_the_model<F: Family>() {
    support::for_random_bytes(1024, 100, models::check_queue::<F>);
}

support::contract!(
    [task_queue: Fixed, bounded_queue: Bounded],
    [
        starts_empty,
        full_queue_hands_back_the_item_unchanged,
        fifo_across_wraparound,
        refused_tasks_are_still_callable,
        sequential_drain_runs_in_fifo_order,
        a_panicking_task_leaves_later_ones_queued,
        run_parallel_returns_fifo_results,
        matches_the_model,
    ]
);
