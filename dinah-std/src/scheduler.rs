use std::panic;
use std::thread;

use dinah_core::{CoreError, FifoQueue, Scheduler};

/// Draining a whole queue into a `Vec`, sequentially or on scoped worker threads.
///
/// Implemented for the core [`Scheduler`] only (the trait is sealed). Bring it
/// into scope and call `Scheduler::run_until_empty(&mut queue)` or
/// `Scheduler::run_parallel(&mut queue, max_workers)`.
pub trait SchedulerExt: sealed::Sealed {
    /// Runs every queued task on the caller's thread, oldest first, and
    /// returns their results in that FIFO order.
    ///
    /// Task errors are ordinary results: they are kept in place and never
    /// stop later tasks. An empty queue gives an empty `Vec`. The queue is
    /// empty on return.
    ///
    /// # Panics
    ///
    /// A panicking task unwinds straight to the caller. Tasks before it have
    /// run (their results are dropped); the panicking task has been removed;
    /// every later task is still queued, in order.
    ///
    /// ```
    /// use dinah_core::Scheduler;
    /// use dinah_std::{BoundedQueue, SchedulerExt};
    ///
    /// let mut queue = BoundedQueue::new(3)?;
    /// let tasks: [fn() -> Result<u8, &'static str>; 3] = [|| Ok(1), || Err("two"), || Ok(3)];
    /// for task in tasks {
    ///     queue.try_push(task).unwrap();
    /// }
    /// assert_eq!(Scheduler::run_until_empty(&mut queue), [Ok(1), Err("two"), Ok(3)]);
    /// # Ok::<(), dinah_std::CapacityError>(())
    /// ```
    fn run_until_empty<Q, F, R>(queue: &mut Q) -> Vec<R>
    where
        Q: FifoQueue<Item = F> + ?Sized,
        F: FnOnce() -> R;

    /// Runs every queued task on at most `max_workers` scoped worker threads
    /// and returns their results in FIFO dispatch order.
    ///
    /// # The dispatch rule
    ///
    /// The call starts `min(max_workers, queue.len())` scoped threads once and
    /// reuses them until the queue is empty. Each worker, whenever it is free,
    /// removes the oldest queued task under an internal lock, releases the
    /// lock, and only then runs the task. So at most `max_workers` tasks run
    /// at once, every task is removed before it runs, tasks *start* in FIFO
    /// order, and no task runs while the lock is held. Results are placed by
    /// removal order, not completion order. Task errors are kept per task and
    /// never stop later tasks. The workers are joined before the call
    /// returns; none outlive it.
    ///
    /// # Errors
    ///
    /// Returns [`CoreError::ZeroMaxWorkers`] when `max_workers` is zero; the
    /// queue is then untouched and no task runs.
    ///
    /// # Panics
    ///
    /// If a task panics, its worker tells the others to stop removing tasks.
    /// Tasks already removed run to the end, every worker is joined, and then
    /// the panic resumes on the caller with its original payload (if several
    /// tasks panic, one of those payloads). Every task not yet removed is
    /// still in the queue, in order. Results of finished tasks are dropped.
    /// If the queue's own `pop` panics, no worker touches the queue again and
    /// that panic resumes the same way.
    ///
    /// ```
    /// use dinah_core::Scheduler;
    /// use dinah_std::{BoundedQueue, SchedulerExt};
    ///
    /// let mut queue = BoundedQueue::new(4)?;
    /// for n in 1..=4u32 {
    ///     queue.try_push(move || if n == 3 { Err(n) } else { Ok(n * 10) }).unwrap_or_else(|_| unreachable!());
    /// }
    /// let results = Scheduler::run_parallel(&mut queue, 2)?;
    /// assert_eq!(results, [Ok(10), Ok(20), Err(3), Ok(40)]);
    /// assert!(Scheduler::run_parallel(&mut queue, 0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn run_parallel<Q, F, R>(queue: &mut Q, max_workers: usize) -> Result<Vec<R>, CoreError>
    where
        Q: FifoQueue<Item = F> + Send + ?Sized,
        F: FnOnce() -> R + Send,
        R: Send;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for dinah_core::Scheduler {}
}

impl SchedulerExt for Scheduler {
    fn run_until_empty<Q, F, R>(queue: &mut Q) -> Vec<R>
    where
        Q: FifoQueue<Item = F> + ?Sized,
        F: FnOnce() -> R,
    {
        let mut results = Vec::with_capacity(queue.len());
        Scheduler::drain(queue, |_, result| results.push(result));
        results
    }

    fn run_parallel<Q, F, R>(queue: &mut Q, max_workers: usize) -> Result<Vec<R>, CoreError>
    where
        Q: FifoQueue<Item = F> + Send + ?Sized,
        F: FnOnce() -> R + Send,
        R: Send,
    {
        if max_workers == 0 {
            return Err(CoreError::ZeroMaxWorkers);
        }
        let queued = queue.len();
        let workers = max_workers.min(queued);
        if workers == 0 {
            return Ok(Vec::new());
        }
        let share = queued.div_ceil(workers);
        let dispatch = dispatch::Dispatch::new(queue);
        let outcomes: Vec<dispatch::Outcome<R>> = thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| scope.spawn(|| dispatch::work(&dispatch, share)))
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap_or_else(Err))
                .collect()
        });

        // Every worker has been joined: a panic can resume now.
        let mut results = Vec::with_capacity(dispatch.claimed());
        for outcome in outcomes {
            match outcome {
                Ok(done) => results.extend(done),
                Err(payload) => panic::resume_unwind(payload),
            }
        }
        // Each worker's list is already in removal order; a stable sort
        // merges those runs in near-linear time.
        results.sort_by_key(|&(index, _)| index);
        Ok(results.into_iter().map(|(_, result)| result).collect())
    }
}

/// The protocol between the workers of one `run_parallel` call.
///
/// Invariants, all under the one `state` lock:
/// 1. A task leaves the queue exactly once, in [`Dispatch::claim`], and gets
///    the next FIFO index at that moment: indices are `0..claimed`, each once.
/// 2. After [`Dispatch::stop`], `claim` removes nothing, so every task not
///    yet removed stays in the queue in its original order.
/// 3. No task runs while the lock is held: `claim` returns the task and the
///    caller runs it after the guard is dropped. The only foreign code under
///    the lock is the queue's own `pop`; if it panics, the lock is poisoned
///    and every later claim stops the run.
///
/// No deadlock: a worker takes only this lock, never while holding another,
/// and never waits for another worker; it stops when `claim` returns `None`.
pub(crate) mod dispatch {
    // `pub` so the loom model tests can reach it through `loom_support`.
    #![cfg_attr(not(loom), allow(unreachable_pub))]

    use std::any::Any;
    use std::panic::{self, AssertUnwindSafe};

    use dinah_core::FifoQueue;

    use crate::sync::{Mutex, lock};

    /// What one worker hands back: its `(index, result)` pairs in removal
    /// order, or the payload of the task panic that stopped it.
    pub type Outcome<R> = Result<Vec<(usize, R)>, Box<dyn Any + Send + 'static>>;

    struct State<Q> {
        queue: Q,
        claimed: usize,
        stopped: bool,
    }

    /// The queue shared by the workers, with the FIFO counter and stop flag.
    pub struct Dispatch<Q> {
        state: Mutex<State<Q>>,
    }

    impl<Q: FifoQueue> Dispatch<Q> {
        /// Shares `queue` between workers.
        pub fn new(queue: Q) -> Self {
            Self {
                state: Mutex::new(State {
                    queue,
                    claimed: 0,
                    stopped: false,
                }),
            }
        }

        /// Removes the oldest task with its FIFO index, unless the queue is
        /// empty or the run was stopped.
        ///
        /// A queue whose `pop` panicked poisons the lock; every later claim
        /// then stops the run instead of trusting that queue again.
        pub fn claim(&self) -> Option<(usize, Q::Item)> {
            let mut state = match self.state.lock() {
                Ok(state) => state,
                Err(poisoned) => {
                    poisoned.into_inner().stopped = true;
                    return None;
                }
            };
            if state.stopped {
                return None;
            }
            let task = state.queue.pop()?;
            let index = state.claimed;
            state.claimed += 1;
            Some((index, task))
        }

        /// Stops further removals.
        pub fn stop(&self) {
            lock(&self.state).stopped = true;
        }

        /// How many tasks have been removed so far.
        pub fn claimed(&self) -> usize {
            lock(&self.state).claimed
        }

        /// How many tasks are still queued.
        #[cfg(loom)]
        pub fn remaining(&self) -> usize {
            lock(&self.state).queue.len()
        }

        /// Removes what is left without running it, oldest first (for model
        /// tests that check what a stopped run left behind).
        #[cfg(loom)]
        pub fn take_remaining(&self) -> Vec<Q::Item> {
            let mut state = lock(&self.state);
            std::iter::from_fn(|| state.queue.pop()).collect()
        }
    }

    /// One worker: claims and runs tasks until none are left or one panics.
    ///
    /// A task panic is caught only to stop the other workers' claims; its
    /// payload is returned so the caller can resume it after joining.
    pub fn work<Q, F, R>(dispatch: &Dispatch<Q>, expected: usize) -> Outcome<R>
    where
        Q: FifoQueue<Item = F>,
        F: FnOnce() -> R,
    {
        let mut done = Vec::with_capacity(expected);
        while let Some((index, task)) = dispatch.claim() {
            match panic::catch_unwind(AssertUnwindSafe(task)) {
                Ok(result) => done.push((index, result)),
                Err(payload) => {
                    dispatch.stop();
                    return Err(payload);
                }
            }
        }
        Ok(done)
    }
}
