//! [`WorkerPool`]: persistent workers for CPU work, with single tasks and
//! fork-join batches.

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{self, AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use dinah_core::{CoreConfig, FifoQueue};

use crate::BoundedQueue;
use crate::telemetry::TelemetryConfig;

use super::engine::{BatchJob, Engine, EngineConfig, SPIN, WorkerCell};
use super::{
    AdmissionBound, Owner, PoolError, PoolReport, PoolStats, ShutdownPolicy, SubmitError,
    Submitter, TaskHandle, is_worker_of,
};
use crate::sync::{AtomicBool, Mutex, Ordering, Thread, current, lock, park};
use crate::unwind::{Payload, drop_quietly};

/// The most results reserved up front from a queue's `len()`, a hint from
/// code dinah does not control.
const RESERVE_LIMIT: usize = 1 << 12;

/// A fixed set of persistent worker threads for CPU work.
///
/// Built from a [`CoreConfig`]: `max_workers` threads named
/// `dinah-worker-<WorkerId>` start in the constructor and live until
/// shutdown. Work arrives two ways:
///
/// - [`try_submit`](Self::try_submit): one `Send + 'static` closure into a
///   bounded FIFO queue, with a [`TaskHandle`] to join, await or cancel it;
/// - [`run`](Self::run): a whole [`FifoQueue`] of closures as one fork-join
///   batch, results in FIFO order, no thread started per call.
///
/// # Panics in tasks
///
/// A submitted task's panic is caught at the task boundary: its handle gives
/// [`JoinError::Panicked`](super::JoinError) with the message, the worker
/// carries on, and [`PoolStats::panicked`] counts it. A batch follows
/// [`run_parallel`](crate::SchedulerExt::run_parallel)'s contract instead:
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
/// use dinah::CoreConfig;
/// use dinah::{ShutdownPolicy, WorkerPool};
///
/// let pool = WorkerPool::new(CoreConfig::new(2)?, 16)?;
/// let handle = pool.try_submit(|| 6 * 7).unwrap_or_else(|_| unreachable!());
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
                spin: SPIN,
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
    /// [`SubmitError::Full`] when `queue_capacity` tasks are already queued,
    /// holding `f`. (Only a pool being dropped or shut down refuses with
    /// [`SubmitError::ShuttingDown`], which a [`Submitter`] can see.)
    pub fn try_submit<F, R>(&self, f: F) -> Result<TaskHandle<R>, SubmitError<F>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.owner.engine.try_submit(f)
    }

    /// A clonable handle for submitting from other threads (or from tasks).
    #[must_use]
    pub fn submitter(&self) -> Submitter {
        self.owner.submitter()
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
    /// [`BoundedQueue`] hands over its storage at once; any other queue is
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
    /// [`run_parallel`](crate::SchedulerExt::run_parallel): when a task
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
    /// use dinah::CoreConfig;
    /// use dinah::{BoundedQueue, WorkerPool};
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

/// Removes every task from `queue`, oldest first. A [`BoundedQueue`] hands
/// over its storage at once; any other queue is popped until it says empty.
fn take_all<Q, F>(queue: &mut Q) -> VecDeque<F>
where
    Q: FifoQueue<Item = F> + 'static,
    F: 'static,
{
    if let Some(bounded) = (queue as &mut dyn Any).downcast_mut::<BoundedQueue<F>>() {
        return bounded.take_all();
    }
    let mut tasks = VecDeque::with_capacity(queue.len().min(RESERVE_LIMIT));
    while let Some(task) = queue.pop() {
        tasks.push_back(task);
    }
    tasks
}

/// What one participant ran: its results in the order it ran them, and the
/// runs of consecutive FIFO indices they cover, as `(start, length)`.
type Share<R> = (Vec<(usize, usize)>, Vec<R>);

struct BatchState<F, R> {
    /// Tasks not yet claimed; the front one has FIFO index `next`.
    tasks: VecDeque<F>,
    next: usize,
    /// Chunks claimed and not yet settled.
    in_hand: usize,
    /// Each participant's share.
    results: Vec<Share<R>>,
    panics: Vec<(usize, Payload)>,
    /// Claimed tasks that did not start because the batch stopped.
    unrun: Vec<(usize, Vec<F>)>,
    /// Set once, by whoever settles the last chunk.
    finished: bool,
}

/// One `run` call's tasks, shared by the workers that take part.
///
/// Invariants, under the one `state` lock:
/// 1. A task leaves `tasks` once, in a chunk with its FIFO index range; the
///    chunk is settled once (results, a panic, and the unrun rest).
/// 2. After `stopped`, no chunk is claimed and no claimed task starts.
/// 3. `finished` is set once, by the thread that settles the last chunk
///    when nothing more can be claimed; only then is `done` published and
///    the caller unparked.
struct Batch<F, R> {
    state: Mutex<BatchState<F, R>>,
    stopped: AtomicBool,
    done: AtomicBool,
    caller: Thread,
    participants: usize,
}

impl<F, R> Batch<F, R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    fn new(tasks: VecDeque<F>, participants: usize) -> Self {
        Self {
            state: Mutex::new(BatchState {
                tasks,
                next: 0,
                in_hand: 0,
                results: Vec::new(),
                panics: Vec::new(),
                unrun: Vec::new(),
                finished: false,
            }),
            stopped: AtomicBool::new(false),
            done: AtomicBool::new(false),
            caller: current(),
            participants,
        }
    }

    /// Claims and runs chunks until none are left. After each chunk, and
    /// before settling it, `count` gets how many of its tasks completed and
    /// panicked: so every task is counted before the caller can see the
    /// batch done.
    fn claim_and_run(&self, count: &dyn Fn(u64, u64)) {
        // One buffer for the chunks claimed here and one for their results,
        // reused from chunk to chunk: a large batch costs each participant a
        // few allocations, not a few per chunk.
        let mut buffer: Vec<F> = Vec::new();
        let mut done: Vec<R> = Vec::new();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut state = lock(&self.state);
        loop {
            if self.stopped.load(Ordering::Relaxed) || state.tasks.is_empty() {
                break;
            }
            let size = (state.tasks.len() / (2 * self.participants)).max(1);
            let start = state.next;
            state.next += size;
            state.in_hand += 1;
            buffer.extend(state.tasks.drain(..size));
            drop(state);

            let before = done.len();
            let mut panic = None;
            let mut chunk = buffer.drain(..);
            for task in chunk.by_ref() {
                match catch_unwind(AssertUnwindSafe(task)) {
                    Ok(result) => done.push(result),
                    Err(payload) => {
                        self.stopped.store(true, Ordering::Relaxed);
                        panic = Some((start + done.len() - before, payload));
                        break;
                    }
                }
                if self.stopped.load(Ordering::Relaxed) {
                    break;
                }
            }
            let rest: Vec<F> = chunk.collect();
            let ran = done.len() - before;
            if ran > 0 {
                runs.push((start, ran));
            }
            let first_unrun = start + ran + usize::from(panic.is_some());
            count(ran as u64, u64::from(panic.is_some()));

            state = lock(&self.state);
            state.in_hand -= 1;
            state.panics.extend(panic);
            if !rest.is_empty() {
                state.unrun.push((first_unrun, rest));
            }
        }
        if !runs.is_empty() {
            state.results.push((runs, done));
        }
        if state.in_hand == 0 && !state.finished {
            state.finished = true;
            drop(state);
            self.done.store(true, Ordering::Release);
            self.caller.unpark();
        }
    }

    /// Takes part from the calling thread, which is not one of the pool's
    /// workers (or is, but runs its own batch).
    fn participate_here(&self, engine: &Engine) {
        self.claim_and_run(&|completed, panicked| {
            engine.count_elsewhere(completed, panicked);
        });
    }

    /// Blocks the caller until every task is settled.
    ///
    /// When the workers were awake (`spin`: a run of batches back to back),
    /// the caller looks for the end for a while before it parks, so the next
    /// batch follows at once. When they had to be woken, it parks at once,
    /// as rayon's `install` does: on a machine with no core to spare, a
    /// spinning caller would hold one the waking workers need (measured: a
    /// batch of 256 short tasks on sleeping workers took about three times
    /// as long with the caller spinning).
    fn wait(&self, spin: bool) {
        if spin && SPIN.until(|| self.done.load(Ordering::Acquire)) {
            return;
        }
        while !self.done.load(Ordering::Acquire) {
            park();
        }
    }

    /// Takes what the workers left, once `done`.
    fn settle(&self) -> Settled<F, R> {
        let mut state = lock(&self.state);
        let results = std::mem::take(&mut state.results);
        let mut panics = std::mem::take(&mut state.panics);
        let mut unrun = std::mem::take(&mut state.unrun);
        let rest = std::mem::take(&mut state.tasks);
        drop(state);
        panics.sort_unstable_by_key(|(index, _)| *index);
        unrun.sort_unstable_by_key(|(start, _)| *start);
        let handed_back = unrun.iter().map(|(_, run)| run.len()).sum::<usize>()
            + if panics.is_empty() { 0 } else { rest.len() };
        Settled {
            results,
            panics,
            unrun,
            rest,
            handed_back,
        }
    }
}

impl<F, R> BatchJob for Batch<F, R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    fn participate(&self, worker: &WorkerCell) {
        self.claim_and_run(&|completed, panicked| worker.count(completed, panicked));
    }
}

/// A batch's outcome, ready to be returned or to resume a panic.
struct Settled<F, R> {
    results: Vec<Share<R>>,
    panics: Vec<(usize, Payload)>,
    unrun: Vec<(usize, Vec<F>)>,
    rest: VecDeque<F>,
    handed_back: usize,
}

impl<F, R> Settled<F, R> {
    fn finish<Q>(self, queue: &mut Q) -> Vec<R>
    where
        Q: FifoQueue<Item = F> + ?Sized,
    {
        let Settled {
            results,
            panics,
            unrun,
            rest,
            ..
        } = self;
        let mut panics = panics.into_iter();
        let Some((_, first)) = panics.next() else {
            return in_fifo_order(results);
        };
        // Every task that did not start goes back, in FIFO order: the unrun
        // rests of claimed chunks, then the never-claimed tail.
        for task in unrun.into_iter().flat_map(|(_, run)| run).chain(rest) {
            if let Err(refused) = queue.try_push(task) {
                drop_quietly(refused);
            }
        }
        for (_, other) in panics {
            drop_quietly(other);
        }
        for (_, values) in results {
            for result in values {
                drop_quietly(result);
            }
        }
        panic::resume_unwind(first);
    }
}

/// Puts the participants' results in FIFO order. Each participant's runs
/// are in increasing order (it claims in FIFO order), so one pass over all
/// runs sorted by start takes each participant's values in turn. A single
/// participant's values are already in order and are returned as they are.
fn in_fifo_order<R>(results: Vec<Share<R>>) -> Vec<R> {
    if results.len() == 1 {
        return results
            .into_iter()
            .next()
            .map(|(_, values)| values)
            .unwrap_or_default();
    }
    let total = results.iter().map(|(_, values)| values.len()).sum();
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    let mut values = Vec::with_capacity(results.len());
    for (part, (part_runs, part_values)) in results.into_iter().enumerate() {
        runs.extend(part_runs.into_iter().map(|(start, len)| (start, len, part)));
        values.push(part_values.into_iter());
    }
    runs.sort_unstable_by_key(|&(start, _, _)| start);
    let mut flat = Vec::with_capacity(total);
    for (_, len, part) in runs {
        flat.extend(values[part].by_ref().take(len));
    }
    flat
}
