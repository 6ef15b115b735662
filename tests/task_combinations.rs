//! Every combination of how a task ends, when its cancellation is requested,
//! and where it sits in the queue, for each way dinah runs a queue.
//!
//! Whatever happens, every accepted task is accounted for exactly once: it
//! ran (and its result is in its FIFO slot, or the run resumed its panic), or
//! it is still queued in order; a task refused by a full queue is handed back
//! intact. On the async executor: it completed, failed with its error kept,
//! or was cancelled, and its future was dropped exactly once.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;

use dinah::BoundedQueue;
use dinah::queue::QueuePushError;
use dinah::sync::CancellationHandle;

mod support;

const TASKS: usize = 5;
const SUBJECT_PANIC: &str = "the subject task panicked";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Outcome {
    Ok,
    Err,
    Panic,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Cancel {
    Never,
    BeforeStart,
    WhileRunning,
}

#[derive(Clone, Copy, Debug)]
enum Position {
    First,
    Middle,
    Last,
}

impl Position {
    fn index(self) -> usize {
        match self {
            Self::First => 0,
            Self::Middle => TASKS / 2,
            Self::Last => TASKS - 1,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Runner {
    Sequential,
    Parallel(usize),
    /// `WorkerPool::run` on a pool of this many workers.
    Pool(usize),
}

/// What a task reports: its FIFO index and whether it saw a cancellation
/// request when it finished.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Report {
    index: usize,
    saw_cancellation: bool,
}

type TaskResult = Result<Report, Report>;
type Task<'a> = Box<dyn FnOnce() -> TaskResult + Send + 'a>;

struct Case {
    outcome: Outcome,
    cancel: Cancel,
    position: Position,
    runner: Runner,
}

fn run_case(case: &Case) {
    let label = format!(
        "{:?} / cancel {:?} / {:?} / {:?}",
        case.outcome, case.cancel, case.position, case.runner
    );
    let subject = case.position.index();
    let runs: std::sync::Arc<Vec<AtomicUsize>> =
        std::sync::Arc::new((0..=TASKS).map(|_| AtomicUsize::new(0)).collect());
    let token = CancellationHandle::new();
    let (started_tx, started_rx) = mpsc::channel::<()>();

    let task = |index: usize| -> Task<'_> {
        let (runs, token, started) = (
            std::sync::Arc::clone(&runs),
            token.clone(),
            started_tx.clone(),
        );
        let (outcome, cancel) = (case.outcome, case.cancel);
        Box::new(move || {
            runs[index].fetch_add(1, Ordering::SeqCst);
            if index == subject && cancel == Cancel::WhileRunning {
                started.send(()).unwrap();
                // A safe point: the task goes on only once the request
                // lands, which the canceller makes after seeing it start.
                while !token.is_cancellation_requested() {
                    thread::yield_now();
                }
            }
            let report = Report {
                index,
                saw_cancellation: index == subject && token.is_cancellation_requested(),
            };
            match outcome {
                _ if index != subject => Ok(report),
                Outcome::Ok => Ok(report),
                Outcome::Err => Err(report),
                Outcome::Panic => panic!("{}", SUBJECT_PANIC),
            }
        })
    };

    let mut queue: BoundedQueue<Task<'_>> = BoundedQueue::new(TASKS).unwrap();
    for index in 0..TASKS {
        queue
            .try_push(task(index))
            .unwrap_or_else(|_| unreachable!("sized to fit"));
    }
    // One more than fits is handed back, intact and still callable.
    let Err(QueuePushError::Full(handed_back)) = queue.try_push(task(TASKS)) else {
        panic!("{label}: a full queue must refuse");
    };
    if case.cancel == Cancel::BeforeStart {
        token.request_cancellation();
    }

    let outcome = thread::scope(|s| {
        if case.cancel == Cancel::WhileRunning {
            let token = token.clone();
            s.spawn(move || {
                started_rx.recv().unwrap();
                token.request_cancellation();
            });
        }
        panic::catch_unwind(AssertUnwindSafe(|| match case.runner {
            Runner::Sequential => run_until_empty(&mut queue),
            Runner::Parallel(workers) => run_parallel(&mut queue, workers).unwrap(),
            Runner::Pool(workers) => {
                dinah::WorkerPool::new(dinah::CoreConfig::new(workers).unwrap(), 1)
                    .unwrap()
                    .run(&mut queue)
            }
        }))
    });

    let saw = case.cancel != Cancel::Never;
    let expected = |index: usize| Report {
        index,
        saw_cancellation: index == subject && saw,
    };
    match (case.outcome, outcome) {
        (Outcome::Panic, Err(payload)) => {
            assert_eq!(
                support::panic_message(&*payload),
                Some(SUBJECT_PANIC),
                "{label}"
            );
            // The tasks that ran form a FIFO prefix containing the subject;
            // the rest is still queued, in order, and runs exactly once now.
            let ran = runs
                .iter()
                .take(TASKS)
                .take_while(|r| r.load(Ordering::SeqCst) == 1)
                .count();
            assert!(ran > subject, "{label}: the subject ran");
            if matches!(
                case.runner,
                Runner::Sequential | Runner::Parallel(1) | Runner::Pool(1)
            ) {
                assert_eq!(ran, subject + 1, "{label}: one at a time stops at once");
            }
            assert_eq!(queue.len(), TASKS - ran, "{label}");
            let rest = run_until_empty(&mut queue);
            assert_eq!(
                rest,
                (ran..TASKS).map(|i| Ok(expected(i))).collect::<Vec<_>>(),
                "{label}"
            );
        }
        (Outcome::Ok | Outcome::Err, Ok(results)) => {
            let wanted: Vec<TaskResult> = (0..TASKS)
                .map(|i| match case.outcome {
                    Outcome::Err if i == subject => Err(expected(i)),
                    _ => Ok(expected(i)),
                })
                .collect();
            assert_eq!(results, wanted, "{label}");
            assert!(queue.is_empty(), "{label}");
        }
        (outcome, result) => panic!("{label}: {outcome:?} ended as {:?}", result.is_ok()),
    }
    // Every queued task ran exactly once, across the run and the re-run.
    for (index, count) in runs.iter().take(TASKS).enumerate() {
        assert_eq!(count.load(Ordering::SeqCst), 1, "{label}: task {index}");
    }
    // The handed-back task never ran until its owner calls it.
    assert_eq!(runs[TASKS].load(Ordering::SeqCst), 0, "{label}");
    assert_eq!(
        handed_back().map(|r| r.index),
        Ok(TASKS),
        "{label}: handed back intact"
    );
}

fn every_case(runner: Runner) {
    support::quiet_panics_containing(&[SUBJECT_PANIC]);
    for outcome in [Outcome::Ok, Outcome::Err, Outcome::Panic] {
        for cancel in [Cancel::Never, Cancel::BeforeStart, Cancel::WhileRunning] {
            for position in [Position::First, Position::Middle, Position::Last] {
                run_case(&Case {
                    outcome,
                    cancel,
                    position,
                    runner,
                });
            }
        }
    }
}

#[test]
fn sequential_drain() {
    every_case(Runner::Sequential);
}

#[test]
fn run_parallel_one_worker() {
    every_case(Runner::Parallel(1));
}

#[test]
fn run_parallel_two_workers() {
    every_case(Runner::Parallel(2));
}

#[test]
fn run_parallel_more_workers_than_tasks() {
    every_case(Runner::Parallel(TASKS + 3));
}

#[test]
fn worker_pool_batch_one_worker() {
    every_case(Runner::Pool(1));
}

#[test]
fn worker_pool_batch_two_workers() {
    every_case(Runner::Pool(2));
}

#[test]
fn worker_pool_batch_more_workers_than_tasks() {
    every_case(Runner::Pool(TASKS + 3));
}

// The core AsyncExecutor: 4 slots, so of 5 tasks the last is handed back.

use std::future::{Future, poll_fn};
use std::task::Poll;

use dinah::executor::TaskRef;
use dinah::{AsyncExecutor, SpawnError, TaskState};
use support::models::{EXECUTOR_SLOTS, fresh_queue};

/// Counts its own drop.
struct Dropped<'a>(&'a AtomicUsize);

impl Drop for Dropped<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Task `index` of an executor case: it counts its polls and its drop,
/// yields once (so there is a poll to cancel between), then returns
/// `Ok(index)`, or, when it is the subject, ends as `outcome` says.
fn yielding_task<'a>(
    index: usize,
    subject: usize,
    outcome: Outcome,
    polls: &'a AtomicUsize,
    drops: &'a AtomicUsize,
) -> impl Future<Output = Result<usize, usize>> + 'a {
    let guard = Dropped(drops);
    let mut yielded = false;
    poll_fn(move |cx| {
        let _owned = &guard;
        polls.fetch_add(1, Ordering::SeqCst);
        if !yielded {
            yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(match outcome {
            _ if index != subject => Ok(index),
            Outcome::Ok => Ok(index),
            Outcome::Err => Err(index),
            Outcome::Panic => panic!("{}", SUBJECT_PANIC),
        })
    })
}

fn run_executor_case(outcome: Outcome, cancel: Cancel, position: Position) {
    let label = format!("{outcome:?} / cancel {cancel:?} / {position:?} / AsyncExecutor");
    let subject = position.index().min(EXECUTOR_SLOTS - 1);
    let polls: Vec<AtomicUsize> = (0..=EXECUTOR_SLOTS).map(|_| AtomicUsize::new(0)).collect();
    let drops: Vec<AtomicUsize> = (0..=EXECUTOR_SLOTS).map(|_| AtomicUsize::new(0)).collect();
    {
        let task = |index: usize| {
            Some(yielding_task(
                index,
                subject,
                outcome,
                &polls[index],
                &drops[index],
            ))
        };
        let mut storage: Vec<_> = (0..=EXECUTOR_SLOTS).map(|i| Box::pin(task(i))).collect();
        let mut executor: AsyncExecutor<'_, EXECUTOR_SLOTS, Result<usize, usize>> =
            AsyncExecutor::new(fresh_queue()).unwrap();
        let mut ids = Vec::new();
        let mut handed_back: Option<TaskRef<'_, Result<usize, usize>>> = None;
        for slot in &mut storage {
            match executor.try_spawn(slot.as_mut()) {
                Ok(id) => ids.push(id),
                Err(SpawnError::Full(task)) => handed_back = Some(task),
                Err(other) => panic!("{label}: {other}"),
            }
        }
        let handed_back = handed_back.expect("the fifth task does not fit");
        assert!(handed_back.has_future(), "{label}: handed back intact");
        if cancel == Cancel::BeforeStart {
            executor.cancel(ids[subject]).unwrap();
        }
        let mut panics = 0;
        for round in 0.. {
            assert!(round < 16, "{label}: the run must end");
            match panic::catch_unwind(AssertUnwindSafe(|| executor.tick(usize::MAX))) {
                Ok(report) if !report.work_remaining => break,
                Ok(_) => {}
                Err(payload) => {
                    assert_eq!(support::panic_message(&*payload), Some(SUBJECT_PANIC));
                    panics += 1;
                }
            }
            if round == 0 && cancel == Cancel::WhileRunning {
                executor.cancel(ids[subject]).unwrap();
            }
        }
        let subject_state = executor.task_state(ids[subject]);
        let failure = executor.take_failure(ids[subject]).map(|f| f.into_error());
        match (cancel, outcome) {
            (Cancel::BeforeStart, _) => {
                assert_eq!(subject_state, Some(TaskState::Cancelled), "{label}");
                assert_eq!(polls[subject].load(Ordering::SeqCst), 0, "{label}");
            }
            (Cancel::WhileRunning, _) => {
                assert_eq!(subject_state, Some(TaskState::Cancelled), "{label}");
                assert_eq!(polls[subject].load(Ordering::SeqCst), 1, "{label}");
            }
            (Cancel::Never, Outcome::Ok) => {
                assert_eq!(subject_state, Some(TaskState::Completed), "{label}")
            }
            (Cancel::Never, Outcome::Err) => {
                assert_eq!(subject_state, Some(TaskState::Failed), "{label}");
                assert_eq!(failure, Some(subject), "{label}: the error is kept");
            }
            (Cancel::Never, Outcome::Panic) => {
                assert_eq!(subject_state, Some(TaskState::Failed), "{label}");
                assert_eq!(panics, 1, "{label}");
            }
        }
        if !(cancel == Cancel::Never && outcome == Outcome::Err) {
            assert_eq!(failure, None, "{label}");
        }
        for (index, id) in ids.iter().enumerate().filter(|&(i, _)| i != subject) {
            assert_eq!(
                executor.task_state(*id),
                Some(TaskState::Completed),
                "{label}: {index}"
            );
        }
        // The handed-back task runs once a slot is free.
        let late = executor
            .try_spawn(handed_back)
            .unwrap_or_else(|_| panic!("{label}: a slot is free"));
        while executor.tick(usize::MAX).work_remaining {}
        assert_eq!(
            executor.task_state(late),
            Some(TaskState::Completed),
            "{label}"
        );
    }
    // Every future was dropped exactly once: at completion or cancellation
    // by the executor, or with its storage (a panicked task's).
    for (index, count) in drops.iter().enumerate() {
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "{label}: task {index} dropped once"
        );
    }
}

#[test]
fn async_executor() {
    support::quiet_panics_containing(&[SUBJECT_PANIC]);
    for outcome in [Outcome::Ok, Outcome::Err, Outcome::Panic] {
        for cancel in [Cancel::Never, Cancel::BeforeStart, Cancel::WhileRunning] {
            for position in [Position::First, Position::Middle, Position::Last] {
                run_executor_case(outcome, cancel, position);
            }
        }
    }
}

// The hosted LocalExecutor, capped at 4 live tasks: the fifth is handed back.

use dinah::executor::ExecutorConfig;
use dinah::{JoinError, LocalExecutor};

fn run_local_case(outcome: Outcome, cancel: Cancel, position: Position) {
    let label = format!("{outcome:?} / cancel {cancel:?} / {position:?} / LocalExecutor");
    const CAP: usize = 4;
    let subject = position.index().min(CAP - 1);
    let polls: Vec<AtomicUsize> = (0..=CAP).map(|_| AtomicUsize::new(0)).collect();
    let drops: Vec<AtomicUsize> = (0..=CAP).map(|_| AtomicUsize::new(0)).collect();
    {
        let task =
            |index: usize| yielding_task(index, subject, outcome, &polls[index], &drops[index]);
        let executor = LocalExecutor::with_config(ExecutorConfig {
            max_tasks: Some(CAP),
            ..ExecutorConfig::default()
        })
        .unwrap();
        let mut handles = Vec::new();
        let mut handed_back = None;
        for index in 0..=CAP {
            match executor.try_spawn(task(index)) {
                Ok(handle) => handles.push(handle),
                Err(SpawnError::Full(task)) => handed_back = Some(task),
                Err(other) => panic!("{label}: {other}"),
            }
        }
        let handed_back = handed_back.expect("the fifth task does not fit");
        assert_eq!(
            polls[CAP].load(Ordering::SeqCst),
            0,
            "{label}: handed back intact"
        );
        if cancel == Cancel::BeforeStart {
            assert!(handles[subject].cancel());
        }
        for round in 0.. {
            assert!(round < 16, "{label}: the run must end");
            // A panicking task never unwinds out of the tick.
            if !executor.tick(usize::MAX).work_remaining {
                break;
            }
            if round == 0 && cancel == Cancel::WhileRunning {
                assert!(handles[subject].cancel());
            }
        }
        let results: Vec<_> = handles.iter_mut().map(|h| h.try_take()).collect();
        let expected = match (cancel, outcome) {
            (Cancel::BeforeStart | Cancel::WhileRunning, _) => Err(JoinError::Cancelled),
            (Cancel::Never, Outcome::Ok) => Ok(Ok(subject)),
            (Cancel::Never, Outcome::Err) => Ok(Err(subject)),
            (Cancel::Never, Outcome::Panic) => Err(JoinError::Panicked(SUBJECT_PANIC.into())),
        };
        assert_eq!(results[subject], Some(expected), "{label}");
        let subject_polls = polls[subject].load(Ordering::SeqCst);
        match cancel {
            Cancel::BeforeStart => assert_eq!(subject_polls, 0, "{label}"),
            Cancel::WhileRunning => assert_eq!(subject_polls, 1, "{label}"),
            Cancel::Never => assert_eq!(subject_polls, 2, "{label}"),
        }
        for (index, result) in results.iter().enumerate().filter(|&(i, _)| i != subject) {
            assert_eq!(result, &Some(Ok(Ok(index))), "{label}: {index}");
        }
        // A finished handle cannot cancel any more.
        assert!(!handles[subject].cancel(), "{label}");
        // The handed-back task runs once there is room.
        let mut late = executor
            .try_spawn(handed_back)
            .unwrap_or_else(|_| panic!("{label}: there is room"));
        while executor.tick(usize::MAX).work_remaining {}
        assert_eq!(late.try_take(), Some(Ok(Ok(CAP))), "{label}");
        assert_eq!(executor.shutdown().left(), 0, "{label}: nothing left");
    }
    for (index, count) in drops.iter().enumerate() {
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "{label}: task {index} dropped once"
        );
    }
}

#[test]
fn local_executor() {
    support::quiet_panics_containing(&[SUBJECT_PANIC]);
    for outcome in [Outcome::Ok, Outcome::Err, Outcome::Panic] {
        for cancel in [Cancel::Never, Cancel::BeforeStart, Cancel::WhileRunning] {
            for position in [Position::First, Position::Middle, Position::Last] {
                run_local_case(outcome, cancel, position);
            }
        }
    }
}

// Both pools, one thread each behind a gate, room for 4 queued tasks: the
// fifth is handed back and runs once there is room.

use dinah::JoinHandle;
use dinah::pool::ShutdownPolicy;
use dinah::queue::{run_parallel, run_until_empty};
use support::models::ModelPool;

/// Counts its drops in one shared counter.
struct DroppedShared(std::sync::Arc<AtomicUsize>);

impl Drop for DroppedShared {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn run_pool_case(pool: ModelPool, outcome: Outcome, cancel: Cancel, position: Position) {
    use std::sync::Arc;
    const CAP: usize = 4;
    let kind = pool.name();
    let label = format!("{outcome:?} / cancel {cancel:?} / {position:?} / {kind}");
    let subject = position.index().min(CAP - 1);
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..=CAP).map(|_| AtomicUsize::new(0)).collect());
    let drops: Vec<Arc<AtomicUsize>> = (0..=CAP).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    let (subject_started_tx, subject_started) = mpsc::channel::<()>();
    let (proceed, proceed_rx) = mpsc::channel::<()>();
    let proceed_rx = Arc::new(std::sync::Mutex::new(proceed_rx));

    let task = |index: usize| {
        let (runs, probe) = (Arc::clone(&runs), DroppedShared(Arc::clone(&drops[index])));
        let (started, proceed) = (subject_started_tx.clone(), Arc::clone(&proceed_rx));
        move || -> Result<usize, usize> {
            let _probe = probe;
            runs[index].fetch_add(1, Ordering::SeqCst);
            if index != subject {
                return Ok(index);
            }
            if cancel == Cancel::WhileRunning {
                started.send(()).unwrap();
                proceed.lock().unwrap().recv().unwrap();
            }
            match outcome {
                Outcome::Ok => Ok(index),
                Outcome::Err => Err(index),
                Outcome::Panic => panic!("{}", SUBJECT_PANIC),
            }
        }
    };

    // Hold the one thread so that nothing queued starts yet.
    let (gate_started_tx, gate_started) = mpsc::channel::<()>();
    let (release, release_rx) = mpsc::channel::<()>();
    let gate = pool
        .spawn(move || {
            gate_started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
        .unwrap_or_else(|_| panic!("{label}: room for the gate"));
    gate_started.recv().unwrap();

    let mut handles = Vec::new();
    let mut handed_back = None;
    for index in 0..=CAP {
        match pool.spawn(task(index)) {
            Ok(handle) => handles.push(handle),
            Err(SpawnError::Full(task)) => handed_back = Some(task),
            Err(other) => panic!("{label}: {other}"),
        }
    }
    let handed_back = handed_back.expect("the fifth task does not fit");
    assert_eq!(
        runs[CAP].load(Ordering::SeqCst),
        0,
        "{label}: handed back intact"
    );
    if cancel == Cancel::BeforeStart {
        assert!(handles[subject].cancel(), "{label}");
    }
    release.send(()).unwrap();
    if cancel == Cancel::WhileRunning {
        subject_started.recv().unwrap();
        // Started: too late to cancel; it runs to its end.
        assert!(!handles[subject].cancel(), "{label}");
        proceed.send(()).unwrap();
    }
    gate.join().unwrap();

    let results: Vec<_> = handles.into_iter().map(JoinHandle::join).collect();
    let expected = match (cancel, outcome) {
        (Cancel::BeforeStart, _) => Err(JoinError::Cancelled),
        (_, Outcome::Ok) => Ok(Ok(subject)),
        (_, Outcome::Err) => Ok(Err(subject)),
        (_, Outcome::Panic) => Err(JoinError::Panicked(SUBJECT_PANIC.into())),
    };
    assert_eq!(results[subject], expected, "{label}");
    for (index, result) in results.iter().enumerate().filter(|&(i, _)| i != subject) {
        assert_eq!(result, &Ok(Ok(index)), "{label}: {index}");
    }
    let subject_runs = usize::from(cancel != Cancel::BeforeStart);
    assert_eq!(
        runs[subject].load(Ordering::SeqCst),
        subject_runs,
        "{label}"
    );

    // The handed-back task runs once there is room.
    let late = pool
        .spawn(handed_back)
        .unwrap_or_else(|_| panic!("{label}: there is room"));
    assert_eq!(late.join(), Ok(Ok(CAP)), "{label}");
    let report = pool.shutdown(ShutdownPolicy::Drain);
    let panicked = u64::from(outcome == Outcome::Panic && cancel != Cancel::BeforeStart);
    let cancelled = u64::from(cancel == Cancel::BeforeStart);
    assert_eq!(
        (report.completed, report.panicked, report.cancelled),
        (6 - panicked - cancelled, panicked, cancelled),
        "{label}: gate + 5 tasks accounted for"
    );
    for (index, count) in runs.iter().enumerate().filter(|&(i, _)| i != subject) {
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "{label}: task {index} ran once"
        );
    }
    for (index, count) in drops.iter().enumerate() {
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "{label}: task {index} dropped once"
        );
    }
}

fn every_pool_case(build: fn() -> ModelPool) {
    support::quiet_panics_containing(&[SUBJECT_PANIC]);
    for outcome in [Outcome::Ok, Outcome::Err, Outcome::Panic] {
        for cancel in [Cancel::Never, Cancel::BeforeStart, Cancel::WhileRunning] {
            for position in [Position::First, Position::Middle, Position::Last] {
                run_pool_case(build(), outcome, cancel, position);
            }
        }
    }
}

#[test]
fn worker_pool_handles() {
    every_pool_case(|| ModelPool::one_worker(4));
}

#[test]
fn blocking_pool_handles() {
    every_pool_case(|| ModelPool::one_blocking_thread(4));
}

// ---- A panic in each kind of user code, on every runtime ----
//
// A task runs more of its user's code than its poll: its future's (or
// closure's) destructor when cancelled and when it completes, the destructor
// of a result nobody reads, the telemetry sink and clock, and the waker of
// whoever awaits its handle. Whichever panics, every handle resolves exactly
// once, every slot and place comes back, the counts add up, and the runtime
// serves the next task; the panic is the task's failure, or reaches the
// caller of the entry point that ran it.
//
// The telemetry sites need the `telemetry` feature, as do the runtimes
// built to measure themselves here.
#[cfg(feature = "telemetry")]
mod panics_in_user_code {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::task::Wake;

    use dinah::pool::BlockingConfig;
    use dinah::telemetry::{Clock, Sink, TelemetryConfig, TraceEvent, TraceEventKind};
    use dinah::{BlockingPool, CoreConfig, JoinHandle, WorkerPool, yield_now};

    const SITE_PANIC: &str = "user code panicked on purpose";

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Site {
        /// The task's poll, or a pool task's closure.
        Body,
        /// The future's (or closure's) destructor, when it is cancelled.
        DropOnCancel,
        /// A destructor that runs as the task completes.
        DropOnCompletion,
        /// The destructor of the task's result, which nobody reads.
        UnreadOutput,
        /// The telemetry sink (the core's: an observer's sink).
        Sink,
        /// The telemetry clock (the core's: a timed queue's tick source).
        Clock,
        /// The waker of a task awaiting the handle.
        Waker,
    }

    const SITES: [Site; 7] = [
        Site::Body,
        Site::DropOnCancel,
        Site::DropOnCompletion,
        Site::UnreadOutput,
        Site::Sink,
        Site::Clock,
        Site::Waker,
    ];

    /// Panics when dropped.
    struct Bomb;

    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("{}", SITE_PANIC);
        }
    }

    /// Panics: a task's body that fails that way.
    fn explode<T>() -> T {
        panic!("{}", SITE_PANIC);
    }

    fn site_panic(payload: &(dyn std::any::Any + Send)) {
        assert_eq!(support::panic_message(payload), Some(SITE_PANIC));
    }

    /// A sink that panics on the first event of `kind` once armed.
    struct TrapSink {
        kind: TraceEventKind,
        armed: AtomicBool,
    }

    impl TrapSink {
        fn new(kind: TraceEventKind) -> Arc<Self> {
            Arc::new(Self {
                kind,
                armed: AtomicBool::new(false),
            })
        }
    }

    impl Sink for TrapSink {
        fn record(&self, event: TraceEvent) {
            if event.kind == self.kind && self.armed.swap(false, Ordering::SeqCst) {
                panic!("{}", SITE_PANIC);
            }
        }
    }

    /// A clock that counts its readings and, armed with `n`, panics on the
    /// `n`-th reading from then on.
    #[derive(Clone, Default)]
    struct TrapClock {
        reads: Arc<AtomicUsize>,
        countdown: Arc<AtomicUsize>,
    }

    impl TrapClock {
        fn arm(&self, n: usize) {
            self.countdown.store(n, Ordering::SeqCst);
        }
    }

    impl Clock for TrapClock {
        fn now(&self) -> u64 {
            let mut left = self.countdown.load(Ordering::SeqCst);
            while left > 0 {
                match self.countdown.compare_exchange(
                    left,
                    left - 1,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                ) {
                    Ok(_) if left == 1 => panic!("{}", SITE_PANIC),
                    Ok(_) => break,
                    Err(actual) => left = actual,
                }
            }
            self.reads.fetch_add(1, Ordering::SeqCst) as u64
        }
        fn ticks_per_second(&self) -> u64 {
            1_000_000_000
        }
    }

    /// A waker that panics when woken.
    struct TrapWaker;

    impl Wake for TrapWaker {
        fn wake(self: Arc<Self>) {
            panic!("{}", SITE_PANIC);
        }
    }

    /// Polls `future` once with a waker that panics when woken (so whoever
    /// finishes it meets that panic); it must still be pending.
    fn await_with_trap_waker<F: Future + Unpin>(future: &mut F) {
        let waker = Waker::from(Arc::new(TrapWaker));
        let poll = std::pin::Pin::new(future).poll(&mut Context::from_waker(&waker));
        assert!(poll.is_pending());
    }

    /// The task a site's test spawns: the subject, whose handle says how
    /// it ended, or (for `UnreadOutput`) a task whose handle is dropped at
    /// once.
    enum SiteTask {
        Subject(std::pin::Pin<Box<dyn Future<Output = Result<u32, ()>> + Send>>),
        Unread(std::pin::Pin<Box<dyn Future<Output = Result<Bomb, ()>> + Send>>),
    }

    fn site_task(site: Site) -> SiteTask {
        match site {
            Site::Body => SiteTask::Subject(Box::pin(async {
                yield_now().await;
                explode::<Result<u32, ()>>()
            })),
            Site::DropOnCancel => {
                let bomb = Bomb;
                SiteTask::Subject(Box::pin(async move {
                    let _bomb = bomb;
                    std::future::pending::<Result<u32, ()>>().await
                }))
            }
            Site::DropOnCompletion => SiteTask::Subject(Box::pin(async {
                let _bomb = Bomb;
                yield_now().await;
                Ok(1)
            })),
            Site::UnreadOutput => SiteTask::Unread(Box::pin(async {
                yield_now().await;
                Ok(Bomb)
            })),
            Site::Sink | Site::Clock | Site::Waker => SiteTask::Subject(Box::pin(async {
                yield_now().await;
                Ok(1)
            })),
        }
    }

    fn local_executor_site(site: Site) {
        let label = format!("LocalExecutor / {site:?}");
        let sink = TrapSink::new(TraceEventKind::PollEnded);
        let clock = TrapClock::default();
        let executor = LocalExecutor::with_telemetry(
            ExecutorConfig {
                max_tasks: Some(2),
                ..ExecutorConfig::default()
            },
            TelemetryConfig::new()
                .with_shared_sink(sink.clone())
                .with_clock(clock.clone()),
        )
        .unwrap();
        let subject: Option<JoinHandle<Result<u32, ()>>> = match site_task(site) {
            SiteTask::Subject(task) => Some(executor.try_spawn(task).unwrap()),
            SiteTask::Unread(task) => {
                drop(executor.try_spawn(task).unwrap());
                None
            }
        };
        let bystander = executor
            .try_spawn(async {
                yield_now().await;
                Ok::<_, ()>(2)
            })
            .unwrap();
        let mut subject = subject;
        match site {
            Site::DropOnCancel => assert!(subject.as_ref().unwrap().cancel(), "{label}"),
            Site::Sink => sink.armed.store(true, Ordering::SeqCst),
            Site::Clock => clock.arm(1),
            Site::Waker => await_with_trap_waker(subject.as_mut().unwrap()),
            _ => {}
        }
        let mut escaped = 0;
        for round in 0.. {
            assert!(round < 8, "{label}: the run ends");
            match panic::catch_unwind(AssertUnwindSafe(|| executor.tick(usize::MAX))) {
                Ok(report) if !report.work_remaining => break,
                Ok(_) => {}
                Err(payload) => {
                    site_panic(&*payload);
                    escaped += 1;
                }
            }
        }
        // A hook's panic reaches the caller of the tick that ran it; the
        // task's own code's panic is the task's failure.
        let hook = matches!(site, Site::Sink | Site::Clock);
        assert_eq!(escaped, usize::from(hook), "{label}");
        let expected = match site {
            Site::Body | Site::DropOnCancel | Site::DropOnCompletion => {
                Some(Err(JoinError::Panicked(SITE_PANIC.into())))
            }
            Site::UnreadOutput => None,
            Site::Sink | Site::Clock | Site::Waker => Some(Ok(Ok(1))),
        };
        assert_eq!(
            subject.as_mut().and_then(JoinHandle::try_take),
            expected,
            "{label}"
        );
        let mut bystander = bystander;
        assert_eq!(bystander.try_take(), Some(Ok(Ok(2))), "{label}");
        assert_eq!(executor.live_tasks(), 0, "{label}: every place is back");
        let next = executor.try_spawn(async { Ok::<_, ()>(3) }).unwrap();
        assert_eq!(
            executor.block_on(next),
            Ok(Ok(3)),
            "{label}: serves the next task"
        );
        let figures = executor.monitor().figures();
        assert_eq!(figures.spawned, 3, "{label}");
        assert_eq!(executor.shutdown().left(), 0, "{label}");
    }

    #[test]
    fn local_executor_survives_a_panic_in_every_kind_of_user_code() {
        support::quiet_panics_containing(&[SITE_PANIC]);
        for site in SITES {
            local_executor_site(site);
        }
    }

    /// The multi-thread executor takes no clock of the user's; its sink is
    /// called on the workers, where a panic is caught and the sink
    /// switched off, and the tasks run on.
    fn multi_executor_site(site: Site) {
        use dinah::executor::{MultiConfig, MultiExecutor};
        let label = format!("MultiExecutor / {site:?}");
        let sink = TrapSink::new(TraceEventKind::PollEnded);
        let config = MultiConfig {
            workers: Some(2),
            ..MultiConfig::default()
        };
        let executor = if site == Site::Sink {
            MultiExecutor::with_sink(config, sink.clone()).unwrap()
        } else {
            MultiExecutor::with_config(config).unwrap()
        };
        let handle = executor.handle();
        let subject: Option<JoinHandle<Result<u32, ()>>> = match site {
            Site::Clock => return,
            Site::Waker => {
                // The task cannot end before the trap waker is in place.
                let (go, wait) = std::sync::mpsc::channel::<()>();
                let blocking = handle.clone();
                let mut subject = handle
                    .try_spawn(async move {
                        let job = blocking.spawn_blocking(move || wait.recv()).await.unwrap();
                        job.await.unwrap().unwrap();
                        Ok(1)
                    })
                    .unwrap();
                await_with_trap_waker(&mut subject);
                go.send(()).unwrap();
                Some(subject)
            }
            _ => {
                if site == Site::Sink {
                    sink.armed.store(true, Ordering::SeqCst);
                }
                match site_task(site) {
                    SiteTask::Subject(task) => Some(handle.try_spawn(task).unwrap()),
                    SiteTask::Unread(task) => {
                        // Detached at once: the executor drops the output.
                        drop(handle.try_spawn(task).unwrap());
                        None
                    }
                }
            }
        };
        let bystander = handle
            .try_spawn(async {
                yield_now().await;
                Ok::<_, ()>(2)
            })
            .unwrap();
        if site == Site::DropOnCancel {
            assert!(subject.as_ref().unwrap().cancel(), "{label}");
        }
        let expected = match site {
            Site::Body | Site::DropOnCancel | Site::DropOnCompletion => {
                Some(Err(JoinError::Panicked(SITE_PANIC.into())))
            }
            Site::UnreadOutput => None,
            _ => Some(Ok(Ok(1))),
        };
        let got = subject.map(|subject| executor.block_on(subject));
        assert_eq!(got, expected, "{label}");
        assert_eq!(executor.block_on(bystander), Ok(Ok(2)), "{label}");
        let next = handle.try_spawn(async { Ok::<_, ()>(3) }).unwrap();
        assert_eq!(
            executor.block_on(next),
            Ok(Ok(3)),
            "{label}: serves the next task"
        );
        // Every task has left: the unread output was dropped with its panic
        // caught, and the shutdown finds nothing live.
        assert_eq!(executor.sink_failed(), site == Site::Sink, "{label}");
        let report = executor.shutdown();
        assert_eq!(report.left(), 0, "{label}");
    }

    #[test]
    fn multi_executor_survives_a_panic_in_every_kind_of_user_code() {
        support::quiet_panics_containing(&[SITE_PANIC]);
        for site in SITES {
            multi_executor_site(site);
        }
    }

    /// The core executor's timed queues read this clock; armed, its next
    /// reading panics.
    #[derive(Default)]
    struct TrapTicks;

    static TRAP_TICKS_ARMED: AtomicBool = AtomicBool::new(false);

    impl Clock for TrapTicks {
        fn now(&self) -> u64 {
            if TRAP_TICKS_ARMED.swap(false, Ordering::SeqCst) {
                panic!("{}", SITE_PANIC);
            }
            0
        }
        fn ticks_per_second(&self) -> u64 {
            1
        }
    }

    /// An observer whose events go to a trap sink.
    struct TrapObserver(Arc<TrapSink>);

    impl dinah::telemetry::PollObserver for TrapObserver {
        fn poll_started(&self, task: dinah::TaskId) {
            self.0
                .record(TraceEvent::new(task, TraceEventKind::PollStarted));
        }
        fn poll_ended(&self, task: dinah::TaskId) {
            self.0
                .record(TraceEvent::new(task, TraceEventKind::PollEnded));
        }
    }

    fn async_executor_site(site: Site) {
        use dinah::ReadyQueue;
        use dinah::telemetry::Timed;
        type Queue = ReadyQueue<2, Timed<TrapTicks>>;
        let label = format!("AsyncExecutor / {site:?}");
        let queue: &'static Queue = support::keep_forever(ReadyQueue::new());
        let observer = TrapObserver(TrapSink::new(TraceEventKind::PollEnded));
        type Output = Result<Bomb, ()>;
        let mut subject = Box::pin(Some(async move {
            match site {
                Site::Body => {
                    yield_now().await;
                    explode()
                }
                Site::DropOnCancel => {
                    let _bomb = Bomb;
                    std::future::pending::<Output>().await
                }
                Site::DropOnCompletion => {
                    let _bomb = Bomb;
                    yield_now().await;
                    Err(())
                }
                // The executor drops a task's value: this one's destructor
                // panics there.
                Site::UnreadOutput => {
                    yield_now().await;
                    Ok(Bomb)
                }
                _ => {
                    yield_now().await;
                    Err(())
                }
            }
        }));
        let mut bystander = Box::pin(Some(async {
            yield_now().await;
            Err::<Bomb, ()>(())
        }));
        let mut next = Box::pin(Some(async { Err::<Bomb, ()>(()) }));
        let mut executor: AsyncExecutor<'_, 2, Output, Timed<TrapTicks>> =
            AsyncExecutor::new(queue).unwrap();
        let id = executor.try_spawn(subject.as_mut()).unwrap();
        let other = executor.try_spawn(bystander.as_mut()).unwrap();
        match site {
            Site::DropOnCancel => {
                // Polled once, so that the future holds what it drops.
                executor.tick(1);
                executor.cancel(id).unwrap();
            }
            Site::Sink => observer.0.armed.store(true, Ordering::SeqCst),
            Site::Clock => TRAP_TICKS_ARMED.store(true, Ordering::SeqCst),
            _ => {}
        }
        let mut escaped = 0;
        for round in 0.. {
            assert!(round < 8, "{label}: the run ends");
            match panic::catch_unwind(AssertUnwindSafe(|| executor.tick_observed(8, &observer))) {
                Ok(report) if !report.work_remaining => break,
                Ok(_) => {}
                Err(payload) => {
                    site_panic(&*payload);
                    escaped += 1;
                }
            }
        }
        // Without a catch in the core, every panic reaches the caller, and the
        // task it came from ends `Failed`.
        assert_eq!(escaped, 1, "{label}");
        assert_eq!(executor.task_state(id), Some(TaskState::Failed), "{label}");
        assert!(
            executor.take_failure(id).is_none(),
            "{label}: no error value"
        );
        assert_eq!(
            executor.task_state(other),
            Some(TaskState::Failed),
            "{label}"
        );
        assert_eq!(
            executor.take_failure(other).map(|f| f.into_error()),
            Some(()),
            "{label}: the bystander's own error, kept"
        );
        assert_eq!(executor.live_tasks(), 0, "{label}");
        // The subject's slot comes back: one more task fits, and runs.
        let late = executor
            .try_spawn(next.as_mut())
            .unwrap_or_else(|_| panic!("{label}: a slot"));
        while executor.tick(8).work_remaining {}
        assert_eq!(
            executor.task_state(late),
            Some(TaskState::Failed),
            "{label}"
        );
    }

    #[test]
    fn async_executor_survives_a_panic_in_every_kind_of_user_code() {
        support::quiet_panics_containing(&[SITE_PANIC]);
        for site in SITES.into_iter().filter(|&site| site != Site::Waker) {
            async_executor_site(site);
        }
    }

    #[derive(Clone, Copy, Debug)]
    enum PoolKind {
        Worker,
        Blocking,
    }

    enum AnyPool {
        Worker(WorkerPool),
        Blocking(BlockingPool),
    }

    impl AnyPool {
        fn spawn<F, R>(&self, f: F) -> JoinHandle<R>
        where
            F: FnOnce() -> R + Send + 'static,
            R: Send + 'static,
        {
            match self {
                Self::Worker(pool) => pool.try_spawn(f),
                Self::Blocking(pool) => pool.try_spawn(f),
            }
            .unwrap_or_else(|_| panic!("room in the pool"))
        }

        fn shutdown(self) -> dinah::pool::PoolReport {
            match self {
                Self::Worker(pool) => pool.shutdown(ShutdownPolicy::Drain),
                Self::Blocking(pool) => pool.shutdown(ShutdownPolicy::Drain),
            }
        }
    }

    fn pool_site(kind: PoolKind, site: Site) {
        let label = format!("{kind:?} / {site:?}");
        let sink = TrapSink::new(TraceEventKind::Started);
        let clock = TrapClock::default();
        let telemetry = TelemetryConfig::new()
            .with_shared_sink(sink.clone())
            .with_clock(clock.clone());
        let pool = match kind {
            PoolKind::Worker => AnyPool::Worker(
                WorkerPool::with_telemetry(CoreConfig::new(1).unwrap(), 4, telemetry).unwrap(),
            ),
            PoolKind::Blocking => AnyPool::Blocking(
                BlockingPool::with_telemetry(BlockingConfig::new(1, 4), telemetry).unwrap(),
            ),
        };
        // The one thread waits at a gate, so the subject is queued behind it.
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let (entered_tx, entered_rx) = mpsc::channel::<()>();
        let gate = pool.spawn(move || {
            entered_tx.send(()).unwrap();
            gate_rx.recv().unwrap();
        });
        entered_rx.recv().unwrap();
        let mut subject: Option<JoinHandle<u32>> = match site {
            Site::Body => Some(pool.spawn(explode)),
            Site::DropOnCancel => {
                let bomb = Bomb;
                Some(pool.spawn(move || {
                    let _bomb = &bomb;
                    1
                }))
            }
            Site::DropOnCompletion => {
                let bomb = Bomb;
                Some(pool.spawn(move || {
                    let _bomb = bomb;
                    1
                }))
            }
            Site::UnreadOutput => {
                drop(pool.spawn(|| Bomb));
                None
            }
            Site::Sink | Site::Clock | Site::Waker => Some(pool.spawn(|| 1)),
        };
        match site {
            Site::DropOnCancel => assert!(subject.as_ref().unwrap().cancel(), "{label}"),
            Site::Sink => sink.armed.store(true, Ordering::SeqCst),
            // The gate's end reads the clock first, then the subject's start.
            Site::Clock => clock.arm(2),
            Site::Waker => await_with_trap_waker(subject.as_mut().unwrap()),
            _ => {}
        }
        gate_tx.send(()).unwrap();
        gate.join().unwrap();
        let expected = match site {
            Site::DropOnCancel => Some(Err(JoinError::Cancelled)),
            // The task's own code, or a hook while it ran: its failure.
            Site::Body | Site::DropOnCompletion | Site::Sink | Site::Clock => {
                Some(Err(JoinError::Panicked(SITE_PANIC.into())))
            }
            Site::UnreadOutput => None,
            Site::Waker => Some(Ok(1)),
        };
        assert_eq!(subject.map(JoinHandle::join), expected, "{label}");
        // The thread still serves.
        assert_eq!(pool.spawn(|| 3).join(), Ok(3), "{label}");
        let report = pool.shutdown();
        let (cancelled, panicked) = match site {
            Site::DropOnCancel => (1, 0),
            Site::Body | Site::DropOnCompletion | Site::Sink | Site::Clock => (0, 1),
            Site::UnreadOutput | Site::Waker => (0, 0),
        };
        assert_eq!(
            (report.completed, report.panicked, report.cancelled),
            (3 - cancelled - panicked, panicked, cancelled),
            "{label}: the gate, the subject and the next task, each counted once"
        );
    }

    #[test]
    fn pools_survive_a_panic_in_every_kind_of_user_code() {
        support::quiet_panics_containing(&[SITE_PANIC]);
        for kind in [PoolKind::Worker, PoolKind::Blocking] {
            for site in SITES {
                pool_site(kind, site);
            }
        }
    }
}

// ---- Every entry point, called again and again on one executor ----
//
// `block_on`, `run_until` and `tick` each keep state for one call (the main
// future's place, what is being polled, what was taken off the wake list).
// Called over and over on one executor, with wakes from other threads
// landing at each step of each call, nothing a call leaves behind may hang,
// mislead or double up the next one.

use std::sync::Arc;
use std::task::{Context, Waker};

/// Where a wake from another thread lands in a future's life.
#[derive(Clone, Copy, Debug, PartialEq)]
enum WakeAt {
    /// During its first poll (the other thread is joined inside it).
    FirstPoll,
    /// During its last poll, the one that returns `Ready`.
    LastPoll,
    /// Whenever the other thread gets to it: between polls, during a tick,
    /// while the executor sleeps.
    Anytime,
    /// After it is over (a stale wake).
    AfterItEnds,
}

const WAKE_POINTS: [WakeAt; 4] = [
    WakeAt::FirstPoll,
    WakeAt::LastPoll,
    WakeAt::Anytime,
    WakeAt::AfterItEnds,
];

/// Ready at its second poll; woken from another thread as `at` says.
struct Scripted {
    at: WakeAt,
    polls: usize,
    /// Its waker, kept for a wake after it ends.
    kept: Arc<std::sync::Mutex<Option<Waker>>>,
    /// The threads it started, for the caller to join.
    wakers: Arc<std::sync::Mutex<Vec<thread::JoinHandle<()>>>>,
}

impl Scripted {
    fn new(at: WakeAt) -> Self {
        Self {
            at,
            polls: 0,
            kept: Arc::default(),
            wakers: Arc::default(),
        }
    }

    fn wake_from_another_thread(&self, waker: Waker, join: bool) {
        let thread = thread::spawn(move || waker.wake());
        if join {
            thread.join().unwrap();
        } else {
            self.wakers.lock().unwrap().push(thread);
        }
    }
}

impl Future for Scripted {
    type Output = usize;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        self.polls += 1;
        let waker = cx.waker().clone();
        match (self.at, self.polls) {
            (WakeAt::FirstPoll, 1) => self.wake_from_another_thread(waker, true),
            (WakeAt::Anytime, 1) => self.wake_from_another_thread(waker, false),
            (WakeAt::LastPoll | WakeAt::AfterItEnds, 1) => waker.wake(),
            (WakeAt::LastPoll, _) => self.wake_from_another_thread(waker, true),
            (WakeAt::AfterItEnds, _) => *self.kept.lock().unwrap() = Some(waker),
            _ => {}
        }
        if self.polls >= 2 {
            Poll::Ready(self.polls)
        } else {
            Poll::Pending
        }
    }
}

/// After a call returned: joins the future's threads and, for a stale
/// wake, wakes its kept waker from another thread.
fn after_the_call(
    kept: &Arc<std::sync::Mutex<Option<Waker>>>,
    wakers: &Arc<std::sync::Mutex<Vec<thread::JoinHandle<()>>>>,
) {
    for waker in std::mem::take(&mut *wakers.lock().unwrap()) {
        waker.join().unwrap();
    }
    if let Some(waker) = kept.lock().unwrap().take() {
        thread::spawn(move || waker.wake()).join().unwrap();
    }
}

/// Rounds of every pair (one under Miri, where threads are slow).
const ROUNDS: usize = if cfg!(miri) { 1 } else { 3 };

#[test]
fn block_on_again_and_again_with_wakes_landing_at_every_step() {
    let executor = LocalExecutor::new();
    for round in 0..ROUNDS {
        // Every pair of consecutive calls: what the first leaves behind
        // meets every way the second is woken.
        for first_at in WAKE_POINTS {
            for second_at in WAKE_POINTS {
                let label = format!("round {round}, then {first_at:?}, then {second_at:?}");
                let task = Scripted::new(second_at);
                let (task_kept, task_wakers) = (Arc::clone(&task.kept), Arc::clone(&task.wakers));
                let spawned = executor
                    .try_spawn(async move { Ok::<_, ()>(task.await) })
                    .unwrap();
                for at in [first_at, second_at] {
                    let main = Scripted::new(at);
                    let (kept, wakers) = (Arc::clone(&main.kept), Arc::clone(&main.wakers));
                    // Ready at its second poll (an entry an earlier call
                    // left may poll it once more, and it is ready then too).
                    assert_eq!(executor.block_on(main), 2, "{label}: {at:?}");
                    after_the_call(&kept, &wakers);
                }
                assert_eq!(executor.block_on(spawned), Ok(Ok(2)), "{label}");
                after_the_call(&task_kept, &task_wakers);
            }
        }
    }
    assert!(!executor.tick(usize::MAX).work_remaining);
    assert_eq!(executor.live_tasks(), 0);
    assert_eq!(executor.shutdown().left(), 0);
}

#[test]
fn local_tick_again_and_again_with_wakes_landing_at_every_step() {
    let executor = LocalExecutor::new();
    for round in 0..ROUNDS {
        for at in WAKE_POINTS {
            let label = format!("round {round}, {at:?}");
            let task = Scripted::new(at);
            let (kept, wakers) = (Arc::clone(&task.kept), Arc::clone(&task.wakers));
            let mut handle = executor
                .try_spawn(async move { Ok::<_, ()>(task.await) })
                .unwrap();
            let mut ticks = 0;
            while handle.try_take().is_none_or(|result| {
                assert_eq!(result, Ok(Ok(2)), "{label}");
                false
            }) {
                ticks += 1;
                assert!(ticks < 10_000, "{label}: the task ends");
                if !executor.tick(usize::MAX).work_remaining {
                    thread::yield_now();
                }
            }
            after_the_call(&kept, &wakers);
        }
    }
    while executor.tick(usize::MAX).work_remaining {}
    assert_eq!(executor.live_tasks(), 0);
}

#[test]
fn run_until_again_and_again_with_wakes_landing_at_every_step() {
    use dinah::ReadyQueue;
    let queue: &'static ReadyQueue<2> = support::keep_forever(ReadyQueue::new());
    let pairs = ROUNDS * WAKE_POINTS.len() * WAKE_POINTS.len();
    let mut tasks: Vec<_> = (0..pairs)
        .map(|i| {
            let at = WAKE_POINTS[i % WAKE_POINTS.len()];
            Box::pin(Some(async move {
                Scripted::new(at).await;
            }))
        })
        .collect();
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(queue).unwrap();
    let mut tasks = tasks.iter_mut();
    for round in 0..ROUNDS {
        for first_at in WAKE_POINTS {
            for second_at in WAKE_POINTS {
                let label = format!("round {round}, then {first_at:?}, then {second_at:?}");
                let id = executor.try_spawn(tasks.next().unwrap().as_mut()).unwrap();
                for at in [first_at, second_at] {
                    let main = Scripted::new(at);
                    let (kept, wakers) = (Arc::clone(&main.kept), Arc::clone(&main.wakers));
                    let polls = executor.run_until(main, 8, thread::yield_now);
                    assert_eq!(polls, 2, "{label}: {at:?}");
                    after_the_call(&kept, &wakers);
                }
                // The task finishes too, whatever the main futures did.
                let mut ticks = 0;
                while executor.task_state(id) != Some(TaskState::Completed) {
                    ticks += 1;
                    assert!(ticks < 10_000, "{label}: the task ends");
                    if !executor.tick(8).work_remaining {
                        thread::yield_now();
                    }
                }
            }
        }
    }
    while executor.tick(8).work_remaining {}
    assert_eq!(executor.live_tasks(), 0);
}
