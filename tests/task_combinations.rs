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
