//! The contract of every hosted runtime: what a user of join handles sees,
//! whichever runtime runs the tasks and whichever thread polls them. Each
//! runtime joins by one line of the `contract!` call at the end.
//!
//! Where `executor_contract.rs` drives executors tick by tick (order,
//! budgets, the wake protocol, the heap-free core included), this suite
//! speaks only through what every hosted runtime offers: `block_on`, a
//! `Send + Sync` handle that spawns `Send + 'static` futures from any
//! thread, join handles (values, errors, panics, cancellation), timers,
//! and shutdown with its report. It asserts nothing about which thread
//! polls a task, nor about the order in which independent tasks run.

use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Poll, Waker};
use std::thread;
use std::time::Duration;

use dinah::executor::{
    ExecutorConfig, MultiConfig, MultiExecutor, MultiHandle, ShutdownReport, Spawner,
};
use dinah::pool::ShutdownPolicy;
use dinah::task::{ChildEnd, TaskFailureKind, TaskOutput};
use dinah::time::{TimerDriver, TimerHandle};
use dinah::{JoinError, JoinHandle, LocalExecutor, SpawnError, yield_now};

mod support;
use support::WokenElsewhere;

/// How a test wants its runtime.
#[derive(Clone, Copy, Default)]
struct Setup {
    /// The runtime's clock starts paused and moves only while it idles.
    start_paused: bool,
}

/// A `Send + Sync` handle that spawns onto a runtime from any thread and
/// from inside its tasks.
trait Spawn: Clone + Send + Sync + 'static {
    fn spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput + Send + 'static;

    fn spawn_named<F>(
        &self,
        name: &'static str,
        future: F,
    ) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput + Send + 'static;
}

/// A hosted runtime under the contract.
trait Runtime: Sized {
    type Handle: Spawn;
    fn start(setup: Setup) -> Self;
    fn handle(&self) -> Self::Handle;
    fn block_on<F: Future>(&self, future: F) -> F::Output;
    fn timer(&self) -> TimerHandle;
    fn shutdown_with(&self, policy: ShutdownPolicy, deadline: Duration) -> ShutdownReport;
    /// Wakes that came after their task ended, where the runtime counts
    /// them.
    fn stale_wakes(&self) -> Option<u32>;
}

/// Each runtime's handle spawns with its own `try_spawn` and
/// `try_spawn_named`, which have the same shape.
macro_rules! spawn_through {
    ($($handle:ty),+) => {$(
        impl Spawn for $handle {
            fn spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, SpawnError<F>>
            where
                F: Future + Send + 'static,
                F::Output: TaskOutput + Send + 'static,
            {
                self.try_spawn(future)
            }

            fn spawn_named<F>(
                &self,
                name: &'static str,
                future: F,
            ) -> Result<JoinHandle<F::Output>, SpawnError<F>>
            where
                F: Future + Send + 'static,
                F::Output: TaskOutput + Send + 'static,
            {
                self.try_spawn_named(name, future)
            }
        }
    )+};
}

spawn_through!(Spawner, MultiHandle);

/// The current-thread `LocalExecutor`, its `Send` tasks spawned through its
/// `Spawner`.
struct Local(LocalExecutor<'static>);

impl Runtime for Local {
    type Handle = Spawner;

    fn start(setup: Setup) -> Self {
        Self(
            LocalExecutor::with_config(ExecutorConfig {
                start_paused: setup.start_paused,
                ..ExecutorConfig::default()
            })
            .unwrap(),
        )
    }

    fn handle(&self) -> Spawner {
        self.0.spawner()
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.0.block_on(future)
    }

    fn timer(&self) -> TimerHandle {
        self.0.timer()
    }

    fn shutdown_with(&self, policy: ShutdownPolicy, deadline: Duration) -> ShutdownReport {
        self.0.shutdown_with(policy, deadline)
    }

    fn stale_wakes(&self) -> Option<u32> {
        Some(self.0.stale_wakes())
    }
}

/// The multi-thread `MultiExecutor` with `WORKERS` workers.
struct Multi<const WORKERS: usize>(MultiExecutor);

impl<const WORKERS: usize> Runtime for Multi<WORKERS> {
    type Handle = MultiHandle;

    fn start(setup: Setup) -> Self {
        Self(
            MultiExecutor::with_config(MultiConfig {
                workers: Some(WORKERS),
                start_paused: setup.start_paused,
                ..MultiConfig::default()
            })
            .unwrap(),
        )
    }

    fn handle(&self) -> MultiHandle {
        self.0.handle()
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.0.block_on(future)
    }

    fn timer(&self) -> TimerHandle {
        self.0.timer()
    }

    fn shutdown_with(&self, policy: ShutdownPolicy, deadline: Duration) -> ShutdownReport {
        self.0.shutdown_with(policy, deadline)
    }

    fn stale_wakes(&self) -> Option<u32> {
        None
    }
}

/// A future that never finishes.
async fn forever() {
    std::future::pending::<()>().await;
}

/// Counts its drops.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn handles_give_values_errors_and_cancellations<R: Runtime>() {
    let runtime = R::start(Setup::default());
    let handle = runtime.handle();
    let (value, unit, error, cancelled) = runtime.block_on(async move {
        let value = handle.spawn(async { Ok::<_, ()>(7) }).unwrap();
        let unit = handle.spawn(async {}).unwrap();
        let error = handle.spawn(async { Err::<(), _>("bad input") }).unwrap();
        let cancelled = handle.spawn(forever()).unwrap();
        assert!(cancelled.cancel());
        (value.await, unit.await, error.await, cancelled.await)
    });
    assert_eq!(value, Ok(Ok(7)));
    assert_eq!(unit, Ok(()));
    // A returned error is the task's value, not a join failure.
    assert_eq!(error, Ok(Err("bad input")));
    let failure = cancelled.unwrap_err();
    assert_eq!(failure, JoinError::Cancelled);
    assert_eq!(failure.kind(), TaskFailureKind::Cancelled);
    assert_eq!(failure.to_string(), "task was cancelled before it finished");
}

fn a_panicking_task_fails_alone_with_its_message<R: Runtime>() {
    support::quiet_panics_containing(&["task 3 fell over"]);
    let runtime = R::start(Setup::default());
    let handle = runtime.handle();
    let ran = Arc::new(AtomicUsize::new(0));
    let results = runtime.block_on({
        let ran = Arc::clone(&ran);
        async move {
            let handles: Vec<_> = (0..5)
                .map(|n| {
                    let ran = Arc::clone(&ran);
                    handle
                        .spawn(async move {
                            yield_now().await;
                            assert!(n != 3, "task {n} fell over");
                            ran.fetch_add(1, Ordering::SeqCst);
                            Ok::<_, ()>(n)
                        })
                        .unwrap()
                })
                .collect();
            let mut results = Vec::new();
            for task in handles {
                results.push(task.await);
            }
            results
        }
    });
    assert_eq!(ran.load(Ordering::SeqCst), 4, "the other four ran");
    for (n, result) in results.into_iter().enumerate() {
        if n == 3 {
            let failure = result.unwrap_err();
            assert_eq!(failure.kind(), TaskFailureKind::Panicked);
            assert_eq!(failure, JoinError::Panicked("task 3 fell over".into()));
        } else {
            assert_eq!(result, Ok(Ok(n)));
        }
    }
}

fn a_dropped_handle_detaches_the_task<R: Runtime>() {
    let runtime = R::start(Setup::default());
    let handle = runtime.handle();
    let done = Arc::new(AtomicBool::new(false));
    {
        let done = Arc::clone(&done);
        drop(
            handle
                .spawn(async move {
                    yield_now().await;
                    done.store(true, Ordering::SeqCst);
                })
                .unwrap(),
        );
    }
    // Spawned after the detached task, and done only once it is.
    let done_too = Arc::clone(&done);
    let watcher = handle
        .spawn(async move {
            while !done_too.load(Ordering::SeqCst) {
                yield_now().await;
            }
        })
        .unwrap();
    runtime.block_on(watcher).unwrap();
    assert!(
        done.load(Ordering::SeqCst),
        "it ran to its end without a handle"
    );
}

/// A task that spawns the next one and adds one to what it returns.
type Depth = Result<u32, ()>;

fn chain<H: Spawn>(handle: H, left: u32) -> std::pin::Pin<Box<dyn Future<Output = Depth> + Send>> {
    Box::pin(async move {
        if left == 0 {
            return Ok(1);
        }
        let next = handle.clone();
        let child = handle.spawn(chain(next, left - 1)).unwrap();
        Ok(child.await.unwrap()? + 1)
    })
}

fn a_task_spawns_the_next_one_and_awaits_it<R: Runtime>() {
    let runtime = R::start(Setup::default());
    let handle = runtime.handle();
    let first = handle.spawn(chain(handle.clone(), 99)).unwrap();
    assert_eq!(runtime.block_on(first), Ok(Ok(100)));
}

fn other_threads_spawn_through_the_handle<R: Runtime>() {
    let runtime = R::start(Setup::default());
    let handle = runtime.handle();
    let handles: Vec<_> = thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|n| {
                let handle = handle.clone();
                scope.spawn(move || handle.spawn(async move { Ok::<_, ()>(n * 10) }).unwrap())
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let results = runtime.block_on(async {
        let mut results = Vec::new();
        for handle in handles {
            results.push(handle.await);
        }
        results
    });
    assert_eq!(results, [Ok(Ok(0)), Ok(Ok(10)), Ok(Ok(20)), Ok(Ok(30))]);
}

fn a_handle_cancels_from_another_thread_and_is_awaited_there<R: Runtime>() {
    let runtime = R::start(Setup::default());
    let (started, started_here) = (Arc::new(Barrier::new(2)), Arc::new(AtomicBool::new(false)));
    let task = {
        let started_here = Arc::clone(&started_here);
        runtime
            .handle()
            .spawn(async move {
                started_here.store(true, Ordering::SeqCst);
                forever().await;
            })
            .unwrap()
    };
    // Runs until the task has been polled once.
    runtime.block_on(async {
        while !started_here.load(Ordering::SeqCst) {
            yield_now().await;
        }
    });
    thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            assert!(task.cancel());
            started.wait();
            // Awaited on this thread, resolved by the runtime's.
            LocalExecutor::new().block_on(task)
        });
        started.wait();
        // The cancel woke the runtime; driving it carries the cancel out.
        runtime.block_on(async {
            yield_now().await;
        });
        assert_eq!(waiter.join().unwrap(), Err(JoinError::Cancelled));
    });
}

fn cancel_returning_true_means_the_handle_says_cancelled<R: Runtime>() {
    let runtime = R::start(Setup::default());
    let (in_poll, cancelled) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let task = {
        let (in_poll, cancelled) = (Arc::clone(&in_poll), Arc::clone(&cancelled));
        runtime
            .handle()
            .spawn(async move {
                // The task's last poll: the other thread cancels during it,
                // and the poll returns a value anyway.
                in_poll.wait();
                cancelled.wait();
                Ok::<_, ()>("value")
            })
            .unwrap()
    };
    let task = Arc::new(Mutex::new(Some(task)));
    let canceller = {
        let task = Arc::clone(&task);
        thread::spawn(move || {
            in_poll.wait();
            let accepted = task.lock().unwrap().as_ref().unwrap().cancel();
            cancelled.wait();
            accepted
        })
    };
    let result = runtime.block_on(poll_fn(|cx| {
        let mut slot = task.lock().unwrap();
        let polled = std::pin::Pin::new(slot.as_mut().unwrap()).poll(cx);
        drop(slot);
        polled
    }));
    assert!(canceller.join().unwrap(), "not finished when cancelled");
    assert_eq!(result, Err(JoinError::Cancelled));
    // A finished task cannot be cancelled: `false`, nothing changes.
    let done = runtime.handle().spawn(async { Ok::<_, ()>(1) }).unwrap();
    runtime.block_on(async {
        while !done.is_finished() {
            yield_now().await;
        }
    });
    assert!(!done.cancel());
    assert_eq!(runtime.block_on(done), Ok(Ok(1)));
}

fn a_wake_from_another_thread_reaches_a_task<R: Runtime>() {
    let runtime = R::start(Setup::default());
    // Woken from another thread during its first poll, then from another
    // thread while it waits.
    let task = runtime
        .handle()
        .spawn(async {
            let polls = WokenElsewhere {
                polls: 0,
                ready_at: 2,
            }
            .await;
            let (waker_tx, waker_rx) = std::sync::mpsc::channel::<Waker>();
            let waker_thread = thread::spawn(move || waker_rx.recv().unwrap().wake());
            let mut sent = false;
            poll_fn(|cx| {
                if std::mem::replace(&mut sent, true) {
                    Poll::Ready(())
                } else {
                    waker_tx.send(cx.waker().clone()).unwrap();
                    Poll::Pending
                }
            })
            .await;
            waker_thread.join().unwrap();
            Ok::<_, ()>(polls)
        })
        .unwrap();
    assert_eq!(runtime.block_on(task), Ok(Ok(2)));
}

fn a_wake_after_its_task_ended_is_ignored<R: Runtime>() {
    let runtime = R::start(Setup::default());
    let parked: Arc<Mutex<Option<Waker>>> = Arc::default();
    let polls = Arc::new(AtomicUsize::new(0));
    let task = {
        let (parked, polls) = (Arc::clone(&parked), Arc::clone(&polls));
        runtime
            .handle()
            .spawn(poll_fn(move |cx| {
                polls.fetch_add(1, Ordering::SeqCst);
                *parked.lock().unwrap() = Some(cx.waker().clone());
                Poll::Ready(())
            }))
            .unwrap()
    };
    runtime.block_on(task).unwrap();
    let before = runtime.stale_wakes();
    let waker = parked.lock().unwrap().take().unwrap();
    waker.wake_by_ref();
    // A new task runs to its end after the stale wake is taken in.
    let next = runtime.handle().spawn(async { Ok::<_, ()>(1) }).unwrap();
    assert_eq!(runtime.block_on(next), Ok(Ok(1)));
    assert_eq!(polls.load(Ordering::SeqCst), 1, "never polled again");
    if let (Some(before), Some(after)) = (before, runtime.stale_wakes()) {
        assert_eq!(after, before + 1, "counted");
    }
    // From another thread, after the runtime is gone: nothing happens.
    drop(runtime);
    thread::spawn(move || waker.wake()).join().unwrap();
}

/// Where a test keeps a handle its task's destructor can look at.
type HandleSlot = Arc<Mutex<Option<JoinHandle<Result<(), ()>>>>>;

/// Records, when dropped, whether its task's handle had already resolved.
struct SeesHandle {
    handle: HandleSlot,
    resolved_at_drop: Arc<Mutex<Option<bool>>>,
}

impl Drop for SeesHandle {
    fn drop(&mut self) {
        let finished = self
            .handle
            .lock()
            .unwrap()
            .as_ref()
            .map(|h| h.is_finished());
        *self.resolved_at_drop.lock().unwrap() = finished;
    }
}

fn a_task_s_future_is_dropped_before_its_handle_resolves<R: Runtime>() {
    support::quiet_panics_containing(&["ends by panicking"]);
    for ending in ["cancel", "panic", "shutdown"] {
        let runtime = R::start(Setup::default());
        let handle_slot = Arc::new(Mutex::new(None));
        let resolved_at_drop = Arc::new(Mutex::new(None));
        let started = Arc::new(AtomicBool::new(false));
        let probe = SeesHandle {
            handle: Arc::clone(&handle_slot),
            resolved_at_drop: Arc::clone(&resolved_at_drop),
        };
        let panics = ending == "panic";
        let (started_in_task, slot_in_task) = (Arc::clone(&started), Arc::clone(&handle_slot));
        let task = runtime
            .handle()
            .spawn(async move {
                let _probe = probe;
                // Runs on only once its handle is in place for the probe.
                while slot_in_task.lock().unwrap().is_none() {
                    yield_now().await;
                }
                started_in_task.store(true, Ordering::SeqCst);
                yield_now().await;
                assert!(!panics, "ends by panicking");
                forever().await;
                Ok::<(), ()>(())
            })
            .unwrap();
        *handle_slot.lock().unwrap() = Some(task);
        runtime.block_on(async {
            while !started.load(Ordering::SeqCst) {
                yield_now().await;
            }
        });
        let ended = || handle_slot.lock().unwrap().as_ref().unwrap().is_finished();
        match ending {
            "cancel" => assert!(handle_slot.lock().unwrap().as_ref().unwrap().cancel()),
            "panic" => {}
            _ => {
                runtime.shutdown_with(ShutdownPolicy::CancelPending, Duration::ZERO);
            }
        }
        runtime.block_on(async {
            while !ended() {
                yield_now().await;
            }
        });
        assert_eq!(
            *resolved_at_drop.lock().unwrap(),
            Some(false),
            "{ending}: dropped first"
        );
        let result = handle_slot.lock().unwrap().as_mut().unwrap().try_take();
        let expected = if panics {
            Err(JoinError::Panicked("ends by panicking".into()))
        } else {
            Err(JoinError::Cancelled)
        };
        assert_eq!(result, Some(expected), "{ending}: then resolved");
    }
}

fn a_panic_in_block_on_s_own_future_unwinds_and_leaves_the_runtime_usable<R: Runtime>() {
    support::quiet_panics_containing(&["main future failed"]);
    let runtime = R::start(Setup::default());
    let result = catch_unwind(AssertUnwindSafe(|| {
        runtime.block_on(async { panic!("main future failed") })
    }));
    assert!(result.is_err());
    let task = runtime.handle().spawn(async { Ok::<_, ()>(2) }).unwrap();
    assert_eq!(runtime.block_on(task), Ok(Ok(2)));
}

fn sleeps_in_tasks_end_in_deadline_order_on_a_paused_clock<R: Runtime>() {
    let runtime = R::start(Setup { start_paused: true });
    let timer = runtime.timer();
    let start = timer.now();
    let order = Arc::new(Mutex::new(Vec::new()));
    let handle = runtime.handle();
    // Spawned in one poll of `block_on`'s future: the paused clock stays
    // put until they are all in place.
    runtime.block_on(async {
        let handles: Vec<_> = [30u64, 10, 20]
            .into_iter()
            .map(|ms| {
                let (order, timer) = (Arc::clone(&order), timer.clone());
                handle
                    .spawn(async move {
                        timer.sleep(Duration::from_millis(ms)).await;
                        order.lock().unwrap().push(ms);
                    })
                    .unwrap()
            })
            .collect();
        for handle in handles {
            handle.await.unwrap();
        }
    });
    assert_eq!(*order.lock().unwrap(), [10, 20, 30]);
    assert!(
        timer.now().ticks_since(start) >= 30_000,
        "the clock moved to the last deadline"
    );
}

fn the_free_time_functions_reach_the_runtime_s_timers<R: Runtime>() {
    let runtime = R::start(Setup { start_paused: true });
    let timer = runtime.timer();
    let task = runtime
        .handle()
        .spawn(async {
            let slow = dinah::time::timeout(Duration::from_millis(5), forever()).await;
            let fast = dinah::time::timeout(Duration::from_millis(5), async { 3 }).await;
            dinah::time::sleep(Duration::from_millis(1)).await;
            Ok::<_, ()>((slow.is_err(), fast.ok()))
        })
        .unwrap();
    assert_eq!(runtime.block_on(task), Ok(Ok((true, Some(3)))));
    assert!(timer.now().ticks() >= 6_000);
}

fn a_drain_runs_what_was_accepted_and_names_each_task<R: Runtime>() {
    let runtime = R::start(Setup { start_paused: true });
    let handle = runtime.handle();
    let saved = handle
        .spawn_named("save", async { yield_now().await })
        .unwrap_or_else(|_| unreachable!());
    let idle = handle
        .spawn_named("idle", forever())
        .unwrap_or_else(|_| unreachable!());
    let report = runtime.shutdown_with(ShutdownPolicy::Drain, Duration::from_secs(5));
    let ends: Vec<_> = report.tasks.iter().map(|t| (t.name, t.end)).collect();
    // Each task alive when the shutdown began is named with its end; a
    // runtime whose workers run on their own may have finished `save`
    // before that.
    assert!(
        ends.contains(&(Some("idle"), ChildEnd::Cancelled)),
        "{ends:?}"
    );
    assert!(
        ends.iter()
            .all(|end| *end == (Some("idle"), ChildEnd::Cancelled)
                || *end == (Some("save"), ChildEnd::Completed)),
        "{ends:?}"
    );
    assert_eq!(report.cancelled_tasks, 1);
    let mut saved = saved;
    let mut idle = idle;
    assert_eq!(saved.try_take(), Some(Ok(())));
    assert_eq!(idle.try_take(), Some(Err(JoinError::Cancelled)));
    // Closed for good: later spawns are handed back.
    assert!(matches!(
        handle.spawn(async {}),
        Err(SpawnError::Shutdown(_))
    ));
}

/// A draining shutdown's deadline bounds the call on a paused clock too,
/// though a task that keeps waking itself never lets the runtime idle; and
/// that task does not starve a task spawned from outside beside it. Run on
/// a thread of its own so that a call that never returns fails the test
/// instead of hanging it.
fn a_drain_on_a_paused_clock_ends_though_a_task_keeps_waking_itself<R: Runtime>() {
    let (done, ends) = std::sync::mpsc::channel();
    let worker = thread::spawn(move || {
        let runtime = R::start(Setup { start_paused: true });
        let handle = runtime.handle();
        let spinning = handle
            .spawn_named("spinner", async {
                loop {
                    yield_now().await;
                }
            })
            .unwrap_or_else(|_| unreachable!());
        let saved = handle
            .spawn_named("save", async {})
            .unwrap_or_else(|_| unreachable!());
        // The spinner never lets its worker idle, yet `save` runs (a
        // worker takes in spawns from outside on a fixed interval).
        let ran = runtime.block_on(saved).is_ok();
        let report = runtime.shutdown_with(ShutdownPolicy::Drain, Duration::from_millis(50));
        let mut ends: Vec<_> = report.tasks.iter().map(|t| (t.name, t.end)).collect();
        ends.sort_by_key(|(name, _)| *name);
        drop(spinning);
        done.send((ran, ends)).unwrap();
    });
    let (ran, ends) = ends
        .recv_timeout(Duration::from_secs(120))
        .expect("the drain returns");
    assert!(ran, "a task spawned beside the spinner runs");
    // `save` ended before the shutdown began, or during its drain.
    let spinner: Vec<_> = ends
        .iter()
        .filter(|(name, _)| *name != Some("save"))
        .collect();
    assert_eq!(spinner, [&(Some("spinner"), ChildEnd::Cancelled)]);
    assert!(
        ends.iter()
            .all(|(name, end)| *name != Some("save") || *end == ChildEnd::Completed)
    );
    worker.join().unwrap();
}

fn shutdown_drops_each_unfinished_future_once_and_refuses_spawns<R: Runtime>() {
    let runtime = R::start(Setup::default());
    let handle = runtime.handle();
    let drops = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..3)
        .map(|_| {
            let (probe, started) = (DropCount(Arc::clone(&drops)), Arc::clone(&started));
            handle
                .spawn(async move {
                    let _probe = probe;
                    started.fetch_add(1, Ordering::SeqCst);
                    forever().await;
                })
                .unwrap()
        })
        .collect();
    runtime.block_on(async {
        while started.load(Ordering::SeqCst) < 3 {
            yield_now().await;
        }
    });
    let report = runtime.shutdown_with(ShutdownPolicy::CancelPending, Duration::ZERO);
    assert_eq!(report.left(), 3);
    assert_eq!(report.tasks.len(), 3);
    assert!(report.tasks.iter().all(|t| t.end == ChildEnd::Cancelled));
    assert_eq!(drops.load(Ordering::SeqCst), 3, "each dropped once");
    for mut task in tasks {
        assert_eq!(task.try_take(), Some(Err(JoinError::Cancelled)));
    }
    assert!(matches!(
        handle.spawn(async {}),
        Err(SpawnError::Shutdown(_))
    ));
    let again = runtime.shutdown_with(ShutdownPolicy::CancelPending, Duration::ZERO);
    assert_eq!(
        again,
        ShutdownReport::default(),
        "nothing left the second time"
    );
}

fn dropping_the_runtime_shuts_it_down<R: Runtime>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let runtime = R::start(Setup::default());
    let handle = runtime.handle();
    let probe = DropCount(Arc::clone(&drops));
    let mut task = handle
        .spawn(async move {
            let _probe = probe;
            forever().await;
        })
        .unwrap();
    drop(runtime);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(task.try_take(), Some(Err(JoinError::Cancelled)));
    assert!(matches!(
        handle.spawn(async {}),
        Err(SpawnError::Shutdown(_))
    ));
}

fn every_task_from_every_thread_completes_exactly_once<R: Runtime>() {
    const THREADS: usize = 4;
    const EACH: usize = if cfg!(miri) { 8 } else { 250 };
    let runtime = R::start(Setup::default());
    let handle = runtime.handle();
    let polled_to_end: Arc<Vec<AtomicUsize>> =
        Arc::new((0..THREADS * EACH).map(|_| AtomicUsize::new(0)).collect());
    let handles: Vec<_> = thread::scope(|scope| {
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (handle, ends) = (handle.clone(), Arc::clone(&polled_to_end));
                scope.spawn(move || {
                    (0..EACH)
                        .map(|n| {
                            let ends = Arc::clone(&ends);
                            let index = t * EACH + n;
                            handle
                                .spawn(async move {
                                    yield_now().await;
                                    ends[index].fetch_add(1, Ordering::SeqCst);
                                    Ok::<_, ()>(index)
                                })
                                .unwrap()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    let results = runtime.block_on(async {
        let mut results = Vec::new();
        for handle in handles {
            results.push(handle.await.unwrap().unwrap());
        }
        results
    });
    assert_eq!(results, (0..THREADS * EACH).collect::<Vec<_>>());
    assert!(polled_to_end.iter().all(|n| n.load(Ordering::SeqCst) == 1));
}

support::contract!(
    [local: Local, multi_executor_1: Multi<1>, multi_executor_2: Multi<2>],
    [
        handles_give_values_errors_and_cancellations,
        a_panicking_task_fails_alone_with_its_message,
        a_dropped_handle_detaches_the_task,
        a_task_spawns_the_next_one_and_awaits_it,
        other_threads_spawn_through_the_handle,
        a_handle_cancels_from_another_thread_and_is_awaited_there,
        cancel_returning_true_means_the_handle_says_cancelled,
        a_wake_from_another_thread_reaches_a_task,
        a_wake_after_its_task_ended_is_ignored,
        a_task_s_future_is_dropped_before_its_handle_resolves,
        a_panic_in_block_on_s_own_future_unwinds_and_leaves_the_runtime_usable,
        sleeps_in_tasks_end_in_deadline_order_on_a_paused_clock,
        the_free_time_functions_reach_the_runtime_s_timers,
        a_drain_runs_what_was_accepted_and_names_each_task,
        a_drain_on_a_paused_clock_ends_though_a_task_keeps_waking_itself,
        shutdown_drops_each_unfinished_future_once_and_refuses_spawns,
        dropping_the_runtime_shuts_it_down,
        every_task_from_every_thread_completes_exactly_once,
    ]
);
