//! What `diagnose()` says of tasks waiting on the async locks and on the
//! receiving ends: a lock is a line with a name, reported as
//! `Backpressure` on that name once the wait is longer than `no_wake`; a
//! receive (a channel, a shared channel's consumers, a oneshot reply, a
//! watch, a broadcast, a notify) is `NoWake` naming what it waits for.

use std::sync::Arc;
use std::time::Duration;

use dinah::LocalExecutor;
use dinah::executor::ExecutorConfig;
use dinah::sync::{SharedMutex, SharedNotify, SharedRwLock, broadcast, mpsc, oneshot, watch};
use dinah::telemetry::{ManualClock, Measured, TelemetryConfig, Thresholds, Verdict};

fn thresholds() -> Thresholds {
    Thresholds {
        no_wake: Duration::from_secs(1),
        ready_delay: Duration::from_millis(10),
        blocked: Duration::from_millis(100),
        blocking_wait: Duration::from_millis(100),
        admission_window: Duration::from_secs(1),
    }
}

fn executor(clock: &ManualClock) -> LocalExecutor<'static, Measured> {
    LocalExecutor::with_telemetry(
        ExecutorConfig::default(),
        TelemetryConfig::new().with_clock(clock.clone()),
    )
    .expect("valid config")
}

/// Every verdict, as (cause's word, what it names, how many wait).
fn named(verdicts: &[Verdict]) -> Vec<(&'static str, Option<&'static str>, usize)> {
    let mut named: Vec<_> = verdicts
        .iter()
        .map(|verdict| match verdict {
            Verdict::Backpressure { on, waiting, .. } => ("backpressure", *on, *waiting),
            Verdict::NoWake { waits_for, .. } => ("no wake", *waits_for, 1),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    named.sort();
    named
}

#[test]
fn lock_waits_are_backpressure_and_receives_are_no_wake_by_name() {
    let clock = ManualClock::new();
    let executor = executor(&clock);
    let monitor = executor.monitor();
    let sessions = Arc::new(SharedMutex::named("sessions", 0u32));
    let routes = Arc::new(SharedRwLock::named("routes", 0u32));
    let (reply_tx, reply_rx) = oneshot::named::<u32>("lookup reply");
    let (config_tx, mut config_rx) = watch::named("config", 0u32);
    let (events_tx, mut events_rx) = broadcast::named("events", 4).unwrap();
    let (jobs_tx, jobs_rx) = mpsc::named::<u32>("jobs", 4).unwrap();
    let jobs_rx = jobs_rx.shared();
    let reload = Arc::new(SharedNotify::named("reload"));
    let held = sessions.try_lock().unwrap();
    let writing = routes.try_write().unwrap();
    let mut waiters = Vec::new();
    waiters.push(
        executor
            .try_spawn({
                let sessions = Arc::clone(&sessions);
                async move { *sessions.lock().await += 1 }
            })
            .unwrap(),
    );
    waiters.push(
        executor
            .try_spawn({
                let routes = Arc::clone(&routes);
                async move { drop(routes.read().await) }
            })
            .unwrap(),
    );
    waiters.push(
        executor
            .try_spawn(async move {
                let _ = reply_rx.await;
            })
            .unwrap(),
    );
    waiters.push(
        executor
            .try_spawn(async move {
                let _ = config_rx.changed().await;
            })
            .unwrap(),
    );
    waiters.push(
        executor
            .try_spawn(async move {
                let _ = events_rx.recv().await;
            })
            .unwrap(),
    );
    for _ in 0..2 {
        let jobs = jobs_rx.clone();
        // One holds the turn and waits for a job; the other waits its turn.
        waiters.push(
            executor
                .try_spawn(async move {
                    let _ = jobs.recv().await;
                })
                .unwrap(),
        );
    }
    waiters.push(
        executor
            .try_spawn({
                let reload = Arc::clone(&reload);
                async move { reload.notified().await }
            })
            .unwrap(),
    );
    executor.tick(usize::MAX);
    clock.advance(Duration::from_millis(500));
    assert_eq!(monitor.diagnose(&thresholds()), [], "short waits are fine");
    clock.advance(Duration::from_secs(1));
    let verdicts = monitor.diagnose(&thresholds());
    assert_eq!(
        named(&verdicts),
        [
            ("backpressure", Some("routes"), 1),
            ("backpressure", Some("sessions"), 1),
            ("no wake", Some("config"), 1),
            ("no wake", Some("events"), 1),
            ("no wake", Some("jobs"), 1),
            ("no wake", Some("jobs"), 1),
            ("no wake", Some("lookup reply"), 1),
            ("no wake", Some("reload"), 1),
        ],
        "{verdicts:?}"
    );
    let text = verdicts
        .iter()
        .find(|v| {
            matches!(
                v,
                Verdict::NoWake {
                    waits_for: Some("config"),
                    ..
                }
            )
        })
        .unwrap()
        .to_string();
    assert!(text.ends_with("; nothing came from config"), "{text}");
    drop((held, writing));
    reply_tx.send(1).unwrap();
    config_tx.send(1).unwrap();
    events_tx.send(1u32).unwrap();
    jobs_tx.try_send(1).unwrap();
    drop(jobs_tx);
    reload.notify_waiters();
    executor.block_on(async {
        for waiter in waiters {
            waiter.await.unwrap();
        }
    });
    assert_eq!(monitor.diagnose(&thresholds()), []);
}
