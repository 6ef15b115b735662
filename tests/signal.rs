//! Signals through the reactor: a listener hears a signal the process
//! sends itself, every listener of a signal hears it, arrivals before a
//! `recv` merge into one, a task waiting on a quiet signal is named in the
//! diagnosis, Ctrl-C on the multi-thread executor, and signals that cannot
//! be caught are refused with a typed error.
//!
//! Each test uses a signal of its own, since a signal reaches every
//! listener in the process and tests run at once. Not under Miri, which
//! runs no signal handlers.
#![cfg(all(unix, not(miri)))]

use std::future::Future;
use std::io;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use dinah::LocalExecutor;
use dinah::executor::{ExecutorConfig, MultiConfig, MultiExecutor};
use dinah::io::{Interest, IoWait};
use dinah::signal::{Signal, SignalKind, ctrl_c, raise};
use dinah::telemetry::{ManualClock, TelemetryConfig, Thresholds, Verdict};

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    let mut future = pin!(future);
    future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_signal_sent_while_listening_is_received_once_however_often_it_came() {
    let executor = LocalExecutor::new();
    executor.block_on(async {
        let mut listener = Signal::new(SignalKind::user_defined1()).unwrap();
        assert_eq!(listener.kind(), SignalKind::user_defined1());
        // Nothing came yet.
        assert!(poll_once(listener.recv()).is_pending());
        raise(SignalKind::user_defined1()).unwrap();
        raise(SignalKind::user_defined1()).unwrap();
        assert_eq!(listener.recv().await, Some(()));
        // The two arrivals counted as one: nothing more is pending.
        assert!(poll_once(listener.recv()).is_pending());
        raise(SignalKind::user_defined1()).unwrap();
        assert_eq!(listener.recv().await, Some(()));
    });
    assert_eq!(executor.io_figures().live, 0, "the listener deregistered");
}

#[test]
fn every_listener_of_a_signal_hears_it_and_a_task_waiting_is_woken() {
    let executor = LocalExecutor::new();
    let (mut first, second) = executor.block_on(async {
        (
            Signal::new(SignalKind::user_defined2()).unwrap(),
            Signal::new(SignalKind::user_defined2()).unwrap(),
        )
    });
    let mut second = second;
    let waiter = executor
        .try_spawn(async move {
            second.recv().await;
            Ok::<(), ()>(())
        })
        .unwrap_or_else(|_| unreachable!());
    // The task waits on the quiet signal.
    executor.tick(usize::MAX);
    assert!(!waiter.is_finished());
    raise(SignalKind::user_defined2()).unwrap();
    executor.block_on(async {
        assert_eq!(first.recv().await, Some(()));
        waiter.await.unwrap().unwrap();
    });
}

#[test]
fn a_task_waiting_on_a_quiet_signal_is_no_wake_naming_the_signal() {
    let clock = ManualClock::new();
    let executor = LocalExecutor::with_telemetry(
        ExecutorConfig::default(),
        TelemetryConfig::new().with_clock(clock.clone()),
    )
    .unwrap();
    let monitor = executor.monitor();
    let mut hangup = executor.block_on(async { Signal::new(SignalKind::hangup()).unwrap() });
    let reloader = executor
        .try_spawn_named("reloader", async move {
            hangup.recv().await;
            Ok::<(), ()>(())
        })
        .unwrap_or_else(|_| unreachable!());
    executor.tick(usize::MAX);
    let thresholds = Thresholds {
        no_wake: Duration::from_secs(1),
        ..Thresholds::default()
    };
    clock.advance(Duration::from_secs(2));
    let verdicts = monitor.diagnose(&thresholds);
    assert_eq!(
        verdicts,
        [Verdict::NoWake {
            task: reloader.id(),
            name: Some("reloader"),
            waiting: Duration::from_secs(2),
            polls: 1,
            waits_on: Some(IoWait {
                resource: "signal SIGHUP".into(),
                interest: Interest::Read,
            }),
            waits_for: None,
        }]
    );
    assert!(
        verdicts[0]
            .to_string()
            .ends_with("no readiness to read on signal SIGHUP"),
        "{}",
        verdicts[0]
    );
    raise(SignalKind::hangup()).unwrap();
    executor.block_on(reloader).unwrap().unwrap();
    assert_eq!(monitor.diagnose(&thresholds), []);
}

#[test]
fn ctrl_c_on_the_multi_thread_executor_completes_on_sigint() {
    let executor = MultiExecutor::with_config(MultiConfig {
        workers: Some(2),
        ..MultiConfig::default()
    })
    .unwrap();
    // A listener of this test's own first, so that SIGINT never takes
    // its default action (ending the test process) while `ctrl_c`'s
    // listener is being made.
    let guard = executor.block_on(async { Signal::new(SignalKind::interrupt()).unwrap() });
    let interrupted = executor
        .handle()
        .try_spawn(async { ctrl_c().await })
        .unwrap_or_else(|_| unreachable!());
    let mut interrupted = interrupted;
    // `ctrl_c` listens from its first poll on, on a worker: send SIGINT
    // until it has heard one (a bounded number of tries).
    let heard = executor.block_on(async {
        for _ in 0..1_000 {
            raise(SignalKind::interrupt()).unwrap();
            if let Ok(result) =
                dinah::time::timeout(Duration::from_millis(5), &mut interrupted).await
            {
                return Some(result);
            }
        }
        None
    });
    let result: io::Result<()> = heard.expect("ctrl_c heard SIGINT").unwrap();
    result.unwrap();
    drop(guard);
}

#[test]
fn signals_that_cannot_be_caught_are_refused_with_a_typed_error() {
    let executor = LocalExecutor::new();
    executor.block_on(async {
        for kind in [
            SignalKind::from_raw(signal_hook::consts::SIGKILL),
            SignalKind::from_raw(signal_hook::consts::SIGSTOP),
            SignalKind::from_raw(signal_hook::consts::SIGSEGV),
            SignalKind::from_raw(0),
            SignalKind::from_raw(-3),
        ] {
            let error = Signal::new(kind).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{kind}: {error}");
        }
    });
    assert_eq!(SignalKind::terminate().name(), "SIGTERM");
    assert_eq!(SignalKind::from_raw(250).to_string(), "signal 250");
    // Numbers past any platform's, and one past Linux's last real-time
    // signal, which the operating system refuses.
    for number in [100_000, 128, 100] {
        let error = executor
            .block_on(async { Signal::new(SignalKind::from_raw(number)) })
            .unwrap_err();
        assert_eq!(
            error.kind(),
            io::ErrorKind::InvalidInput,
            "{number}: {error}"
        );
    }
}

#[test]
fn a_listener_needs_an_executor() {
    std::thread::spawn(|| {
        let error = Signal::new(SignalKind::quit()).unwrap_err();
        assert!(error.to_string().contains("executor"), "{error}");
    })
    .join()
    .unwrap();
}

/// A service that stops when its supervisor sends SIGTERM: the signal ends
/// its wait, a draining shutdown lets the requests in flight finish, cuts
/// off the one that would never end at the deadline, and its report says
/// which is which.
#[test]
fn a_service_stopped_by_sigterm_drains_and_reports_each_task() {
    use dinah::task::ChildEnd;
    let executor = LocalExecutor::with_config(ExecutorConfig {
        start_paused: true,
        ..ExecutorConfig::default()
    })
    .unwrap();
    let mut terminate = executor.block_on(async { Signal::new(SignalKind::terminate()).unwrap() });
    let requests: Vec<_> = (0..3u64)
        .map(|n| {
            executor
                .try_spawn_named("request", async move {
                    dinah::time::sleep(Duration::from_millis(10 * (n + 1))).await;
                })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    let stuck = executor
        .try_spawn_named("stuck", std::future::pending::<()>())
        .unwrap_or_else(|_| unreachable!());
    // The supervisor asks the service to stop.
    raise(SignalKind::terminate()).unwrap();
    assert_eq!(executor.block_on(terminate.recv()), Some(()));
    let report = executor.shutdown_with(dinah::pool::ShutdownPolicy::Drain, Duration::from_secs(1));
    assert_eq!(report.tasks.len(), 4, "{report:?}");
    assert_eq!(report.cancelled_tasks, 1, "{report:?}");
    for request in &requests {
        let child = report.tasks.iter().find(|c| c.id == request.id()).unwrap();
        assert_eq!(
            (child.name, child.end),
            (Some("request"), ChildEnd::Completed)
        );
    }
    let child = report.tasks.iter().find(|c| c.id == stuck.id()).unwrap();
    assert_eq!(
        (child.name, child.end),
        (Some("stuck"), ChildEnd::Cancelled)
    );
}
