//! [`PoolSpawner`]: spawning onto a pool from anywhere, without owning it.
#![forbid(unsafe_code)]

use std::fmt;
use std::io;
use std::sync::Arc;

use dinah_core::executor::SpawnError;

use super::PoolStats;
use super::engine::Engine;
use super::spawning::{self, Spawning};
use crate::task::JoinHandle;

/// A clonable, thread-safe way to spawn onto a pool without owning it.
///
/// It keeps the pool's engine alive but not its lifecycle: once the pool is
/// shut down (or dropped), every spawn is refused with
/// [`SpawnError::Shutdown`].
#[derive(Clone)]
pub struct PoolSpawner {
    engine: Arc<Engine>,
}

impl PoolSpawner {
    pub(crate) fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }

    /// Spawns `f`, exactly as the owning pool's `try_spawn` does.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Full`], [`SpawnError::Shutdown`] or (for a
    /// [`BlockingPool`](super::BlockingPool)) [`SpawnError::NoThread`], each
    /// holding `f`.
    pub fn try_spawn<F, R>(&self, f: F) -> Result<JoinHandle<R>, SpawnError<F, io::Error>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.engine.try_spawn(f)
    }

    /// Spawns `f`, waiting while the pool is full: the future admits it at
    /// once if there is room, or waits in line, first in, first out, and
    /// resolves to its handle once room frees (room that frees is reserved
    /// for the first in line; no `try_spawn` takes it). The task is never
    /// lost: dropping the future before it resolves drops `f` unrun, and
    /// hands room reserved for it to the next in line.
    ///
    /// ```
    /// use dinah::{CoreConfig, LocalExecutor, WorkerPool};
    ///
    /// let pool = WorkerPool::new(CoreConfig::new(1).unwrap(), 1).unwrap();
    /// let executor = LocalExecutor::new();
    /// let spawner = pool.spawner();
    /// let total = executor.block_on(async {
    ///     let mut handles = Vec::new();
    ///     for job in 0..8u64 {
    ///         // Waits whenever the one queue slot is taken.
    ///         handles.push(spawner.spawn(move || job * job).await.unwrap());
    ///     }
    ///     let mut total = 0;
    ///     for handle in handles {
    ///         total += handle.await.unwrap();
    ///     }
    ///     total
    /// });
    /// assert_eq!(total, 140);
    /// ```
    ///
    /// # Errors
    ///
    /// As [`try_spawn`](Self::try_spawn), except that it waits instead of
    /// returning [`SpawnError::Full`]: [`SpawnError::Shutdown`] once a
    /// shutdown began (waiters are turned away then, and get `f` back), and
    /// [`SpawnError::NoThread`] from a blocking pool.
    pub fn spawn<F, R>(&self, f: F) -> Spawning<F, R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        Spawning::new(Arc::clone(&self.engine), f)
    }

    /// [`spawn`](Self::spawn) for a thread outside any executor: blocks
    /// (parked) while it waits for room.
    ///
    /// Do not call it from one of the pool's own threads or from an
    /// executor's thread: the room it waits for may need that thread.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn).
    pub fn blocking_spawn<F, R>(&self, f: F) -> Result<JoinHandle<R>, SpawnError<F, io::Error>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        spawning::wait(self.spawn(f))
    }

    /// The pool's counters now.
    #[must_use]
    pub fn stats(&self) -> PoolStats {
        self.engine.stats()
    }

    /// Whether the pool has shut down or begun to (or has been dropped):
    /// from then on every spawn is refused.
    #[must_use]
    pub fn is_shut_down(&self) -> bool {
        self.engine.is_closed()
    }
}

impl fmt::Debug for PoolSpawner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolSpawner").finish_non_exhaustive()
    }
}
