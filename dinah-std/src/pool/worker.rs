//! [`WorkerPool`]: persistent workers for CPU work, with single tasks and
//! fork-join batches.

#![forbid(unsafe_code)]

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use dinah_core::CoreConfig;
use dinah_core::executor::SpawnError;
use dinah_core::queue::FifoQueue;

use super::batch::{Batch, take_all};
use super::engine::is_worker_of;
use super::engine::{Engine, EngineConfig};
use super::job::BatchJob;
use super::spin::WORKER_SPIN;
use super::{AdmissionBound, Owner, PoolError, PoolReport, PoolSpawner, PoolStats, ShutdownPolicy};
use crate::task::JoinHandle;
use crate::telemetry::TelemetryConfig;

/// A fixed set of persistent worker threads for CPU work.
///
/// Built from a [`CoreConfig`]: `max_workers` threads named
/// `dinah-worker-<WorkerId>` start in the constructor and live until
/// shutdown. Work arrives two ways:
///
/// - [`try_spawn`](Self::try_spawn): one `Send + 'static` closure into a
///   bounded FIFO queue, with a [`JoinHandle`] to join, await or cancel it;
/// - [`run`](Self::run): a whole [`FifoQueue`] of closures as one fork-join
///   batch, results in FIFO order, no thread started per call.
///
/// # Panics in tasks
///
/// A submitted task's panic is caught at the task boundary: its handle gives
/// [`JoinError::Panicked`](crate::task::JoinError) with the message, the worker
/// carries on, and [`PoolStats::panicked`] counts it. A batch follows
/// [`run_parallel`](crate::queue::run_parallel)'s contract instead:
/// the panic resumes on the caller of [`run`](Self::run).
///
/// # Shutdown
///
/// [`shutdown`](Self::shutdown) closes the queue, applies a
/// [`ShutdownPolicy`], joins every worker and returns a [`PoolReport`].
/// Dropping the pool is `shutdown(ShutdownPolicy::Drain)` with the report
/// discarded: it blocks until every accepted task has run.
///
/// ```
/// use dinah::config::CoreConfig;
/// use dinah::pool::{ShutdownPolicy, WorkerPool};
///
/// let pool = WorkerPool::new(CoreConfig::new(2)?, 16)?;
/// let handle = pool.try_spawn(|| 6 * 7).unwrap_or_else(|_| unreachable!());
/// assert_eq!(handle.join(), Ok(42));
/// let report = pool.shutdown(ShutdownPolicy::Drain);
/// assert_eq!((report.completed, report.workers.len()), (1, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct WorkerPool {
    owner: Owner,
    workers: usize,
}

impl WorkerPool {
    /// Starts `config.max_workers()` workers with a queue holding at most
    /// `queue_capacity` submitted tasks (tasks running on a worker do not
    /// count against it).
    ///
    /// # Errors
    ///
    /// [`PoolError::ZeroQueueCapacity`] for a zero capacity, and
    /// [`PoolError::ThreadRefused`] when the operating system refuses a
    /// worker thread; the workers started before it are stopped and joined
    /// first. Never panics on a refused thread.
    pub fn new(config: CoreConfig, queue_capacity: usize) -> Result<Self, PoolError> {
        Self::build(config, queue_capacity, None)
    }

    #[cfg(feature = "telemetry")]
    /// As [`new`](Self::new), measuring itself as `telemetry` says: queue
    /// wait and run time histograms, long runs, the deepest queue, refusals,
    /// events to the configured sink, and a [`monitor`](Self::monitor) that
    /// diagnoses it from any thread. Batches of [`run`](Self::run) are not
    /// measured.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn with_telemetry(
        config: CoreConfig,
        queue_capacity: usize,
        telemetry: TelemetryConfig,
    ) -> Result<Self, PoolError> {
        Self::build(config, queue_capacity, Some(telemetry))
    }

    #[cfg(feature = "telemetry")]
    /// A handle that reads the pool's figures and diagnoses it from any
    /// thread; `None` without telemetry.
    #[must_use]
    pub fn monitor(&self) -> Option<super::PoolMonitor> {
        self.owner.monitor()
    }

    fn build(
        config: CoreConfig,
        queue_capacity: usize,
        telemetry: Option<TelemetryConfig>,
    ) -> Result<Self, PoolError> {
        if queue_capacity == 0 {
            return Err(PoolError::ZeroQueueCapacity);
        }
        let workers = config.max_workers().get();
        let engine = Engine::new(
            EngineConfig {
                name: "dinah-worker",
                max_threads: workers,
                capacity: queue_capacity,
                bound: AdmissionBound::Queued,
                keep_alive: None,
                on_demand: false,
                spin: WORKER_SPIN,
            },
            telemetry,
        );
        engine
            .start()
            .map_err(|(worker, error)| PoolError::ThreadRefused { worker, error })?;
        Ok(Self {
            owner: Owner::new(engine),
            workers,
        })
    }

    /// How many workers the pool runs.
    #[must_use]
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Queues `f` for the next free worker and returns its handle.
    ///
    /// Tasks start in submission order. The call never blocks on the queue
    /// and never runs `f` itself.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Full`] when `queue_capacity` tasks are already queued,
    /// holding `f`. (Only a pool being dropped or shut down refuses with
    /// [`SpawnError::Shutdown`], which a [`PoolSpawner`] can see.) Never
    /// [`SpawnError::NoThread`]: every worker started in the constructor.
    pub fn try_spawn<F, R>(&self, f: F) -> Result<JoinHandle<R>, SpawnError<F, io::Error>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.owner.engine.try_spawn(f)
    }

    /// Spawns `f`, waiting in line while the pool is full; see
    /// [`PoolSpawner::spawn`], which this is.
    ///
    /// # Errors
    ///
    /// As [`PoolSpawner::spawn`].
    pub fn spawn<F, R>(&self, f: F) -> super::Spawning<F, R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        super::Spawning::new(std::sync::Arc::clone(&self.owner.engine), f)
    }

    /// Spawns `f`, blocking this thread while the pool is full; see
    /// [`PoolSpawner::blocking_spawn`], which this is.
    ///
    /// # Errors
    ///
    /// As [`PoolSpawner::spawn`].
    pub fn blocking_spawn<F, R>(&self, f: F) -> Result<JoinHandle<R>, SpawnError<F, io::Error>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        super::spawning::wait(self.spawn(f))
    }

    /// A clonable handle for spawning from other threads (or from tasks).
    #[must_use]
    pub fn spawner(&self) -> PoolSpawner {
        self.owner.spawner()
    }

    /// The pool's counters now.
    #[must_use]
    pub fn stats(&self) -> PoolStats {
        self.owner.stats()
    }

    /// Runs every task of `queue` on the pool's workers as one batch and
    /// returns their results in FIFO order.
    ///
    /// The calling thread removes every task from `queue` (a
    /// [`BoundedQueue`](crate::queue::BoundedQueue) hands over its storage at once; any other queue is
    /// popped until it says empty), hands the batch to `min(workers, tasks)`
    /// workers and waits; it runs no task itself, unless it is one of this pool's own
    /// workers, in which case it takes a share (so a batch started from a
    /// task cannot wait on itself). Workers claim tasks in FIFO order, in
    /// chunks that shrink as the batch empties, so the load stays even; the
    /// batch waits behind tasks already queued. It is not bounded by the
    /// queue capacity (the caller waits for it) and never refused. Task
    /// errors are ordinary results.
    ///
    /// # Panics
    ///
    /// The same contract as
    /// [`run_parallel`](crate::queue::run_parallel): when a task
    /// panics, no further task of the batch starts; tasks already started run
    /// to their end; every task that did not start is pushed back into
    /// `queue` in FIFO order; the results of the finished tasks are dropped,
    /// each on its own, with a panic from a destructor caught and discarded;
    /// then the panic of the lowest-indexed task that panicked resumes on the
    /// caller with its original payload. The pool's workers carry on.
    ///
    /// A panic in the queue's own `pop` unwinds to the caller before any
    /// task is handed to a worker; tasks already removed are dropped.
    ///
    /// ```
    /// use dinah::config::CoreConfig;
    /// use dinah::pool::WorkerPool;
    /// use dinah::queue::BoundedQueue;
    ///
    /// let pool = WorkerPool::new(CoreConfig::new(2)?, 8)?;
    /// let mut queue = BoundedQueue::new(4)?;
    /// for n in 1..=4u32 {
    ///     queue.try_push(move || n * 10).unwrap_or_else(|_| unreachable!());
    /// }
    /// assert_eq!(pool.run(&mut queue), [10, 20, 30, 40]);
    /// assert!(queue.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run<Q, F, R>(&self, queue: &mut Q) -> Vec<R>
    where
        Q: FifoQueue<Item = F> + 'static,
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let tasks = take_all(queue);
        let total = tasks.len();
        if total == 0 {
            return Vec::new();
        }
        let participants = self.workers.min(total);
        let batch = Arc::new(Batch::new(tasks, participants));
        let shared: Arc<dyn BatchJob> = Arc::clone(&batch) as Arc<dyn BatchJob>;
        let inline = is_worker_of(&self.owner.engine);
        let helpers = participants - usize::from(inline);
        let awake = match self.owner.engine.push_batch(&shared, helpers, total) {
            Some(awake) if !inline => awake,
            _ => {
                batch.participate_here(&self.owner.engine);
                false
            }
        };
        batch.wait(awake);
        let settled = batch.settle();
        if settled.handed_back > 0 {
            self.owner.engine.count_handed_back(settled.handed_back);
        }
        settled.finish(queue)
    }

    /// Closes the pool, applies `policy`, joins every worker and reports.
    ///
    /// Under [`ShutdownPolicy::Drain`] every accepted task runs first; under
    /// [`ShutdownPolicy::CancelPending`] the tasks not started are handed
    /// back in [`PoolReport::handed_back`] and running ones finish. Blocks
    /// until the last worker has left.
    pub fn shutdown(mut self, policy: ShutdownPolicy) -> PoolReport {
        self.owner.shutdown(policy, None)
    }

    /// [`shutdown`](Self::shutdown), waiting at most `deadline` for the
    /// workers. If they have not all left by then,
    /// [`PoolReport::unfinished`] says which tasks were running and how many
    /// were queued, and those workers are detached: they finish the running
    /// tasks (and, under `Drain`, the queued ones) on their own.
    pub fn shutdown_with_deadline(
        mut self,
        policy: ShutdownPolicy,
        deadline: Duration,
    ) -> PoolReport {
        self.owner.shutdown(policy, Some(deadline))
    }
}

impl fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerPool")
            .field("workers", &self.workers)
            .field("stats", &self.stats())
            .finish()
    }
}
