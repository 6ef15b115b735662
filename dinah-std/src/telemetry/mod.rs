//! Telemetry for the executors and pools: what to measure with
//! ([`TelemetryConfig`]), the figures they keep ([`ExecutorFigures`],
//! [`TaskFigures`], [`PoolFigures`]), the stall diagnosis ([`Thresholds`],
//! [`Verdict`]) and the timeline [`Recorder`] with its Chrome trace export.
//!
//! Telemetry is off unless a runtime is built with a `TelemetryConfig`;
//! off, a runtime keeps no figures, reads no clock and emits no events.
#![forbid(unsafe_code)]

mod diagnose;
mod recorder;
#[cfg(feature = "tracing")]
mod tracing_sink;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use dinah_core::{Clock, Log2Histogram, Sink, TaskId, TraceEvent, TraceEventKind};

pub use diagnose::{Cause, Thresholds, Verdict};
pub use recorder::{ChromeTraceError, Recorder, SourceSink};
#[cfg(feature = "tracing")]
pub use tracing_sink::TracingSink;

use crate::StdClock;

/// A distribution of durations in microseconds: bucket 0 holds 0 µs,
/// bucket `i` holds `[2^(i-1), 2^i)` µs, the last everything from about 4 s.
pub type Micros = Log2Histogram<24>;

/// How a runtime measures itself: its clock, where its events go, and what
/// counts as a long poll.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use dinah::{Recorder, TelemetryConfig};
///
/// let timeline = Arc::new(Recorder::new(4096).expect("not zero"));
/// let config = TelemetryConfig::new()
///     .with_sink(timeline.source("relay"))
///     .with_long_poll(Duration::from_micros(100));
/// assert_eq!(config.long_poll(), Duration::from_micros(100));
/// ```
#[derive(Clone)]
pub struct TelemetryConfig {
    clock: Arc<dyn Clock + Send + Sync>,
    sink: Option<Arc<dyn Sink + Send + Sync>>,
    long_poll: Duration,
}

impl TelemetryConfig {
    /// The host clock ([`StdClock`]), no sink, and a long poll of 50 µs.
    #[must_use]
    pub fn new() -> Self {
        Self {
            clock: Arc::new(StdClock::new()),
            sink: None,
            long_poll: Duration::from_micros(50),
        }
    }

    /// Measures with `clock` instead (its ticks are converted with
    /// [`Clock::ticks_per_second`]); a [`ManualClock`] makes diagnosis
    /// deterministic in tests.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Also sends every event to `sink` (a [`Recorder`] source, a
    /// [`TraceBuffer`](crate::TraceBuffer), metrics, `tracing`, or a tuple of
    /// them), stamped in nanoseconds of this configuration's clock.
    #[must_use]
    pub fn with_sink(mut self, sink: impl Sink + Send + Sync + 'static) -> Self {
        self.sink = Some(Arc::new(sink));
        self
    }

    /// As [`with_sink`](Self::with_sink), for a sink the caller keeps a
    /// handle to (a [`TraceBuffer`](crate::TraceBuffer) to read back, say).
    #[must_use]
    pub fn with_shared_sink(mut self, sink: Arc<dyn Sink + Send + Sync>) -> Self {
        self.sink = Some(sink);
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
            .field("long_poll", &self.long_poll)
            .finish_non_exhaustive()
    }
}

/// A clock that moves only when told to: for tests and simulations that
/// must see the same durations on every run. Ticks are nanoseconds.
///
/// Clones share one reading.
///
/// ```
/// use std::time::Duration;
/// use dinah::Clock;
/// use dinah::ManualClock;
///
/// let clock = ManualClock::new();
/// let same = clock.clone();
/// clock.advance(Duration::from_millis(3));
/// assert_eq!(same.now(), 3_000_000);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading zero.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `by` (saturating).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let mut now = self.nanos.load(Ordering::Relaxed);
        while let Err(actual) = self.nanos.compare_exchange_weak(
            now,
            now.saturating_add(by),
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            now = actual;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> u64 {
        self.nanos.load(Ordering::Relaxed)
    }

    fn ticks_per_second(&self) -> u64 {
        1_000_000_000
    }
}

// The panic a telemetry hook (a user's `Clock` or `Sink`) raised on this
// thread, held until the runtime reaches a point where it can resume it
// without leaving anything half done: see `resume_hook_panic`.
#[cfg(not(loom))]
std::thread_local! {
    static HOOK_PANIC: std::cell::Cell<Option<crate::unwind::Payload>> =
        const { std::cell::Cell::new(None) };
}
#[cfg(loom)]
loom::thread_local! {
    static HOOK_PANIC: std::cell::Cell<Option<crate::unwind::Payload>> =
        std::cell::Cell::new(None);
}

/// Runs a telemetry hook; if it panics, holds the panic for this thread
/// (the first one: a later one is dropped) and returns `None`.
fn guarded<R>(hook: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(hook)) {
        Ok(value) => Some(value),
        Err(payload) => {
            let held = HOOK_PANIC.try_with(|slot| match slot.take() {
                Some(first) => {
                    slot.set(Some(first));
                    Some(payload)
                }
                None => {
                    slot.set(Some(payload));
                    None
                }
            });
            match held {
                Ok(None) => {}
                Ok(Some(later)) => crate::unwind::drop_quietly(later),
                Err(_) => {}
            }
            None
        }
    }
}

/// Takes the panic a telemetry hook raised on this thread, if any.
pub(crate) fn take_hook_panic() -> Option<crate::unwind::Payload> {
    HOOK_PANIC.try_with(std::cell::Cell::take).ok().flatten()
}

/// Resumes the panic a telemetry hook raised on this thread, if any: called
/// by the runtime at the end of the step that ran the hook, once its own
/// state is settled, so the panic reaches the caller of that step.
pub(crate) fn resume_hook_panic() {
    if let Some(payload) = take_hook_panic() {
        std::panic::resume_unwind(payload);
    }
}

/// Runs `hooks`, a step of its own inside a longer one (a wake made during
/// a tick, say), and resumes only a panic they raised; a panic an earlier
/// hook of the longer step raised stays held for that step.
pub(crate) fn run_hooks(hooks: impl FnOnce()) {
    let scope = HookScope::enter();
    hooks();
    scope.exit();
}

/// A step of its own inside a longer one, for hooks whose panic must reach
/// the caller of this step only, and only once the step is done: entering
/// sets aside a panic held for the longer step; [`exit`](Self::exit) puts
/// it back and resumes a panic this step's hooks raised.
pub(crate) struct HookScope {
    earlier: Option<crate::unwind::Payload>,
}

impl HookScope {
    pub(crate) fn enter() -> Self {
        Self {
            earlier: take_hook_panic(),
        }
    }

    pub(crate) fn exit(self) {
        let own = take_hook_panic();
        if let Some(earlier) = self.earlier {
            // Back where it was (the slot is empty now: `own` was taken).
            let _ = HOOK_PANIC.try_with(|slot| slot.set(Some(earlier)));
        }
        if let Some(own) = own {
            std::panic::resume_unwind(own);
        }
    }
}

/// A runtime's live telemetry: the configuration, read by every hook.
///
/// The clock and the sink are the user's code. A panic in either is caught
/// where it is called, so the runtime's telemetry and its own state stay
/// consistent (the reading is taken as 0, the event is lost), and held for
/// the thread (see [`resume_hook_panic`]).
pub(crate) struct Probe {
    config: TelemetryConfig,
    long_poll_ns: u64,
}

impl Probe {
    pub(crate) fn new(config: TelemetryConfig) -> Self {
        let long_poll_ns = u64::try_from(config.long_poll.as_nanos()).unwrap_or(u64::MAX);
        Self {
            config,
            long_poll_ns,
        }
    }

    /// Now, in nanoseconds of the configured clock (0 if the clock
    /// panicked; the panic is held for the thread).
    pub(crate) fn now(&self) -> u64 {
        let clock = &*self.config.clock;
        let Some((ticks, per_second)) = guarded(|| (clock.now(), clock.ticks_per_second())) else {
            return 0;
        };
        if per_second == 1_000_000_000 {
            return ticks;
        }
        let per_second = u128::from(per_second.max(1));
        u64::try_from(u128::from(ticks) * 1_000_000_000 / per_second).unwrap_or(u64::MAX)
    }

    /// Sends one event to the configured sink, if any (lost if the sink
    /// panics; the panic is held for the thread).
    pub(crate) fn emit(&self, task: TaskId, kind: TraceEventKind, at: u64) {
        if let Some(sink) = &self.config.sink {
            guarded(|| sink.record(TraceEvent::stamped(task, kind, at)));
        }
    }

    pub(crate) fn is_long(&self, nanos: u64) -> bool {
        nanos >= self.long_poll_ns
    }
}

/// Nanoseconds to whole microseconds.
pub(crate) const fn micros(nanos: u64) -> u64 {
    nanos / 1_000
}

/// A stamp kept in an atomic: 0 is "none", so a time `t` is stored `t + 1`.
pub(crate) struct Stamp(AtomicU64);

impl Stamp {
    pub(crate) const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    pub(crate) fn set(&self, at: u64) {
        self.0.store(at.saturating_add(1), Ordering::Relaxed);
    }

    /// Sets it only if it is unset.
    pub(crate) fn set_if_unset(&self, at: u64) {
        let _ = self.0.compare_exchange(
            0,
            at.saturating_add(1),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    pub(crate) fn clear(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// Takes the stamp, leaving it unset.
    pub(crate) fn take(&self) -> Option<u64> {
        self.0.swap(0, Ordering::Relaxed).checked_sub(1)
    }

    pub(crate) fn get(&self) -> Option<u64> {
        self.0.load(Ordering::Relaxed).checked_sub(1)
    }
}

/// What an executor has measured since it was built. Durations are in
/// microseconds of the configured clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecutorFigures {
    /// Tasks accepted (spawned, or submitted through a spawner).
    pub spawned: u64,
    /// Spawns and submissions refused (full or shut down).
    pub rejected: u64,
    /// Polls begun.
    pub polls: u64,
    /// Polls that lasted at least the long-poll threshold.
    pub long_polls: u64,
    /// Wakes that made a task ready, self-wakes included.
    pub wakes: u64,
    /// Of those, wakes a task made during its own poll.
    pub self_wakes: u64,
    /// Wakes that arrived after their task was over.
    pub stale_wakes: u64,
    /// From a wake to the poll it caused (ready-queue age).
    pub wake_to_poll: Micros,
    /// From a spawn to the task's first poll.
    pub first_poll_delay: Micros,
    /// How long each poll took.
    pub poll_time: Micros,
}

/// One live task's figures, from [`ExecutorMonitor::tasks`](crate::ExecutorMonitor::tasks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskFigures {
    /// The task.
    pub task: TaskId,
    /// Times it was polled.
    pub polls: u64,
    /// Wakes that made it ready.
    pub wakes: u64,
    /// Of those, wakes it made during its own poll.
    pub self_wakes: u64,
    /// Its polls' total time, in microseconds.
    pub busy_micros: u64,
    /// Its longest poll, in microseconds.
    pub longest_poll_micros: u64,
    /// What it is doing now.
    pub phase: TaskPhase,
}

/// Where a live task is, as seen by a monitor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskPhase {
    /// Woken (or new) and waiting for its poll, for this many microseconds.
    Ready {
        /// Microseconds since it became ready.
        for_micros: u64,
    },
    /// Being polled, for this many microseconds.
    Polling {
        /// Microseconds since its poll began.
        for_micros: u64,
    },
    /// Pending after a poll, with no wake since, for this many microseconds.
    Waiting {
        /// Microseconds since its last poll returned.
        for_micros: u64,
    },
}

/// What a pool has measured since it was built. Durations are in
/// microseconds of the configured clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolFigures {
    /// The largest number of tasks queued at once.
    pub max_queued: usize,
    /// From a submission to its start (queue wait).
    pub wait: Micros,
    /// How long each task ran.
    pub run_time: Micros,
    /// Tasks that ran at least the long-poll threshold.
    pub long_runs: u64,
    /// Submissions refused because the queue was full.
    pub rejected_full: u64,
}

/// A runtime's telemetry hook: `Some` when it was built with telemetry.
///
/// Without the `telemetry` feature it holds nothing and [`get`](Self::get)
/// is a constant `None`, so every telemetry branch compiles away and the
/// runtime runs exactly the code it would without telemetry (the stand-in
/// module habit of tokio's metrics).
#[cfg(feature = "telemetry")]
#[derive(Clone)]
pub(crate) struct Hook<T>(Option<T>);

#[cfg(feature = "telemetry")]
impl<T> Hook<T> {
    pub(crate) fn new(value: Option<T>) -> Self {
        Self(value)
    }

    #[inline(always)]
    pub(crate) fn get(&self) -> Option<&T> {
        self.0.as_ref()
    }
}

/// Without the `telemetry` feature: never anything.
#[cfg(not(feature = "telemetry"))]
#[derive(Clone)]
pub(crate) struct Hook<T>(std::marker::PhantomData<T>);

#[cfg(not(feature = "telemetry"))]
impl<T> Hook<T> {
    pub(crate) fn new(value: Option<T>) -> Self {
        drop(value);
        Self(std::marker::PhantomData)
    }

    #[inline(always)]
    pub(crate) fn get(&self) -> Option<&T> {
        None
    }
}
