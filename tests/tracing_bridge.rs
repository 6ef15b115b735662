//! The `tracing` bridge: a span per poll, an event per wake, with task ids,
//! as a tracing-subscriber layer sees them.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use dinah::executor::ExecutorConfig;
use dinah::telemetry::{TelemetryConfig, TracingSink};
use dinah::{LocalExecutor, yield_now};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;

/// Fields as `name=value`, in order.
#[derive(Default)]
struct Fields(Vec<String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }
}

/// Records what it sees as lines: span creation, enter and exit with the
/// span's fields, and events with their fields and the span they are in.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Log {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let line = format!("{} {}", attrs.metadata().name(), fields.0.join(" "));
        ctx.span(id).unwrap().extensions_mut().insert(line);
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let line = span.extensions().get::<String>().unwrap().clone();
        self.0.lock().unwrap().push(format!("enter {line}"));
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let line = span.extensions().get::<String>().unwrap().clone();
        self.0.lock().unwrap().push(format!("exit {line}"));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let inside = ctx
            .event_span(event)
            .map(|span| format!(" in {}", span.name()))
            .unwrap_or_default();
        let level = event.metadata().level();
        self.0
            .lock()
            .unwrap()
            .push(format!("{level} {}{inside}", fields.0.join(" ")));
    }
}

#[test]
fn each_poll_is_a_span_and_each_wake_an_event_with_the_task_id() {
    let log = Log::default();
    let subscriber = tracing_subscriber::registry().with(log.clone());
    tracing::subscriber::with_default(subscriber, || {
        let executor = LocalExecutor::with_telemetry(
            ExecutorConfig::default(),
            TelemetryConfig::new().with_sink(TracingSink::new()),
        )
        .unwrap();
        let task = executor
            .try_spawn(async {
                tracing::info!("inside");
                yield_now().await;
            })
            .unwrap();
        assert_eq!(task.id().get(), 1);
        executor.tick(usize::MAX);
        executor.tick(usize::MAX);
    });
    let lines = log.0.lock().unwrap().clone();
    // Lifecycle events carry their stamp, which the real clock makes vary.
    let lines: Vec<String> = lines
        .into_iter()
        .map(|line| match line.find(" at=") {
            Some(at) => {
                let rest = &line[at + 4..];
                let end = rest.find(' ').map_or(line.len(), |i| at + 4 + i);
                format!("{} at=_{}", &line[..at], &line[end..])
            }
            None => line,
        })
        .collect();
    assert_eq!(
        lines,
        [
            "DEBUG message=task task=1 kind=Submitted at=_",
            "DEBUG message=task task=1 kind=Started at=_",
            "enter poll task=1",
            "INFO message=inside in poll",
            "TRACE message=wake task=1 self_wake=true in poll",
            "exit poll task=1",
            "enter poll task=1",
            "exit poll task=1",
            "DEBUG message=task task=1 kind=Completed at=_",
        ]
    );
}

#[test]
fn a_named_task_s_polls_carry_its_name() {
    let log = Log::default();
    let subscriber = tracing_subscriber::registry().with(log.clone());
    tracing::subscriber::with_default(subscriber, || {
        let executor = LocalExecutor::with_telemetry(
            ExecutorConfig::default(),
            TelemetryConfig::new().with_sink(TracingSink::new()),
        )
        .unwrap();
        let _named = executor.try_spawn_named("relay", yield_now()).unwrap();
        executor.tick(usize::MAX);
    });
    let lines = log.0.lock().unwrap().clone();
    assert!(
        lines
            .iter()
            .any(|line| line == "enter poll task=1 name=\"relay\""),
        "{lines:?}"
    );
}
