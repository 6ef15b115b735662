//! The multi-thread executor: [`MultiExecutor`], which runs `Send` tasks on
//! a set of worker threads that steal work from each other, with one
//! driver (timers and reactor) they share; [`MultiHandle`] spawns onto it
//! from anywhere; [`MultiConfig`] sets it up.
//!
//! | file | holds |
//! | --- | --- |
//! | `mod.rs` | the executor: building it, spawning, `block_on`, figures and diagnosis |
//! | `handle.rs` | [`MultiHandle`] |
//! | `shutdown.rs` | shutdown and the drain before it |
//! | `config.rs` | [`MultiConfig`] |
//! | `shared.rs` | what all workers and handles share, and where a wake lands |
//! | `global.rs` | the global run queue |
//! | `worker.rs` | a worker's queues as its thread sees them, and its loop |
//! | `figures.rs` | what it counts of itself |
//! | `diagnosis.rs` | its figures read whole, and its verdicts |
//! | `task.rs` | a task's cell, its future's guard, and `spawn` |
//! | `registry.rs` | the live tasks, for shutdown and its report |
//! | `trace.rs` | its task events, given to a sink from each worker |
//!
//! Who is awake, searching or asleep, and whom new work wakes, is
//! `runtime/idle.rs`; one worker's sleep, on its thread or in the driver,
//! `runtime/parker.rs` (model-checked with loom: `tests/loom_workers.rs`).
//!
//! # What it does at 16 and 64 workers
//!
//! Each worker has its own deque (crossbeam's Chase-Lev deque: pushes and
//! pops by its owner take no lock) of at most 256 tasks, and steals half of
//! a victim's deque when its own is empty. The global queue (`global.rs`:
//! a `VecDeque` under a lock) takes spawns and wakes from outside the
//! workers and the half of a full deque that spills. A worker takes its
//! lock when its own deque is empty, for up to 32 tasks (one to poll, 31
//! into its deque), or every 61st turn for one task, and never when an
//! atomic length says it is empty; at 64 workers it is the one lock they
//! all may meet, as tokio's injection queue is. At most half the workers
//! search at once, so at 64 workers a burst of work wakes one sleeper at
//! a time and never all 64, and at most 32 scan the others' deques. The
//! registry of live tasks, taken at each spawn and each end, is split in
//! up to 256 locks by task id. What is shared by all is one driver: the worker that
//! sleeps in it serves everyone's timers and sockets, and busy workers
//! serve them every [`MAINTENANCE_INTERVAL`](worker::MAINTENANCE_INTERVAL)th
//! turn if nobody sleeps there; at 64 busy workers, timer and socket
//! wakes arrive through that one worker at a time.
#![forbid(unsafe_code)]

mod config;
mod diagnosis;
mod figures;
mod global;
mod handle;
mod registry;
mod shared;
mod shutdown;
mod task;
mod trace;
mod worker;

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use crossbeam_deque::Worker;
use dinah_core::WorkerId;
use dinah_core::executor::SpawnError;
use dinah_core::task::TaskOutput;

pub use config::MultiConfig;
pub use figures::{MultiFigures, WorkerFigures};
pub use handle::MultiHandle;
pub(crate) use worker::WorkerHere;

use crate::pool::{BlockingPool, PoolError};
use crate::primitives::{Builder, JoinHandle as ThreadHandle, Thread, current, lock, park};
use crate::runtime::Driver;
use crate::task::JoinHandle;
use shared::Shared;

/// An executor for `Send` futures on several worker threads: a run queue
/// per worker, work stealing, a global queue, and one driver for timers
/// and sockets.
///
/// A task may be polled on any worker, a different one at each poll; a
/// socket made on one worker is polled on another; a waker may be called
/// from any thread. Where a wake lands and which worker polls what is in
/// the module docs of `worker.rs`; nothing about it is promised beyond
/// the guarantees below.
///
/// ```
/// use dinah::executor::{MultiConfig, MultiExecutor};
///
/// let executor = MultiExecutor::with_config(MultiConfig {
///     workers: Some(2),
///     ..MultiConfig::default()
/// })
/// .unwrap();
/// let handle = executor.handle();
/// let total = executor.block_on(async move {
///     let parts: Vec<_> = (0..8u64)
///         .map(|n| handle.try_spawn(async move { Ok::<_, ()>(n * n) }).unwrap())
///         .collect();
///     let mut total = 0;
///     for part in parts {
///         total += part.await.unwrap().unwrap();
///     }
///     total
/// });
/// assert_eq!(total, 140);
/// ```
///
/// # Guarantees
///
/// - [`try_spawn`](Self::try_spawn) either accepts a future or hands it
///   back ([`SpawnError::Shutdown`] once a shutdown began). An accepted
///   future is polled until it ends, or dropped exactly once (cancelled
///   through its handle, or at shutdown) with its handle resolved
///   [`Cancelled`](crate::task::JoinError::Cancelled).
/// - A task is polled by one worker at a time, never by the thread that
///   wakes it, and never again once cancelled: its next poll drops it.
/// - A panic in a task is caught at its poll: the task ends, its handle
///   says [`Panicked`](crate::task::JoinError::Panicked) with the message,
///   and the worker runs on. So is a panic in its future's destructor
///   (cancelled or not), in the destructor of an output nobody reads, and
///   in the waker of a task awaiting its handle: none ends the process.
/// - Spawned tasks are not starved: a worker looks at the global queue
///   every 61 turns, and a task that wakes itself goes to the back of its
///   worker's queue.
///
/// # What it does not do
///
/// No preemption: a poll that never returns holds its worker (the others
/// run on, and steal the tasks queued behind it). No `!Send` futures:
/// use a [`LocalExecutor`](crate::executor::LocalExecutor) for those. No
/// priorities.
///
/// No `block_in_place` (tokio's escape that lets a task block its worker's
/// thread while a new thread takes over the worker's queue). Blocking work
/// goes to [`MultiHandle::spawn_blocking`] instead, for three reasons: the
/// number of threads that poll tasks stays the configured one (a
/// `block_in_place` starts a replacement each time, unbounded by any
/// admission); the blocking work is bounded and reported by the
/// executor's own pool, its queue and its shutdown; and a task that
/// blocks in place still stalls every other future it polls (the arms of
/// its `select!` or `join!`), which a handle awaited does not.
///
/// # Dropping it
///
/// Shuts it down as [`shutdown`](Self::shutdown) does and joins every
/// worker: no thread outlives it.
pub struct MultiExecutor {
    shared: Arc<Shared>,
    /// The executor's blocking pool, until a shutdown shuts it down.
    blocking: Mutex<Option<BlockingPool>>,
    /// The workers' threads, until a shutdown joins them.
    threads: Mutex<Option<Vec<ThreadHandle<()>>>>,
}

impl MultiExecutor {
    /// An executor with one worker per available core.
    ///
    /// # Panics
    ///
    /// When it cannot be built (see [`with_config`](Self::with_config)).
    #[must_use]
    pub fn new() -> Self {
        Self::with_config(MultiConfig::default())
            .unwrap_or_else(|error| panic!("dinah: MultiExecutor::new: {error}"))
    }

    /// An executor set up by `config`, its workers started.
    ///
    /// # Errors
    ///
    /// [`PoolError::ZeroMaxThreads`] for `workers: Some(0)`;
    /// [`PoolError::ThreadRefused`] when the system refuses a worker's
    /// thread (the ones started are stopped and joined first);
    /// [`PoolError::Reactor`] when the reactor cannot be made.
    pub fn with_config(config: MultiConfig) -> Result<Self, PoolError> {
        Self::build(config, None)
    }

    /// An executor set up by `config` that measures itself (as
    /// [`MultiConfig::measure`]) and gives its task events to `sink`, each
    /// from the thread it happened on: a wake on the waking thread, a
    /// task's polls on the worker that made them, a steal (a
    /// [`Stolen`](dinah_core::telemetry::TraceEventKind::Stolen) event) on
    /// the worker that stole. A [`Recorder`](crate::telemetry::Recorder)'s
    /// timeline then has a lane per worker, with its polls and steals.
    ///
    /// It emits `Submitted`, `Woken` or `SelfWoken` (a task that woke
    /// itself in its poll, a yield among them), `PollStarted`/`PollEnded`,
    /// `Stolen`, and `Completed`, `Failed` or `CancellationAcknowledged`;
    /// not `Started`, nor the timer and socket waits. Stamps are the
    /// host's clock, in nanoseconds.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dinah::executor::{MultiConfig, MultiExecutor};
    /// use dinah::telemetry::Recorder;
    ///
    /// let timeline = Arc::new(Recorder::new(4096)?);
    /// let executor = MultiExecutor::with_sink(
    ///     MultiConfig { workers: Some(2), name: "worker", ..MultiConfig::default() },
    ///     Arc::new(timeline.source("service")),
    /// )?;
    /// let task = executor.try_spawn_named("job", async { dinah::yield_now().await }).unwrap();
    /// executor.block_on(task).unwrap();
    /// drop(executor);
    /// let json = timeline.chrome_trace();
    /// // Its polls are on a worker's lane, named after the worker's thread.
    /// assert!(json.contains(r#""cat":"poll""#) && json.contains("worker-"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// The sink is called on the workers: if it panics, the panic is
    /// caught and the sink is not called again
    /// ([`sink_failed`](Self::sink_failed) says so); the tasks run on.
    ///
    /// # Errors
    ///
    /// As [`with_config`](Self::with_config).
    pub fn with_sink(
        config: MultiConfig,
        sink: Arc<dyn dinah_core::telemetry::Sink + Send + Sync>,
    ) -> Result<Self, PoolError> {
        Self::build(
            MultiConfig {
                measure: true,
                ..config
            },
            Some(trace::Tracer::new(sink)),
        )
    }

    /// Whether the sink given to [`with_sink`](Self::with_sink) panicked,
    /// and so is no longer called.
    #[must_use]
    pub fn sink_failed(&self) -> bool {
        self.shared
            .tracer
            .as_ref()
            .is_some_and(trace::Tracer::failed)
    }

    fn build(config: MultiConfig, tracer: Option<trace::Tracer>) -> Result<Self, PoolError> {
        let workers = config.worker_count();
        if workers == 0 {
            return Err(PoolError::ZeroMaxThreads);
        }
        let driver = Arc::new(Driver::new(current(), config.start_paused, false));
        // The workers sleep in the reactor, whichever one holds it.
        driver.reactor_or_install().map_err(PoolError::Reactor)?;
        let blocking = BlockingPool::new(config.blocking)?;
        let locals: Vec<Worker<shared::Runnable>> =
            (0..workers).map(|_| Worker::new_fifo()).collect();
        let stealers = locals.iter().map(Worker::stealer).collect();
        let shared = Arc::new(Shared::new(
            stealers,
            driver,
            config.start_paused,
            blocking.spawner(),
            config.measure,
            tracer,
        ));
        let executor = Self {
            shared: Arc::clone(&shared),
            blocking: Mutex::new(Some(blocking)),
            threads: Mutex::new(Some(Vec::with_capacity(workers))),
        };
        for (index, local) in locals.into_iter().enumerate() {
            let worker_shared = Arc::clone(&shared);
            let spawned = Builder::new()
                .name(format!("{}-{}", config.name, index + 1))
                .spawn(move || worker::work(worker_shared, index, local));
            match spawned {
                Ok(thread) => lock(&executor.threads)
                    .as_mut()
                    .unwrap_or_else(|| unreachable!("not shut down"))
                    .push(thread),
                Err(error) => {
                    drop(executor);
                    let worker = WorkerId::new(index as u64 + 1).unwrap_or(WorkerId::MAX);
                    return Err(PoolError::ThreadRefused { worker, error });
                }
            }
        }
        Ok(executor)
    }

    /// A `Send + Sync` handle that spawns onto this executor from any
    /// thread, its tasks included.
    #[must_use]
    pub fn handle(&self) -> MultiHandle {
        MultiHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// As [`MultiHandle::try_spawn`].
    ///
    /// # Errors
    ///
    /// As [`MultiHandle::try_spawn`].
    pub fn try_spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput + Send + 'static,
    {
        task::spawn(&self.shared, future, None)
    }

    /// As [`MultiHandle::try_spawn_named`].
    ///
    /// # Errors
    ///
    /// As [`MultiHandle::try_spawn`].
    pub fn try_spawn_named<F>(
        &self,
        name: &'static str,
        future: F,
    ) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput + Send + 'static,
    {
        task::spawn(&self.shared, future, Some(name))
    }

    /// Drives `future` to completion on the calling thread, which parks
    /// while it waits, and returns its output. The workers run the
    /// spawned tasks meanwhile; the free functions of
    /// [`time`](crate::time) called in `future` use this executor's
    /// timers. While `future` is being polled, a paused clock does not
    /// move.
    ///
    /// # Panics
    ///
    /// When called on one of this executor's workers (inside one of its
    /// tasks): the worker would wait for tasks it should be running. A
    /// panic in `future` itself unwinds to the caller.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.refuse_on_worker("block_on");
        crate::runtime::context::enter(&self.shared.driver);
        let waker = Waker::from(Arc::new(UnparkOnWake(current())));
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        loop {
            let polled = {
                let _polling = Polling::begin(&self.shared);
                future.as_mut().poll(&mut cx)
            };
            if let Poll::Ready(output) = polled {
                return output;
            }
            park();
        }
    }

    /// A [`TaskGroup`](crate::task::TaskGroup) whose children are tasks
    /// on this executor: [`MultiHandle::group`].
    #[must_use]
    pub fn group<T>(&self) -> crate::task::TaskGroup<'static, T, MultiHandle> {
        self.handle().group()
    }

    /// A handle to this executor's timers (see
    /// [`LocalExecutor::timer`](crate::executor::LocalExecutor::timer)).
    #[must_use]
    pub fn timer(&self) -> crate::time::TimerHandle {
        crate::time::TimerHandle::new(Arc::clone(&self.shared.driver))
    }

    /// The figures of this executor's reactor.
    #[must_use]
    pub fn io_figures(&self) -> crate::io::IoFigures {
        self.shared.io_figures()
    }

    /// Tasks accepted and not ended.
    #[must_use]
    pub fn live_tasks(&self) -> usize {
        self.shared.registry.live()
    }

    /// The executor's figures now: each worker's (polls, time in polls,
    /// steals and tasks moved, sleeps, its deque's length, the task it
    /// polls), the global queue's length, and how many workers are awake,
    /// searching and asleep. The per-worker counts stay zero unless
    /// [`MultiConfig::measure`] is on.
    #[must_use]
    pub fn figures(&self) -> MultiFigures {
        diagnosis::figures(&self.shared)
    }

    /// What is not progressing, from its figures:
    ///
    /// - [`WorkerBlocked`](crate::telemetry::Verdict::WorkerBlocked) for
    ///   each worker whose poll has run longer than `thresholds.blocked`,
    ///   with its task, its name, how long, the tasks in its own queue
    ///   behind it (the other workers may steal them), and how many
    ///   workers are left;
    /// - else [`ReadyButDelayed`](crate::telemetry::Verdict::ReadyButDelayed)
    ///   when tasks have been ready (woken or new, in any queue: the
    ///   global one or a worker's) for longer than
    ///   `thresholds.ready_delay`: the one ready longest, and how many.
    ///   While a worker is blocked, the tasks behind it are its verdict's
    ///   evidence, not a verdict of their own.
    ///
    /// A verdict of
    /// [`Cause::HostStarved`](crate::telemetry::Cause::HostStarved) does
    /// not come from here. Nothing while polls are short and tasks are
    /// picked up within the threshold, however loaded the workers are.
    /// Needs [`MultiConfig::measure`]: an executor that does not measure
    /// itself has no stamps, and returns nothing. The same as
    /// [`MultiHandle::diagnose`], which any thread may call.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use dinah::executor::{MultiConfig, MultiExecutor};
    /// use dinah::telemetry::{Thresholds, Verdict, WorkersLeft};
    ///
    /// let executor = MultiExecutor::with_config(MultiConfig {
    ///     workers: Some(2),
    ///     measure: true,
    ///     ..MultiConfig::default()
    /// })
    /// .unwrap();
    /// let (started, release) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    /// let (s, r) = (Arc::clone(&started), Arc::clone(&release));
    /// let uplink = executor
    ///     .try_spawn_named("uplink", async move {
    ///         s.store(true, Ordering::Release);
    ///         // A synchronous wait inside a poll: it holds its worker.
    ///         while !r.load(Ordering::Acquire) {
    ///             std::thread::yield_now();
    ///         }
    ///     })
    ///     .unwrap();
    /// while !started.load(Ordering::Acquire) {
    ///     std::thread::yield_now();
    /// }
    /// let thresholds = Thresholds { blocked: Duration::ZERO, ..Thresholds::default() };
    /// let verdicts = executor.diagnose(&thresholds);
    /// assert!(matches!(
    ///     &verdicts[..],
    ///     [Verdict::WorkerBlocked { name: Some("uplink"), left: Some(WorkersLeft { left: 1, of: 2 }), .. }]
    /// ));
    /// release.store(true, Ordering::Release);
    /// executor.block_on(uplink).unwrap();
    /// ```
    #[must_use]
    pub fn diagnose(
        &self,
        thresholds: &crate::telemetry::Thresholds,
    ) -> Vec<crate::telemetry::Verdict> {
        diagnosis::diagnose(&self.shared, thresholds)
    }

    /// The number of worker threads.
    #[must_use]
    pub fn workers(&self) -> usize {
        self.shared.workers()
    }

    fn refuse_on_worker(&self, what: &str) {
        let on_worker = crate::runtime::context::with_worker(|worker| {
            worker.is_some_and(|here| here.serves(&self.shared))
        });
        assert!(
            !on_worker,
            "dinah: MultiExecutor::{what} called inside a task of the same executor; it would \
             wait for the worker it runs on"
        );
    }
}

impl Default for MultiExecutor {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for MultiExecutor {
    fn drop(&mut self) {
        self.shutdown();
        crate::runtime::context::leave(&self.shared.driver);
    }
}

impl fmt::Debug for MultiExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiExecutor")
            .field("workers", &self.workers())
            .field("live_tasks", &self.live_tasks())
            .finish_non_exhaustive()
    }
}

/// A `block_on` future's poll, counted while it lasts (even if it
/// unwinds).
struct Polling<'s>(&'s Shared);

impl<'s> Polling<'s> {
    fn begin(shared: &'s Shared) -> Self {
        shared.blocker_polls();
        Self(shared)
    }
}

impl Drop for Polling<'_> {
    fn drop(&mut self) {
        self.0.blocker_polled();
    }
}

/// Unparks the thread it names.
struct UnparkOnWake(Thread);

impl Wake for UnparkOnWake {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}
