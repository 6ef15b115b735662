//! [`PoolSpawner`]: spawning onto a pool from anywhere, without owning it.
#![forbid(unsafe_code)]

use std::fmt;
use std::io;
use std::sync::Arc;

use dinah_core::executor::SpawnError;

use super::PoolStats;
use super::engine::Engine;
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
