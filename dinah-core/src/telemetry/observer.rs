//! [`PollObserver`]: the one protocol through which both executors tell
//! what watches them about each poll, and [`PollEvents`], which turns polls
//! into events.
#![forbid(unsafe_code)]

use super::{Clock, Sink, TraceEvent, TraceEventKind};
use crate::id::TaskId;

/// Sees each poll an executor makes: what the core
/// [`AsyncExecutor`](crate::AsyncExecutor) calls around every poll when
/// driven with [`tick_observed`](crate::AsyncExecutor::tick_observed) (or
/// [`run_observed`](crate::AsyncExecutor::run_observed),
/// [`run_until_observed`](crate::AsyncExecutor::run_until_observed)).
///
/// `()` observes nothing: `tick` is `tick_observed(budget, &())`, and with
/// `()` the calls compile away, so an executor that is not observed runs
/// exactly the instructions it ran before observers existed.
pub trait PollObserver {
    /// A poll of `task` is about to begin.
    fn poll_started(&self, task: TaskId);
    /// That poll returned (or ended the task).
    fn poll_ended(&self, task: TaskId);
    /// The poll of `task` about to begin waited `ticks` since the wake that
    /// queued it or, when `first`, since the task was spawned: its
    /// ready-queue age. Called just before [`poll_started`](Self::poll_started),
    /// and only by an executor whose queue stamps wakes
    /// ([`Timed`](super::Timed)); `ticks` are that queue's
    /// [`Clock`](super::Clock) ticks. Wakes that coalesce into one poll are timed from
    /// the first of them. Does nothing unless implemented.
    #[inline(always)]
    fn poll_waited(&self, task: TaskId, first: bool, ticks: u64) {
        let _ = (task, first, ticks);
    }

    /// Whether it looks at anything: `false` only for `()`, so that an
    /// executor watched by nobody does not even work out the ids it would
    /// pass. An implementation that observes leaves it as it is.
    #[doc(hidden)]
    #[inline(always)]
    fn observes(&self) -> bool {
        true
    }
}

impl PollObserver for () {
    #[inline(always)]
    fn poll_started(&self, _: TaskId) {}
    #[inline(always)]
    fn poll_ended(&self, _: TaskId) {}
    #[inline(always)]
    fn observes(&self) -> bool {
        false
    }
}

impl<T: PollObserver + ?Sized> PollObserver for &T {
    #[inline(always)]
    fn poll_started(&self, task: TaskId) {
        (**self).poll_started(task);
    }
    #[inline(always)]
    fn observes(&self) -> bool {
        (**self).observes()
    }
    #[inline(always)]
    fn poll_waited(&self, task: TaskId, first: bool, ticks: u64) {
        (**self).poll_waited(task, first, ticks);
    }
    #[inline(always)]
    fn poll_ended(&self, task: TaskId) {
        (**self).poll_ended(task);
    }
}

impl<A: PollObserver, B: PollObserver> PollObserver for (A, B) {
    #[inline(always)]
    fn poll_started(&self, task: TaskId) {
        self.0.poll_started(task);
        self.1.poll_started(task);
    }
    #[inline(always)]
    fn poll_ended(&self, task: TaskId) {
        self.1.poll_ended(task);
        self.0.poll_ended(task);
    }
    #[inline(always)]
    fn poll_waited(&self, task: TaskId, first: bool, ticks: u64) {
        self.0.poll_waited(task, first, ticks);
        self.1.poll_waited(task, first, ticks);
    }
}

/// A [`PollObserver`] that turns each poll into the shared event
/// vocabulary: `PollStarted` and `PollEnded`, stamped with `clock`, into
/// `sink` (a `TraceRing`, `RuntimeMetrics`, `DefmtSink`, or a tuple).
#[derive(Debug)]
pub struct PollEvents<S: Sink, K: Clock> {
    /// Where the events go.
    pub sink: S,
    /// What stamps them.
    pub clock: K,
}

impl<S: Sink, K: Clock> PollObserver for PollEvents<S, K> {
    fn poll_started(&self, task: TaskId) {
        self.sink.record(TraceEvent::stamped(
            task,
            TraceEventKind::PollStarted,
            self.clock.now(),
        ));
    }

    fn poll_ended(&self, task: TaskId) {
        self.sink.record(TraceEvent::stamped(
            task,
            TraceEventKind::PollEnded,
            self.clock.now(),
        ));
    }
}
