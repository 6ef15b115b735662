//! [`TelemetryConfig`]: what a runtime measures with, and where it reports.
#![forbid(unsafe_code)]

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use dinah_core::telemetry::{Clock, PollObserver, Sink};

use super::StdClock;

/// How a runtime measures itself: its clock, where its events go, and what
/// counts as a long poll.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use dinah::telemetry::{Recorder, TelemetryConfig};
///
/// let timeline = Arc::new(Recorder::new(4096).expect("not zero"));
/// let config = TelemetryConfig::new()
///     .with_sink(timeline.source("relay"))
///     .with_long_poll(Duration::from_micros(100));
/// assert_eq!(config.long_poll(), Duration::from_micros(100));
/// ```
#[derive(Clone)]
pub struct TelemetryConfig {
    /// The clock [`with_clock`](Self::with_clock) chose; `None` for
    /// `std_clock`.
    pub(crate) clock: Option<Arc<dyn Clock + Send + Sync>>,
    /// The default clock, read directly (it is not the user's code: it
    /// cannot panic, and needs no dynamic call or conversion).
    pub(crate) std_clock: StdClock,
    pub(crate) sink: Option<Arc<dyn Sink + Send + Sync>>,
    pub(crate) observer: Option<Arc<dyn PollObserver + Send + Sync>>,
    pub(crate) long_poll: Duration,
}

impl TelemetryConfig {
    /// The host clock ([`StdClock`]), no sink, no observer, and a long poll
    /// of 50 µs.
    #[must_use]
    pub fn new() -> Self {
        Self {
            clock: None,
            std_clock: StdClock::new(),
            sink: None,
            observer: None,
            long_poll: Duration::from_micros(50),
        }
    }

    /// Measures with `clock` instead (its ticks are converted with
    /// [`Clock::ticks_per_second`]); a [`ManualClock`](super::ManualClock) makes diagnosis
    /// deterministic in tests.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock + Send + Sync + 'static) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// Also sends every event to `sink` (a [`Recorder`](super::Recorder) source, a
    /// [`TraceBuffer`](super::TraceBuffer), metrics, `tracing`, or a tuple of
    /// them), stamped in nanoseconds of this configuration's clock.
    #[must_use]
    pub fn with_sink(mut self, sink: impl Sink + Send + Sync + 'static) -> Self {
        self.sink = Some(Arc::new(sink));
        self
    }

    /// As [`with_sink`](Self::with_sink), for a sink the caller keeps a
    /// handle to (a [`TraceBuffer`](super::TraceBuffer) to read back, say).
    #[must_use]
    pub fn with_shared_sink(mut self, sink: Arc<dyn Sink + Send + Sync>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Also tells `observer` about every poll of a task, as the core
    /// executor tells the observer it is driven with: the same
    /// [`PollObserver`] calls, in the same order, on the executor's thread,
    /// with ticks in nanoseconds of this configuration's clock. So a
    /// [`PollWatch`](dinah_core::telemetry::PollWatch) (shared in the `Arc`)
    /// sees a poll that holds a hosted executor's thread as it sees one on
    /// firmware. Pools do not poll and do not call it.
    ///
    /// An observer is the user's code, as the clock and the sink are: a
    /// panic in it is handled as theirs.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn PollObserver + Send + Sync>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Polls (and pool jobs) lasting at least `threshold` count as long.
    #[must_use]
    pub fn with_long_poll(mut self, threshold: Duration) -> Self {
        self.long_poll = threshold;
        self
    }

    /// The long-poll threshold.
    #[must_use]
    pub fn long_poll(&self) -> Duration {
        self.long_poll
    }
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for TelemetryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelemetryConfig")
            .field("has_sink", &self.sink.is_some())
            .field("has_observer", &self.observer.is_some())
            .field("long_poll", &self.long_poll)
            .finish_non_exhaustive()
    }
}
