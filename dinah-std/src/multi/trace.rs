//! [`Tracer`]: a multi-thread executor's task events, given to the user's
//! [`Sink`] from the thread each happened on, so that a timeline (a
//! [`Recorder`](crate::telemetry::Recorder)) draws one lane per worker.
//!
//! The sink is the user's code, called on the workers: a panic in it is
//! caught where it happens, and the sink is not called again (a worker
//! must not die of it, and a sink that failed once cannot be trusted with
//! the rest). [`MultiExecutor::sink_failed`](super::MultiExecutor::sink_failed)
//! says whether that happened.
#![forbid(unsafe_code)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dinah_core::TaskId;
use dinah_core::telemetry::{Clock, Sink, TraceEvent, TraceEventKind};

use crate::telemetry::StdClock;
use crate::unwind::drop_quietly;

/// The user's sink, until it panics.
pub(super) struct Tracer {
    sink: Arc<dyn Sink + Send + Sync>,
    clock: StdClock,
    failed: AtomicBool,
}

impl Tracer {
    pub(super) fn new(sink: Arc<dyn Sink + Send + Sync>) -> Self {
        Self {
            sink,
            clock: StdClock::new(),
            failed: AtomicBool::new(false),
        }
    }

    /// Calls the sink, unless it failed before; a panic switches it off.
    fn call(&self, call: impl FnOnce(&(dyn Sink + Send + Sync))) {
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| call(&*self.sink))) {
            self.failed.store(true, Ordering::Relaxed);
            drop_quietly(payload);
        }
    }

    /// `kind` happened to `task` now, on this thread.
    pub(super) fn emit(&self, task: TaskId, kind: TraceEventKind) {
        let at = self.clock.now();
        self.call(|sink| sink.record(TraceEvent::stamped(task, kind, at)));
    }

    /// `task` is named `name` (before its first event).
    pub(super) fn name(&self, task: TaskId, name: &'static str) {
        self.call(|sink| sink.name_task(task, name));
    }

    /// Whether the sink panicked (and is no longer called).
    pub(super) fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }
}
