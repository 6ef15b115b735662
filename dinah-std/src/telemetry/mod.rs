//! Telemetry for the hosted executor and the pools: what to measure with
//! ([`TelemetryConfig`]), the host's clocks ([`StdClock`], [`ManualClock`]),
//! the pools' figures ([`PoolFigures`]), the stall diagnosis
//! ([`Thresholds`], [`Verdict`]), and where events can go ([`Recorder`]
//! with its Chrome trace export, [`TraceBuffer`], and with the `tracing`
//! feature `TracingSink`).
//!
//! The vocabulary is the core's (`dinah_core::telemetry`): one [`Clock`]
//! trait, one [`Sink`], one per-executor record
//! ([`ExecutorFigures`](dinah_core::telemetry::ExecutorFigures)), one
//! per-task record ([`TaskFigures`](dinah_core::telemetry::TaskFigures)),
//! one observer protocol ([`PollObserver`](dinah_core::telemetry::PollObserver)),
//! one switch for how much an executor measures
//! ([`Measure`](dinah_core::telemetry::Measure)). The `dinah` facade's
//! `telemetry` module holds both crates' parts.
//!
//! Telemetry is off unless a runtime is built with a `TelemetryConfig`;
//! off, a runtime keeps no figures, reads no clock and emits no events, and
//! without the `telemetry` feature its code is not even compiled in.
//!
//! [`Clock`]: dinah_core::telemetry::Clock
//! [`Sink`]: dinah_core::telemetry::Sink
#![forbid(unsafe_code)]

mod clock;
mod config;
pub(crate) mod cpu;
mod diagnose;
mod figures;
pub(crate) mod hook;
mod recorder;
mod trace_buffer;
#[cfg(feature = "tracing")]
mod tracing_sink;

pub use clock::{ManualClock, StdClock};
pub use config::TelemetryConfig;
pub use diagnose::{Cause, CpuShare, Thresholds, Verdict, WorkersLeft};
pub use figures::PoolFigures;
pub use recorder::{ChromeTraceError, Recorder, SourceSink};
pub use trace_buffer::TraceBuffer;
#[cfg(feature = "tracing")]
pub use tracing_sink::TracingSink;

pub(crate) use hook::{HookScope, resume_hook_panic, run_hooks, take_hook_panic};

/// How much a [`LocalExecutor`](crate::executor::LocalExecutor) built with
/// telemetry measures: [`Timed`](dinah_core::telemetry::Timed), in the
/// core's one vocabulary, with the host's clock.
///
/// A hosted executor times with its [`TelemetryConfig`]'s clock
/// ([`StdClock`] unless [`with_clock`](TelemetryConfig::with_clock) chose
/// another), read through the configuration at run time; the type names
/// the setting, not the clock instance.
pub type Measured = dinah_core::telemetry::Timed<StdClock>;
