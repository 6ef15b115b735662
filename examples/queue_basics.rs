//! Queues without an executor: a bounded queue, a sequential drain and a parallel
//! drain, with results in dispatch order.
//!
//! Run it with `cargo run --example queue_basics`.

use dinah::BoundedQueue;
use dinah::queue::QueuePushError;
use dinah::queue::{run_parallel, run_until_empty};
use dinah::sync::Shared;

/// Queued tasks: boxed so that different closures share one queue.
type Task = Box<dyn FnOnce() -> Result<u64, String> + Send>;

/// A small, deterministic piece of CPU work.
fn checksum(seed: u64) -> u64 {
    (0..10_000u64).fold(seed, |acc, n| {
        acc.rotate_left(5) ^ n.wrapping_mul(0x9E37_79B9)
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. A bounded queue refuses work past its capacity and hands it back.
    let mut queue: BoundedQueue<Task> = BoundedQueue::new(4)?;
    for n in 1..=4u64 {
        let task: Task = Box::new(move || {
            if n == 3 {
                Err(format!("task {n} refused its input"))
            } else {
                Ok(n * n)
            }
        });
        queue
            .try_push(task)
            .map_err(|_| "the queue has room for four tasks")?;
    }
    match queue.try_push(Box::new(|| Ok(0))) {
        Err(QueuePushError::Full(task)) => {
            println!(
                "queue full at {} tasks; the fifth task came back to us",
                queue.len()
            );
            drop(task);
        }
        Ok(()) => return Err("a full queue accepted a task".into()),
        Err(other) => return Err(format!("an unexpected refusal: {other:?}").into()),
    }

    // 2. Sequential drain on this thread: FIFO order, errors kept in place.
    let results = run_until_empty(&mut queue);
    println!("sequential results: {results:?}");

    // 3. Parallel drain on two scoped workers. Results keep dispatch order;
    //    side effects happen in completion order, so sort them before printing.
    let log = Shared::new(Vec::new());
    let mut queue: BoundedQueue<Task> = BoundedQueue::new(8)?;
    for n in 0..8u64 {
        let log = log.clone();
        let task: Task = Box::new(move || {
            let value = checksum(n);
            log.lock().map_err(|e| e.to_string())?.push(n);
            Ok(value % 1000)
        });
        queue
            .try_push(task)
            .map_err(|_| "the queue has room for eight tasks")?;
    }
    let results = run_parallel(&mut queue, 2)?;
    println!("parallel results (dispatch order): {results:?}");
    let mut finished = log.lock()?.clone();
    finished.sort_unstable();
    println!("tasks that ran (sorted): {finished:?}");
    println!("queue empty after both drains: {}", queue.is_empty());
    Ok(())
}
