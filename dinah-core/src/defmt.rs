//! `defmt::Format` for every public type, and the [`DefmtSink`], behind the
//! `defmt` feature.
//!
//! Kept together here so the formatting matches `Debug`/`Display` in one
//! place. Types holding closures (queues, push errors) show their fill level
//! or variant only, so they need no bound on what they hold.
#![forbid(unsafe_code)]

use defmt::{Format, Formatter, write};

use crate::config::{CoreConfig, CoreError, LifecycleState};
use crate::executor::{
    AsyncExecutor, CancelError, InterruptExecutor, InterruptFigures, InterruptTasks, QueueClaimed,
    ReadyQueue, ServeError, SpawnError, TickReport,
};
use crate::id::{CoreId, CoreIdError, TaskId, TaskIdError, WorkerId, WorkerIdError};
use crate::io::{Event, EventWait};
use crate::queue::{QueuePushError, TaskQueue};
use crate::sync::{
    CancellationToken, Channel, ChannelFigures, Refusal, Semaphore, SemaphoreFigures, SendError,
    TryRecvError,
};
use crate::task::{
    InvalidTaskTransition, TaskFailure, TaskFailureKind, TaskOutput, TaskState, YieldNow,
};
use crate::telemetry::{
    Blocked, Clock, Counted, ExecutorFigures, Log2Histogram, Measure, MetricsSnapshot,
    MetricsSnapshot32, NoClock, PollWatch, RuntimeMetrics, RuntimeMetrics32, Sink, TaskFigures,
    TaskPhase, Timed, TraceEvent, TraceEventKind, TraceRecordError, TraceRing, Unmeasured,
};

macro_rules! format_id {
    ($($id:ident, $error:ident, $domain:literal;)*) => {$(
        impl Format for $id {
            fn format(&self, f: Formatter<'_>) {
                write!(f, "{}({=u64})", stringify!($id), self.get());
            }
        }

        impl Format for $error {
            fn format(&self, f: Formatter<'_>) {
                write!(f, "{} ID must be non-zero", $domain);
            }
        }
    )*};
}

format_id! {
    CoreId, CoreIdError, "core";
    WorkerId, WorkerIdError, "worker";
}

impl Format for TaskId {
    /// `TaskId(42)`, or `TaskId(slot 3, generation 1)` for a core
    /// executor's id, as `Debug` writes it.
    fn format(&self, f: Formatter<'_>) {
        match (self.slot(), self.generation()) {
            (Some(slot), Some(generation)) => {
                write!(
                    f,
                    "TaskId(slot {=u16}, generation {=u64})",
                    slot, generation
                );
            }
            _ => write!(f, "TaskId({=u64})", self.get()),
        }
    }
}

impl Format for TaskIdError {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "task ID must be non-zero and below 2^63");
    }
}

impl Format for CoreError {
    fn format(&self, f: Formatter<'_>) {
        match self {
            Self::ZeroMaxWorkers => write!(f, "max_workers must be at least 1"),
            Self::InvalidLifecycleTransition { from, to } => {
                write!(f, "lifecycle cannot go from {} to {}", from, to);
            }
        }
    }
}

impl Format for CoreConfig {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "CoreConfig {{ max_workers: {=usize} }}",
            self.max_workers().get()
        );
    }
}

impl Format for LifecycleState {
    fn format(&self, f: Formatter<'_>) {
        let name = match self {
            Self::Created => "Created",
            Self::Running => "Running",
            Self::Stopping => "Stopping",
            Self::Stopped => "Stopped",
        };
        write!(f, "{=str}", name);
    }
}

impl Format for TaskState {
    fn format(&self, f: Formatter<'_>) {
        let name = match self {
            Self::Pending => "Pending",
            Self::Running => "Running",
            Self::Completed => "Completed",
            Self::Failed => "Failed",
            Self::Cancelled => "Cancelled",
        };
        write!(f, "{=str}", name);
    }
}

impl Format for InvalidTaskTransition {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "task state cannot go from {} to {}",
            self.from(),
            self.to()
        );
    }
}

impl Format for TaskFailureKind {
    fn format(&self, f: Formatter<'_>) {
        match self {
            Self::ReturnedError => write!(f, "task returned an error"),
            Self::Panicked => write!(f, "task panicked"),
            Self::Cancelled => write!(f, "task was cancelled"),
        }
    }
}

impl<E: Format> Format for TaskFailure<E> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "{}: {}", self.kind(), self.error());
    }
}

impl<T> Format for QueuePushError<T> {
    fn format(&self, f: Formatter<'_>) {
        match self {
            Self::Full(_) => write!(f, "Full(..)"),
        }
    }
}

impl<T, const N: usize> Format for TaskQueue<T, N> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "TaskQueue {{ len: {=usize}, capacity: {=usize} }}",
            self.len(),
            N
        );
    }
}

impl Format for CancellationToken {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "CancellationToken {{ requested: {=bool} }}",
            self.is_cancellation_requested()
        );
    }
}

macro_rules! format_metrics {
    ($($metrics:ident, $snapshot:ident;)*) => {$(
        impl Format for $snapshot {
            fn format(&self, f: Formatter<'_>) {
                write!(
                    f,
                    "submitted={} started={} completed={} failed={} cancel_requested={} cancel_acknowledged={} rejected={} polls={} wakes={} self_wakes={} stale_wakes={}",
                    self.submitted,
                    self.started,
                    self.completed,
                    self.failed,
                    self.cancellation_requested,
                    self.cancellation_acknowledged,
                    self.rejected,
                    self.polls,
                    self.wakes,
                    self.self_wakes,
                    self.stale_wakes
                );
            }
        }

        impl Format for $metrics {
            fn format(&self, f: Formatter<'_>) {
                write!(f, "{=str} {{ {} }}", stringify!($metrics), self.snapshot());
            }
        }
    )*};
}

format_metrics! {
    RuntimeMetrics, MetricsSnapshot;
    RuntimeMetrics32, MetricsSnapshot32;
}

impl Format for TraceEventKind {
    fn format(&self, f: Formatter<'_>) {
        let name = match self {
            Self::Submitted => "Submitted",
            Self::Started => "Started",
            Self::Completed => "Completed",
            Self::Failed => "Failed",
            Self::CancellationRequested => "CancellationRequested",
            Self::CancellationAcknowledged => "CancellationAcknowledged",
            Self::Rejected => "Rejected",
            Self::Woken => "Woken",
            Self::SelfWoken => "SelfWoken",
            Self::StaleWake => "StaleWake",
            Self::PollStarted => "PollStarted",
            Self::PollEnded => "PollEnded",
            Self::TimerWait => "TimerWait",
            Self::IoWait => "IoWait",
            Self::Stolen => "Stolen",
        };
        write!(f, "{=str}", name);
    }
}

impl Format for TraceEvent {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "{} {} at={=u64}", self.task, self.kind, self.at);
    }
}

impl Format for TraceRecordError {
    fn format(&self, f: Formatter<'_>) {
        match self {
            Self::Full(event) => write!(f, "trace ring is full; refused {}", event),
        }
    }
}

impl<const N: usize> Format for TraceRing<N> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "TraceRing {{ len: {=usize}, capacity: {=usize}, rejected: {=u64} }}",
            self.len(),
            N,
            self.rejected()
        );
    }
}

impl<T, E> Format for SpawnError<T, E> {
    /// The variant only: neither the task nor the thread error need be
    /// `Format`.
    fn format(&self, f: Formatter<'_>) {
        match self {
            Self::Full(_) => write!(f, "Full(..)"),
            Self::Shutdown(_) => write!(f, "Shutdown(..)"),
            Self::NoFuture(_) => write!(f, "NoFuture(..)"),
            Self::NoThread(..) => write!(f, "NoThread(..)"),
        }
    }
}

impl Format for QueueClaimed {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "this ReadyQueue already serves an executor");
    }
}

impl Format for CancelError {
    fn format(&self, f: Formatter<'_>) {
        match self {
            Self::UnknownTask(id) => write!(f, "UnknownTask({})", id),
            Self::AlreadyFinished(id) => write!(f, "AlreadyFinished({})", id),
        }
    }
}

impl Format for TickReport {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "TickReport {{ polled: {=usize}, completed: {=usize}, failed: {=usize}, cancelled: {=usize}, woken_outside: {=usize}, woken_in_poll: {=usize}, self_woken: {=usize}, stale_wakes: {=u32}, work_remaining: {=bool} }}",
            self.polled,
            self.completed,
            self.failed,
            self.cancelled,
            self.woken_outside,
            self.woken_in_poll,
            self.self_woken,
            self.stale_wakes,
            self.work_remaining,
        );
    }
}

impl<const N: usize, C: Measure> Format for ReadyQueue<N, C> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "ReadyQueue {{ slots: {=usize}, stale_wakes: {=u32} }}",
            N,
            self.stale_wakes()
        );
    }
}

impl<const N: usize, O: TaskOutput, C: Measure> Format for AsyncExecutor<'_, N, O, C> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "AsyncExecutor {{ slots: {=usize}, live_tasks: {=usize} }}",
            N,
            self.live_tasks()
        );
    }
}

impl Format for InterruptFigures {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "executor {=str} at priority {=u8}: {=u32} runs, {=u32} polls, serving: {=bool}",
            self.name, self.priority, self.runs, self.polls, self.serving
        );
    }
}

impl Format for InterruptExecutor {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "{}", self.figures());
    }
}

impl<const N: usize, O: TaskOutput, C: Measure> Format for InterruptTasks<'_, N, O, C> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "InterruptTasks {{ live_tasks: {=usize} }}",
            self.live_tasks()
        );
    }
}

impl Format for ServeError {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "ServeError::Busy");
    }
}

impl Format for YieldNow {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "YieldNow");
    }
}

impl Format for Unmeasured {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Unmeasured");
    }
}

impl Format for Counted {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Counted");
    }
}

impl<K: Clock> Format for Timed<K> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Timed");
    }
}

impl Format for NoClock {
    fn format(&self, f: Formatter<'_>) {
        defmt::write!(f, "NoClock")
    }
}

impl<const B: usize> Format for Log2Histogram<B> {
    fn format(&self, f: Formatter<'_>) {
        defmt::write!(
            f,
            "Log2Histogram {{ count: {=u64}, max: {=u64}, buckets: {=[?]} }}",
            self.count(),
            self.max(),
            &self.buckets()[..]
        )
    }
}

/// A [`Sink`] that logs every event over defmt at `info`
/// level, as `TaskId(n) Kind at=ticks`.
///
/// Only with the `defmt` feature. It logs; it keeps nothing and counts
/// nothing.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct DefmtSink;

impl Sink for DefmtSink {
    fn record(&self, event: TraceEvent) {
        defmt::info!("{}", event);
    }
}

impl Format for Blocked {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "WorkerBlocked: {} running for {=u64} ticks",
            self.task, self.running_for
        );
    }
}

impl<K: Clock> Format for PollWatch<K> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "PollWatch");
    }
}

impl Format for TaskPhase {
    fn format(&self, f: Formatter<'_>) {
        match self {
            Self::Ready { for_ticks } => write!(f, "ready for {=u64} ticks", for_ticks),
            Self::Polling { for_ticks } => write!(f, "polling for {=u64} ticks", for_ticks),
            Self::Waiting { for_ticks } => write!(f, "waiting for {=u64} ticks", for_ticks),
        }
    }
}

impl Format for TaskFigures {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "{} {}: {=u64} polls, {=u64} wakes ({=u64} self), {=u64} stale, busy {=u64}, longest poll {=u64}, first poll after {}, longest wake-to-poll {=u64} ({=u64} ticks/s)",
            self.task,
            self.name,
            self.polls,
            self.wakes,
            self.self_wakes,
            self.stale_wakes,
            self.busy,
            self.longest_poll,
            self.first_poll_delay,
            self.longest_wake_to_poll,
            self.ticks_per_second
        );
    }
}

impl<const B: usize> Format for ExecutorFigures<B> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "{=u64} spawned, {=u64} rejected, {=u64} polls ({=u64} long), {=u64} wakes ({=u64} self), {=u64} stale, wake-to-poll {}, first poll {}, poll time {} ({=u64} ticks/s)",
            self.spawned,
            self.rejected,
            self.polls,
            self.long_polls,
            self.wakes,
            self.self_wakes,
            self.stale_wakes,
            self.wake_to_poll,
            self.first_poll_delay,
            self.poll_time,
            self.ticks_per_second
        );
    }
}

impl Format for Refusal {
    fn format(&self, f: Formatter<'_>) {
        match self {
            Self::WouldWait => write!(f, "no room now, and it would have to wait"),
            Self::Closed => write!(f, "closed"),
            Self::LineFull => write!(f, "the line of waiters is full"),
        }
    }
}

impl<T> Format for SendError<T> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "value not sent: {}", self.reason());
    }
}

impl Format for TryRecvError {
    fn format(&self, f: Formatter<'_>) {
        match self {
            Self::Empty => write!(f, "nothing to receive now"),
            Self::Closed => write!(f, "the channel has ended"),
        }
    }
}

impl Format for ChannelFigures {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "channel {}: {=usize}/{=usize} held (high water {=usize}), {=u32} waiting (peak {=u32}), {=u64} sent, {=u64} received, {=u64} refused, closed {=bool}",
            self.name,
            self.len,
            self.capacity,
            self.high_water,
            self.waiting,
            self.peak_waiting,
            self.sent,
            self.received,
            self.refused,
            self.closed
        );
    }
}

impl<T, const N: usize, const W: usize> Format for Channel<T, N, W> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "{}", self.figures());
    }
}

impl Format for SemaphoreFigures {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "semaphore {}: {=u32} available, {=u32} waiting (peak {=u32}), {=u64} acquired, {=u64} refused, closed {=bool}",
            self.name,
            self.available,
            self.waiting,
            self.peak_waiting,
            self.acquired,
            self.refused,
            self.closed
        );
    }
}

impl<const W: usize> Format for Semaphore<W> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "{}", self.figures());
    }
}

impl<const W: usize> Format for Event<W> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "event: {=u32} raised, {=u32} waiting",
            self.raised(),
            self.waiting()
        );
    }
}

impl<const W: usize> Format for EventWait<'_, W> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "EventWait");
    }
}
