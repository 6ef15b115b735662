//! A panic in each kind of user code, on every runtime.
//!
//! A task runs more of its user's code than its poll: its future's (or
//! closure's) destructor when cancelled and when it completes, the destructor
//! of a result nobody reads, the telemetry sink and clock, and the waker of
//! whoever awaits its handle. Whichever panics, every handle resolves exactly
//! once, every slot and place comes back, the counts add up, and the runtime
//! serves the next task; the panic is the task's failure, or reaches the
//! caller of the entry point that ran it.
//!
//! The telemetry sites need the `telemetry` feature, as do the runtimes
//! built to measure themselves here.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::task::{Context, Wake, Waker};

use dinah::executor::ExecutorConfig;
use dinah::pool::ShutdownPolicy;
use dinah::{AsyncExecutor, JoinError, LocalExecutor, TaskState};

mod support;

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
    let report = executor.shutdown();
    assert_eq!(report.left(), 0, "{label}");
    // Read once the shutdown joined the workers: a worker tells the sink
    // that a poll ended after the task's output reached its handle, so
    // until then the trapped event may still be on its way.
    assert_eq!(executor.sink_failed(), site == Site::Sink, "{label}");
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
