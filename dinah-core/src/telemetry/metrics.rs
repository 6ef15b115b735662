//! [`RuntimeMetrics`] and [`RuntimeMetrics32`]: opt-in event counters that can live in a `static`.
#![forbid(unsafe_code)]

use portable_atomic::{AtomicU32, AtomicU64, Ordering};

macro_rules! runtime_metrics {
    (
        $(#[$metrics_doc:meta])*
        $metrics:ident,
        $(#[$snapshot_doc:meta])*
        $snapshot:ident,
        $int:ty,
        $atomic:ty
    ) => {
        $(#[$metrics_doc])*
        #[derive(Debug, Default)]
        pub struct $metrics {
            submitted: $atomic,
            started: $atomic,
            completed: $atomic,
            failed: $atomic,
            cancellation_requested: $atomic,
            cancellation_acknowledged: $atomic,
            rejected: $atomic,
            polls: $atomic,
            wakes: $atomic,
            self_wakes: $atomic,
            stale_wakes: $atomic,
        }

        $(#[$snapshot_doc])*
        ///
        /// Each field was read atomically; the fields together are not one
        /// atomic snapshot when updates run concurrently.
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
        #[non_exhaustive]
        pub struct $snapshot {
            /// Tasks accepted for execution.
            pub submitted: $int,
            /// Tasks that began executing.
            pub started: $int,
            /// Tasks that returned successfully.
            pub completed: $int,
            /// Tasks that returned an error.
            pub failed: $int,
            /// Cancellation requests made.
            pub cancellation_requested: $int,
            /// Cancellations that running or pending work acknowledged.
            pub cancellation_acknowledged: $int,
            /// Submissions refused at admission.
            pub rejected: $int,
            /// Polls begun.
            pub polls: $int,
            /// Wakes that made a task ready, its own included.
            pub wakes: $int,
            /// Of those, wakes a task made during its own poll (as its
            /// executor tells them apart; see the core `ReadyQueue`'s
            /// "Telling a task's own wakes apart").
            pub self_wakes: $int,
            /// Wakes that arrived after their task was over.
            pub stale_wakes: $int,
        }

        impl $snapshot {
            /// Every count at zero, in `const` code too; set counts with the
            /// `with_*` methods, for example to start a `static`'s
            /// counters (`from_snapshot`) from chosen values.
            pub const ZERO: Self = Self {
                submitted: 0,
                started: 0,
                completed: 0,
                failed: 0,
                cancellation_requested: 0,
                cancellation_acknowledged: 0,
                rejected: 0,
                polls: 0,
                wakes: 0,
                self_wakes: 0,
                stale_wakes: 0,
            };

            /// This snapshot with `submitted` set to `value` (a `const` way to build
            /// one: its fields cannot be listed outside the crate).
            #[must_use]
            pub const fn with_submitted(mut self, value: $int) -> Self {
                self.submitted = value;
                self
            }

            /// This snapshot with `started` set to `value` (a `const` way to build
            /// one: its fields cannot be listed outside the crate).
            #[must_use]
            pub const fn with_started(mut self, value: $int) -> Self {
                self.started = value;
                self
            }

            /// This snapshot with `completed` set to `value` (a `const` way to build
            /// one: its fields cannot be listed outside the crate).
            #[must_use]
            pub const fn with_completed(mut self, value: $int) -> Self {
                self.completed = value;
                self
            }

            /// This snapshot with `failed` set to `value` (a `const` way to build
            /// one: its fields cannot be listed outside the crate).
            #[must_use]
            pub const fn with_failed(mut self, value: $int) -> Self {
                self.failed = value;
                self
            }

            /// This snapshot with `cancellation_requested` set to `value` (a `const` way to build
            /// one: its fields cannot be listed outside the crate).
            #[must_use]
            pub const fn with_cancellation_requested(mut self, value: $int) -> Self {
                self.cancellation_requested = value;
                self
            }

            /// This snapshot with `cancellation_acknowledged` set to `value` (a `const` way to build
            /// one: its fields cannot be listed outside the crate).
            #[must_use]
            pub const fn with_cancellation_acknowledged(mut self, value: $int) -> Self {
                self.cancellation_acknowledged = value;
                self
            }

            /// This snapshot with `rejected` set to `value` (a `const` way to build
            /// one: its fields cannot be listed outside the crate).
            #[must_use]
            pub const fn with_rejected(mut self, value: $int) -> Self {
                self.rejected = value;
                self
            }

            /// This snapshot with `polls` set to `value` (a `const` way to build
            /// one: its fields cannot be listed outside the crate).
            #[must_use]
            pub const fn with_polls(mut self, value: $int) -> Self {
                self.polls = value;
                self
            }

            /// This snapshot with `wakes` set to `value` (a `const` way to build
            /// one: its fields cannot be listed outside the crate).
            #[must_use]
            pub const fn with_wakes(mut self, value: $int) -> Self {
                self.wakes = value;
                self
            }

            /// This snapshot with `self_wakes` set to `value` (a `const` way to build
            /// one: its fields cannot be listed outside the crate).
            #[must_use]
            pub const fn with_self_wakes(mut self, value: $int) -> Self {
                self.self_wakes = value;
                self
            }

            /// This snapshot with `stale_wakes` set to `value` (a `const` way to build
            /// one: its fields cannot be listed outside the crate).
            #[must_use]
            pub const fn with_stale_wakes(mut self, value: $int) -> Self {
                self.stale_wakes = value;
                self
            }
        }

        impl Counter for $atomic {
            fn saturating_increment(&self) {
                let _ = self.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1));
            }
        }

        impl $metrics {
            /// All counters at zero.
            #[must_use]
            pub const fn new() -> Self {
                Self::from_snapshot($snapshot::ZERO)
            }

            /// Counters starting from the values in `snapshot`, for example to
            /// carry totals over a restart. In `const` code (a `static`),
            /// build the snapshot from `ZERO` with its `with_*` methods.
            #[must_use]
            pub const fn from_snapshot(snapshot: $snapshot) -> Self {
                Self {
                    submitted: <$atomic>::new(snapshot.submitted),
                    started: <$atomic>::new(snapshot.started),
                    completed: <$atomic>::new(snapshot.completed),
                    failed: <$atomic>::new(snapshot.failed),
                    cancellation_requested: <$atomic>::new(snapshot.cancellation_requested),
                    cancellation_acknowledged: <$atomic>::new(snapshot.cancellation_acknowledged),
                    rejected: <$atomic>::new(snapshot.rejected),
                    polls: <$atomic>::new(snapshot.polls),
                    wakes: <$atomic>::new(snapshot.wakes),
                    self_wakes: <$atomic>::new(snapshot.self_wakes),
                    stale_wakes: <$atomic>::new(snapshot.stale_wakes),
                }
            }

            /// Counts one task accepted for execution.
            pub fn record_submitted(&self) {
                self.submitted.saturating_increment();
            }

            /// Counts one task that began executing.
            pub fn record_started(&self) {
                self.started.saturating_increment();
            }

            /// Counts one task that returned successfully.
            pub fn record_completed(&self) {
                self.completed.saturating_increment();
            }

            /// Counts one task that returned an error.
            pub fn record_failed(&self) {
                self.failed.saturating_increment();
            }

            /// Counts one cancellation request. Not an acknowledgement.
            pub fn record_cancellation_requested(&self) {
                self.cancellation_requested.saturating_increment();
            }

            /// Counts one cancellation that work actually acknowledged.
            pub fn record_cancellation_acknowledged(&self) {
                self.cancellation_acknowledged.saturating_increment();
            }

            /// Counts one event of the shared vocabulary in its counter:
            /// the six lifecycle kinds as their `record_*` methods do,
            /// `Rejected` in `rejected`, `PollStarted` in `polls`, `Woken`
            /// in `wakes`, `SelfWoken` in `wakes` and `self_wakes`,
            /// `StaleWake` in `stale_wakes`. `PollEnded` counts nothing
            /// (it pairs with `PollStarted`), nor do `TimerWait` and `IoWait` (timer
            /// figures are the timer store's), nor `Stolen` (a multi-thread
            /// executor's workers count their steals).
            pub fn record_event(&self, kind: super::TraceEventKind) {
                use super::TraceEventKind as Kind;
                match kind {
                    Kind::Submitted => self.submitted.saturating_increment(),
                    Kind::Started => self.started.saturating_increment(),
                    Kind::Completed => self.completed.saturating_increment(),
                    Kind::Failed => self.failed.saturating_increment(),
                    Kind::CancellationRequested => self.cancellation_requested.saturating_increment(),
                    Kind::CancellationAcknowledged => {
                        self.cancellation_acknowledged.saturating_increment();
                    }
                    Kind::Rejected => self.rejected.saturating_increment(),
                    Kind::PollStarted => self.polls.saturating_increment(),
                    Kind::Woken => self.wakes.saturating_increment(),
                    Kind::SelfWoken => {
                        self.wakes.saturating_increment();
                        self.self_wakes.saturating_increment();
                    }
                    Kind::StaleWake => self.stale_wakes.saturating_increment(),
                    Kind::PollEnded | Kind::TimerWait | Kind::IoWait | Kind::Stolen => {}
                }
            }

            /// Copies the counters, each read atomically with `Relaxed` ordering.
            #[must_use]
            pub fn snapshot(&self) -> $snapshot {
                $snapshot {
                    submitted: self.submitted.load(Ordering::Relaxed),
                    started: self.started.load(Ordering::Relaxed),
                    completed: self.completed.load(Ordering::Relaxed),
                    failed: self.failed.load(Ordering::Relaxed),
                    cancellation_requested: self.cancellation_requested.load(Ordering::Relaxed),
                    cancellation_acknowledged: self.cancellation_acknowledged.load(Ordering::Relaxed),
                    rejected: self.rejected.load(Ordering::Relaxed),
                    polls: self.polls.load(Ordering::Relaxed),
                    wakes: self.wakes.load(Ordering::Relaxed),
                    self_wakes: self.self_wakes.load(Ordering::Relaxed),
                    stale_wakes: self.stale_wakes.load(Ordering::Relaxed),
                }
            }
        }
    };
}

/// One saturating increment: `checked_add` returning `None` at the maximum
/// stops the update instead of wrapping.
trait Counter {
    fn saturating_increment(&self);
}

runtime_metrics! {
    /// Event counters, one per kind of [`TraceEventKind`](super::TraceEventKind).
    ///
    /// Counts tasks submitted, started, completed, failed and rejected,
    /// cancellation requested and acknowledged, polls, wakes, self-wakes and
    /// stale wakes. It counts what it is given: a `record_*` method per
    /// lifecycle event, or any event through [`record_event`](Self::record_event)
    /// or as a [`Sink`](super::Sink), so one event recorded into a tuple of
    /// sinks reaches these counters and a trace at once. A cancellation
    /// request and its acknowledgement are separate counters.
    ///
    /// # Guarantees
    ///
    /// - Every counter is a 64-bit `portable_atomic::AtomicU64`, also on
    ///   32-bit targets, and saturates at `u64::MAX` instead of wrapping.
    /// - `const fn new()`, so it can be a `static` and be recorded from
    ///   interrupt handlers and threads alike.
    ///
    /// # What it does not promise
    ///
    /// Counters use `Relaxed` ordering: they are statistics, not
    /// synchronization, and seeing a count says nothing about the task data
    /// behind it. [`snapshot`](Self::snapshot) reads each counter atomically,
    /// but not all of them together, so a snapshot taken during updates may mix
    /// moments. No labels, timing or export.
    ///
    /// # Cost on 32-bit targets
    ///
    /// No Cortex-M has native 64-bit atomics. On `thumbv7m` every
    /// `AtomicU64` goes through `portable-atomic`'s lock table, a static of
    /// about 2 KiB shared by all 64-bit atomics of the program; on `thumbv6m`
    /// with interrupts masked or in a critical section (the back end the
    /// binary enables for `portable-atomic`). Where counts fit in 32 bits,
    /// [`RuntimeMetrics32`] avoids that cost.
    ///
    /// ```
    /// use dinah::telemetry::RuntimeMetrics;
    ///
    /// static METRICS: RuntimeMetrics = RuntimeMetrics::new();
    ///
    /// METRICS.record_submitted();
    /// METRICS.record_started();
    /// METRICS.record_completed();
    /// let snapshot = METRICS.snapshot();
    /// assert_eq!((snapshot.submitted, snapshot.completed, snapshot.failed), (1, 1, 0));
    /// ```
    RuntimeMetrics,
    /// A plain copy of [`RuntimeMetrics`] counters.
    MetricsSnapshot,
    u64,
    AtomicU64
}

runtime_metrics! {
    /// [`RuntimeMetrics`] with 32-bit counters, for small targets.
    ///
    /// The same counters, contract and methods, but each counter is a
    /// `portable_atomic::AtomicU32` that saturates at `u32::MAX`
    /// (4,294,967,295 events). On `thumbv7m` and larger cores these are
    /// native atomics, so the program needs no 64-bit lock table; on
    /// `thumbv6m` they still go through a critical section.
    ///
    /// ```
    /// use dinah::telemetry::{MetricsSnapshot, RuntimeMetrics32};
    ///
    /// static METRICS: RuntimeMetrics32 = RuntimeMetrics32::new();
    ///
    /// METRICS.record_failed();
    /// let wide: MetricsSnapshot = METRICS.snapshot().into();
    /// assert_eq!(wide.failed, 1);
    /// ```
    RuntimeMetrics32,
    /// A plain copy of [`RuntimeMetrics32`] counters.
    MetricsSnapshot32,
    u32,
    AtomicU32
}

impl From<MetricsSnapshot32> for MetricsSnapshot {
    /// Widens every counter to 64 bits.
    fn from(narrow: MetricsSnapshot32) -> Self {
        Self {
            submitted: narrow.submitted.into(),
            started: narrow.started.into(),
            completed: narrow.completed.into(),
            failed: narrow.failed.into(),
            cancellation_requested: narrow.cancellation_requested.into(),
            cancellation_acknowledged: narrow.cancellation_acknowledged.into(),
            rejected: narrow.rejected.into(),
            polls: narrow.polls.into(),
            wakes: narrow.wakes.into(),
            self_wakes: narrow.self_wakes.into(),
            stale_wakes: narrow.stale_wakes.into(),
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
                ..MetricsSnapshot::default()
            }
        );
    }

    #[test]
    fn every_event_kind_lands_in_its_counter() {
        use super::super::TraceEventKind as Kind;
        let metrics = RuntimeMetrics::new();
        for kind in [
            Kind::Submitted,
            Kind::Started,
            Kind::Completed,
            Kind::Failed,
            Kind::CancellationRequested,
            Kind::CancellationAcknowledged,
            Kind::Rejected,
            Kind::PollStarted,
            Kind::PollEnded,
            Kind::Woken,
            Kind::SelfWoken,
            Kind::StaleWake,
        ] {
            metrics.record_event(kind);
        }
        assert_eq!(
            metrics.snapshot(),
            MetricsSnapshot {
                submitted: 1,
                started: 1,
                completed: 1,
                failed: 1,
                cancellation_requested: 1,
                cancellation_acknowledged: 1,
                rejected: 1,
                polls: 1,
                wakes: 2,
                self_wakes: 1,
                stale_wakes: 1,
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
    fn narrow_counters_saturate_at_u32_max_and_widen() {
        let metrics = RuntimeMetrics32::from_snapshot(MetricsSnapshot32 {
            cancellation_requested: u32::MAX - 1,
            ..MetricsSnapshot32::default()
        });
        for _ in 0..3 {
            metrics.record_cancellation_requested();
        }
        metrics.record_completed();
        let wide = MetricsSnapshot::from(metrics.snapshot());
        assert_eq!(wide.cancellation_requested, u64::from(u32::MAX));
        assert_eq!((wide.completed, wide.submitted), (1, 0));
    }

    #[test]
    fn concurrent_increments_are_all_counted() {
        const THREADS: usize = 4;
        const PER_THREAD: u64 = if cfg!(miri) { 100 } else { 10_000 };
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
