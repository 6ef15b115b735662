//! [`MultiHandle`]: spawns onto a [`MultiExecutor`] from anywhere, tasks
//! and blocking jobs alike.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use dinah_core::executor::SpawnError;
use dinah_core::task::TaskOutput;

use super::shared::Shared;
use super::task;
#[cfg(doc)]
use super::{MultiConfig, MultiExecutor};
use crate::pool::Spawning;
use crate::task::JoinHandle;

/// Spawns onto a [`MultiExecutor`] from any thread. `Send + Sync`, `Clone`.
///
/// It keeps the executor's shared state alive, not the executor running:
/// after a shutdown, spawns are refused with [`SpawnError::Shutdown`].
#[derive(Clone)]
pub struct MultiHandle {
    pub(super) shared: Arc<Shared>,
}

impl MultiHandle {
    /// Spawns `future`: queued on the calling worker when called from one
    /// of the executor's tasks, on the global queue otherwise, and first
    /// polled by whichever worker takes it. Its output is `()`, `!` or a
    /// `Result`; the handle gives it back whole.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Shutdown`] once a shutdown began; [`SpawnError::Full`]
    /// when the runtime holds so many live tasks that one part of its task
    /// table has no place left to number (more than 2³² - 1 of them, which
    /// no memory holds). Either way the future is handed back.
    pub fn try_spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput + Send + 'static,
    {
        task::spawn(&self.shared, future, None)
    }

    /// [`try_spawn`](Self::try_spawn), with a name that shutdown reports
    /// show for the task. A `'static` string: nothing is allocated for it.
    ///
    /// # Errors
    ///
    /// As [`try_spawn`](Self::try_spawn).
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

    /// A [`TaskGroup`](crate::task::TaskGroup) whose children are tasks
    /// on this executor. The group is `Send`: a task on any worker may own
    /// it, and dropping it cancels the children it has not joined.
    ///
    /// ```
    /// use std::time::Duration;
    /// use dinah::executor::{MultiConfig, MultiExecutor};
    /// use dinah::task::ChildEnd;
    ///
    /// let executor = MultiExecutor::with_config(MultiConfig {
    ///     workers: Some(2),
    ///     start_paused: true,
    ///     ..MultiConfig::default()
    /// })
    /// .unwrap();
    /// let handle = executor.handle();
    /// let report = executor.block_on(async move {
    ///     let mut group = handle.group::<Result<u32, ()>>();
    ///     group.spawn_named("quick", async { Ok(1) }).unwrap();
    ///     group.spawn_named("stuck", std::future::pending()).unwrap();
    ///     let (_, first) = group.join_next().await.unwrap();
    ///     assert_eq!(first, Ok(Ok(1)));
    ///     group.shutdown(Duration::from_millis(10)).await
    /// });
    /// assert_eq!(report.children[1].end, ChildEnd::Cancelled);
    /// ```
    #[must_use]
    pub fn group<T>(&self) -> crate::task::TaskGroup<'static, T, MultiHandle> {
        crate::task::TaskGroup::on(self.clone())
    }

    /// The executor's timers, as [`MultiExecutor::timer`].
    #[must_use]
    pub fn timer(&self) -> crate::time::TimerHandle {
        crate::time::TimerHandle::new(Arc::clone(&self.shared.driver))
    }

    /// Runs `f` on the executor's blocking pool
    /// ([`MultiConfig::blocking`]), waiting in line while the pool is
    /// full: work that blocks (a file, a lock held long, a synchronous
    /// client, a long computation) goes there, never on a worker.
    ///
    /// ```
    /// use dinah::executor::MultiExecutor;
    ///
    /// let executor = MultiExecutor::new();
    /// let handle = executor.handle();
    /// let sum = executor.block_on(async move {
    ///     let job = handle.spawn_blocking(|| (1..=10u64).sum::<u64>()).await.unwrap();
    ///     job.await.unwrap()
    /// });
    /// assert_eq!(sum, 55);
    /// ```
    ///
    /// # Errors
    ///
    /// As [`PoolSpawner::spawn`](crate::pool::PoolSpawner::spawn): the
    /// pool shut down, or it has no thread and none can be started.
    pub fn spawn_blocking<F, R>(&self, f: F) -> Spawning<F, R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.shared.blocking.spawn(f)
    }

    /// Queues `f` on the executor's blocking pool if there is room now.
    ///
    /// # Errors
    ///
    /// As [`BlockingPool::try_spawn`](crate::pool::BlockingPool::try_spawn): [`SpawnError::Full`] at the
    /// admission limit, [`SpawnError::Shutdown`], or
    /// [`SpawnError::NoThread`]; each holds `f`.
    pub fn try_spawn_blocking<F, R>(
        &self,
        f: F,
    ) -> Result<JoinHandle<R>, SpawnError<F, std::io::Error>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.shared.blocking.try_spawn(f)
    }

    /// The executor's figures now, as [`MultiExecutor::figures`]: this
    /// handle may read them from any thread, as a monitor does.
    #[must_use]
    pub fn figures(&self) -> super::MultiFigures {
        super::diagnosis::figures(&self.shared)
    }

    /// What is not progressing, as [`MultiExecutor::diagnose`].
    #[must_use]
    pub fn diagnose(
        &self,
        thresholds: &crate::telemetry::Thresholds,
    ) -> Vec<crate::telemetry::Verdict> {
        super::diagnosis::diagnose(&self.shared, thresholds)
    }

    /// The figures of the executor's reactor, as
    /// [`MultiExecutor::io_figures`].
    #[must_use]
    pub fn io_figures(&self) -> crate::io::IoFigures {
        self.shared.io_figures()
    }

    /// The blocking pool's counters now.
    #[must_use]
    pub fn blocking_stats(&self) -> crate::pool::PoolStats {
        self.shared.blocking.stats()
    }
}

impl fmt::Debug for MultiHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiHandle")
            .field("workers", &self.shared.workers())
            .finish_non_exhaustive()
    }
}
