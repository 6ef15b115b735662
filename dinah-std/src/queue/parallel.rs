//! Draining a whole queue into a `Vec`: [`run_until_empty`] on the
//! caller's thread, [`run_parallel`] on scoped worker threads.
//!
//! Both trust the queue's [`pop`](FifoQueue::pop) for what runs and use its
//! [`len`](FifoQueue::len) only as a sizing hint; see [`FifoQueue`] for what
//! happens when an implementation reports a wrong length.
#![forbid(unsafe_code)]

use std::fmt;
use std::io;
use std::panic;
use std::thread;

use dinah_core::queue::{FifoQueue, drain};

use crate::unwind::{Payload, drop_quietly};

/// The most results reserved up front from a queue's `len()`.
///
/// `len()` is a hint from code dinah does not control: a wrong answer must
/// not turn into a huge allocation or an overflow before a task runs. Past
/// this many results, the result lists grow as tasks actually finish.
const RESERVE_LIMIT: usize = 1 << 12;

/// Why [`run_parallel`] ran nothing.
///
/// In every case no task was removed from the queue and no task ran.
#[derive(Debug)]
#[non_exhaustive]
pub enum ParallelError {
    /// `max_workers` was zero.
    ZeroMaxWorkers,
    /// The operating system refused to start even one worker thread (a
    /// thread or memory limit). Carries the error of the first refusal.
    NoWorkerStarted(io::Error),
}

impl fmt::Display for ParallelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroMaxWorkers => f.write_str("max_workers must be at least 1"),
            Self::NoWorkerStarted(error) => write!(
                f,
                "no worker thread could be started ({error}); the queue is untouched"
            ),
        }
    }
}

impl std::error::Error for ParallelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::ZeroMaxWorkers => None,
            Self::NoWorkerStarted(error) => Some(error),
        }
    }
}

/// Runs every queued task on the caller's thread, oldest first, and
/// returns their results in that FIFO order.
///
/// Task errors are ordinary results: they are kept in place and never
/// stop later tasks. An empty queue gives an empty `Vec`. The queue is
/// empty on return (as far as its `pop` says). No `Send` bound.
///
/// # Panics
///
/// A panicking task unwinds straight to the caller. Tasks before it have
/// run (their results are dropped); the panicking task has been removed;
/// every later task is still queued, in order.
///
/// ```
/// use dinah::queue::{BoundedQueue, run_until_empty};
///
/// let mut queue = BoundedQueue::new(3)?;
/// let tasks: [fn() -> Result<u8, &'static str>; 3] = [|| Ok(1), || Err("two"), || Ok(3)];
/// for task in tasks {
///     queue.try_push(task).unwrap();
/// }
/// assert_eq!(run_until_empty(&mut queue), [Ok(1), Err("two"), Ok(3)]);
/// # Ok::<(), dinah::queue::CapacityError>(())
/// ```
pub fn run_until_empty<Q, F, R>(queue: &mut Q) -> Vec<R>
where
    Q: FifoQueue<Item = F> + ?Sized,
    F: FnOnce() -> R,
{
    let mut results = Vec::with_capacity(queue.len().min(RESERVE_LIMIT));
    drain(queue, |_, result| results.push(result));
    results
}

/// Runs every queued task on at most `max_workers` scoped worker threads
/// and returns their results in FIFO dispatch order.
///
/// # The dispatch rule
///
/// The call starts up to `min(max_workers, queue.len())` scoped threads
/// once and reuses them until the queue's `pop` returns `None`. Each
/// worker, whenever it is free, removes the oldest queued task under an
/// internal lock, releases the lock, and only then runs the task. So at
/// most `max_workers` tasks run at once, every task is removed before it
/// runs, tasks *start* in FIFO order, and no task runs while the lock is
/// held. Results are placed by removal order, not completion order. Task
/// errors are kept per task and never stop later tasks. The workers are
/// joined before the call returns; none outlive it, and the caller's
/// thread runs no task.
///
/// # Worker threads
///
/// `max_workers` is a ceiling the caller chooses; it is not capped at the
/// number of cores, because tasks that block or wait for one another need
/// the overlap that was asked for, and a silent cap would turn such a run
/// into a deadlock. For CPU-bound work pass
/// [`std::thread::available_parallelism`]. Threads are started with a
/// fallible spawn: if the operating system refuses some of them, the run
/// goes on with those that started (every task still runs, on fewer
/// threads); if it refuses the first one, nothing is removed and
/// [`ParallelError::NoWorkerStarted`] is returned.
///
/// # Errors
///
/// [`ParallelError::ZeroMaxWorkers`] when `max_workers` is zero, and
/// [`ParallelError::NoWorkerStarted`] when no thread could be started. In
/// both cases the queue is untouched and no task runs. A queue whose
/// `len()` is zero is treated as empty: `Ok` with no results, nothing
/// removed.
///
/// # Panics
///
/// If a task panics, its worker tells the others to stop removing tasks.
/// Tasks already removed run to the end and every worker is joined. Then
/// the results of the tasks that finished are dropped, each on its own: a
/// panic in one of their destructors is caught and discarded. Only then
/// does the task's panic resume on the caller, with its original payload.
/// If several tasks panicked, the payload of the one removed first (the
/// lowest FIFO index) resumes and the others are dropped the same way.
/// Every task not yet removed is still in the queue, in order.
///
/// If the queue's own `pop` panics, no worker touches the queue again and
/// the run stops the same way; that panic resumes only if no task
/// panicked.
///
/// ```
/// use dinah::queue::{BoundedQueue, ParallelError, run_parallel};
///
/// let mut queue = BoundedQueue::new(4)?;
/// for n in 1..=4u32 {
///     queue.try_push(move || if n == 3 { Err(n) } else { Ok(n * 10) }).unwrap_or_else(|_| unreachable!());
/// }
/// let results = run_parallel(&mut queue, 2)?;
/// assert_eq!(results, [Ok(10), Ok(20), Err(3), Ok(40)]);
/// assert!(matches!(
///     run_parallel(&mut queue, 0),
///     Err(ParallelError::ZeroMaxWorkers)
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Tasks and results cross to worker threads, so both must be `Send`. A
/// task holding an `Rc` is refused at compile time:
///
/// ```compile_fail,E0277
/// use std::rc::Rc;
/// use dinah::queue::{BoundedQueue, run_parallel};
///
/// let shared = Rc::new(1);
/// let mut queue = BoundedQueue::new(1).unwrap();
/// queue.try_push(move || *shared + 1).unwrap_or_else(|_| unreachable!());
/// let _ = run_parallel(&mut queue, 2);
/// ```
///
/// and so is a task whose result holds one:
///
/// ```compile_fail,E0277
/// use std::rc::Rc;
/// use dinah::queue::{BoundedQueue, run_parallel};
///
/// let mut queue = BoundedQueue::new(1).unwrap();
/// queue.try_push(|| Rc::new(1)).unwrap_or_else(|_| unreachable!());
/// let _ = run_parallel(&mut queue, 2);
/// ```
pub fn run_parallel<Q, F, R>(queue: &mut Q, max_workers: usize) -> Result<Vec<R>, ParallelError>
where
    Q: FifoQueue<Item = F> + Send + ?Sized,
    F: FnOnce() -> R + Send,
    R: Send,
{
    if max_workers == 0 {
        return Err(ParallelError::ZeroMaxWorkers);
    }
    let hinted = queue.len();
    let wanted = max_workers.min(hinted);
    if wanted == 0 {
        return Ok(Vec::new());
    }
    let reserve = hinted.div_ceil(wanted).min(RESERVE_LIMIT);
    let dispatch = dispatch::Dispatch::new(queue);
    let started = thread::scope(|scope| {
        let mut handles = Vec::with_capacity(wanted.min(RESERVE_LIMIT));
        for _ in 0..wanted {
            let spawned = thread::Builder::new()
                .name("dinah-parallel".into())
                .spawn_scoped(scope, || dispatch::work(&dispatch, reserve));
            match spawned {
                Ok(handle) => handles.push(handle),
                // Not even the first: nothing was removed from the queue.
                Err(error) if handles.is_empty() => return Err(error),
                // The workers that started carry on with every task.
                Err(_) => break,
            }
        }
        let outcomes: Vec<dispatch::Outcome<R>> = handles
            .into_iter()
            .map(|handle| {
                // `work` catches every panic, so a worker only unwinds if
                // the runtime itself failed; keep that payload too.
                handle.join().unwrap_or_else(|payload| dispatch::Outcome {
                    done: Vec::new(),
                    panic: Some((usize::MAX, payload)),
                })
            })
            .collect();
        Ok(outcomes)
    });
    let outcomes = started.map_err(ParallelError::NoWorkerStarted)?;

    // Every worker has been joined.
    let mut results = Vec::with_capacity(dispatch.claimed());
    let mut panics: Vec<(usize, Payload)> = Vec::new();
    for outcome in outcomes {
        results.extend(outcome.done);
        panics.extend(outcome.panic);
    }
    if let Some(first) = (0..panics.len()).min_by_key(|&i| panics[i].0) {
        let (_, payload) = panics.swap_remove(first);
        // Nothing may drop while the panic unwinds: a destructor that
        // panicked then would abort the process.
        for (_, other) in panics {
            drop_quietly(other);
        }
        for (_, result) in results {
            drop_quietly(result);
        }
        panic::resume_unwind(payload);
    }
    // Each worker's list is already in removal order; a stable sort
    // merges those runs in near-linear time.
    results.sort_by_key(|&(index, _)| index);
    Ok(results.into_iter().map(|(_, result)| result).collect())
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
/// 4. Nothing unwinds out of a worker: [`work`] catches the panics of tasks
///    and of `pop`, stops the run, and returns the payload with every result
///    it holds, so no result is dropped on a worker thread.
///
/// No deadlock: a worker takes only this lock, never while holding another,
/// and never waits for another worker; it stops when `claim` returns `None`.
pub(crate) mod dispatch {
    // `pub` so the loom model tests can reach it through `loom_support`.
    #![cfg_attr(not(loom), allow(unreachable_pub))]

    use std::panic::{self, AssertUnwindSafe};

    use dinah_core::FifoQueue;

    use crate::primitives::{Mutex, lock};
    use crate::unwind::Payload;

    /// What one worker hands back: its `(index, result)` pairs in removal
    /// order, and the panic that stopped it, if any, with the FIFO index of
    /// the task that panicked (`usize::MAX` when the queue's `pop` did).
    pub struct Outcome<R> {
        /// Finished tasks, in removal order.
        pub done: Vec<(usize, R)>,
        /// The panic that stopped this worker.
        pub panic: Option<(usize, Payload)>,
    }

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

    /// One worker: claims and runs tasks until none are left or something
    /// panics. `reserve` is how many results to make room for up front.
    ///
    /// A panic is caught only to stop the other workers' claims; its payload
    /// is returned so the caller can resume it after joining.
    pub fn work<Q, F, R>(dispatch: &Dispatch<Q>, reserve: usize) -> Outcome<R>
    where
        Q: FifoQueue<Item = F>,
        F: FnOnce() -> R,
    {
        let mut done = Vec::with_capacity(reserve);
        loop {
            let (index, task) = match panic::catch_unwind(AssertUnwindSafe(|| dispatch.claim())) {
                Ok(Some(claimed)) => claimed,
                Ok(None) => return Outcome { done, panic: None },
                Err(payload) => {
                    dispatch.stop();
                    return Outcome {
                        done,
                        panic: Some((usize::MAX, payload)),
                    };
                }
            };
            match panic::catch_unwind(AssertUnwindSafe(task)) {
                Ok(result) => done.push((index, result)),
                Err(payload) => {
                    dispatch.stop();
                    return Outcome {
                        done,
                        panic: Some((index, payload)),
                    };
                }
            }
        }
    }
}
