//! [`PoolSpawner::call`]: a job run on a pool and awaited in one step, with
//! one error, [`CallError`].
#![forbid(unsafe_code)]

use std::fmt;
use std::io;

use dinah_core::executor::SpawnError;

use super::PoolSpawner;
use crate::task::JoinError;

/// Why a [`call`](PoolSpawner::call) gave no result.
#[derive(Debug)]
#[non_exhaustive]
pub enum CallError {
    /// The pool shut down (or began to) before the job was admitted; it was
    /// dropped unrun.
    Shutdown,
    /// A blocking pool had no thread for the job and the operating system
    /// refused to start one; the job was dropped unrun.
    NoThread(io::Error),
    /// The job was admitted and then panicked, or was cancelled by the
    /// pool's shutdown before it started.
    Failed(JoinError),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Shutdown => f.write_str("the pool shut down before the job was admitted"),
            Self::NoThread(error) => write!(f, "no thread could be started for the job ({error})"),
            Self::Failed(error) => write!(f, "the job failed: {error}"),
        }
    }
}

impl std::error::Error for CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::NoThread(error) => Some(error),
            Self::Failed(error) => Some(error),
            Self::Shutdown => None,
        }
    }
}

impl From<JoinError> for CallError {
    fn from(error: JoinError) -> Self {
        Self::Failed(error)
    }
}

impl PoolSpawner {
    /// Runs `f` on the pool and waits for its value: [`spawn`](Self::spawn)
    /// (which waits for room, first come, first served) and the handle's
    /// await in one step, with one error that `?` carries into a
    /// `Box<dyn Error + Send + Sync>` or any error with `From<CallError>`.
    ///
    /// ```
    /// use dinah::{CoreConfig, LocalExecutor, WorkerPool};
    ///
    /// let pool = WorkerPool::new(CoreConfig::new(1).unwrap(), 1).unwrap();
    /// let cpu = pool.spawner();
    /// let executor = LocalExecutor::new();
    /// let sum = executor.block_on(async {
    ///     let a = cpu.call(|| (1..=10u64).sum::<u64>()).await?;
    ///     let b = cpu.call(move || a * 2).await?;
    ///     Ok::<u64, dinah::pool::CallError>(b)
    /// });
    /// assert_eq!(sum.unwrap(), 110);
    /// ```
    ///
    /// Dropping the future before the job is admitted drops `f` unrun;
    /// after, the job runs on and its value is dropped (as dropping a
    /// handle detaches its job).
    ///
    /// # Errors
    ///
    /// [`CallError::Shutdown`] and [`CallError::NoThread`] when the job was
    /// not admitted (use [`spawn`](Self::spawn) to get it back);
    /// [`CallError::Failed`] when it panicked or was cancelled.
    pub async fn call<F, R>(&self, f: F) -> Result<R, CallError>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let handle = match self.spawn(f).await {
            Ok(handle) => handle,
            Err(SpawnError::NoThread(_, error)) => return Err(CallError::NoThread(error)),
            // A waiting spawn is refused only by a shutdown.
            Err(_) => return Err(CallError::Shutdown),
        };
        Ok(handle.await?)
    }
}
