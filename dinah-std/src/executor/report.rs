//! [`ShutdownReport`]: what a [`LocalExecutor`](super::LocalExecutor)'s
//! shutdown left behind.
#![forbid(unsafe_code)]

/// What [`LocalExecutor::shutdown`](super::LocalExecutor::shutdown) (or
/// [`shutdown_with`](super::LocalExecutor::shutdown_with)) did: every task
/// and submission it dropped unfinished, each of whose handles now says
/// [`Cancelled`](crate::task::JoinError::Cancelled), and, task by task, how
/// each one alive when it began ended: the same kind of report as a
/// [`TaskGroup`](crate::task::TaskGroup)'s.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Spawned tasks that had not finished.
    pub cancelled_tasks: usize,
    /// Submissions still waiting in the ingress.
    pub cancelled_submissions: usize,
    /// Each task alive (or waiting in the ingress) when the shutdown began,
    /// by id: `Completed` or `Failed` if it ended while a drain ran,
    /// `Cancelled` if it was dropped.
    pub tasks: Vec<crate::task::ChildReport>,
    /// The totals of the executor's own blocking pool, shut down with it
    /// under the same policy: `Some` for a
    /// [`MultiExecutor`](super::MultiExecutor), `None` for an executor
    /// without a pool of its own.
    pub blocking: Option<crate::pool::PoolStats>,
}

impl ShutdownReport {
    /// Everything dropped unfinished.
    #[must_use]
    pub const fn left(&self) -> usize {
        self.cancelled_tasks + self.cancelled_submissions
    }
}
