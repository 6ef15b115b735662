//! [`ShutdownReport`]: what a [`LocalExecutor`](super::LocalExecutor)'s
//! shutdown left behind.
#![forbid(unsafe_code)]

/// What [`LocalExecutor::shutdown`](super::LocalExecutor::shutdown) left behind: every task and submission
/// it dropped unfinished, each of whose handles now says
/// [`Cancelled`](crate::task::JoinError::Cancelled).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Spawned tasks that had not finished.
    pub cancelled_tasks: usize,
    /// Submissions still waiting in the ingress.
    pub cancelled_submissions: usize,
}

impl ShutdownReport {
    /// Everything dropped unfinished.
    #[must_use]
    pub const fn left(&self) -> usize {
        self.cancelled_tasks + self.cancelled_submissions
    }
}
