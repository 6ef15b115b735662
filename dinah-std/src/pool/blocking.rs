//! [`BlockingPool`]: threads started on demand for blocking calls, behind
//! admission control.
#![forbid(unsafe_code)]

use std::fmt;
use std::io;
use std::time::Duration;

use dinah_core::executor::SpawnError;

use super::engine::{Engine, EngineConfig};
use super::spin::SPIN;
use super::{AdmissionBound, Owner, PoolError, PoolReport, PoolSpawner, PoolStats, ShutdownPolicy};
use crate::task::JoinHandle;
use crate::telemetry::TelemetryConfig;

/// How a [`BlockingPool`] admits jobs and keeps its threads.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub struct BlockingConfig {
    /// The most threads alive at once, hence the most jobs running at once.
    pub max_threads: usize,
    /// The admission limit; what it bounds is `bound`.
    pub queue_capacity: usize,
    /// How long a thread stays without a job before it leaves. Zero: a
    /// thread leaves as soon as it finds the queue empty.
    pub keep_alive: Duration,
    /// Whether `queue_capacity` bounds queued jobs only, or queued and
    /// running jobs together.
    pub bound: AdmissionBound,
}

impl BlockingConfig {
    /// `max_threads` threads, `queue_capacity` queued jobs
    /// ([`AdmissionBound::Queued`]) and a keep-alive of ten seconds.
    #[must_use]
    pub const fn new(max_threads: usize, queue_capacity: usize) -> Self {
        Self {
            max_threads,
            queue_capacity,
            keep_alive: Duration::from_secs(10),
            bound: AdmissionBound::Queued,
        }
    }

    /// The same, with another keep-alive.
    #[must_use]
    pub const fn keep_alive(mut self, keep_alive: Duration) -> Self {
        self.keep_alive = keep_alive;
        self
    }

    /// The same, with another admission bound.
    #[must_use]
    pub const fn bound(mut self, bound: AdmissionBound) -> Self {
        self.bound = bound;
        self
    }
}

/// A pool for blocking calls (file and socket I/O, FFI, sleeps) with a hard
/// admission limit.
///
/// Threads, named `dinah-blocking-<WorkerId>`, start on demand: a job that
/// finds no idle thread starts one, up to `max_threads`. A thread that finds
/// no job for `keep_alive` leaves. Admission is decided at submission by
/// [`BlockingConfig::queue_capacity`] and [`BlockingConfig::bound`]: a job
/// over the limit is handed back, never queued without bound.
///
/// The handle of a job is a [`Future`](std::future::Future): an executor task
/// can await it, and the pool thread that finishes the job wakes that task.
/// It also has a blocking [`join`](JoinHandle::join).
///
/// Panics, cancellation and shutdown follow the same contract as a
/// [`WorkerPool`](super::WorkerPool): a panic becomes the job's
/// [`JoinError::Panicked`](crate::task::JoinError), [`JoinHandle::cancel`] stops a
/// job that has not started, and [`shutdown`](Self::shutdown) drains or
/// hands back, joins every thread and reports. Dropping the pool drains it.
///
/// ```
/// use dinah::pool::{BlockingConfig, BlockingPool, ShutdownPolicy};
///
/// let pool = BlockingPool::new(BlockingConfig::new(4, 64))?;
/// let handle = pool.try_spawn(|| "read 3 bytes").unwrap_or_else(|_| unreachable!());
/// assert_eq!(handle.join(), Ok("read 3 bytes"));
/// assert_eq!(pool.shutdown(ShutdownPolicy::Drain).completed, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BlockingPool {
    owner: Owner,
    config: BlockingConfig,
}

impl BlockingPool {
    /// Builds the pool. No thread starts until the first job.
    ///
    /// # Errors
    ///
    /// [`PoolError::ZeroMaxThreads`] or [`PoolError::ZeroQueueCapacity`].
    pub fn new(config: BlockingConfig) -> Result<Self, PoolError> {
        Self::build(config, None)
    }

    #[cfg(feature = "telemetry")]
    /// As [`new`](Self::new), measuring itself as `telemetry` says (see
    /// [`WorkerPool::with_telemetry`](super::WorkerPool::with_telemetry)).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn with_telemetry(
        config: BlockingConfig,
        telemetry: TelemetryConfig,
    ) -> Result<Self, PoolError> {
        Self::build(config, Some(telemetry))
    }

    #[cfg(feature = "telemetry")]
    /// A handle that reads the pool's figures and diagnoses it from any
    /// thread; `None` without telemetry.
    #[must_use]
    pub fn monitor(&self) -> Option<super::PoolMonitor> {
        self.owner.monitor()
    }

    fn build(
        config: BlockingConfig,
        telemetry: Option<TelemetryConfig>,
    ) -> Result<Self, PoolError> {
        if config.max_threads == 0 {
            return Err(PoolError::ZeroMaxThreads);
        }
        if config.queue_capacity == 0 {
            return Err(PoolError::ZeroQueueCapacity);
        }
        let engine = Engine::new(
            EngineConfig {
                name: "dinah-blocking",
                max_threads: config.max_threads,
                capacity: config.queue_capacity,
                bound: config.bound,
                keep_alive: Some(config.keep_alive),
                on_demand: true,
                spin: SPIN,
            },
            telemetry,
        );
        engine
            .start()
            .map_err(|(worker, error)| PoolError::ThreadRefused { worker, error })?;
        Ok(Self {
            owner: Owner::new(engine),
            config,
        })
    }

    /// The configuration the pool was built with.
    #[must_use]
    pub fn config(&self) -> BlockingConfig {
        self.config
    }

    /// Queues `f`, starting a thread for it if none is idle and the limit
    /// allows, and returns its handle.
    ///
    /// A refusal takes one lock and allocates nothing.
    ///
    /// # Errors
    ///
    /// Each holds `f`: [`SpawnError::Full`] when the admission limit is
    /// reached, [`SpawnError::Shutdown`] once a shutdown began (seen
    /// through a [`PoolSpawner`]), and [`SpawnError::NoThread`] when the
    /// pool has no thread and the operating system refuses to start one. (If
    /// it refuses while other threads are alive, the job is queued for them.)
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

    /// Closes the pool, applies `policy`, joins every thread and reports;
    /// the same contract as [`WorkerPool::shutdown`](super::WorkerPool::shutdown).
    pub fn shutdown(mut self, policy: ShutdownPolicy) -> PoolReport {
        self.owner.shutdown(policy, None)
    }

    /// [`shutdown`](Self::shutdown) waiting at most `deadline`; the same
    /// contract as
    /// [`WorkerPool::shutdown_with_deadline`](super::WorkerPool::shutdown_with_deadline).
    pub fn shutdown_with_deadline(
        mut self,
        policy: ShutdownPolicy,
        deadline: Duration,
    ) -> PoolReport {
        self.owner.shutdown(policy, Some(deadline))
    }
}

impl fmt::Debug for BlockingPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockingPool")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish()
    }
}
