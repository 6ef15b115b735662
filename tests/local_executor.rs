//! The hosted `LocalExecutor`'s own promises, beyond the shared executor
//! contract: join handles, caught panics, `block_on` re-entry, the bounded
//! `Spawner` ingress, and shutdown.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Poll, Waker};
use std::thread::{self, ThreadId};

use dinah::executor::ExecutorConfig;
use dinah::queue::CapacityError;
use dinah::task::TaskFailureKind;
use dinah::{JoinError, LocalExecutor, SpawnError, yield_now};

mod support;
use support::WokenElsewhere;

/// Counts its drops and remembers the thread of the last one.
struct DropProbe {
    drops: Arc<AtomicUsize>,
    thread: Arc<Mutex<Option<ThreadId>>>,
}

impl DropProbe {
    fn new() -> (Self, Arc<AtomicUsize>, Arc<Mutex<Option<ThreadId>>>) {
        let drops = Arc::new(AtomicUsize::new(0));
        let thread = Arc::new(Mutex::new(None));
        let probe = Self {
            drops: Arc::clone(&drops),
            thread: Arc::clone(&thread),
        };
        (probe, drops, thread)
    }
}

impl Drop for DropProbe {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        *self.thread.lock().unwrap() = Some(thread::current().id());
    }
}

/// A future that never finishes.
async fn forever() {
    std::future::pending::<()>().await;
}

#[test]
fn handles_give_values_errors_and_failure_kinds() {
    let executor = LocalExecutor::new();
    let value = executor.try_spawn(async { Ok::<_, ()>(7) }).unwrap();
    let unit = executor.try_spawn(async {}).unwrap();
    let error = executor
        .try_spawn(async { Err::<(), _>("bad input") })
        .unwrap();
    let (value, unit, error) = executor.block_on(async { (value.await, unit.await, error.await) });
    assert_eq!(value, Ok(Ok(7)));
    assert_eq!(unit, Ok(()));
    // A returned error is the task's value, not a join failure.
    assert_eq!(error, Ok(Err("bad input")));
    let cancelled = executor.try_spawn(forever()).unwrap();
    assert!(cancelled.cancel());
    let failure = executor.block_on(cancelled).unwrap_err();
    assert_eq!(failure, JoinError::Cancelled);
    assert_eq!(failure.kind(), TaskFailureKind::Cancelled);
    assert_eq!(failure.to_string(), "task was cancelled before it finished");
}

#[test]
fn a_panicking_task_fails_alone_with_its_message() {
    support::quiet_panics_containing(&["task 3 fell over"]);
    let executor = LocalExecutor::new();
    let ran = Rc::new(Cell::new(0));
    let mut handles = Vec::new();
    for n in 0..5 {
        let ran = Rc::clone(&ran);
        handles.push(
            executor
                .try_spawn(async move {
                    yield_now().await;
                    assert!(n != 3, "task {n} fell over");
                    ran.set(ran.get() + 1);
                    Ok::<_, ()>(n)
                })
                .unwrap(),
        );
    }
    // Never unwinds out of the tick.
    while executor.tick(usize::MAX).work_remaining {}
    assert_eq!(ran.get(), 4, "the other four ran");
    for (n, handle) in handles.iter_mut().enumerate() {
        let result = handle.try_take().expect("finished");
        if n == 3 {
            let failure = result.unwrap_err();
            assert_eq!(failure.kind(), TaskFailureKind::Panicked);
            assert_eq!(failure, JoinError::Panicked("task 3 fell over".into()));
        } else {
            assert_eq!(result, Ok(Ok(n)));
        }
    }
    assert_eq!(executor.live_tasks(), 0);
}

#[test]
fn a_dropped_handle_detaches_the_task() {
    let executor = LocalExecutor::new();
    let done = Rc::new(Cell::new(false));
    {
        let done = Rc::clone(&done);
        drop(
            executor
                .try_spawn(async move {
                    yield_now().await;
                    done.set(true);
                })
                .unwrap(),
        );
    }
    while executor.tick(usize::MAX).work_remaining {}
    assert!(done.get(), "it ran to its end without a handle");
}

#[test]
fn try_take_is_non_blocking_and_hands_out_once() {
    let executor = LocalExecutor::new();
    let mut handle = executor
        .try_spawn(async {
            yield_now().await;
            Ok::<_, ()>("done")
        })
        .unwrap();
    assert_eq!(handle.try_take(), None, "still running");
    executor.tick(usize::MAX);
    assert_eq!(handle.try_take(), None, "one more poll to go");
    executor.tick(usize::MAX);
    assert_eq!(handle.try_take(), Some(Ok(Ok("done"))));
    assert_eq!(handle.try_take(), None, "handed out once");
}

#[test]
fn a_task_can_spawn_the_next_one() {
    let executor = LocalExecutor::new();
    let spawner = executor.local_spawner();
    let depth = Rc::new(Cell::new(0));
    fn chain(spawner: dinah::executor::LocalSpawner<'static>, depth: Rc<Cell<u32>>, left: u32) {
        let next = spawner.clone();
        drop(
            spawner
                .try_spawn(async move {
                    depth.set(depth.get() + 1);
                    if left > 0 {
                        chain(next, depth, left - 1);
                    }
                })
                .unwrap(),
        );
    }
    chain(spawner, Rc::clone(&depth), 99);
    while executor.tick(usize::MAX).work_remaining {}
    assert_eq!(depth.get(), 100);
}

#[test]
fn block_on_inside_a_task_of_the_same_executor_fails_with_a_message() {
    support::quiet_panics_containing(&["inside a task of the same executor"]);
    let executor = Rc::new(LocalExecutor::new());
    let inner = Rc::clone(&executor);
    let handle = executor
        .try_spawn(async move {
            inner.block_on(async {});
        })
        .unwrap();
    let result = executor.block_on(handle);
    let Err(JoinError::Panicked(message)) = result else {
        panic!("expected the nested block_on to fail, got {result:?}");
    };
    assert!(
        message.contains("LocalExecutor::block_on called from inside a task of the same executor"),
        "{message}"
    );
    assert!(message.contains("deadlock"), "{message}");
    // The executor itself is fine afterwards.
    assert_eq!(executor.block_on(async { 5 }), 5);
}

#[test]
fn block_on_of_another_executor_inside_a_task_is_allowed() {
    let outer = LocalExecutor::new();
    let handle = outer
        .try_spawn(async {
            let inner = LocalExecutor::new();
            let task = inner.try_spawn(async { Ok::<_, ()>(3) }).unwrap();
            inner.block_on(task)
        })
        .unwrap();
    assert_eq!(outer.block_on(handle), Ok(Ok(Ok(3))));
}

#[test]
fn the_live_task_cap_hands_the_future_back() {
    let executor = LocalExecutor::with_config(ExecutorConfig {
        max_tasks: Some(2),
        ..ExecutorConfig::default()
    })
    .unwrap();
    let _a = executor.try_spawn(forever()).unwrap();
    let _b = executor.try_spawn(forever()).unwrap();
    let refused = executor.try_spawn(async { Ok::<_, ()>(9) });
    let Err(SpawnError::Full(future)) = refused else {
        panic!("expected Full");
    };
    assert_eq!(executor.live_tasks(), 2);
    // The handed-back future is intact: it runs elsewhere.
    assert_eq!(LocalExecutor::new().block_on(future), Ok(9));
}

#[test]
fn zero_sizes_are_refused() {
    for config in [
        ExecutorConfig {
            max_tasks: Some(0),
            ..ExecutorConfig::default()
        },
        ExecutorConfig {
            ingress_capacity: 0,
            ..ExecutorConfig::default()
        },
    ] {
        assert_eq!(
            LocalExecutor::with_config(config).map(drop),
            Err(CapacityError::Zero),
            "{config:?}"
        );
    }
}

#[test]
fn spawner_hands_work_in_from_other_threads() {
    let executor = LocalExecutor::new();
    let spawner = executor.spawner();
    let handles = thread::scope(|scope| {
        (0..4)
            .map(|n| {
                let spawner = spawner.clone();
                scope.spawn(move || {
                    spawner
                        .try_spawn(async move { Ok::<_, ()>(n * 10) })
                        .unwrap()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .collect::<Vec<_>>()
    });
    let results = executor.block_on(async {
        let mut results = Vec::new();
        for handle in handles {
            results.push(handle.await);
        }
        results
    });
    assert_eq!(results, [Ok(Ok(0)), Ok(Ok(10)), Ok(Ok(20)), Ok(Ok(30))]);
}

#[test]
fn a_full_ingress_hands_the_future_back() {
    let executor = LocalExecutor::with_config(ExecutorConfig {
        ingress_capacity: 2,
        ..ExecutorConfig::default()
    })
    .unwrap();
    let spawner = executor.spawner();
    let first = spawner.try_spawn(async { Ok::<_, ()>(1) }).unwrap();
    let second = spawner.try_spawn(async { Ok::<_, ()>(2) }).unwrap();
    let Err(SpawnError::Full(third)) = spawner.try_spawn(async { Ok::<_, ()>(3) }) else {
        panic!("expected Full");
    };
    // A tick takes the two in; then there is room again.
    executor.tick(usize::MAX);
    let third = spawner.try_spawn(third).unwrap();
    let results = executor.block_on(async { (first.await, second.await, third.await) });
    assert_eq!(results, (Ok(Ok(1)), Ok(Ok(2)), Ok(Ok(3))));
}

#[test]
fn submissions_wait_in_the_ingress_while_the_cap_is_reached() {
    let executor = LocalExecutor::with_config(ExecutorConfig {
        max_tasks: Some(1),
        ingress_capacity: 4,
        ..ExecutorConfig::default()
    })
    .unwrap();
    let blocker = executor.try_spawn(forever()).unwrap();
    let mut waiting = executor
        .spawner()
        .try_spawn(async { Ok::<_, ()>("ran") })
        .unwrap();
    for _ in 0..3 {
        executor.tick(usize::MAX);
    }
    assert_eq!(waiting.try_take(), None, "still waiting for room");
    assert!(blocker.cancel());
    executor.tick(usize::MAX); // the cancellation frees the room
    while executor.tick(usize::MAX).work_remaining {}
    assert_eq!(waiting.try_take(), Some(Ok(Ok("ran"))));
}

#[test]
fn a_submission_cancelled_before_it_is_taken_in_never_runs() {
    let executor = LocalExecutor::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let handle = {
        let ran = Arc::clone(&ran);
        executor
            .spawner()
            .try_spawn(async move {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap()
    };
    assert!(handle.cancel());
    assert_eq!(executor.block_on(handle), Err(JoinError::Cancelled));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[test]
fn shutdown_drops_everything_once_on_the_executor_thread_and_reports_it() {
    let executor = LocalExecutor::with_config(ExecutorConfig {
        max_tasks: Some(2),
        ingress_capacity: 8,
        ..ExecutorConfig::default()
    })
    .unwrap();
    let mut probes = Vec::new();
    let mut handles = Vec::new();
    for _ in 0..2 {
        let (probe, drops, thread) = DropProbe::new();
        probes.push((drops, thread));
        handles.push(
            executor
                .try_spawn(async move {
                    let _probe = probe;
                    forever().await;
                })
                .unwrap(),
        );
    }
    executor.tick(usize::MAX);
    // Two more from another thread: they wait (the cap is reached).
    let spawner = executor.spawner();
    let remote: Vec<_> = thread::scope(|scope| {
        scope
            .spawn(|| {
                (0..2)
                    .map(|_| {
                        let (probe, drops, thread) = DropProbe::new();
                        let handle = spawner
                            .try_spawn(async move {
                                let _probe = probe;
                            })
                            .unwrap();
                        (handle, drops, thread)
                    })
                    .collect()
            })
            .join()
            .unwrap()
    });
    let report = executor.shutdown();
    assert_eq!(report.cancelled_tasks, 2);
    assert_eq!(report.cancelled_submissions, 2);
    assert_eq!(report.left(), 4);
    let here = thread::current().id();
    for (drops, thread) in probes
        .iter()
        .map(|(drops, thread)| (drops, thread))
        .chain(remote.iter().map(|(_, drops, thread)| (drops, thread)))
    {
        assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped exactly once");
        assert_eq!(
            *thread.lock().unwrap(),
            Some(here),
            "on the executor's thread"
        );
    }
    for mut handle in handles {
        assert_eq!(handle.try_take(), Some(Err(JoinError::Cancelled)));
    }
    for (mut handle, _, _) in remote {
        assert_eq!(handle.try_take(), Some(Err(JoinError::Cancelled)));
    }
    // Closed for good: both doors hand the future back.
    assert!(matches!(
        executor.try_spawn(async {}),
        Err(SpawnError::Shutdown(_))
    ));
    assert!(matches!(
        spawner.try_spawn(async {}),
        Err(SpawnError::Shutdown(_))
    ));
    assert_eq!(
        executor.shutdown(),
        Default::default(),
        "nothing left the second time"
    );
}

#[test]
fn dropping_the_executor_shuts_it_down() {
    let (probe, drops, _) = DropProbe::new();
    let executor = LocalExecutor::new();
    let spawner = executor.spawner();
    let mut handle = executor
        .try_spawn(async move {
            let _probe = probe;
            forever().await;
        })
        .unwrap();
    executor.tick(usize::MAX);
    drop(executor);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(handle.try_take(), Some(Err(JoinError::Cancelled)));
    let refused = spawner.try_spawn(async {});
    assert!(matches!(refused, Err(SpawnError::Shutdown(_))));
}

#[test]
fn a_handle_cancels_from_another_thread_and_is_awaited_there() {
    let executor = LocalExecutor::new();
    let handle = executor.try_spawn(forever()).unwrap();
    executor.tick(usize::MAX);
    let barrier = Barrier::new(2);
    thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            assert!(handle.cancel());
            barrier.wait();
            // Awaited on this thread, resolved by the executor's.
            LocalExecutor::new().block_on(handle)
        });
        barrier.wait();
        // The cancel woke the executor; this tick carries it out.
        executor.block_on(async {
            yield_now().await;
        });
        assert_eq!(waiter.join().unwrap(), Err(JoinError::Cancelled));
    });
}

#[test]
fn stale_wakes_are_counted_and_ignored() {
    let executor = LocalExecutor::new();
    let parked: Rc<RefCell<Option<Waker>>> = Rc::default();
    let handle = {
        let parked = Rc::clone(&parked);
        executor
            .try_spawn(poll_fn(move |cx| {
                *parked.borrow_mut() = Some(cx.waker().clone());
                Poll::Ready(())
            }))
            .unwrap()
    };
    executor.tick(usize::MAX);
    assert!(handle.is_finished());
    // Only the waker below still refers to the task's cell.
    drop(handle);
    let waker = parked.borrow_mut().take().unwrap();
    waker.wake_by_ref();
    let report = executor.tick(usize::MAX);
    assert_eq!((report.polled, report.stale_wakes), (0, 1));
    assert_eq!(executor.stale_wakes(), 1);
    // The cell is not reused while this waker lives; a new task is safe:
    // the old waker's wake is stale, not the new task's.
    let next = executor.try_spawn(async { Ok::<_, ()>(1) }).unwrap();
    waker.wake();
    let report = executor.tick(usize::MAX);
    assert_eq!((report.polled, report.stale_wakes), (1, 1));
    assert_eq!(executor.stale_wakes(), 2);
    assert_eq!(executor.block_on(next), Ok(Ok(1)));
}

#[test]
fn a_panic_in_block_on_s_own_future_unwinds_and_leaves_the_executor_usable() {
    support::quiet_panics_containing(&["main future failed"]);
    let executor = LocalExecutor::new();
    let result = catch_unwind(AssertUnwindSafe(|| {
        executor.block_on(async { panic!("main future failed") })
    }));
    assert!(result.is_err());
    assert_eq!(executor.block_on(async { 1 }), 1);
}

/// Where a test keeps a handle its task's destructor can look at.
type HandleSlot = Rc<RefCell<Option<dinah::JoinHandle<Result<(), ()>>>>>;

/// Records, when dropped, whether its task's handle had already resolved.
struct SeesHandle {
    handle: HandleSlot,
    resolved_at_drop: Rc<Cell<Option<bool>>>,
}

impl Drop for SeesHandle {
    fn drop(&mut self) {
        let finished = self.handle.borrow().as_ref().map(|h| h.is_finished());
        self.resolved_at_drop.set(finished);
    }
}

#[test]
fn a_task_s_future_is_dropped_before_its_handle_resolves() {
    support::quiet_panics_containing(&["ends by panicking"]);
    // Cancelled before its first poll or after it, panicked, shut down:
    // each drop sees an unresolved handle.
    for ending in ["cancel before start", "cancel", "panic", "shutdown"] {
        let executor = LocalExecutor::new();
        let handle_slot = Rc::new(RefCell::new(None));
        let resolved_at_drop = Rc::new(Cell::new(None));
        let probe = SeesHandle {
            handle: Rc::clone(&handle_slot),
            resolved_at_drop: Rc::clone(&resolved_at_drop),
        };
        let panics = ending == "panic";
        let handle = executor
            .try_spawn(async move {
                let _probe = probe;
                yield_now().await;
                assert!(!panics, "ends by panicking");
                forever().await;
                Ok::<(), ()>(())
            })
            .unwrap();
        *handle_slot.borrow_mut() = Some(handle);
        if ending == "cancel before start" {
            assert!(handle_slot.borrow().as_ref().unwrap().cancel());
        }
        executor.tick(usize::MAX);
        match ending {
            "cancel before start" => {}
            "cancel" => {
                assert!(handle_slot.borrow().as_ref().unwrap().cancel());
                executor.tick(usize::MAX);
            }
            "panic" => {
                executor.tick(usize::MAX);
            }
            _ => {
                executor.shutdown();
            }
        }
        assert_eq!(
            resolved_at_drop.get(),
            Some(false),
            "{ending}: dropped first"
        );
        let result = handle_slot.borrow_mut().as_mut().unwrap().try_take();
        let expected = if panics {
            Err(JoinError::Panicked("ends by panicking".into()))
        } else {
            Err(JoinError::Cancelled)
        };
        assert_eq!(result, Some(expected), "{ending}: then resolved");
    }
}

#[test]
fn block_on_starts_afresh_after_a_wake_that_landed_in_the_last_poll() {
    let executor = LocalExecutor::new();
    // Woken from another thread during the poll that returns `Ready`.
    let first = WokenElsewhere {
        polls: 0,
        ready_at: 1,
    };
    assert_eq!(executor.block_on(first), 1);
    // The next future is woken the same way on its first poll, and is
    // ready when polled again: the call returns (it used to spin forever,
    // with the main future linked twice into the wake list).
    for _ in 0..3 {
        let next = WokenElsewhere {
            polls: 0,
            ready_at: 2,
        };
        assert_eq!(executor.block_on(next), 2);
    }
    assert!(!executor.tick(usize::MAX).work_remaining);
}

/// Panics when dropped, once.
struct PanicsOnDrop(Arc<AtomicUsize>);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("destructor exploded");
        }
    }
}

#[test]
fn a_cancelled_task_whose_destructor_panics_resolves_panicked_and_gives_its_place_back() {
    support::quiet_panics_containing(&["destructor exploded"]);
    let executor = LocalExecutor::with_config(ExecutorConfig {
        max_tasks: Some(1),
        ..ExecutorConfig::default()
    })
    .unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = PanicsOnDrop(Arc::clone(&drops));
    let mut task = executor
        .try_spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        })
        .unwrap();
    executor.tick(usize::MAX);
    assert!(task.cancel());
    // The panic is the task's failure; the tick goes on.
    executor.tick(usize::MAX);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(
        task.try_take(),
        Some(Err(JoinError::Panicked("destructor exploded".into())))
    );
    assert_eq!(executor.live_tasks(), 0);
    // Its place under the cap is back.
    let next = executor
        .try_spawn(async { Ok::<_, ()>(5) })
        .expect("room under the cap");
    assert_eq!(executor.block_on(next), Ok(Ok(5)));
    assert_eq!(executor.shutdown().left(), 0);
}

#[test]
fn shutdown_resolves_a_task_whose_destructor_panics_and_drops_the_rest() {
    support::quiet_panics_containing(&["destructor exploded"]);
    let executor = LocalExecutor::new();
    let spawn_guarded = |drops: &Arc<AtomicUsize>| {
        let guard = PanicsOnDrop(Arc::clone(drops));
        executor
            .try_spawn(async move {
                let _guard = guard;
                std::future::pending::<()>().await;
            })
            .unwrap()
    };
    let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(1)));
    let mut panicking = spawn_guarded(&first);
    let mut quiet = spawn_guarded(&second);
    executor.tick(usize::MAX);
    // A submission not yet taken in, whose destructor panics too.
    let third = Arc::new(AtomicUsize::new(0));
    let guard = PanicsOnDrop(Arc::clone(&third));
    let mut submitted = executor
        .spawner()
        .try_spawn(async move {
            let _guard = guard;
        })
        .unwrap();
    let report = executor.shutdown();
    assert_eq!(
        (report.cancelled_tasks, report.cancelled_submissions),
        (1 + 1, 1)
    );
    let panicked = Some(Err(JoinError::Panicked("destructor exploded".into())));
    assert_eq!(panicking.try_take(), panicked);
    assert_eq!(quiet.try_take(), Some(Err(JoinError::Cancelled)));
    assert_eq!(submitted.try_take(), panicked);
    let dropped = [&first, &second, &third].map(|d| d.load(Ordering::SeqCst));
    assert_eq!(dropped, [1, 2, 1], "each future dropped once");
}

#[test]
fn cancel_returning_true_means_the_handle_says_cancelled() {
    let executor = LocalExecutor::new();
    let (in_poll, cancelled) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let task = {
        let (in_poll, cancelled) = (Arc::clone(&in_poll), Arc::clone(&cancelled));
        executor
            .try_spawn(async move {
                // The task's last poll: the other thread cancels during it,
                // and the poll returns a value anyway.
                in_poll.wait();
                cancelled.wait();
                Ok::<_, ()>("value")
            })
            .unwrap()
    };
    let handle = Arc::new(Mutex::new(task));
    let canceller = {
        let handle = Arc::clone(&handle);
        thread::spawn(move || {
            in_poll.wait();
            let accepted = handle.lock().unwrap().cancel();
            cancelled.wait();
            accepted
        })
    };
    executor.tick(usize::MAX);
    assert!(canceller.join().unwrap(), "not finished when cancelled");
    let mut handle = Arc::try_unwrap(handle).unwrap().into_inner().unwrap();
    assert_eq!(handle.try_take(), Some(Err(JoinError::Cancelled)));
    // A finished task cannot be cancelled: `false`, nothing changes.
    let done = executor.try_spawn(async { Ok::<_, ()>(1) }).unwrap();
    executor.tick(usize::MAX);
    assert!(!done.cancel());
    assert_eq!(executor.block_on(done), Ok(Ok(1)));
}

#[test]
fn a_wake_from_a_thread_local_destructor_reaches_the_task() {
    struct WakeOnDrop(Option<Waker>);
    impl Drop for WakeOnDrop {
        fn drop(&mut self) {
            if let Some(waker) = self.0.take() {
                waker.wake();
            }
        }
    }
    thread_local! {
        static LAST_WORDS: RefCell<Option<WakeOnDrop>> = const { RefCell::new(None) };
    }
    let executor = LocalExecutor::new();
    let woken = Rc::new(Cell::new(false));
    let task = {
        let woken = Rc::clone(&woken);
        executor
            .try_spawn(poll_fn(move |cx| {
                if woken.replace(true) {
                    return Poll::Ready(Ok::<_, ()>("woken"));
                }
                let waker = cx.waker().clone();
                // A thread whose thread-local wakes the task as it is
                // destroyed, when the thread ends, after the executors'
                // own thread-local (touched later, so destroyed first).
                thread::spawn(move || {
                    LAST_WORDS.with(|slot| *slot.borrow_mut() = Some(WakeOnDrop(Some(waker))));
                    LocalExecutor::new().tick(1);
                })
                .join()
                .expect("waking from a thread-local's destructor does not panic");
                Poll::Pending
            }))
            .unwrap()
    };
    assert_eq!(executor.block_on(task), Ok(Ok("woken")));
}

#[test]
fn a_wake_from_another_thread_during_a_poll_is_not_the_tasks_own() {
    let executor = LocalExecutor::new();
    let task = executor
        .try_spawn(async {
            WokenElsewhere {
                polls: 0,
                ready_at: 2,
            }
            .await;
            yield_now().await;
            Ok::<_, ()>(())
        })
        .unwrap();
    executor.tick(usize::MAX);
    let woken = executor.tick(usize::MAX);
    assert_eq!(
        (woken.woken_outside, woken.woken_in_poll, woken.self_woken),
        (1, 0, 0)
    );
    let own = executor.tick(usize::MAX);
    assert_eq!((own.self_woken, own.completed), (1, 1));
    assert_eq!(executor.block_on(task), Ok(Ok(())));
}

#[test]
fn a_task_that_never_ends_is_accepted_and_can_be_cancelled() {
    let executor = LocalExecutor::new();
    let spins = Rc::new(Cell::new(0));
    let mut forever = {
        let spins = Rc::clone(&spins);
        executor
            .try_spawn(async move {
                loop {
                    spins.set(spins.get() + 1);
                    yield_now().await;
                }
            })
            .unwrap()
    };
    let remote = executor
        .spawner()
        .try_spawn(async {
            loop {
                yield_now().await;
            }
        })
        .unwrap();
    executor.tick(usize::MAX);
    executor.tick(usize::MAX);
    assert_eq!(spins.get(), 2);
    assert!(forever.cancel() && remote.cancel());
    executor.tick(usize::MAX);
    assert!(matches!(
        forever.try_take(),
        Some(Err(JoinError::Cancelled))
    ));
    assert!(matches!(
        executor.block_on(remote),
        Err(JoinError::Cancelled)
    ));
}

/// A draining shutdown's deadline bounds the call on a paused clock too,
/// though a task that keeps waking itself never lets the executor idle
/// (and so never lets the paused clock move): the task is cancelled and
/// named in the report. Run on a thread of its own so that a call that
/// never returns fails the test instead of hanging it.
#[test]
fn a_drain_on_a_paused_clock_ends_though_a_task_keeps_waking_itself() {
    use dinah::pool::ShutdownPolicy;
    use dinah::task::ChildEnd;
    use std::time::Duration;
    let (done, ends) = std::sync::mpsc::channel();
    let worker = thread::spawn(move || {
        let executor = LocalExecutor::with_config(ExecutorConfig {
            start_paused: true,
            ..ExecutorConfig::default()
        })
        .unwrap();
        let spinning = executor
            .try_spawn_named("spinner", async {
                loop {
                    yield_now().await;
                }
            })
            .unwrap_or_else(|_| unreachable!());
        // Ends in its first poll, which the drain's first tick makes
        // whatever the clock says (under Miri a tick takes milliseconds).
        let saved = executor
            .try_spawn_named("save", async {})
            .unwrap_or_else(|_| unreachable!());
        let report = executor.shutdown_with(ShutdownPolicy::Drain, Duration::from_millis(200));
        let ends: Vec<_> = report
            .tasks
            .iter()
            .map(|task| (task.name, task.end))
            .collect();
        drop((spinning, saved));
        done.send(ends).unwrap();
    });
    let ends = ends
        .recv_timeout(Duration::from_secs(60))
        .expect("the drain returns");
    assert_eq!(
        ends,
        [
            (Some("spinner"), ChildEnd::Cancelled),
            (Some("save"), ChildEnd::Completed)
        ]
    );
    worker.join().unwrap();
}
