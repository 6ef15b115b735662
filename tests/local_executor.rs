//! The hosted `LocalExecutor`'s own promises, beyond the two contracts it
//! runs (`executor_contract.rs`, tick by tick; `runtime_contract.rs`,
//! through join handles): its tick-level view of handles, `!Send` tasks and
//! the `LocalSpawner`, `block_on` re-entry, the bounded `Spawner` ingress
//! and its cap, and shutdown on the executor's own thread.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::thread::{self, ThreadId};

use dinah::executor::ExecutorConfig;
use dinah::queue::CapacityError;
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
