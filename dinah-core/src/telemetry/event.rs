//! [`TraceEvent`] and [`TraceEventKind`]: the one event vocabulary every
//! telemetry sink consumes.
#![forbid(unsafe_code)]

use crate::id::TaskId;

/// What happened to a task: the one vocabulary every telemetry sink
/// consumes (see [`Sink`](super::Sink)).
///
/// A task's events come in this order: `Submitted` (or `Rejected`, and
/// nothing more), then `Started` once, then for an async task one or more
/// `PollStarted`/`PollEnded` pairs with `Woken` or `SelfWoken` between
/// them (and `TimerWait` or `IoWait` right after a `PollEnded` that left the task
/// waiting on a timer), and last `Completed`, `Failed` or
/// `CancellationAcknowledged`.
/// A pool job has no polls: its run is the span from `Started` to its end.
/// `StaleWake` may come at any time after the end.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum TraceEventKind {
    /// The task was accepted for execution.
    Submitted,
    /// The task began executing.
    Started,
    /// The task returned successfully.
    Completed,
    /// The task returned an error (or panicked).
    Failed,
    /// Cancellation of the task was requested (not yet acknowledged).
    CancellationRequested,
    /// The task acknowledged cancellation, or was dropped unfinished.
    CancellationAcknowledged,
    /// A submission was refused at admission (a full queue, a shutdown);
    /// the task never ran and was handed back to its submitter.
    Rejected,
    /// A wake made the task ready: it will be polled. Wakes that coalesce
    /// into one already pending are not events.
    Woken,
    /// Like `Woken`, but the task woke itself during its own poll.
    SelfWoken,
    /// A wake arrived after the task was over and was ignored.
    StaleWake,
    /// A poll of the task began.
    PollStarted,
    /// That poll returned (whether or not the task finished).
    PollEnded,
    /// The poll that just ended left the task waiting on a timer it armed:
    /// its wait until the next `Woken` is a wait for time, not a lost wake.
    TimerWait,
    /// The poll that just ended left the task waiting on a socket's
    /// readiness (hosted reactor): its wait until the next `Woken` is a
    /// wait for I/O.
    IoWait,
    /// A multi-thread executor's worker took the task from another
    /// worker's queue (with others: a steal takes up to half a queue) and
    /// polls it next; recorded on the thief's thread.
    Stolen,
}

/// One recorded event: which task, what happened to it, and when.
///
/// `at` is in ticks of the recorder's [`Clock`](super::Clock) (nanoseconds
/// with the hosted layer's `StdClock`); it is 0 when nothing stamped the event, and
/// only differences between stamps of one clock mean anything.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TraceEvent {
    /// The task the event is about.
    pub task: TaskId,
    /// What happened.
    pub kind: TraceEventKind,
    /// When, in clock ticks; 0 when unstamped.
    pub at: u64,
}

impl TraceEvent {
    /// An unstamped event of `kind` for `task` (`at` is 0).
    #[must_use]
    pub const fn new(task: TaskId, kind: TraceEventKind) -> Self {
        Self { task, kind, at: 0 }
    }

    /// An event of `kind` for `task` at tick `at`.
    #[must_use]
    pub const fn stamped(task: TaskId, kind: TraceEventKind, at: u64) -> Self {
        Self { task, kind, at }
    }
}
