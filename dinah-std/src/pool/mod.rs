//! Thread pools with an owned lifecycle: [`WorkerPool`] for CPU work on a
//! fixed set of persistent workers, and [`BlockingPool`] for blocking calls on
//! threads started on demand.
//!
//! Both run on one engine: a bounded FIFO under one lock, admission decided
//! at submission (a refused task is handed back inside [`SubmitError`]), a
//! [`TaskHandle`] per task that can be joined, awaited or cancelled, panics
//! caught at the task boundary, live [`PoolStats`], and a shutdown that
//! either drains or hands back what has not started and reports everything
//! in a [`PoolReport`].
//!
//! # Which one
//!
//! - [`WorkerPool`]: as many workers as the [`CoreConfig`](dinah_core::CoreConfig)
//!   allows, all started by the constructor and kept until shutdown, plus
//!   fork-join batches ([`WorkerPool::run`]). Size it to the cores.
//! - [`BlockingPool`]: up to `max_threads` threads, each started when a job
//!   finds no thread headed for it and stopped after `keep_alive` without
//!   work, behind an explicit admission limit. Size it to the blocking calls
//!   you allow at once.
//!
//! In both, an idle thread looks for work for some tens of microseconds
//! before it sleeps, so bursts of short tasks start without a
//! wake-up, and a submission wakes (or starts) a thread only when fewer are
//! already headed for the queue than it has entries.
//!
//! # What is never lost
//!
//! An accepted task runs exactly once, or is cancelled through its handle
//! (its closure dropped unrun, its handle [`JoinError::Cancelled`]), or is
//! handed back by a [`ShutdownPolicy::CancelPending`] shutdown as an
//! [`Unstarted`] in the report. A refused task is given back in the error.
//! The report's counts add up: every accepted task is completed, panicked or
//! cancelled once the shutdown has joined every thread.

mod blocking;
mod engine;
mod handle;
mod probe;
mod worker;

use std::cell::Cell;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use dinah_core::{TaskId, WorkerId};

pub use blocking::{BlockingConfig, BlockingPool};
pub use handle::{JoinError, TaskHandle};
pub use probe::PoolMonitor;
pub use worker::WorkerPool;

use engine::{Engine, Job};

#[cfg(not(loom))]
std::thread_local! {
    /// The engine this thread works for (its address), or 0.
    static WORKER_OF: Cell<usize> = const { Cell::new(0) };
}
#[cfg(loom)]
loom::thread_local! {
    static WORKER_OF: Cell<usize> = Cell::new(0);
}

fn enter_worker(engine: &Arc<Engine>) {
    WORKER_OF.with(|cell| cell.set(Arc::as_ptr(engine) as usize));
}

/// Whether the calling thread is one of `engine`'s threads (never while its
/// thread-locals are being destroyed: a pool thread's loop has ended then).
fn is_worker_of(engine: &Arc<Engine>) -> bool {
    WORKER_OF
        .try_with(|cell| cell.get() == Arc::as_ptr(engine) as usize)
        .unwrap_or(false)
}

/// What both pools own: the engine, and whether it was shut down.
/// Dropping it unshut drains the engine.
struct Owner {
    engine: Arc<Engine>,
    closed: bool,
}

impl Owner {
    fn new(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            closed: false,
        }
    }

    fn submitter(&self) -> Submitter {
        Submitter {
            engine: Arc::clone(&self.engine),
        }
    }

    fn stats(&self) -> PoolStats {
        self.engine.stats()
    }

    #[cfg(feature = "telemetry")]
    fn monitor(&self) -> Option<PoolMonitor> {
        self.engine
            .probe()
            .is_some()
            .then(|| PoolMonitor::new(Arc::clone(&self.engine)))
    }

    fn shutdown(&mut self, policy: ShutdownPolicy, deadline: Option<Duration>) -> PoolReport {
        self.closed = true;
        self.engine.shutdown(policy, deadline)
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        if !self.closed {
            drop(self.engine.shutdown(ShutdownPolicy::Drain, None));
        }
    }
}

/// What a pool's capacity bounds.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AdmissionBound {
    /// Only tasks waiting in the queue. Running tasks are bounded by the
    /// thread count alone, so up to `capacity + threads` tasks are in the
    /// pool at once.
    Queued,
    /// Queued and running tasks together: at most `capacity` tasks are in
    /// the pool at once, whatever the thread count.
    InFlight,
}

/// What a shutdown does with tasks that have not started.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ShutdownPolicy {
    /// Run every accepted task, then stop.
    Drain,
    /// Run none that has not started: hand them back in
    /// [`PoolReport::handed_back`]. Tasks already running finish.
    CancelPending,
}

/// Why a pool refused a task. Every variant gives the task back.
pub enum SubmitError<F> {
    /// The pool's capacity is used up (see [`AdmissionBound`]).
    Full(F),
    /// The pool is shutting down; it admits nothing more.
    ShuttingDown(F),
    /// A [`BlockingPool`] had no thread, and the operating system refused to
    /// start one. Never returned by a [`WorkerPool`], whose workers all start
    /// in its constructor.
    ThreadRefused(F, io::Error),
}

impl<F> SubmitError<F> {
    /// The refused task.
    pub fn into_inner(self) -> F {
        match self {
            Self::Full(f) | Self::ShuttingDown(f) | Self::ThreadRefused(f, _) => f,
        }
    }
}

impl<F> fmt::Debug for SubmitError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::ShuttingDown(_) => f.write_str("ShuttingDown(..)"),
            Self::ThreadRefused(_, error) => write!(f, "ThreadRefused(.., {error:?})"),
        }
    }
}

impl<F> fmt::Display for SubmitError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("the pool is full; the task was handed back"),
            Self::ShuttingDown(_) => {
                f.write_str("the pool is shutting down; the task was handed back")
            }
            Self::ThreadRefused(_, error) => write!(
                f,
                "no pool thread could be started ({error}); the task was handed back"
            ),
        }
    }
}

impl<F> std::error::Error for SubmitError<F> {}

/// Why a pool could not be built. Nothing is left running in any case.
#[derive(Debug)]
#[non_exhaustive]
pub enum PoolError {
    /// A queue capacity of zero.
    ZeroQueueCapacity,
    /// A thread limit of zero.
    ZeroMaxThreads,
    /// The operating system refused to start this worker. The workers
    /// started before it were stopped and joined.
    ThreadRefused {
        /// The worker that could not start.
        worker: WorkerId,
        /// The operating system's error.
        error: io::Error,
    },
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroQueueCapacity => f.write_str("queue capacity must be at least 1"),
            Self::ZeroMaxThreads => f.write_str("max_threads must be at least 1"),
            Self::ThreadRefused { worker, error } => {
                write!(f, "worker {} could not be started: {error}", worker.get())
            }
        }
    }
}

impl std::error::Error for PoolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::ThreadRefused { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// A pool's counters, read at one moment under the pool's lock.
///
/// `completed`, `panicked` and `cancelled` count tasks whose outcome is
/// settled; tasks queued or running are in none of them. After a shutdown
/// without a deadline, `accepted == completed + panicked + cancelled`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[non_exhaustive]
pub struct PoolStats {
    /// Tasks waiting in the queue, including cancelled ones not yet reached.
    pub queued: usize,
    /// Threads running a task (or a share of a batch).
    pub active: usize,
    /// Threads with nothing to run.
    pub idle: usize,
    /// Threads alive (`active + idle`).
    pub threads: usize,
    /// Tasks admitted (a [`WorkerPool::run`] batch counts each of its tasks).
    pub accepted: u64,
    /// Submissions refused (full, shutting down, or no thread).
    pub rejected: u64,
    /// Tasks that ran to their end.
    pub completed: u64,
    /// Tasks that panicked.
    pub panicked: u64,
    /// Tasks that never ran: cancelled through their handle, handed back by
    /// a shutdown, or handed back to the queue by a batch that panicked.
    pub cancelled: u64,
}

/// One thread's share of the work.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub struct WorkerReport {
    /// The thread's id (its name is `dinah-worker-<id>` or
    /// `dinah-blocking-<id>`).
    pub id: WorkerId,
    /// Tasks it ran to their end.
    pub completed: u64,
    /// Tasks of its that panicked.
    pub panicked: u64,
    /// Cancelled tasks it reached and dropped unrun.
    pub cancelled: u64,
}

/// Tasks still in the pool when a shutdown's deadline passed.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct Unfinished {
    /// The tasks running at the deadline, with the worker running each.
    pub running: Vec<(WorkerId, TaskId)>,
    /// Tasks still queued at the deadline. Under
    /// [`ShutdownPolicy::Drain`] the detached workers still run them.
    pub queued: usize,
}

/// What a shutdown did.
#[derive(Debug)]
#[non_exhaustive]
pub struct PoolReport {
    /// The policy applied.
    pub policy: ShutdownPolicy,
    /// Tasks that ran to their end, over the pool's life.
    pub completed: u64,
    /// Tasks that panicked, over the pool's life.
    pub panicked: u64,
    /// Tasks that never ran, over the pool's life (including
    /// `handed_back`).
    pub cancelled: u64,
    /// Under [`ShutdownPolicy::CancelPending`], the accepted tasks that had
    /// not started, oldest first. Run them with [`Unstarted::run`]; dropping
    /// one resolves its handle as [`JoinError::Cancelled`].
    pub handed_back: Vec<Unstarted>,
    /// Per-thread counts for the threads alive at shutdown (a
    /// [`BlockingPool`] thread that left on keep-alive is only in the
    /// totals).
    pub workers: Vec<WorkerReport>,
    /// `Some` when the deadline passed before every thread finished: what
    /// was still running or queued. Those threads are detached, not joined.
    pub unfinished: Option<Unfinished>,
}

/// An accepted task that a shutdown handed back without running it.
///
/// Its handle stays pending until this is run or dropped: [`run`](Self::run)
/// runs it on the calling thread and gives its handle the result; dropping it
/// drops the closure unrun and resolves the handle as
/// [`JoinError::Cancelled`].
#[must_use = "dropping an Unstarted task cancels it"]
pub struct Unstarted {
    job: Box<dyn Job>,
}

impl Unstarted {
    fn new(job: Box<dyn Job>) -> Self {
        Self { job }
    }

    /// The task's id.
    #[must_use]
    pub fn id(&self) -> TaskId {
        self.job.id()
    }

    /// Runs the task on the calling thread. A panic is caught and given to
    /// its handle as [`JoinError::Panicked`], as on a pool thread. Returns
    /// whether it ran (`false` if its handle cancelled it meanwhile). The
    /// report that handed it back already counted it as cancelled; running
    /// it changes no pool count.
    pub fn run(mut self) -> bool {
        let ran = self.job.run(None, None);
        self.job.resolve();
        !matches!(ran, engine::Ran::Skipped)
    }
}

impl fmt::Debug for Unstarted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unstarted").field("id", &self.id()).finish()
    }
}

/// A clonable, thread-safe way to submit to a pool without owning it.
///
/// It keeps the pool's engine alive but not its lifecycle: once the pool is
/// shut down (or dropped), every submission is refused with
/// [`SubmitError::ShuttingDown`].
#[derive(Clone)]
pub struct Submitter {
    engine: Arc<Engine>,
}

impl Submitter {
    /// Submits `f`, exactly as the owning pool's `try_submit` (or
    /// `try_spawn_blocking`) does.
    ///
    /// # Errors
    ///
    /// [`SubmitError::Full`], [`SubmitError::ShuttingDown`] or (for a
    /// [`BlockingPool`]) [`SubmitError::ThreadRefused`], each holding `f`.
    pub fn try_submit<F, R>(&self, f: F) -> Result<TaskHandle<R>, SubmitError<F>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.engine.try_submit(f)
    }

    /// The pool's counters now.
    #[must_use]
    pub fn stats(&self) -> PoolStats {
        self.engine.stats()
    }

    /// Whether the pool has begun shutting down (or has been dropped): from
    /// then on every submission is refused.
    #[must_use]
    pub fn is_shutting_down(&self) -> bool {
        self.engine.is_closed()
    }
}

impl fmt::Debug for Submitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Submitter").finish_non_exhaustive()
    }
}
