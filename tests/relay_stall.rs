//! The relay incident of `examples/relay_stall.rs`, on a manual clock:
//! `diagnose()` names each injected cause, only that cause, and the right
//! task; with no fault it says nothing. Each case's timeline passes the
//! Chrome trace checker.
//!
//! Not under Miri: the incident runs three runtimes and their threads
//! through dozens of round trips, which takes many minutes interpreted. The
//! same verdict logic runs under Miri in `tests/diagnose.rs`, one cause at a
//! time; this suite runs natively and under ThreadSanitizer.
#![cfg(not(miri))]

#[path = "../examples/relay_stall.rs"]
mod relay_stall;
mod support;

use std::sync::Arc;
use std::time::Duration;

use dinah::TaskId;
use dinah::telemetry::{Cause, ManualClock, Recorder, TelemetryConfig, Thresholds, Verdict};
use relay_stall::{CONNECTIONS, Case, run_case};

/// Short enough that the lost wake shows after seven rounds (the healthy
/// connections are served every 5 ms of clock), while a fault held for twice
/// `blocked` (20 ms) stays inside `no_wake`.
fn thresholds() -> Thresholds {
    Thresholds {
        no_wake: Duration::from_millis(25),
        ready_delay: Duration::from_millis(10),
        blocked: Duration::from_millis(10),
        blocking_wait: Duration::from_millis(10),
        admission_window: Duration::from_secs(1),
    }
}

/// Runs `case` and checks its timeline; returns the verdicts and the
/// connections' task ids.
fn run(case: Case) -> (Vec<Verdict>, Vec<TaskId>) {
    let clock = ManualClock::new();
    let timeline = Arc::new(Recorder::new(1 << 20).unwrap());
    let telemetry = |part: &str| {
        TelemetryConfig::new()
            .with_clock(clock.clone())
            .with_sink(timeline.source(part))
    };
    let (verdicts, tasks) = run_case(case, &thresholds(), &telemetry, &|d| clock.advance(d));
    assert_eq!(tasks.len(), CONNECTIONS);
    assert_eq!(timeline.rejected(), 0);
    let trace = timeline.chrome_trace();
    if let Err(problem) = support::chrome::check(&trace) {
        panic!("{case:?}: {problem}");
    }
    (verdicts, tasks)
}

fn causes(verdicts: &[Verdict]) -> Vec<Cause> {
    verdicts.iter().map(Verdict::cause).collect()
}

#[test]
fn a_healthy_relay_reports_nothing() {
    let (verdicts, _) = run(Case::Healthy);
    assert_eq!(verdicts, []);
}

#[test]
fn a_lost_wake_is_no_wake_for_that_connection_only() {
    let (verdicts, tasks) = run(Case::LostWake);
    assert_eq!(causes(&verdicts), [Cause::NoWake], "{verdicts:?}");
    assert!(matches!(verdicts[0], Verdict::NoWake { task, .. } if task == tasks[1]));
}

#[test]
fn housekeeping_between_ticks_is_ready_but_delayed_only() {
    let (verdicts, tasks) = run(Case::ReadyDelay);
    assert_eq!(causes(&verdicts), [Cause::ReadyButDelayed], "{verdicts:?}");
    assert!(matches!(
        verdicts[0],
        Verdict::ReadyButDelayed { task, ready_tasks: CONNECTIONS, .. } if task == tasks[0]
    ));
}

#[test]
fn a_blocking_call_in_a_poll_is_worker_blocked_for_that_connection_only() {
    let (verdicts, tasks) = run(Case::BlockedWorker);
    assert_eq!(causes(&verdicts), [Cause::WorkerBlocked], "{verdicts:?}");
    assert!(matches!(
        verdicts[0],
        Verdict::WorkerBlocked { task, worker: None, ready_behind: 2, .. } if task == tasks[2]
    ));
}

#[test]
fn a_hung_disk_is_blocking_saturated_only() {
    let (verdicts, _) = run(Case::BlockingSaturated);
    assert_eq!(
        causes(&verdicts),
        [Cause::BlockingSaturated],
        "{verdicts:?}"
    );
    assert!(matches!(
        verdicts[0],
        Verdict::BlockingSaturated {
            queued: 2,
            capacity: 3,
            running: 1,
            ..
        }
    ));
}

#[test]
fn a_flooded_checksum_queue_is_admission_full_only() {
    let (verdicts, _) = run(Case::AdmissionFull);
    assert_eq!(causes(&verdicts), [Cause::AdmissionFull], "{verdicts:?}");
    assert!(matches!(
        verdicts[0],
        Verdict::AdmissionFull {
            rejected_full: 2,
            queued: 3,
            capacity: 3,
            ..
        }
    ));
}
