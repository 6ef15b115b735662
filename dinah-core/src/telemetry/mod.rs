//! Telemetry: what runtimes measure about themselves, in one vocabulary for
//! firmware and hosts.
//!
//! - **Events**: every consumer of task events implements [`Sink`] and takes
//!   [`TraceEvent`]s; [`RuntimeMetrics`] counts them, [`TraceRing`] keeps
//!   them, `DefmtSink` (feature `defmt`) logs them, and `dinah-std` adds a
//!   trace buffer, a timeline recorder and `tracing`.
//! - **Time**: one [`Clock`] trait; firmware writes its own (SysTick, a
//!   timer), hosts use `dinah-std`'s `StdClock` or `ManualClock`, and
//!   [`NoClock`] reads zero.
//! - **How much to measure**: one switch, [`Measure`], in an executor's type:
//!   [`Unmeasured`] (free), [`Counted`] or [`Timed`].
//! - **Watching polls**: one protocol, [`PollObserver`], that both
//!   executors call around every poll. [`PollWatch`] (a stall watchdog an
//!   interrupt reads, over a [`PollStamp`]), [`PollTimes`], [`TaskTimes`]
//!   and [`PollEvents`] implement it.
//! - **Figures**: one per-executor record, [`ExecutorFigures`], and one
//!   per-task record, [`TaskFigures`], with [`Log2Histogram`]s for
//!   distributions.
//!
//! | file | holds |
//! | --- | --- |
//! | `clock.rs` | [`Clock`], [`NoClock`] |
//! | `event.rs` | [`TraceEvent`], [`TraceEventKind`] |
//! | `sink.rs` | [`Sink`] |
//! | `trace_ring.rs` | [`TraceRing`], [`TraceRecordError`] |
//! | `metrics.rs` | [`RuntimeMetrics`], [`RuntimeMetrics32`] and their snapshots |
//! | `histogram.rs` | [`Log2Histogram`] |
//! | `measure.rs` | [`Measure`], [`Unmeasured`], [`Counted`], [`Timed`] |
//! | `observer.rs` | [`PollObserver`], [`PollEvents`] |
//! | `poll_stamp.rs` | [`PollStamp`] |
//! | `watch.rs` | [`PollWatch`], [`Blocked`] |
//! | `figures.rs` | [`ExecutorFigures`], [`TaskFigures`], [`TaskPhase`] |
//! | `poll_times.rs` | [`PollTimes`] |
//! | `task_times.rs` | [`TaskTimes`] |
//!
//! One event, recorded once, reaches every sink in a tuple:
//!
//! ```
//! use dinah::TaskId;
//! use dinah::telemetry::{RuntimeMetrics, Sink, TraceEvent, TraceEventKind, TraceRing};
//!
//! static METRICS: RuntimeMetrics = RuntimeMetrics::new();
//! static TRACE: TraceRing<8> = TraceRing::new();
//!
//! let sinks = (&METRICS, &TRACE);
//! let task = TaskId::new(1).unwrap();
//! sinks.record(TraceEvent::stamped(task, TraceEventKind::Submitted, 10));
//! sinks.record(TraceEvent::stamped(task, TraceEventKind::Rejected, 12));
//!
//! assert_eq!((METRICS.snapshot().submitted, METRICS.snapshot().rejected), (1, 1));
//! assert_eq!(TRACE.drain()[1].at, 12);
//! ```
//!
//! ```
//! use dinah::telemetry::Log2Histogram;
//!
//! let mut waits: Log2Histogram<16> = Log2Histogram::new();
//! for micros in [0, 1, 3, 3, 700] {
//!     waits.record(micros);
//! }
//! assert_eq!(waits.count(), 5);
//! assert_eq!(waits.bucket(2), 2); // 3 lies in [2, 4)
//! assert_eq!(waits.max(), 700);
//! // Half the samples are at most 3, so the median's bucket ends at 3.
//! assert_eq!(waits.quantile_upper_bound(1, 2), 3);
//! ```
#![forbid(unsafe_code)]

mod event;
mod figures;
mod measure;
mod metrics;
mod observer;
mod poll_stamp;
mod poll_times;
mod sink;
mod task_times;
mod trace_ring;
mod watch;

pub use crate::raw::timer::Log2Histogram;
pub use crate::raw::timer::{Clock, NoClock};
pub use event::{TraceEvent, TraceEventKind};
pub use figures::{ExecutorFigures, TaskFigures, TaskPhase};
pub use measure::{Counted, Measure, Timed, Unmeasured};
#[doc(hidden)]
pub use measure::{Counts, StaleCount, WakeStamp};
pub use metrics::{MetricsSnapshot, MetricsSnapshot32, RuntimeMetrics, RuntimeMetrics32};
pub use observer::{PollEvents, PollObserver};
pub use poll_stamp::PollStamp;
pub use poll_times::PollTimes;
pub use sink::Sink;
pub use task_times::TaskTimes;
pub use trace_ring::{TraceRecordError, TraceRing};
pub use watch::{Blocked, PollWatch};

#[cfg(feature = "defmt")]
pub use crate::defmt::DefmtSink;
