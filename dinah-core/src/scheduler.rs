//! [`Scheduler`]: sequential dispatch from any [`FifoQueue`].
#![forbid(unsafe_code)]

use crate::{Executor, FifoQueue};

/// Chooses the next task from a caller-owned queue and runs it on the
/// caller's thread.
///
/// Works over any [`FifoQueue`], so the fixed-capacity
/// [`TaskQueue`](crate::TaskQueue) and a hosted queue share it.
///
/// # Guarantees
///
/// - A task is removed from the queue before it runs, and it runs only after
///   the queue is no longer borrowed for the removal.
/// - Tasks run one at a time in FIFO order; each result reaches the caller in
///   that order, unchanged. A task's error is just another result: it never
///   stops a drain.
/// - Nothing allocates.
///
/// # What it does not do
///
/// No background progress, no worker threads, no priorities or fairness
/// beyond FIFO, no automatic metrics or tracing, and no retry.
///
/// # Panics
///
/// A panicking task unwinds straight to the caller. The task that panicked
/// has already been removed; every task behind it is still queued, in order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scheduler;

impl Scheduler {
    /// Runs `task` now, on this thread, and returns its result unchanged.
    ///
    /// ```
    /// use dinah::Scheduler;
    ///
    /// assert_eq!(Scheduler::schedule(|| "ran"), "ran");
    /// ```
    #[inline]
    pub fn schedule<F, R>(task: F) -> R
    where
        F: FnOnce() -> R,
    {
        Executor::run(task)
    }

    /// Removes the oldest task and runs it; `None` when the queue is empty.
    ///
    /// ```
    /// use dinah::{Scheduler, TaskQueue};
    ///
    /// let mut queue: TaskQueue<fn() -> Result<u8, &'static str>, 2> = TaskQueue::new();
    /// queue.try_push(|| Err("bad")).unwrap();
    /// assert_eq!(Scheduler::dispatch_next(&mut queue), Some(Err("bad")));
    /// assert_eq!(Scheduler::dispatch_next(&mut queue), None);
    /// ```
    pub fn dispatch_next<Q, F, R>(queue: &mut Q) -> Option<R>
    where
        Q: FifoQueue<Item = F> + ?Sized,
        F: FnOnce() -> R,
    {
        let task = queue.pop()?;
        Some(Executor::run(task))
    }

    /// Runs every queued task, oldest first, handing each result to `sink`
    /// with its FIFO index; returns how many tasks ran.
    ///
    /// The queue stays borrowed for the whole drain, so nothing can be queued
    /// while it runs; it is empty on a normal return.
    ///
    /// ```
    /// use dinah::{Scheduler, TaskQueue};
    ///
    /// let mut queue: TaskQueue<fn() -> Result<u8, u8>, 3> = TaskQueue::new();
    /// queue.try_push(|| Ok(1)).unwrap();
    /// queue.try_push(|| Err(2)).unwrap();
    /// queue.try_push(|| Ok(3)).unwrap();
    ///
    /// let mut seen = [Ok(0); 3];
    /// assert_eq!(Scheduler::drain(&mut queue, |i, r| seen[i] = r), 3);
    /// assert_eq!(seen, [Ok(1), Err(2), Ok(3)]);
    /// ```
    pub fn drain<Q, F, R, S>(queue: &mut Q, mut sink: S) -> usize
    where
        Q: FifoQueue<Item = F> + ?Sized,
        F: FnOnce() -> R,
        S: FnMut(usize, R),
    {
        let mut ran = 0;
        while let Some(result) = Self::dispatch_next(queue) {
            sink(ran, result);
            ran += 1;
        }
        ran
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TaskQueue;
    use core::cell::RefCell;
    use std::panic::{self, AssertUnwindSafe};
    use std::vec::Vec;

    type Log = RefCell<Vec<u32>>;

    #[test]
    fn dispatch_next_takes_the_oldest_task_once() {
        let log = Log::default();
        let mut queue: TaskQueue<_, 4> = TaskQueue::new();
        for n in 1..=3u32 {
            let log = &log;
            queue
                .try_push(move || {
                    log.borrow_mut().push(n);
                    n * 10
                })
                .unwrap_or_else(|_| unreachable!());
        }
        assert_eq!(Scheduler::dispatch_next(&mut queue), Some(10));
        assert_eq!(queue.len(), 2);
        assert_eq!(*log.borrow(), [1]);
    }

    #[test]
    fn drain_runs_in_fifo_order_and_errors_do_not_stop_it() {
        let mut queue: TaskQueue<fn() -> Result<u32, u32>, 8> = TaskQueue::new();
        let tasks: [fn() -> Result<u32, u32>; 4] = [|| Ok(1), || Err(2), || Ok(3), || Err(4)];
        for task in tasks {
            queue.try_push(task).unwrap();
        }
        let mut results = Vec::new();
        let ran = Scheduler::drain(&mut queue, |index, result| results.push((index, result)));
        assert_eq!(ran, 4);
        assert_eq!(results, [(0, Ok(1)), (1, Err(2)), (2, Ok(3)), (3, Err(4))]);
        assert!(queue.is_empty());
    }

    #[test]
    fn draining_an_empty_queue_runs_nothing() {
        let mut queue: TaskQueue<fn(), 1> = TaskQueue::new();
        assert_eq!(Scheduler::drain(&mut queue, |_, ()| unreachable!()), 0);
        assert_eq!(Scheduler::dispatch_next(&mut queue), None);
    }

    #[test]
    fn a_panic_unwinds_and_leaves_later_tasks_queued_in_order() {
        let mut queue: TaskQueue<fn() -> u32, 4> = TaskQueue::new();
        let tasks: [fn() -> u32; 4] = [|| 1, || panic!("boom"), || 3, || 4];
        for task in tasks {
            queue.try_push(task).unwrap();
        }
        let mut results = Vec::new();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            Scheduler::drain(&mut queue, |_, r| results.push(r))
        }));
        assert!(outcome.is_err());
        assert_eq!(results, [1]);
        assert_eq!(queue.len(), 2);
        assert_eq!(Scheduler::drain(&mut queue, |_, _| {}), 2);
    }

    #[test]
    fn schedule_runs_immediately() {
        let log = Log::default();
        let value = Scheduler::schedule(|| {
            log.borrow_mut().push(7);
            log.borrow().len()
        });
        assert_eq!(value, 1);
        assert_eq!(*log.borrow(), [7]);
    }
}
