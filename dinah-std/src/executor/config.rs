//! [`ExecutorConfig`]: how a [`LocalExecutor`](super::LocalExecutor) is
//! sized.
#![forbid(unsafe_code)]

/// How a [`LocalExecutor`](super::LocalExecutor) is sized.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ExecutorConfig {
    /// The most tasks alive at once (spawned and not finished), or `None`
    /// for no cap. At the cap, [`LocalExecutor::try_spawn`](super::LocalExecutor::try_spawn) hands the future
    /// back and submissions wait in the ingress.
    pub max_tasks: Option<usize>,
    /// How many submissions from [`Spawner`](super::Spawner)s may wait to be taken in.
    pub ingress_capacity: usize,
}

impl Default for ExecutorConfig {
    /// No cap on tasks; room for 1,024 waiting submissions.
    fn default() -> Self {
        Self {
            max_tasks: None,
            ingress_capacity: 1024,
        }
    }
}
