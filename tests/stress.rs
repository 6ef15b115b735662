//! 100,000 tasks through `run_parallel` at several worker limits, every
//! result checked.

use dinah::BoundedQueue;
use dinah::queue::run_parallel;

/// Miri interprets every instruction: the same check on fewer tasks.
const TASKS: u64 = if cfg!(miri) { 400 } else { 100_000 };

fn expected(index: u64) -> Result<u64, u64> {
    if index.is_multiple_of(97) {
        Err(index)
    } else {
        Ok(index.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7)
    }
}

#[test]
fn hundred_thousand_tasks_at_several_worker_limits() {
    for workers in [1, 2, 4, 16] {
        let mut queue = BoundedQueue::new(TASKS as usize).unwrap();
        for index in 0..TASKS {
            queue
                .try_push(move || expected(index))
                .unwrap_or_else(|_| unreachable!());
        }
        let results = run_parallel(&mut queue, workers).unwrap();
        assert_eq!(results.len(), TASKS as usize);
        for (index, result) in (0..TASKS).zip(&results) {
            assert_eq!(*result, expected(index), "workers {workers}, task {index}");
        }
        assert!(queue.is_empty());
    }
}
