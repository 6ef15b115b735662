//! [`Sink`]: what every consumer of task events implements.
#![forbid(unsafe_code)]

use super::{RuntimeMetrics, RuntimeMetrics32, TraceEvent, TraceRing};
use crate::TaskId;

/// A consumer of task events: one [`TraceEvent`] vocabulary for metrics,
/// traces, logs and timelines.
///
/// Every runtime part that emits events (the executors and pools of
/// `dinah-std`, or firmware code) calls [`record`](Sink::record) once per
/// event; a tuple of sinks fans the event out to each of them in order, and
/// `()` is the sink that drops everything.
///
/// # What an implementation promises
///
/// `record` returns promptly, never blocks on anything but a short internal
/// lock or critical section, never calls back into the runtime, and never
/// panics on any event (a full store counts its refusal and drops the event).
/// It may be called from any thread or interrupt handler the emitter runs
/// on, hence `&self`.
///
/// # What it does not promise
///
/// No ordering across sinks beyond the call order, and no delivery beyond
/// what the sink's storage holds.
pub trait Sink {
    /// Consumes one event.
    fn record(&self, event: TraceEvent);

    /// Learns that `task` is named `name`, before the task's first event.
    /// Sinks that show tasks (timelines, spans) use it; the default
    /// ignores it. Called once per named task, with the same promises as
    /// `record`.
    #[inline(always)]
    fn name_task(&self, task: TaskId, name: &'static str) {
        let _ = (task, name);
    }
}

impl Sink for () {
    #[inline(always)]
    fn record(&self, _: TraceEvent) {}
}

impl<S: Sink + ?Sized> Sink for &S {
    #[inline]
    fn record(&self, event: TraceEvent) {
        (**self).record(event);
    }
    #[inline]
    fn name_task(&self, task: TaskId, name: &'static str) {
        (**self).name_task(task, name);
    }
}

impl<A: Sink, B: Sink> Sink for (A, B) {
    #[inline]
    fn record(&self, event: TraceEvent) {
        self.0.record(event);
        self.1.record(event);
    }
    #[inline]
    fn name_task(&self, task: TaskId, name: &'static str) {
        self.0.name_task(task, name);
        self.1.name_task(task, name);
    }
}

impl<A: Sink, B: Sink, C: Sink> Sink for (A, B, C) {
    #[inline]
    fn record(&self, event: TraceEvent) {
        self.0.record(event);
        self.1.record(event);
        self.2.record(event);
    }
    #[inline]
    fn name_task(&self, task: TaskId, name: &'static str) {
        self.0.name_task(task, name);
        self.1.name_task(task, name);
        self.2.name_task(task, name);
    }
}

impl<A: Sink, B: Sink, C: Sink, D: Sink> Sink for (A, B, C, D) {
    #[inline]
    fn record(&self, event: TraceEvent) {
        self.0.record(event);
        self.1.record(event);
        self.2.record(event);
        self.3.record(event);
    }
    #[inline]
    fn name_task(&self, task: TaskId, name: &'static str) {
        self.0.name_task(task, name);
        self.1.name_task(task, name);
        self.2.name_task(task, name);
        self.3.name_task(task, name);
    }
}

impl<const N: usize> Sink for TraceRing<N> {
    /// Records the event; when the ring is full the event is dropped and
    /// the ring counts the refusal ([`TraceRing::rejected`]).
    fn record(&self, event: TraceEvent) {
        let _ = TraceRing::record(self, event);
    }
}

impl Sink for RuntimeMetrics {
    /// Counts the event in its counter (see [`RuntimeMetrics::record_event`]).
    fn record(&self, event: TraceEvent) {
        self.record_event(event.kind);
    }
}

impl Sink for RuntimeMetrics32 {
    /// Counts the event in its counter (see [`RuntimeMetrics32::record_event`]).
    fn record(&self, event: TraceEvent) {
        self.record_event(event.kind);
    }
}
