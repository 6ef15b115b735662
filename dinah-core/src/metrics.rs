//! [`RuntimeMetrics`]: opt-in event counters that can live in a `static`.

use portable_atomic::{AtomicU64, Ordering};

/// Six event counters, recorded explicitly by the caller.
///
/// Counts tasks submitted, started, completed and failed, and cancellation
/// requested and acknowledged. The executor and scheduler never touch it: the
/// caller calls the matching `record_*` method at each event site. A
/// cancellation request and its acknowledgement are separate counters.
///
/// # Guarantees
///
/// - Every counter is a 64-bit `portable_atomic::AtomicU64`, also
///   on 32-bit targets, and saturates at `u64::MAX` instead of wrapping.
/// - `const fn new()`, so it can be a `static` and be recorded from interrupt
///   handlers and threads alike.
///
/// # What it does not promise
///
/// Counters use `Relaxed` ordering: they are statistics, not synchronization,
/// and seeing a count says nothing about the task data behind it.
/// [`snapshot`](Self::snapshot) reads each counter atomically, but not the six
/// together, so a snapshot taken during updates may mix moments. No labels,
/// timing or export.
///
/// # Cost on 32-bit targets
///
/// Targets without native 64-bit atomics (every Cortex-M) go through
/// `portable-atomic`'s fallback: a lock table on `thumbv7m`, a critical
/// section on `thumbv6m` (where the binary must enable
/// `portable-atomic/critical-section`).
///
/// ```
/// use dinah_core::RuntimeMetrics;
///
/// static METRICS: RuntimeMetrics = RuntimeMetrics::new();
///
/// METRICS.record_submitted();
/// METRICS.record_started();
/// METRICS.record_completed();
/// let snapshot = METRICS.snapshot();
/// assert_eq!((snapshot.submitted, snapshot.completed, snapshot.failed), (1, 1, 0));
/// ```
#[derive(Debug, Default)]
pub struct RuntimeMetrics {
    submitted: AtomicU64,
    started: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    cancellation_requested: AtomicU64,
    cancellation_acknowledged: AtomicU64,
}

/// A plain copy of [`RuntimeMetrics`] counters.
///
/// Each field was read atomically; the fields together are not one atomic
/// snapshot when updates run concurrently.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct MetricsSnapshot {
    /// Tasks accepted for execution.
    pub submitted: u64,
    /// Tasks that began executing.
    pub started: u64,
    /// Tasks that returned successfully.
    pub completed: u64,
    /// Tasks that returned an error.
    pub failed: u64,
    /// Cancellation requests made.
    pub cancellation_requested: u64,
    /// Cancellations that running or pending work acknowledged.
    pub cancellation_acknowledged: u64,
}

fn increment(counter: &AtomicU64) {
    // `checked_add` returning `None` at `u64::MAX` stops the update: saturation.
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1));
}

impl RuntimeMetrics {
    /// All counters at zero.
    #[must_use]
    pub const fn new() -> Self {
        Self::from_snapshot(MetricsSnapshot {
            submitted: 0,
            started: 0,
            completed: 0,
            failed: 0,
            cancellation_requested: 0,
            cancellation_acknowledged: 0,
        })
    }

    /// Counters starting from the values in `snapshot`, for example to
    /// carry totals over a restart.
    #[must_use]
    pub const fn from_snapshot(snapshot: MetricsSnapshot) -> Self {
        Self {
            submitted: AtomicU64::new(snapshot.submitted),
            started: AtomicU64::new(snapshot.started),
            completed: AtomicU64::new(snapshot.completed),
            failed: AtomicU64::new(snapshot.failed),
            cancellation_requested: AtomicU64::new(snapshot.cancellation_requested),
            cancellation_acknowledged: AtomicU64::new(snapshot.cancellation_acknowledged),
        }
    }

    /// Counts one task accepted for execution.
    pub fn record_submitted(&self) {
        increment(&self.submitted);
    }

    /// Counts one task that began executing.
    pub fn record_started(&self) {
        increment(&self.started);
    }

    /// Counts one task that returned successfully.
    pub fn record_completed(&self) {
        increment(&self.completed);
    }

    /// Counts one task that returned an error.
    pub fn record_failed(&self) {
        increment(&self.failed);
    }

    /// Counts one cancellation request. Not an acknowledgement.
    pub fn record_cancellation_requested(&self) {
        increment(&self.cancellation_requested);
    }

    /// Counts one cancellation that work actually acknowledged.
    pub fn record_cancellation_acknowledged(&self) {
        increment(&self.cancellation_acknowledged);
    }

    /// Copies the counters, each read atomically with `Relaxed` ordering.
    #[must_use]
    pub fn snapshot(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            submitted: self.submitted.load(Ordering::Relaxed),
            started: self.started.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            cancellation_requested: self.cancellation_requested.load(Ordering::Relaxed),
            cancellation_acknowledged: self.cancellation_acknowledged.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::thread;

    #[test]
    fn each_event_has_its_own_counter() {
        let metrics = RuntimeMetrics::new();
        metrics.record_submitted();
        metrics.record_started();
        metrics.record_started();
        metrics.record_completed();
        metrics.record_completed();
        metrics.record_completed();
        metrics.record_failed();
        metrics.record_cancellation_requested();
        metrics.record_cancellation_requested();
        metrics.record_cancellation_acknowledged();
        assert_eq!(
            metrics.snapshot(),
            MetricsSnapshot {
                submitted: 1,
                started: 2,
                completed: 3,
                failed: 1,
                cancellation_requested: 2,
                cancellation_acknowledged: 1,
            }
        );
    }

    #[test]
    fn counters_saturate_at_u64_max() {
        let near_max = MetricsSnapshot {
            submitted: u64::MAX - 1,
            started: u64::MAX,
            ..MetricsSnapshot::default()
        };
        let metrics = RuntimeMetrics::from_snapshot(near_max);
        for _ in 0..3 {
            metrics.record_submitted();
            metrics.record_started();
        }
        let snapshot = metrics.snapshot();
        assert_eq!((snapshot.submitted, snapshot.started), (u64::MAX, u64::MAX));
        assert_eq!(snapshot.completed, 0);
    }

    #[test]
    fn concurrent_increments_are_all_counted() {
        const THREADS: usize = 4;
        const PER_THREAD: u64 = 10_000;
        let metrics = RuntimeMetrics::new();
        let start = Barrier::new(THREADS);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    start.wait();
                    for _ in 0..PER_THREAD {
                        metrics.record_submitted();
                        metrics.record_failed();
                    }
                });
            }
        });
        let snapshot = metrics.snapshot();
        assert_eq!(snapshot.submitted, THREADS as u64 * PER_THREAD);
        assert_eq!(snapshot.failed, THREADS as u64 * PER_THREAD);
        assert_eq!(snapshot.started, 0);
    }
}
