//! [`TracingSink`]: task events as `tracing` spans and events.

use std::cell::RefCell;

use dinah_core::telemetry::{Sink, TraceEvent, TraceEventKind};
use tracing::span::EnteredSpan;

std::thread_local! {
    /// The polls entered on this thread, innermost last, with their tasks.
    static POLLS: RefCell<Vec<(u64, EnteredSpan)>> = const { RefCell::new(Vec::new()) };
}

/// A [`Sink`] that bridges task events into `tracing` (with the `tracing`
/// feature):
///
/// - each poll is a `TRACE` span named `poll` with a `task` field, entered
///   on the polling thread from `PollStarted` to `PollEnded`, so whatever
///   the task logs while it is polled nests inside it;
/// - each wake is a `TRACE` event `wake` with `task` and `self_wake`;
/// - every other kind is a `DEBUG` event `task` with `task`, `kind` and
///   `at` (the stamp, in the recorder clock's ticks).
///
/// It keeps no state beyond the spans entered on each thread; a `PollEnded`
/// with no matching entered span is ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TracingSink;

impl Sink for TracingSink {
    fn record(&self, event: TraceEvent) {
        let task = event.task.get();
        match event.kind {
            TraceEventKind::PollStarted => {
                let span = tracing::trace_span!("poll", task).entered();
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
            kind => tracing::debug!(task, kind = ?kind, at = event.at, "task"),
        }
    }
}
