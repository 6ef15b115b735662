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
    /// Whether the executor's timers read a paused (virtual) clock instead
    /// of the host's: it starts at 0 and moves only when the executor has
    /// nothing ready, jumping to the next deadline at once, or when
    /// [`TimerHandle::advance`](crate::time::TimerHandle::advance) moves it
    /// (tokio's `start_paused`). Tests of timeouts and intervals then take no
    /// real time and run the same way every time. The jump does not wait
    /// for other threads or for sockets: a timeout on work done by a pool,
    /// or on a reply from a peer, elapses at once if the executor has
    /// nothing else ready (the reactor is only looked at, not waited in),
    /// so such tests use the real clock.
    pub start_paused: bool,
}

impl Default for ExecutorConfig {
    /// No cap on tasks; room for 1,024 waiting submissions; the real clock.
    fn default() -> Self {
        Self {
            max_tasks: None,
            ingress_capacity: 1024,
            start_paused: false,
        }
    }
}
