//! [`Spawner`]: hands `Send` futures to a
//! [`LocalExecutor`](super::LocalExecutor) from any thread.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use dinah_core::executor::SpawnError;
use dinah_core::task::TaskOutput;

use super::hub::Hub;
use crate::task::JoinHandle;

/// Hands `Send` futures to a [`LocalExecutor`](super::LocalExecutor) from
/// any thread, through its bounded ingress. `Send + Sync + Clone`.
///
/// # Guarantees
///
/// - [`try_spawn`](Self::try_spawn) never blocks on the executor and never
///   waits for room: a full ingress or a shut-down executor hands the future
///   back.
/// - Once accepted, a future belongs to the executor: it is taken in at the
///   executor's next tick (while its live-task cap allows, oldest first) and
///   polled there, or dropped at shutdown, on the executor's thread, with
///   its handle resolved [`Cancelled`](crate::task::JoinError::Cancelled).
///   Exactly one of the two, exactly once.
///
/// ```
/// use dinah::executor::LocalExecutor;
///
/// let executor = LocalExecutor::new();
/// let spawner = executor.spawner();
/// let handle = std::thread::spawn(move || spawner.try_spawn(async { Ok::<_, ()>(6 * 7) }))
///     .join()
///     .unwrap()
///     .unwrap();
/// assert_eq!(executor.block_on(handle), Ok(Ok(42)));
/// ```
#[derive(Clone)]
pub struct Spawner {
    hub: Arc<Hub>,
}

impl Spawner {
    pub(super) fn new(hub: Arc<Hub>) -> Self {
        Self { hub }
    }

    /// Submits `future` and wakes the executor's thread. Its output is
    /// `()`, `!` or a `Result`; the handle gives it back whole.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Full`] when the ingress holds its capacity of
    /// submissions not yet taken in, [`SpawnError::Shutdown`] when the
    /// executor has shut down or been dropped. The future is handed back.
    pub fn try_spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput + Send + 'static,
    {
        self.hub.submit(future, None)
    }

    /// [`try_spawn`](Self::try_spawn), with a name the executor's telemetry
    /// shows for the task: in [`diagnose`](super::ExecutorMonitor::diagnose)'s
    /// verdicts, [`tasks`](super::ExecutorMonitor::tasks), the timeline and
    /// `tracing` spans.
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
        self.hub.submit(future, Some(name))
    }
}

impl fmt::Debug for Spawner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Spawner")
            .field("capacity", &self.hub.ingress.capacity())
            .finish_non_exhaustive()
    }
}
