//! [`MultiConfig`]: how a [`MultiExecutor`](super::MultiExecutor) is set up.
#![forbid(unsafe_code)]

use crate::pool::BlockingConfig;

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
    /// the next timer when every worker sleeps, no task is queued and no
    /// `block_on` future is being polled. For tests: timers then fire in
    /// deadline order at once, with no real waiting. Tasks spawned from
    /// other threads meanwhile may find the clock moved: spawn them from
    /// a task or a `block_on` future to have them in place first.
    pub start_paused: bool,
    /// The executor's own [`BlockingPool`](crate::pool::BlockingPool),
    /// which [`MultiHandle::spawn_blocking`](super::MultiHandle::spawn_blocking)
    /// uses. Default: 512 threads at most, 65,536 queued jobs, threads
    /// leave after ten idle seconds. It starts no thread until a job comes.
    pub blocking: BlockingConfig,
    /// Counts per-worker figures ([`MultiExecutor::figures`](super::MultiExecutor::figures)):
    /// polls, time in polls, steals and the tasks they moved, sleeps,
    /// wake-to-poll times, the task each worker polls now; and stamps each
    /// task when it becomes ready, for the diagnosis. On: two clock reads
    /// and a few relaxed adds per poll, on the worker's own cache line, a
    /// clock read and a store per wake, and one more allocation per task
    /// (its ready stamp, which the diagnosis reads). Off (the default):
    /// one predictable branch per poll and per wake, and those figures
    /// stay zero.
    pub measure: bool,
}

impl Default for MultiConfig {
    fn default() -> Self {
        Self {
            workers: None,
            name: "dinah-worker",
            start_paused: false,
            blocking: BlockingConfig::new(512, 65_536),
            measure: false,
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
