//! What `diagnose()` says of tasks waiting on the async locks, on a
//! oneshot reply, on a watch and on a broadcast: each is a line with a name, reported as `Backpressure` on
//! that name once the wait is longer than `no_wake`, never as `NoWake`.

use std::sync::Arc;
use std::time::Duration;

use dinah::LocalExecutor;
use dinah::executor::ExecutorConfig;
use dinah::sync::{SharedMutex, SharedRwLock, broadcast, oneshot, watch};
use dinah::telemetry::{Cause, ManualClock, Measured, TelemetryConfig, Thresholds, Verdict};

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

#[test]
fn waits_on_a_lock_or_a_reply_are_backpressure_by_name() {
    let clock = ManualClock::new();
    let executor = executor(&clock);
    let monitor = executor.monitor();
    let sessions = Arc::new(SharedMutex::named("sessions", 0u32));
    let routes = Arc::new(SharedRwLock::named("routes", 0u32));
    let (reply_tx, reply_rx) = oneshot::named::<u32>("lookup reply");
    let (config_tx, mut config_rx) = watch::named("config", 0u32);
    let (events_tx, mut events_rx) = broadcast::named("events", 4).unwrap();
    let held = sessions.try_lock().unwrap();
    let writing = routes.try_write().unwrap();
    let lockers = [
        executor
            .try_spawn({
                let sessions = Arc::clone(&sessions);
                async move { *sessions.lock().await += 1 }
            })
            .unwrap(),
        executor
            .try_spawn({
                let routes = Arc::clone(&routes);
                async move { drop(routes.read().await) }
            })
            .unwrap(),
        executor
            .try_spawn(async move {
                let _ = reply_rx.await;
            })
            .unwrap(),
        executor
            .try_spawn(async move {
                let _ = config_rx.changed().await;
            })
            .unwrap(),
        executor
            .try_spawn(async move {
                let _ = events_rx.recv().await;
            })
            .unwrap(),
    ];
    executor.tick(usize::MAX);
    clock.advance(Duration::from_millis(500));
    assert_eq!(monitor.diagnose(&thresholds()), [], "short waits are fine");
    clock.advance(Duration::from_secs(1));
    let verdicts = monitor.diagnose(&thresholds());
    assert!(
        verdicts.iter().all(|v| v.cause() == Cause::Backpressure),
        "{verdicts:?}"
    );
    let mut lines: Vec<_> = verdicts
        .iter()
        .filter_map(|verdict| match verdict {
            Verdict::Backpressure { on, waiting, .. } => Some((*on, *waiting)),
            _ => None,
        })
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            (Some("config"), 1),
            (Some("events"), 1),
            (Some("lookup reply"), 1),
            (Some("routes"), 1),
            (Some("sessions"), 1)
        ]
    );
    drop((held, writing));
    reply_tx.send(1).unwrap();
    config_tx.send(1).unwrap();
    events_tx.send(1u32).unwrap();
    executor.block_on(async {
        for locker in lockers {
            locker.await.unwrap();
        }
    });
    assert_eq!(monitor.diagnose(&thresholds()), []);
}
