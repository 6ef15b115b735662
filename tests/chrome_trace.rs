//! The Chrome trace export: a fixed scenario, driven with a manual clock
//! and barriers so every event and stamp is the same on each run, compared
//! with a golden file and passed through the structure checker.
//!
//! To accept a deliberate change of format: `DINAH_BLESS=1 cargo test --test
//! chrome_trace`, then review the diff of `tests/golden/`.

mod support;

use std::future::poll_fn;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::task::Poll;
use std::thread;
use std::time::Duration;

use dinah::executor::ExecutorConfig;
use dinah::pool::ShutdownPolicy;
use dinah::telemetry::{ManualClock, Recorder, TelemetryConfig};
use dinah::{CoreConfig, LocalExecutor, WorkerPool, yield_now};

use support::chrome::check;

const US: Duration = Duration::from_micros(1);

/// An executor with three tasks (one yields, one is cancelled while queued,
/// one is refused by a full ingress) and a one-worker pool with one job
/// that runs, one that panics and one refused as full.
fn scenario() -> Arc<Recorder> {
    let clock = ManualClock::new();
    let recorder = Arc::new(Recorder::new(1_000).unwrap());
    let telemetry = |name: &str| {
        TelemetryConfig::new()
            .with_clock(clock.clone())
            .with_sink(recorder.source(name))
    };
    let pool =
        WorkerPool::with_telemetry(CoreConfig::new(1).unwrap(), 1, telemetry("workers")).unwrap();
    let executor = LocalExecutor::with_telemetry(
        ExecutorConfig {
            max_tasks: None,
            ingress_capacity: 1,
            ..ExecutorConfig::default()
        },
        telemetry("executor"),
    )
    .unwrap();

    let yielding = executor
        .try_spawn(async {
            yield_now().await;
        })
        .unwrap();
    let cancelled = executor.try_spawn(async {}).unwrap();
    clock.advance(10 * US);
    assert!(cancelled.cancel());
    let spawner = executor.spawner();
    let remote = spawner.try_spawn(async {}).unwrap();
    assert!(spawner.try_spawn(async {}).is_err());
    {
        let clock = clock.clone();
        let mut polls = 0;
        drop(
            executor
                .try_spawn(poll_fn(move |cx| {
                    polls += 1;
                    clock.advance(30 * US);
                    if polls == 1 {
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    } else {
                        Poll::Ready(())
                    }
                }))
                .unwrap(),
        );
    }
    executor.tick(usize::MAX);
    clock.advance(5 * US);
    executor.tick(usize::MAX);
    assert!(yielding.is_finished() && remote.is_finished());

    let (entered, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let first = {
        let (clock, entered, release) = (clock.clone(), entered.clone(), release.clone());
        pool.try_spawn(move || {
            entered.wait();
            release.wait();
            clock.advance(200 * US);
        })
        .unwrap()
    };
    entered.wait();
    clock.advance(20 * US);
    let second = pool.try_spawn(|| panic!("the second job fails")).unwrap();
    assert!(pool.try_spawn(|| ()).is_err());
    release.wait();
    first.join().unwrap();
    assert!(second.join().is_err());
    pool.shutdown(ShutdownPolicy::Drain);
    drop(executor);
    recorder
}

#[test]
fn the_timeline_matches_its_golden_file_and_the_checker() {
    let recorder = thread::Builder::new()
        .name("relay".into())
        .spawn(scenario)
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(recorder.rejected(), 0);
    let json = recorder.chrome_trace();
    let phases = check(&json).unwrap_or_else(|problem| panic!("{problem}\n{json}"));
    for phase in ["M", "X", "b", "e", "i", "C"] {
        assert!(phases.contains_key(phase), "no {phase} event in\n{json}");
    }
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/timeline.json");
    if std::env::var_os("DINAH_BLESS").is_some() {
        std::fs::write(&golden, &json).unwrap();
    }
    let expected = std::fs::read_to_string(&golden).unwrap();
    assert_eq!(json, expected, "the timeline changed; see the file header");
}

#[test]
fn the_checker_refuses_broken_traces() {
    let wrap = |events: &str| format!(r#"{{"traceEvents":[{events}],"displayTimeUnit":"ns"}}"#);
    let x = |ts: u32, dur: u32| {
        format!(
            r#"{{"name":"poll","cat":"poll","ph":"X","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{"task":1}}}}"#
        )
    };
    assert!(check(&wrap(&x(0, 10))).is_ok());
    assert!(check(&wrap(&format!("{},{}", x(0, 10), x(2, 3)))).is_ok());
    assert!(check(&wrap(&format!("{},{}", x(0, 10), x(5, 10)))).is_err());
    assert!(check(&wrap(
        r#"{"name":"ready","cat":"wait","ph":"e","id":"1:1","pid":1,"tid":1,"ts":1,"args":{"task":1}}"#
    ))
    .is_err());
    assert!(
        check(&wrap(
            r#"{"name":"poll","ph":"X","pid":1,"tid":1,"ts":0,"args":{"task":1}}"#
        ))
        .is_err()
    );
    assert!(
        check(&wrap(
            r#"{"name":"depth","ph":"C","pid":1,"ts":0,"args":{}}"#
        ))
        .is_err()
    );
    assert!(check(&wrap(r#"{"name":"odd","ph":"Q","pid":1}"#)).is_err());
    assert!(check("{}").is_err());
    assert!(check("not json").is_err());
}

#[test]
fn a_full_recorder_keeps_what_it_has_and_counts_the_rest() {
    use dinah::TaskId;
    use dinah::telemetry::{Sink, TraceEvent, TraceEventKind};
    let recorder = Arc::new(Recorder::new(2).unwrap());
    let sink = recorder.source("one");
    let task = TaskId::new(1).unwrap();
    for kind in [
        TraceEventKind::Submitted,
        TraceEventKind::Started,
        TraceEventKind::Completed,
    ] {
        sink.record(TraceEvent::stamped(task, kind, 5));
    }
    assert_eq!((recorder.len(), recorder.rejected()), (2, 1));
    let kinds: Vec<_> = recorder.events().iter().map(|(_, e)| e.kind).collect();
    assert_eq!(kinds, [TraceEventKind::Submitted, TraceEventKind::Started]);
    assert!(check(&recorder.chrome_trace()).is_ok());
}

#[test]
fn committed_timelines_pass_the_checker() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("artifacts/traces");
    let mut checked = 0;
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "json") {
            // Under Miri only the smallest structural facts: parsing half a
            // megabyte of JSON interpreted takes many minutes.
            let text = std::fs::read_to_string(&path).unwrap();
            if cfg!(miri) {
                assert!(text.starts_with("{\"traceEvents\":["), "{}", path.display());
            } else {
                let phases =
                    check(&text).unwrap_or_else(|problem| panic!("{}: {problem}", path.display()));
                for phase in ["M", "X", "b", "e", "i", "C"] {
                    assert!(phases.contains_key(phase), "{}: no {phase}", path.display());
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 1, "no timeline in {}", folder.display());
}

#[test]
fn a_wait_on_a_timer_is_a_timer_wait_slice_from_the_arming_poll_to_the_wake() {
    let clock = ManualClock::new();
    let recorder = Arc::new(Recorder::new(100).unwrap());
    let executor = LocalExecutor::with_telemetry(
        ExecutorConfig {
            start_paused: true,
            ..ExecutorConfig::default()
        },
        TelemetryConfig::new()
            .with_clock(clock.clone())
            .with_sink(recorder.source("executor")),
    )
    .unwrap();
    let sleeper = executor
        .try_spawn(dinah::time::sleep(Duration::from_millis(5)))
        .unwrap();
    executor.tick(usize::MAX);
    clock.advance(40 * US);
    executor.block_on(async { sleeper.await.unwrap() });
    drop(executor);
    let json = recorder.chrome_trace();
    check(&json).unwrap_or_else(|problem| panic!("{problem}\n{json}"));
    let slice = json
        .lines()
        .find(|line| line.contains("\"name\":\"timer wait\""))
        .unwrap_or_else(|| panic!("no timer wait in\n{json}"));
    assert!(
        slice.contains("\"ph\":\"X\"") && slice.contains("\"dur\":40"),
        "{slice}"
    );
}

#[test]
fn a_named_task_s_polls_are_slices_named_after_it() {
    let clock = ManualClock::new();
    let recorder = Arc::new(Recorder::new(100).unwrap());
    let executor = LocalExecutor::with_telemetry(
        ExecutorConfig::default(),
        TelemetryConfig::new()
            .with_clock(clock.clone())
            .with_sink(recorder.source("executor")),
    )
    .unwrap();
    let named = executor
        .try_spawn_named("relay \"north\"", async {
            yield_now().await;
        })
        .unwrap();
    let plain = executor.try_spawn(async {}).unwrap();
    executor.block_on(async {
        named.await.unwrap();
        plain.await.unwrap();
    });
    drop(executor);
    let json = recorder.chrome_trace();
    check(&json).unwrap_or_else(|problem| panic!("{problem}\n{json}"));
    let named_polls = json
        .lines()
        .filter(|line| line.contains(r#""name":"relay \"north\"","cat":"poll""#))
        .count();
    assert_eq!(named_polls, 2, "{json}");
    assert!(json.contains(r#""task_name":"relay \"north\"""#), "{json}");
    assert_eq!(
        json.lines()
            .filter(|line| line.contains(r#""name":"poll","cat":"poll""#))
            .count(),
        1,
        "the unnamed task's poll keeps its kind as its name"
    );
}
