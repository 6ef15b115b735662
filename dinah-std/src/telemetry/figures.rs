//! [`PoolFigures`]: what a pool has measured.
#![forbid(unsafe_code)]

use dinah_core::telemetry::Log2Histogram;

/// What a pool has measured since it was built. Durations, and the
/// histograms' samples, are in microseconds of the configured clock.
///
/// A pool runs closures, not polls, so it keeps its own record rather than
/// an executor's [`ExecutorFigures`](dinah_core::telemetry::ExecutorFigures).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolFigures {
    /// The largest number of tasks queued at once.
    pub max_queued: usize,
    /// From a submission to its start (queue wait).
    pub wait: Log2Histogram<24>,
    /// How long each task ran.
    pub run_time: Log2Histogram<24>,
    /// Tasks that ran at least the long-poll threshold.
    pub long_runs: u64,
    /// Submissions refused because the queue was full.
    pub rejected_full: u64,
}
