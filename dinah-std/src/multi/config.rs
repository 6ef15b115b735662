//! [`MultiConfig`]: how a [`MultiExecutor`](super::MultiExecutor) is set up.
#![forbid(unsafe_code)]

/// How a [`MultiExecutor`](super::MultiExecutor) is set up.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct MultiConfig {
    /// Worker threads. `None` (the default): the machine's available
    /// parallelism (1 if it cannot be read). `Some(0)` is refused with
    /// [`PoolError::ZeroMaxThreads`](crate::pool::PoolError::ZeroMaxThreads).
    pub workers: Option<usize>,
    /// The workers' thread names are `{name}-{n}`, `n` from 1.
    pub name: &'static str,
    /// The clock starts paused (virtual): it moves only by
    /// [`TimerHandle::advance`](crate::time::TimerHandle::advance), or to
    /// the next timer when every worker sleeps and no task is queued. For
    /// tests: timers then fire in deadline order at once, with no real
    /// waiting.
    pub start_paused: bool,
}

impl Default for MultiConfig {
    fn default() -> Self {
        Self {
            workers: None,
            name: "dinah-worker",
            start_paused: false,
        }
    }
}

impl MultiConfig {
    /// The number of workers this configuration asks for.
    pub(super) fn worker_count(&self) -> usize {
        self.workers.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        })
    }
}
