//! [`PoolMonitor`]: a pool's telemetry and diagnosis, read from any thread.
#![forbid(unsafe_code)]

use std::fmt;
use std::sync::Arc;

use super::PoolStats;
use super::engine::Engine;
use super::probe::PoolProbe;
use crate::telemetry::{PoolFigures, Thresholds, Verdict};

/// Reads a pool's telemetry and diagnoses it from any thread.
/// `Send + Sync + Clone`; it keeps the pool's state alive, not its threads.
#[derive(Clone)]
pub struct PoolMonitor {
    engine: Arc<Engine>,
}

impl PoolMonitor {
    #[cfg(feature = "telemetry")]
    pub(crate) fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }

    /// What the pool has measured since it was built.
    #[must_use]
    pub fn figures(&self) -> PoolFigures {
        self.engine
            .probe()
            .map(PoolProbe::figures)
            .unwrap_or_default()
    }

    /// The pool's counters now (queue depth, active and idle threads,
    /// rejects, outcomes).
    #[must_use]
    pub fn stats(&self) -> PoolStats {
        self.engine.stats()
    }

    /// One [`Verdict`] for each thing not progressing, judged against
    /// `thresholds`; empty when the pool progresses:
    ///
    /// - a blocking pool whose oldest queued job has waited longer than
    ///   `blocking_wait`, or that refused a job as full within
    ///   `admission_window`, is
    ///   [`BlockingSaturated`](Verdict::BlockingSaturated), and nothing else
    ///   is reported for it (its long jobs are that verdict's evidence); a
    ///   pool merely at its limit, admitting and finishing jobs, is not;
    /// - otherwise each task running longer than `blocked` is
    ///   [`WorkerBlocked`](Verdict::WorkerBlocked), naming its worker, or
    ///   [`HostStarved`](Verdict::HostStarved) when that worker's thread was
    ///   runnable and waiting for a CPU the operating system gave to others
    ///   (Linux, host's clock only);
    /// - a worker pool that refused a submission as full within
    ///   `admission_window` is [`AdmissionFull`](Verdict::AdmissionFull).
    ///
    /// Tasks of [`WorkerPool::run`](super::WorkerPool::run) batches are not
    /// stamped and never appear.
    #[must_use]
    pub fn diagnose(&self, thresholds: &Thresholds) -> Vec<Verdict> {
        self.engine.diagnose(thresholds)
    }
}

impl fmt::Debug for PoolMonitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolMonitor").finish_non_exhaustive()
    }
}
