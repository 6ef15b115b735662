//! [`TracingSink`]: task events as `tracing` spans and events.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dinah_core::TaskId;
use dinah_core::telemetry::{Sink, TraceEvent, TraceEventKind};
use tracing::span::EnteredSpan;

std::thread_local! {
    /// The polls entered on this thread, innermost last, with their tasks.
    static POLLS: RefCell<Vec<(u64, EnteredSpan)>> = const { RefCell::new(Vec::new()) };
}

/// A [`Sink`] that bridges task events into `tracing` (with the `tracing`
/// feature):
///
/// - each poll is a `TRACE` span named `poll` with a `task` field (and a
///   `name` field for a named task), entered on the polling thread from
///   `PollStarted` to `PollEnded`, so whatever the task logs while it is
///   polled nests inside it;
/// - each wake is a `TRACE` event `wake` with `task` and `self_wake`;
/// - every other kind is a `DEBUG` event `task` with `task`, `kind` and
///   `at` (the stamp, in the recorder clock's ticks).
///
/// It keeps the spans entered on each thread and the names of live named
/// tasks (dropped when the task ends); a `PollEnded` with no matching
/// entered span is ignored. Give each runtime its own sink (clones share
/// the names, and task numbers are per runtime).
#[derive(Clone, Debug, Default)]
pub struct TracingSink {
    names: Arc<Mutex<HashMap<u64, &'static str>>>,
}

impl TracingSink {
    /// A sink that knows no task's name yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn name(&self, task: u64) -> Option<&'static str> {
        crate::primitives::lock_std(&self.names).get(&task).copied()
    }
}

impl Sink for TracingSink {
    fn name_task(&self, task: TaskId, name: &'static str) {
        crate::primitives::lock_std(&self.names).insert(task.get(), name);
    }

    fn record(&self, event: TraceEvent) {
        let task = event.task.get();
        match event.kind {
            TraceEventKind::PollStarted => {
                let span = match self.name(task) {
                    Some(name) => tracing::trace_span!("poll", task, name),
                    None => tracing::trace_span!("poll", task),
                }
                .entered();
                POLLS.with(|polls| polls.borrow_mut().push((task, span)));
            }
            TraceEventKind::PollEnded => {
                let ended = POLLS.with(|polls| {
                    let mut polls = polls.borrow_mut();
                    let at = polls.iter().rposition(|(t, _)| *t == task)?;
                    Some(polls.remove(at))
                });
                drop(ended);
            }
            TraceEventKind::Woken | TraceEventKind::SelfWoken => {
                let self_wake = event.kind == TraceEventKind::SelfWoken;
                tracing::trace!(task, self_wake, "wake");
            }
            kind => {
                tracing::debug!(task, kind = ?kind, at = event.at, "task");
                if matches!(
                    kind,
                    TraceEventKind::Completed
                        | TraceEventKind::Failed
                        | TraceEventKind::CancellationAcknowledged
                        | TraceEventKind::Rejected
                ) {
                    crate::primitives::lock_std(&self.names).remove(&task);
                }
            }
        }
    }
}
