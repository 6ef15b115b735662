//! Telemetry of the executor and the pools: the figures and events they
//! emit, and `diagnose()` naming each stall cause alone, with a manual clock
//! so every duration is exact and no test depends on real time.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use dinah::executor::ExecutorConfig;
use dinah::pool::{BlockingConfig, ShutdownPolicy};
use dinah::telemetry::Log2Histogram;
use dinah::telemetry::{
    Cause, ManualClock, Measured, TelemetryConfig, Thresholds, TraceBuffer, TraceEventKind, Verdict,
};
use dinah::{BlockingPool, CoreConfig, LocalExecutor, SpawnError, TaskId, WorkerPool};

const MS: Duration = Duration::from_millis(1);
const US: Duration = Duration::from_micros(1);

fn thresholds() -> Thresholds {
    Thresholds {
        no_wake: Duration::from_secs(1),
        ready_delay: 10 * MS,
        blocked: 100 * MS,
        blocking_wait: 100 * MS,
        admission_window: Duration::from_secs(1),
    }
}

fn causes(verdicts: &[Verdict]) -> Vec<Cause> {
    verdicts.iter().map(Verdict::cause).collect()
}

/// A flag a task waits for; `fire` wakes it.
#[derive(Clone, Default)]
struct Signal(Arc<Mutex<(bool, Option<Waker>)>>);

impl Signal {
    fn fire(&self) {
        let waker = {
            let mut state = self.0.lock().unwrap();
            state.0 = true;
            state.1.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Waits for the next `fire`, then resets.
    fn wait(&self) -> impl Future<Output = ()> + '_ {
        poll_fn(move |cx| {
            let mut state = self.0.lock().unwrap();
            if std::mem::take(&mut state.0) {
                Poll::Ready(())
            } else {
                state.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}

/// A task that serves `signal` forever: each fire is one request.
async fn serve(signal: Signal) {
    loop {
        signal.wait().await;
    }
}

/// A task that yields forever: always ready again at once.
async fn yielder() {
    loop {
        dinah::yield_now().await;
    }
}

/// A future that is pending and lets its waker go: nothing can wake it.
struct Forgotten;

impl Future for Forgotten {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

fn executor(clock: &ManualClock, config: ExecutorConfig) -> LocalExecutor<'static, Measured> {
    LocalExecutor::with_telemetry(config, TelemetryConfig::new().with_clock(clock.clone()))
        .expect("valid config")
}

/// A measured executor on a manual clock whose events go to a buffer.
fn traced() -> (
    ManualClock,
    Arc<TraceBuffer>,
    LocalExecutor<'static, Measured>,
) {
    let clock = ManualClock::new();
    let trace = Arc::new(TraceBuffer::new(64).unwrap());
    let executor = LocalExecutor::with_telemetry(
        ExecutorConfig::default(),
        TelemetryConfig::new()
            .with_clock(clock.clone())
            .with_shared_sink(trace.clone()),
    )
    .unwrap();
    (clock, trace, executor)
}

#[test]
fn executor_figures_and_events_follow_each_handoff() {
    let (clock, trace, executor) = traced();
    let kept: Rc<RefCell<Option<Waker>>> = Rc::default();
    let task = {
        let clock = clock.clone();
        let kept = Rc::clone(&kept);
        let mut step = 0;
        executor.try_spawn(poll_fn(move |cx| {
            step += 1;
            if step == 1 {
                clock.advance(3 * US);
                *kept.borrow_mut() = Some(cx.waker().clone());
                cx.waker().wake_by_ref();
                Poll::Pending
            } else {
                clock.advance(60 * US);
                Poll::Ready(())
            }
        }))
    }
    .unwrap();
    let id = task.id();
    clock.advance(5 * US); // spawn at 0, first poll at 5 µs
    executor.tick(usize::MAX);
    clock.advance(2 * US); // self-woken at 8 µs, polled at 10 µs
    executor.tick(usize::MAX);
    kept.borrow_mut().take().unwrap().wake(); // after the end: stale

    let got: Vec<(TraceEventKind, u64)> = trace
        .drain()
        .iter()
        .map(|e| {
            assert_eq!(e.task, id);
            (e.kind, e.at / 1_000)
        })
        .collect();
    use TraceEventKind::*;
    assert_eq!(
        got,
        [
            (Submitted, 0),
            (Started, 5),
            (PollStarted, 5),
            (SelfWoken, 8),
            (PollEnded, 8),
            (PollStarted, 10),
            (PollEnded, 70),
            (Completed, 70),
            (StaleWake, 70),
        ]
    );

    let figures = executor.monitor().figures();
    assert_eq!(
        (
            figures.spawned,
            figures.polls,
            figures.long_polls,
            figures.wakes,
            figures.self_wakes,
            figures.stale_wakes,
        ),
        (1, 2, 1, 1, 1, 1)
    );
    let one = |value: u64| {
        let mut histogram = Log2Histogram::new();
        histogram.record(value);
        histogram
    };
    assert_eq!(figures.first_poll_delay, one(5));
    assert_eq!(figures.wake_to_poll, one(2));
    let mut polls = one(3);
    polls.record(60);
    assert_eq!(figures.poll_time, polls);
}

#[test]
fn polls_in_one_run_start_where_the_one_before_ended_and_wakes_inside_take_its_start() {
    let (clock, trace, executor) = traced();
    let signal = Signal::default();
    // `waiter` waits for the signal; `work` takes 4 µs, then fires it, then
    // takes 6 µs more, all in one poll.
    let waiter = executor.try_spawn(serve(signal.clone())).unwrap();
    let work = {
        let clock = clock.clone();
        executor.try_spawn(async move {
            clock.advance(4 * US);
            signal.fire();
            clock.advance(6 * US);
        })
    }
    .unwrap();
    clock.advance(5 * US);
    executor.tick(usize::MAX); // polls `waiter` at 5 µs, then `work` from 5 to 15
    clock.advance(2 * US);
    executor.tick(usize::MAX); // `waiter` again, at 17 µs
    let (waiter, work) = (waiter.id(), work.id());
    let got: Vec<(TaskId, TraceEventKind, u64)> = trace
        .drain()
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                TraceEventKind::PollStarted | TraceEventKind::PollEnded | TraceEventKind::Woken
            )
        })
        .map(|e| (e.task, e.kind, e.at / 1_000))
        .collect();
    use TraceEventKind::*;
    assert_eq!(
        got,
        [
            (waiter, PollStarted, 5),
            (waiter, PollEnded, 5),
            // Starts where the poll before it ended: no clock read.
            (work, PollStarted, 5),
            // A wake from inside a poll takes that poll's start.
            (waiter, Woken, 5),
            (work, PollEnded, 15),
            // A new tick reads the clock: the 2 µs between ticks are
            // nobody's poll.
            (waiter, PollStarted, 17),
            (waiter, PollEnded, 17),
        ]
    );
    let figures = executor.monitor().figures();
    let mut polls = Log2Histogram::new();
    for micros in [0, 10, 0] {
        polls.record(micros);
    }
    assert_eq!(figures.poll_time, polls);
    let mut waited = Log2Histogram::new();
    waited.record(12); // ready from 5, polled at 17
    assert_eq!(figures.wake_to_poll, waited);
    assert_eq!(
        (figures.wakes, figures.self_wakes),
        (1, 0),
        "a wake from another task's poll counts once, not as a self-wake"
    );
}

#[test]
fn wakes_from_the_task_itself_another_task_and_another_thread_all_count() {
    let executor =
        LocalExecutor::with_telemetry(ExecutorConfig::default(), TelemetryConfig::new()).unwrap();
    let signal = Signal::default();
    // Runs the executor until `signal` has a waiter.
    let until_waited_on = || {
        executor.block_on(async {
            while signal.0.lock().unwrap().1.is_none() {
                dinah::yield_now().await;
            }
        })
    };
    // One task, woken three ways: by itself, by another task's poll, and
    // from another thread while the executor is not running.
    let woken = {
        let signal = signal.clone();
        executor.try_spawn(async move {
            dinah::yield_now().await;
            signal.wait().await;
            signal.wait().await;
        })
    }
    .unwrap();
    until_waited_on(); // it woke itself, then waits
    let waker = {
        let signal = signal.clone();
        executor.try_spawn(async move { signal.fire() }).unwrap()
    };
    executor.block_on(waker).unwrap();
    until_waited_on(); // woken by `waker`'s poll, it waits again
    std::thread::scope(|scope| {
        scope.spawn(|| signal.fire());
    });
    executor.block_on(woken).unwrap();
    let figures = executor.monitor().figures();
    assert_eq!((figures.wakes, figures.self_wakes), (3, 1));
}

#[test]
fn whether_an_executor_measures_itself_is_part_of_its_type() {
    use dinah::telemetry::Unmeasured;
    use dinah::yield_now;
    let task = || async {
        yield_now().await;
        Ok::<u32, ()>(7)
    };
    // The same tasks run the same way on both; only the measured one has
    // figures, and only its type has a `monitor`.
    let plain: LocalExecutor<'static, Unmeasured> = LocalExecutor::new();
    let measured: LocalExecutor<'static, Measured> =
        LocalExecutor::with_telemetry(ExecutorConfig::default(), TelemetryConfig::new()).unwrap();
    let on_plain = plain.try_spawn(task()).unwrap();
    let on_measured = measured.try_spawn(task()).unwrap();
    assert_eq!(plain.block_on(on_plain), Ok(Ok(7)));
    assert_eq!(measured.block_on(on_measured), Ok(Ok(7)));
    let figures = measured.monitor().figures();
    assert_eq!((figures.spawned, figures.polls, figures.wakes), (1, 2, 1));
}

#[test]
fn per_task_figures_show_each_phase() {
    let clock = ManualClock::new();
    let executor = executor(&clock, ExecutorConfig::default());
    let signal = Signal::default();
    let woken = executor.try_spawn(serve(signal.clone())).unwrap();
    let idle = executor.try_spawn(serve(Signal::default())).unwrap();
    executor.tick(usize::MAX);
    let monitor = executor.monitor();
    clock.advance(7 * MS);
    signal.fire();
    clock.advance(2 * MS);
    let tasks = monitor.tasks();
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0].task, woken.id());
    assert_eq!(
        tasks[0].phase,
        Some(dinah::telemetry::TaskPhase::Ready { for_ticks: 2_000 })
    );
    assert_eq!((tasks[0].polls, tasks[0].wakes), (1, 1));
    assert_eq!(tasks[1].task, idle.id());
    assert_eq!(
        tasks[1].phase,
        Some(dinah::telemetry::TaskPhase::Waiting { for_ticks: 9_000 })
    );
    assert_eq!((tasks[1].polls, tasks[1].wakes), (1, 0));
    // The one record of the core's vocabulary, in microseconds.
    assert_eq!(tasks[0].ticks_per_second, 1_000_000);
    assert_eq!(tasks[0].first_poll_delay, Some(0));
    assert_eq!(tasks[0].longest_wake_to_poll, 0);
    executor.tick(usize::MAX);
    let tasks = monitor.tasks();
    assert_eq!(
        tasks[0].longest_wake_to_poll, 2_000,
        "woken at 7 ms, polled at 9"
    );
    assert_eq!(tasks[0].polls, 2);
    assert_eq!(monitor.figures().ticks_per_second, 1_000_000);
    // A wake after its task is over counts for the task's slot until the
    // slot is reused.
    assert_eq!(tasks[0].stale_wakes, 0);
}

#[test]
fn a_poll_watch_sees_a_poll_that_holds_the_hosted_executor() {
    use dinah::telemetry::PollWatch;
    let clock = ManualClock::new();
    let watch = Arc::new(PollWatch::new(clock.clone()));
    let executor = LocalExecutor::with_telemetry(
        ExecutorConfig::default(),
        TelemetryConfig::new()
            .with_clock(clock.clone())
            .with_observer(watch.clone()),
    )
    .unwrap();
    let entered = Arc::new(Barrier::new(2));
    let release = Arc::new(Barrier::new(2));
    let task = {
        let (entered, release) = (Arc::clone(&entered), Arc::clone(&release));
        executor
            .try_spawn(async move {
                entered.wait();
                release.wait();
            })
            .unwrap()
    };
    let id = task.id();
    let watcher = {
        let (watch, clock) = (Arc::clone(&watch), clock.clone());
        thread::spawn(move || {
            entered.wait();
            // The poll holds the executor's thread while the clock moves.
            assert!(watch.blocked(6_000_000).is_none());
            clock.advance(5 * MS);
            let seen = watch.blocked(1_000_000).map(|b| (b.task, b.running_for));
            release.wait();
            seen
        })
    };
    assert_eq!(executor.tick(1).completed, 1);
    assert_eq!(watcher.join().unwrap(), Some((id, 5_000_000)));
    assert!(watch.blocked(0).is_none(), "no poll runs after the tick");
    assert_eq!(executor.block_on(task), Ok(()));
}

#[test]
fn a_healthy_executor_reports_nothing() {
    let clock = ManualClock::new();
    let executor = executor(&clock, ExecutorConfig::default());
    let monitor = executor.monitor();
    let signals: Vec<Signal> = (0..4).map(|_| Signal::default()).collect();
    for signal in &signals {
        drop(executor.try_spawn(serve(signal.clone())).unwrap());
    }
    let _yielder = executor.try_spawn(yielder()).unwrap();
    for _ in 0..40 {
        clock.advance(50 * MS);
        for signal in &signals {
            signal.fire();
        }
        executor.tick(usize::MAX);
        assert_eq!(monitor.diagnose(&thresholds()), []);
    }
    assert!(monitor.figures().polls >= 40 * 5);
}

#[test]
fn a_lost_wake_is_no_wake_and_only_that() {
    let clock = ManualClock::new();
    let executor = executor(&clock, ExecutorConfig::default());
    let monitor = executor.monitor();
    let healthy = Signal::default();
    drop(executor.try_spawn(serve(healthy.clone())).unwrap());
    let lost = executor.try_spawn(Forgotten).unwrap();
    for round in 1..=30 {
        clock.advance(50 * MS);
        healthy.fire();
        executor.tick(usize::MAX);
        let verdicts = monitor.diagnose(&thresholds());
        if round * 50 - 50 <= 1_000 {
            assert_eq!(verdicts, [], "round {round}");
        } else {
            assert_eq!(
                verdicts,
                [Verdict::NoWake {
                    name: None,
                    task: lost.id(),
                    waiting: (round * 50 - 50) * MS,
                    polls: 1,
                    waits_on: None,
                    waits_for: None,
                }],
                "round {round}"
            );
        }
    }
}

#[test]
fn woken_tasks_left_unpolled_are_ready_but_delayed_and_only_that() {
    let clock = ManualClock::new();
    let executor = executor(&clock, ExecutorConfig::default());
    let monitor = executor.monitor();
    let signals: Vec<Signal> = (0..3).map(|_| Signal::default()).collect();
    let first = executor.try_spawn(serve(signals[0].clone())).unwrap();
    for signal in &signals[1..] {
        drop(executor.try_spawn(serve(signal.clone())).unwrap());
    }
    executor.tick(usize::MAX);
    clock.advance(5 * MS);
    for signal in &signals {
        signal.fire();
    }
    // The executor's thread does other work: nobody ticks.
    clock.advance(9 * MS);
    assert_eq!(monitor.diagnose(&thresholds()), []);
    clock.advance(2 * MS);
    assert_eq!(
        monitor.diagnose(&thresholds()),
        [Verdict::ReadyButDelayed {
            name: None,
            task: first.id(),
            ready_for: 11 * MS,
            ready_tasks: 3,
        }]
    );
    executor.tick(usize::MAX);
    assert_eq!(monitor.diagnose(&thresholds()), []);
    assert_eq!(monitor.figures().wake_to_poll.max(), 11_000);
}

#[test]
fn a_poll_that_does_not_return_is_worker_blocked_seen_from_another_thread() {
    let clock = ManualClock::new();
    let behind = Signal::default();
    let blocked = {
        let behind = behind.clone();
        BlockedRunner::start(&clock, ExecutorConfig::default(), move |executor| {
            drop(executor.try_spawn(serve(behind)).unwrap());
        })
    };
    behind.fire(); // ready, behind the blocked poll
    clock.advance(99 * MS);
    assert_eq!(blocked.monitor.diagnose(&thresholds()), []);
    clock.advance(2 * MS);
    assert_eq!(
        blocked.monitor.diagnose(&thresholds()),
        [Verdict::WorkerBlocked {
            name: None,
            task: blocked.stuck,
            worker: None,
            running_for: 101 * MS,
            ready_behind: 1,
            left: None,
        }]
    );
    let monitor = blocked.finish();
    assert!(monitor.figures().long_polls >= 1);
}

/// An executor on a thread of its own whose second tick is held by a poll
/// that blocks (between two barriers) until `finish`.
struct BlockedRunner {
    monitor: dinah::executor::ExecutorMonitor,
    stuck: TaskId,
    release: Arc<Barrier>,
    runner: thread::JoinHandle<()>,
}

impl BlockedRunner {
    /// Builds the executor with `config`, lets `before` spawn onto it and
    /// runs one tick, then spawns the blocking task and runs the tick it
    /// blocks; returns once that poll has begun.
    fn start(
        clock: &ManualClock,
        config: ExecutorConfig,
        before: impl FnOnce(&LocalExecutor<'static, Measured>) + Send + 'static,
    ) -> Self {
        let entered = Arc::new(Barrier::new(2));
        let release = Arc::new(Barrier::new(2));
        let (sender, receiver) = mpsc::channel();
        let runner = {
            let (clock, entered, release) = (clock.clone(), entered.clone(), release.clone());
            thread::spawn(move || {
                let executor = executor(&clock, config);
                before(&executor);
                executor.tick(usize::MAX);
                let stuck = executor
                    .try_spawn(async move {
                        entered.wait();
                        release.wait(); // a blocking call inside a poll
                    })
                    .unwrap();
                sender.send((executor.monitor(), stuck.id())).unwrap();
                executor.tick(usize::MAX);
            })
        };
        let (monitor, stuck) = receiver.recv().unwrap();
        entered.wait();
        Self {
            monitor,
            stuck,
            release,
            runner,
        }
    }

    /// Lets the blocked poll return and the executor's thread end.
    fn finish(self) -> dinah::executor::ExecutorMonitor {
        self.release.wait();
        self.runner.join().unwrap();
        self.monitor
    }
}

#[test]
fn block_on_s_own_future_holding_the_thread_is_worker_blocked() {
    let clock = ManualClock::new();
    let (entered, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let (sender, receiver) = mpsc::channel();
    let behind = Signal::default();
    let runner = {
        let (clock, entered, release, behind) = (
            clock.clone(),
            entered.clone(),
            release.clone(),
            behind.clone(),
        );
        thread::spawn(move || {
            let executor = executor(&clock, ExecutorConfig::default());
            drop(executor.try_spawn(serve(behind)).unwrap());
            executor.tick(usize::MAX);
            sender.send(executor.monitor()).unwrap();
            // `block_on`'s own future makes the blocking call.
            executor.block_on(async move {
                entered.wait();
                release.wait();
            });
        })
    };
    let monitor = receiver.recv().unwrap();
    entered.wait();
    behind.fire(); // ready, behind the blocked poll
    clock.advance(101 * MS);
    let verdicts = monitor.diagnose(&thresholds());
    assert_eq!(causes(&verdicts), [Cause::WorkerBlocked], "{verdicts:?}");
    let Verdict::WorkerBlocked {
        name: None,
        running_for,
        ready_behind,
        worker,
        ..
    } = verdicts[0]
    else {
        unreachable!()
    };
    assert_eq!((running_for, ready_behind, worker), (101 * MS, 1, None));
    release.wait();
    runner.join().unwrap();
    assert_eq!(monitor.diagnose(&thresholds()), []);
}

#[test]
fn a_full_ingress_is_admission_full_for_its_window() {
    let clock = ManualClock::new();
    let executor = executor(
        &clock,
        ExecutorConfig {
            max_tasks: None,
            ingress_capacity: 1,
            ..ExecutorConfig::default()
        },
    );
    let monitor = executor.monitor();
    let spawner = executor.spawner();
    drop(spawner.try_spawn(async {}).unwrap());
    clock.advance(3 * MS);
    assert!(spawner.try_spawn(async {}).is_err());
    clock.advance(MS);
    assert_eq!(
        monitor.diagnose(&thresholds()),
        [Verdict::AdmissionFull {
            rejected_full: 1,
            since_last: MS,
            queued: 1,
            capacity: 1,
        }]
    );
    executor.tick(usize::MAX);
    clock.advance(Duration::from_secs(1));
    assert_eq!(monitor.diagnose(&thresholds()), []);
    assert_eq!(monitor.figures().rejected, 1);
}

/// A pool job that says it started, then waits to be let go.
fn gated(entered: &Arc<Barrier>, release: &Arc<Barrier>) -> impl FnOnce() + Send + 'static {
    let (entered, release) = (Arc::clone(entered), Arc::clone(release));
    move || {
        entered.wait();
        release.wait();
    }
}

fn worker_pool(clock: &ManualClock, capacity: usize) -> WorkerPool {
    WorkerPool::with_telemetry(
        CoreConfig::new(1).unwrap(),
        capacity,
        TelemetryConfig::new().with_clock(clock.clone()),
    )
    .unwrap()
}

fn blocking_pool(clock: &ManualClock, queue: usize) -> BlockingPool {
    BlockingPool::with_telemetry(
        BlockingConfig::new(1, queue),
        TelemetryConfig::new().with_clock(clock.clone()),
    )
    .unwrap()
}

#[test]
fn a_long_pool_job_is_worker_blocked_naming_its_worker() {
    let clock = ManualClock::new();
    let pool = worker_pool(&clock, 4);
    let monitor = pool.monitor().unwrap();
    let (entered, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let job = pool.try_spawn(gated(&entered, &release)).unwrap();
    let id = job.id();
    entered.wait();
    clock.advance(100 * MS);
    assert_eq!(monitor.diagnose(&thresholds()), []);
    clock.advance(MS);
    let verdicts = monitor.diagnose(&thresholds());
    assert!(
        matches!(
            verdicts.as_slice(),
            [Verdict::WorkerBlocked { task, name: None, worker: Some(_), running_for, ready_behind: 0, left: None }]
                if *task == id && *running_for == 101 * MS
        ),
        "{verdicts:?}"
    );
    release.wait();
    job.join().unwrap();
    assert_eq!(monitor.diagnose(&thresholds()), []);
    let figures = monitor.figures();
    assert_eq!((figures.run_time.max(), figures.long_runs), (101_000, 1));
}

#[test]
fn a_full_worker_queue_is_admission_full_and_only_that() {
    let clock = ManualClock::new();
    let pool = worker_pool(&clock, 1);
    let monitor = pool.monitor().unwrap();
    let (entered, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let running = pool.try_spawn(gated(&entered, &release)).unwrap();
    entered.wait();
    let queued = pool.try_spawn(|| ()).unwrap();
    assert!(matches!(pool.try_spawn(|| ()), Err(SpawnError::Full(_))));
    clock.advance(2 * MS);
    assert_eq!(
        monitor.diagnose(&thresholds()),
        [Verdict::AdmissionFull {
            rejected_full: 1,
            since_last: 2 * MS,
            queued: 1,
            capacity: 1,
        }]
    );
    release.wait();
    running.join().unwrap();
    queued.join().unwrap();
    clock.advance(Duration::from_secs(1));
    assert_eq!(monitor.diagnose(&thresholds()), []);
    let figures = monitor.figures();
    assert_eq!((figures.rejected_full, figures.max_queued), (1, 1));
    assert_eq!(figures.wait.count(), 2);
}

#[test]
fn a_full_blocking_pool_is_blocking_saturated_and_only_that() {
    let clock = ManualClock::new();
    let pool = blocking_pool(&clock, 1);
    let monitor = pool.monitor().unwrap();
    let (entered, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let running = pool.try_spawn(gated(&entered, &release)).unwrap();
    entered.wait();
    assert_eq!(monitor.diagnose(&thresholds()), []);
    let queued = pool.try_spawn(|| ()).unwrap();
    assert!(pool.try_spawn(|| ()).is_err());
    // The running job is far past `blocked`, yet only saturation is named.
    clock.advance(300 * MS);
    assert_eq!(
        monitor.diagnose(&thresholds()),
        [Verdict::BlockingSaturated {
            queued: 1,
            capacity: 1,
            running: 1,
            oldest_wait: 300 * MS,
            rejected_full: 1,
        }]
    );
    release.wait();
    running.join().unwrap();
    queued.join().unwrap();
    // The refusal stays evidence for the admission window, then goes.
    assert_eq!(
        causes(&monitor.diagnose(&thresholds())),
        [Cause::BlockingSaturated]
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(monitor.diagnose(&thresholds()), []);
    let report = pool.shutdown(ShutdownPolicy::Drain);
    assert_eq!(report.completed, 2);
}

#[test]
fn a_blocking_pool_at_its_in_flight_limit_with_nothing_waiting_is_healthy() {
    let clock = ManualClock::new();
    let pool = BlockingPool::with_telemetry(
        BlockingConfig::new(2, 2).bound(dinah::pool::AdmissionBound::InFlight),
        TelemetryConfig::new().with_clock(clock.clone()),
    )
    .unwrap();
    let monitor = pool.monitor().unwrap();
    let (entered, release) = (Arc::new(Barrier::new(3)), Arc::new(Barrier::new(3)));
    let jobs: Vec<_> = (0..2)
        .map(|_| pool.try_spawn(gated(&entered, &release)).unwrap())
        .collect();
    entered.wait();
    // At its limit: both running, nothing queued, nothing refused.
    clock.advance(50 * MS);
    let verdicts = monitor.diagnose(&thresholds());
    let stats = pool.stats();
    release.wait();
    for job in jobs {
        job.join().unwrap();
    }
    assert_eq!(verdicts, []);
    assert_eq!((stats.queued, stats.active, stats.rejected), (0, 2, 0));
}

#[test]
fn a_slow_blocking_queue_is_blocking_saturated() {
    let clock = ManualClock::new();
    let pool = blocking_pool(&clock, 8);
    let monitor = pool.monitor().unwrap();
    let (entered, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let running = pool.try_spawn(gated(&entered, &release)).unwrap();
    entered.wait();
    let queued = pool.try_spawn(|| ()).unwrap();
    clock.advance(101 * MS);
    assert_eq!(
        causes(&monitor.diagnose(&thresholds())),
        [Cause::BlockingSaturated]
    );
    release.wait();
    running.join().unwrap();
    queued.join().unwrap();
}

#[test]
fn pool_events_follow_each_task() {
    let clock = ManualClock::new();
    let trace = Arc::new(TraceBuffer::new(64).unwrap());
    let pool = WorkerPool::with_telemetry(
        CoreConfig::new(1).unwrap(),
        1,
        TelemetryConfig::new()
            .with_clock(clock.clone())
            .with_shared_sink(trace.clone()),
    )
    .unwrap();
    let (entered, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let first = pool.try_spawn(gated(&entered, &release)).unwrap();
    entered.wait();
    let second = pool.try_spawn(|| panic!("boom")).unwrap();
    assert!(pool.try_spawn(|| ()).is_err());
    release.wait();
    first.join().unwrap();
    assert!(second.join().is_err());
    let events: Vec<(u64, TraceEventKind)> = trace
        .drain()
        .iter()
        .map(|e| (e.task.get(), e.kind))
        .collect();
    use TraceEventKind::*;
    let (a, b) = (first_id(&events), 2);
    // The refused submission used the next id.
    assert_eq!(
        events,
        [
            (a, Submitted),
            (a, Started),
            (b, Submitted),
            (3, Rejected),
            (a, Completed),
            (b, Started),
            (b, Failed),
        ]
    );
}

fn first_id(events: &[(u64, TraceEventKind)]) -> u64 {
    let id = events[0].0;
    assert_eq!(TaskId::new(id).unwrap().get(), 1);
    id
}

#[test]
fn every_figure_the_operations_sheet_names_is_one_the_code_emits() {
    use dinah::pool::PoolStats;
    use dinah::telemetry::{ExecutorFigures, PoolFigures, TaskFigures, TaskPhase};
    let task = TaskId::new(1).unwrap();
    let emitted = [
        format!("{:?}", ExecutorFigures::<24>::new(1_000_000)),
        format!("{:?}", PoolFigures::default()),
        format!("{:?}", PoolStats::default()),
        format!("{:?}", dinah::time::TimerFigures::new()),
        format!(
            "{:?} {:?} {:?}",
            {
                let mut figures = TaskFigures::new(task, 1_000_000);
                figures.phase = Some(TaskPhase::Waiting { for_ticks: 0 });
                figures
            },
            TaskPhase::Polling { for_ticks: 0 },
            TaskPhase::Ready { for_ticks: 0 },
        ),
        format!(
            "{:?}",
            [
                Verdict::NoWake {
                    name: None,
                    task,
                    waiting: MS,
                    polls: 0,
                    waits_on: None,
                    waits_for: None,
                },
                Verdict::ReadyButDelayed {
                    name: None,
                    task,
                    ready_for: MS,
                    ready_tasks: 0
                },
                Verdict::WorkerBlocked {
                    name: None,
                    task,
                    worker: None,
                    running_for: MS,
                    ready_behind: 0,
                    left: None,
                },
                Verdict::BlockingSaturated {
                    queued: 0,
                    capacity: 0,
                    running: 0,
                    oldest_wait: MS,
                    rejected_full: 0
                },
                Verdict::AdmissionFull {
                    rejected_full: 0,
                    since_last: MS,
                    queued: 0,
                    capacity: 0
                },
                Verdict::Backpressure {
                    on: None,
                    waiting: 0,
                    longest: MS
                },
                Verdict::HostStarved {
                    task,
                    name: None,
                    worker: None,
                    delayed: MS,
                    cpu: dinah::telemetry::CpuShare::new(MS, MS, MS),
                },
            ]
        ),
        multi_executor_figures(),
        format!("{:?}", dinah::telemetry::WorkersLeft { left: 1, of: 2 }),
        format!("{:?}", dinah::sync::ChannelFigures::default()),
        format!("{:?}", dinah::sync::SemaphoreFigures::default()),
        format!("{:?}", dinah::io::IoFigures::default()),
        format!(
            "{:?}",
            dinah::io::IoWait {
                resource: "tcp".into(),
                interest: dinah::io::Interest::Read
            }
        ),
    ]
    .join(" ");
    let sheet = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operations.md"))
        .unwrap();
    let rows: Vec<&str> = sheet
        .split("## The operations sheet")
        .nth(1)
        .unwrap()
        .lines()
        .filter(|line| {
            line.starts_with("| ") && !line.starts_with("| symptom") && !line.starts_with("| ---")
        })
        .collect();
    assert_eq!(
        rows.len(),
        9,
        "one row per cause, and one each for timers and sockets"
    );
    let mut named = 0;
    for row in rows {
        let figures = row.split(" | ").nth(2).unwrap();
        for name in figures.split('`').skip(1).step_by(2) {
            let known = [
                "None",
                "tasks()",
                "monitor.timers()",
                "timer wait",
                "monitor.io()",
                "io wait",
            ]
            .contains(&name)
                || emitted.contains(&format!("{name}:"))
                || emitted.contains(&format!("{name} {{"));
            assert!(
                known,
                "the sheet names `{name}`, which the code does not emit"
            );
            named += 1;
        }
    }
    assert!(named >= 25, "only {named} figures named");
}

/// The `Debug` text of a multi-thread executor's figures. Miri runs that
/// executor only in its Tree Borrows pass (`ci/miri.sh`); there the names
/// are taken from the list its fields have natively.
fn multi_executor_figures() -> String {
    if cfg!(miri) {
        return "MultiFigures { workers: [WorkerFigures { worker: polls: busy: steals: stolen: \
                sleeps: queued: polling: woken_polls: wake_to_poll: longest_wake_to_poll: }], \
                global_queued: awake: searching: asleep: live_tasks: }"
            .to_owned();
    }
    format!(
        "{:?}",
        dinah::executor::MultiExecutor::with_config(dinah::executor::MultiConfig {
            workers: Some(1),
            ..dinah::executor::MultiConfig::default()
        })
        .unwrap()
        .figures()
    )
}

/// An executor whose telemetry reads `clock` and whose timers read a paused
/// clock, so both move only when the test says.
fn timed_executor(clock: &ManualClock) -> LocalExecutor<'static, Measured> {
    executor(
        clock,
        ExecutorConfig {
            start_paused: true,
            ..ExecutorConfig::default()
        },
    )
}

#[test]
fn a_task_waiting_on_an_armed_timer_is_not_no_wake() {
    let clock = ManualClock::new();
    let executor = timed_executor(&clock);
    let monitor = executor.monitor();
    let sleeper = executor
        .try_spawn(dinah::time::sleep(Duration::from_secs(10)))
        .unwrap();
    let lost = executor.try_spawn(Forgotten).unwrap();
    executor.tick(usize::MAX);
    clock.advance(Duration::from_secs(2));
    assert_eq!(
        monitor.diagnose(&thresholds()),
        [Verdict::NoWake {
            name: None,
            task: lost.id(),
            waiting: Duration::from_secs(2),
            polls: 1,
            waits_on: None,
            waits_for: None,
        }],
        "the sleeper {} has a known wake path",
        sleeper.id().get()
    );
    assert_eq!(monitor.timers().armed, 1);
}

#[test]
fn a_timer_left_unfired_past_its_deadline_is_ready_but_delayed() {
    let clock = ManualClock::new();
    let executor = timed_executor(&clock);
    let monitor = executor.monitor();
    let sleeper = executor
        .try_spawn(dinah::time::sleep(Duration::from_millis(5)))
        .unwrap();
    executor.tick(usize::MAX);
    // Nobody runs the executor: the timer is due at 5 ms and does not fire.
    clock.advance(15 * MS);
    assert_eq!(monitor.diagnose(&thresholds()), [], "within ready_delay");
    clock.advance(MS);
    assert_eq!(
        monitor.diagnose(&thresholds()),
        [Verdict::ReadyButDelayed {
            name: None,
            task: sleeper.id(),
            ready_for: 11 * MS,
            ready_tasks: 1,
        }]
    );
}

#[test]
fn a_timer_late_behind_a_blocked_poll_is_worker_blocked() {
    let clock = ManualClock::new();
    let config = ExecutorConfig {
        start_paused: true,
        ..ExecutorConfig::default()
    };
    let blocked = BlockedRunner::start(&clock, config, |executor| {
        drop(
            executor
                .try_spawn(dinah::time::sleep(Duration::from_millis(5)))
                .unwrap(),
        );
    });
    clock.advance(101 * MS);
    assert_eq!(
        blocked.monitor.diagnose(&thresholds()),
        [Verdict::WorkerBlocked {
            name: None,
            task: blocked.stuck,
            worker: None,
            running_for: 101 * MS,
            ready_behind: 1,
            left: None,
        }],
        "the overdue sleeper waits behind the blocked poll"
    );
    blocked.finish();
}

/// Producers waiting on a full named channel and a consumer waiting for
/// permits are the application's own bounds at work: a loaded system whose
/// waits stay short reports nothing, and once the consumer stops getting
/// permits, each line is reported as `Backpressure` by its name, never as
/// `NoWake`.
#[test]
fn waits_in_a_channel_or_semaphore_line_are_backpressure_by_name() {
    use dinah::sync::{SharedSemaphore, mpsc as channel};

    let clock = ManualClock::new();
    let executor = executor(&clock, ExecutorConfig::default());
    let monitor = executor.monitor();
    let (tx, mut rx) = channel::named::<u32>("intake", 1).unwrap();
    let credits = SharedSemaphore::named("credits", 0);
    let consumer_credits = credits.clone();
    drop(
        executor
            .try_spawn(async move {
                loop {
                    match consumer_credits.acquire().await {
                        Ok(permit) => permit.forget(),
                        Err(_) => return,
                    }
                    if rx.recv().await.is_none() {
                        return;
                    }
                }
            })
            .unwrap(),
    );
    for producer in 0..3 {
        let tx = tx.clone();
        drop(
            executor
                .try_spawn(async move { while tx.send(producer).await.is_ok() {} })
                .unwrap(),
        );
    }
    drop(tx);
    // Loaded and healthy: producers wait in line every round, briefly.
    for round in 0..30 {
        clock.advance(50 * MS);
        credits.add_permits(3).unwrap();
        executor.tick(usize::MAX);
        executor.tick(usize::MAX);
        assert_eq!(monitor.diagnose(&thresholds()), [], "round {round}");
    }
    // The consumer spends what it has left, at this same instant, and then
    // gets no more permits: both lines stall from now.
    while executor.tick(usize::MAX).polled > 0 {}
    assert_eq!(credits.available(), 0);
    let stalled_at = 31;
    for round in stalled_at..stalled_at + 30 {
        clock.advance(50 * MS);
        executor.tick(usize::MAX);
        let verdicts = monitor.diagnose(&thresholds());
        assert!(
            !causes(&verdicts).contains(&Cause::NoWake),
            "round {round}: {verdicts:?}"
        );
        let waited = (round - stalled_at + 1) * 50 * MS;
        if waited <= Duration::from_secs(1) {
            assert_eq!(verdicts, [], "round {round}");
            continue;
        }
        let lines: Vec<(Option<&str>, usize)> = verdicts
            .iter()
            .map(|verdict| match verdict {
                Verdict::Backpressure { on, waiting, .. } => (*on, *waiting),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(lines.len(), 2, "round {round}: {verdicts:?}");
        assert!(lines.contains(&(Some("intake"), 3)), "{verdicts:?}");
        assert!(lines.contains(&(Some("credits"), 1)), "{verdicts:?}");
    }
    let figures = credits.figures();
    assert_eq!((figures.name, figures.waiting), (Some("credits"), 1));
}

/// A named task is reported by its name as well as its number, in the
/// verdict and in its text, and in `tasks()`.
#[test]
fn verdicts_and_task_figures_name_a_named_task() {
    let clock = ManualClock::new();
    let executor = executor(&clock, ExecutorConfig::default());
    let monitor = executor.monitor();
    let lost = executor.try_spawn_named("uplink", Forgotten).unwrap();
    executor.tick(usize::MAX);
    clock.advance(Duration::from_secs(2));
    let verdicts = monitor.diagnose(&thresholds());
    assert_eq!(
        verdicts,
        [Verdict::NoWake {
            task: lost.id(),
            name: Some("uplink"),
            waiting: Duration::from_secs(2),
            polls: 1,
            waits_on: None,
            waits_for: None,
        }]
    );
    assert!(
        verdicts[0]
            .to_string()
            .starts_with("NoWake: task 1 (uplink) pending"),
        "{}",
        verdicts[0]
    );
    let tasks = monitor.tasks();
    assert_eq!((tasks[0].task, tasks[0].name), (lost.id(), Some("uplink")));
}

/// A task waiting on a timer it armed is never `NoWake`, however far off
/// the timer is: a due time that saturates (`Duration::MAX`, the end of the
/// clock) is still a due time, not the stamp's "unset".
#[test]
fn a_task_sleeping_past_the_end_of_the_clock_is_never_no_wake() {
    let clock = ManualClock::new();
    let executor = executor(&clock, ExecutorConfig::default());
    let monitor = executor.monitor();
    let thousand_years = Duration::from_secs(1_000 * 365 * 24 * 3_600);
    let sleepers = [
        executor
            .try_spawn(async { dinah::time::sleep(Duration::MAX).await })
            .unwrap(),
        executor
            .try_spawn(async { dinah::time::sleep_until(dinah::time::Instant::MAX).await })
            .unwrap(),
        executor
            .try_spawn(async move { dinah::time::sleep(thousand_years).await })
            .unwrap(),
    ];
    executor.tick(usize::MAX);
    for round in 0..10 {
        clock.advance(Duration::from_secs(10));
        executor.tick(usize::MAX);
        assert_eq!(monitor.diagnose(&thresholds()), [], "round {round}");
    }
    drop(sleepers);
}
