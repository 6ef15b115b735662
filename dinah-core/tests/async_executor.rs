//! The async executor's contract: the seed's deterministic facts, wake
//! order, budgets, lifecycle, cancellation, stale wakes and panics. Each test
//! has its own `static` queue, since a queue serves one executor, once.
//! (Not built for loom, whose atomics cannot live in a `static`:
//! `tests/loom_executor.rs` models the same protocol.)
#![cfg(not(loom))]

use std::cell::RefCell;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::task::{Poll, Waker};
use std::thread;

mod support;
use support::Probe;

use dinah_core::executor::{CancelError, QueueClaimed};
use dinah_core::task::{TaskFailureKind, chunked};
use dinah_core::{AsyncExecutor, ReadyQueue, SpawnError, Task, TaskState, yield_now};

type Log = RefCell<Vec<&'static str>>;

/// Counts how often it is dropped.
struct DropCounter<'a>(&'a AtomicUsize);

impl Drop for DropCounter<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn wake(probe: &Probe) {
    probe.take_parked().wake();
}

#[test]
fn a_wake_during_its_own_poll_counts_from_the_poll_s_end_on_a_host() {
    static QUEUE: ReadyQueue<2> = ReadyQueue::new();
    let log = Log::default();
    let parked: RefCell<Option<Waker>> = RefCell::default();
    // `b` parks its waker and logs each poll, twice.
    let mut b = pin!(Some(async {
        for _ in 0..2 {
            log.borrow_mut().push("b");
            let mut parked_once = false;
            std::future::poll_fn(|cx| {
                if std::mem::replace(&mut parked_once, true) {
                    return Poll::Ready(());
                }
                *parked.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            })
            .await;
        }
    }));
    // `a` wakes itself, then `b`, in one poll.
    let mut a = pin!(Some(async {
        let mut polled = false;
        std::future::poll_fn(|cx| {
            if std::mem::replace(&mut polled, true) {
                return Poll::Ready(());
            }
            cx.waker().wake_by_ref();
            parked.borrow_mut().take().unwrap().wake();
            Poll::Pending
        })
        .await;
        log.borrow_mut().push("a");
    }));
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
    executor.try_spawn(b.as_mut()).unwrap();
    executor.try_spawn(a.as_mut()).unwrap();
    assert_eq!(executor.tick(8).polled, 2);
    assert_eq!(executor.tick(8).polled, 2);
    // With an operating system, `a`'s wake of itself counts from its poll's
    // end, after its wake of `b`; on firmware it counts when it was made.
    let expected = if cfg!(any(target_os = "none", dinah_plain_wakes)) {
        ["b", "a", "b"]
    } else {
        ["b", "b", "a"]
    };
    assert_eq!(*log.borrow(), expected);
    assert!(!executor.tick(8).work_remaining);
}

#[test]
fn a_full_executor_hands_the_task_back() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    let mut first = pin!(Some(yield_now()));
    let mut second = pin!(Some(async {}));
    let mut empty = pin!(None::<core::future::Ready<()>>);
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    executor.try_spawn(first.as_mut()).unwrap();
    let refused = executor.try_spawn(second.as_mut()).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "no room for the task; it was handed back"
    );
    let handed_back = refused.into_inner();
    assert!(handed_back.has_future(), "the future is intact");
    assert!(matches!(
        executor.try_spawn(empty.as_mut()),
        Err(SpawnError::NoFuture(_))
    ));
    while executor.tick(8).work_remaining {}
    // Now the slot is free again and the handed-back task can run.
    executor.try_spawn(handed_back).unwrap();
    assert_eq!(executor.tick(8).completed, 1);
}

#[test]
fn lifecycle_pending_running_completed() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    let mut task = pin!(Some(yield_now()));
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    let id = executor.try_spawn(task.as_mut()).unwrap();
    assert_eq!(executor.task_state(id), Some(TaskState::Pending));
    executor.tick(8);
    assert_eq!(executor.task_state(id), Some(TaskState::Running));
    executor.tick(8);
    assert_eq!(executor.task_state(id), Some(TaskState::Completed));
    assert!(!task.has_future(), "the finished future was dropped");
}

#[test]
fn a_returned_error_is_kept_until_taken_and_holds_its_slot() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    let mut failing = pin!(Some(async { Err::<(), _>("disk full") }));
    let mut next = pin!(Some(async { Ok::<(), &str>(()) }));
    let mut executor: AsyncExecutor<'_, 1, Result<(), &str>> = AsyncExecutor::new(&QUEUE).unwrap();
    let id = executor.try_spawn(failing.as_mut()).unwrap();
    assert_eq!(executor.tick(8).failed, 1);
    assert_eq!(executor.task_state(id), Some(TaskState::Failed));
    // The failure holds the only slot until it is read.
    let next = executor.try_spawn(next.as_mut()).unwrap_err().into_inner();
    let failure = executor.take_failure(id).expect("kept");
    assert_eq!(failure.kind(), TaskFailureKind::ReturnedError);
    assert_eq!(failure.into_error(), "disk full");
    assert!(executor.take_failure(id).is_none(), "taken once");
    let next_id = executor.try_spawn(next).unwrap();
    assert_ne!(next_id, id);
    assert_eq!(executor.task_state(id), None, "the slot was reused");
    assert_eq!(executor.tick(8).completed, 1);
}

#[test]
fn cancel_drops_the_future_once_at_the_next_scheduling_point() {
    static QUEUE: ReadyQueue<2> = ReadyQueue::new();
    let drops = AtomicUsize::new(0);
    let probe = Probe::default();
    let mut task = pin!(Some(async {
        let _guard = DropCounter(&drops);
        probe.gate().await;
    }));
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
    let id = executor.try_spawn(task.as_mut()).unwrap();
    executor.tick(8);
    executor.cancel(id).unwrap();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "not dropped by the request"
    );
    assert_eq!(executor.task_state(id), Some(TaskState::Running));
    let report = executor.tick(8);
    assert_eq!((report.cancelled, report.polled), (1, 0));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(executor.task_state(id), Some(TaskState::Cancelled));
    assert_eq!(probe.polls(), 1, "never polled after the request");
    // The parked waker outlives the task: it keeps the slot, and its wake is stale.
    assert_eq!(executor.cancel(id), Err(CancelError::AlreadyFinished(id)));
    wake(&probe);
    assert_eq!(executor.tick(8).stale_wakes, 1);
    assert_eq!(
        executor.task_state(id),
        Some(TaskState::Cancelled),
        "readable until the slot is reused"
    );
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn cancel_from_inside_a_poll_waits_for_the_poll_to_end() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    let drops = AtomicUsize::new(0);
    let own_id = Mutex::new(None);
    let drops_seen_in_poll = AtomicUsize::new(usize::MAX);
    let mut task = pin!(Some(async {
        let _guard = DropCounter(&drops);
        yield_now().await;
        let id = own_id.lock().unwrap().unwrap();
        QUEUE.cancel(id).unwrap();
        drops_seen_in_poll.store(drops.load(Ordering::SeqCst), Ordering::SeqCst);
        std::future::pending::<()>().await;
    }));
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    let id = executor.try_spawn(task.as_mut()).unwrap();
    *own_id.lock().unwrap() = Some(id);
    executor.tick(8);
    executor.tick(8);
    assert_eq!(drops_seen_in_poll.load(Ordering::SeqCst), 0);
    assert_eq!(executor.tick(8).cancelled, 1);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn unknown_and_reused_ids_are_refused() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    static OTHER: ReadyQueue<1> = ReadyQueue::new();
    let mut first = pin!(Some(async {}));
    let mut second = pin!(Some(yield_now()));
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    let old = executor.try_spawn(first.as_mut()).unwrap();
    executor.tick(8);
    let new = executor.try_spawn(second.as_mut()).unwrap();
    assert_ne!(old, new, "same slot, new generation");
    assert_eq!(executor.task_state(old), None);
    assert_eq!(executor.cancel(old), Err(CancelError::UnknownTask(old)));
    assert_eq!(OTHER.task_state(new), None);
    assert_eq!(executor.task_state(new), Some(TaskState::Pending));
    // Ids no slot can have: slot bits of zero, or past the slots.
    for raw in [1 << 32, u64::MAX, 2, 0xffff_ffff] {
        let foreign = dinah_core::TaskId::from_raw(raw).unwrap();
        assert_eq!(executor.task_state(foreign), None, "{raw:#x}");
        assert_eq!(
            executor.cancel(foreign),
            Err(CancelError::UnknownTask(foreign))
        );
    }
}

#[test]
fn a_queue_serves_one_executor() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    {
        let _first: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    }
    assert_eq!(
        AsyncExecutor::<'_, 1>::new(&QUEUE).unwrap_err(),
        QueueClaimed
    );
}

#[test]
fn a_stale_waker_keeps_its_slot_and_never_reaches_the_next_task() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    let probe = Probe::opened();
    let kept: Mutex<Option<Waker>> = Mutex::new(None);
    let mut first = pin!(Some(async {
        std::future::poll_fn(|cx| {
            *kept.lock().unwrap() = Some(cx.waker().clone());
            Poll::Ready(())
        })
        .await;
    }));
    let mut second = pin!(Some(probe.gate()));
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    executor.try_spawn(first.as_mut()).unwrap();
    assert_eq!(executor.tick(8).completed, 1);
    // The finished task's waker is still alive: the slot stays out of use.
    let second = executor
        .try_spawn(second.as_mut())
        .unwrap_err()
        .into_inner();
    let waker = kept.lock().unwrap().take().unwrap();
    waker.wake_by_ref();
    assert_eq!(executor.tick(8).stale_wakes, 1);
    drop(waker);
    executor.tick(8);
    executor.try_spawn(second).unwrap();
    assert_eq!(executor.tick(8).completed, 1);
    assert_eq!(probe.polls(), 1);
}

#[test]
fn a_wake_from_another_thread_reaches_run_until() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    let probe = Probe::default();
    let parked_once = Barrier::new(2);
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    thread::scope(|s| {
        s.spawn(|| {
            parked_once.wait();
            probe.open();
            wake(&probe);
        });
        let main = async {
            let gate = probe.gate();
            let mut gate = pin!(gate);
            // Park once, then let the other thread open the gate.
            std::future::poll_fn(|cx| gate.as_mut().poll(cx)).await;
            "opened"
        };
        let signalled = AtomicBool::new(false);
        let result = executor.run_until(
            async {
                let mut main = pin!(main);
                std::future::poll_fn(|cx| {
                    let poll = main.as_mut().poll(cx);
                    if poll.is_pending() && !signalled.swap(true, Ordering::SeqCst) {
                        parked_once.wait();
                    }
                    poll
                })
                .await
            },
            8,
            thread::yield_now,
        );
        assert_eq!(result, "opened");
    });
    assert_eq!(probe.polls(), 2);
}

#[test]
fn run_until_drives_spawned_tasks() {
    static QUEUE: ReadyQueue<2> = ReadyQueue::new();
    let done = AtomicUsize::new(0);
    let mut a = pin!(Some(chunked(0..4, |_| {
        done.fetch_add(1, Ordering::SeqCst);
    })));
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
    executor.try_spawn(a.as_mut()).unwrap();
    let observed = executor.run_until(
        async {
            while done.load(Ordering::SeqCst) < 4 {
                yield_now().await;
            }
            done.load(Ordering::SeqCst)
        },
        8,
        || {},
    );
    assert_eq!(observed, 4);
}

#[test]
fn a_panicking_poll_fails_that_task_only() {
    static QUEUE: ReadyQueue<2> = ReadyQueue::new();
    let ran = AtomicBool::new(false);
    let mut bad = pin!(Some(async {
        panic!("task exploded");
    }));
    let mut good = pin!(Some(async {
        yield_now().await;
        ran.store(true, Ordering::SeqCst);
    }));
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
    let bad_id = executor.try_spawn(bad.as_mut()).unwrap();
    let good_id = executor.try_spawn(good.as_mut()).unwrap();
    let payload = panic::catch_unwind(AssertUnwindSafe(|| executor.tick(8)))
        .expect_err("the panic reaches the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"task exploded"));
    assert_eq!(executor.task_state(bad_id), Some(TaskState::Failed));
    assert!(executor.take_failure(bad_id).is_none(), "no error value");
    while executor.tick(8).work_remaining {}
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(executor.task_state(good_id), Some(TaskState::Completed));
    assert_eq!(
        executor.task_state(bad_id),
        Some(TaskState::Failed),
        "readable until the slot is reused"
    );
}

#[test]
fn a_task_that_wakes_itself_and_panics_in_one_poll_gives_its_slot_back() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    let mut bad = pin!(Some(std::future::poll_fn(|cx| -> Poll<()> {
        cx.waker().wake_by_ref();
        panic!("woke itself, then exploded");
    })));
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    let bad_id = executor.try_spawn(bad.as_mut()).unwrap();
    panic::catch_unwind(AssertUnwindSafe(|| executor.tick(8)))
        .expect_err("the panic reaches the caller");
    assert_eq!(executor.task_state(bad_id), Some(TaskState::Failed));
    // Its queued entry comes back, is released, and frees the one slot.
    let report = executor.tick(8);
    assert_eq!((report.polled, report.work_remaining), (0, false));
    let mut next = pin!(Some(async {}));
    let next_id = executor.try_spawn(next.as_mut()).unwrap();
    executor.tick(8);
    assert_eq!(executor.task_state(next_id), Some(TaskState::Completed));
}

#[test]
fn a_task_that_wakes_itself_and_finishes_in_one_poll_frees_its_slot_once() {
    static QUEUE: ReadyQueue<2> = ReadyQueue::new();
    let mut first = pin!(Some(std::future::poll_fn(|cx| {
        cx.waker().wake_by_ref();
        Poll::Ready(())
    })));
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
    executor.try_spawn(first.as_mut()).unwrap();
    let report = executor.tick(8);
    assert_eq!((report.completed, report.work_remaining), (1, true));
    // Its own wake is still queued; the slot is freed when that entry is
    // taken, not before and not twice.
    assert!(!executor.tick(8).work_remaining);
    let mut tasks = [pin!(Some(yield_now())), pin!(Some(yield_now()))];
    let mut third = pin!(Some(yield_now()));
    for task in &mut tasks {
        executor.try_spawn(task.as_mut()).unwrap();
    }
    assert!(
        matches!(executor.try_spawn(third.as_mut()), Err(SpawnError::Full(_))),
        "two slots, two tasks: the freed slot was listed once"
    );
    while executor.tick(8).work_remaining {}
    assert_eq!(executor.live_tasks(), 0);
}

/// A task's counts from its figures: polls, wakes, self-wakes, stale wakes.
fn counts(figures: Option<dinah_core::telemetry::TaskFigures>) -> Option<[u64; 4]> {
    figures.map(|f| [f.polls, f.wakes, f.self_wakes, f.stale_wakes])
}

#[test]
fn per_task_counters_count_polls_wakes_self_wakes_and_stale_wakes() {
    use dinah_core::telemetry::Counted;
    static QUEUE: ReadyQueue<1, Counted> = ReadyQueue::new();
    let probe = Probe::default();
    let mut task = pin!(Some(async {
        yield_now().await;
        yield_now().await;
        probe.gate().await;
    }));
    let mut executor: AsyncExecutor<'_, 1, (), Counted> = AsyncExecutor::new(&QUEUE).unwrap();
    let id = executor.try_spawn(task.as_mut()).unwrap();
    assert_eq!(counts(executor.task_figures(id)), Some([0; 4]));
    for _ in 0..3 {
        executor.tick(8);
    }
    probe.open();
    let waker = probe.parked.lock().unwrap().take().unwrap();
    waker.wake_by_ref();
    assert_eq!(executor.tick(8).completed, 1);
    // Two more wakes after the end: stale, counted for this task.
    waker.wake_by_ref();
    waker.wake_by_ref();
    assert_eq!(counts(executor.task_figures(id)), Some([4, 3, 2, 2]));
    drop(waker);
    executor.tick(8);
    // A new task in the slot starts from zero; the old id names nothing.
    let mut next = pin!(Some(async {}));
    let next_id = executor.try_spawn(next.as_mut()).unwrap();
    assert_eq!(executor.task_figures(id), None);
    assert_eq!(counts(executor.task_figures(next_id)), Some([0; 4]));
}

/// The tick sources of the timed tests: source `K` reads `NOW[K]`, one per
/// test, since tests run in parallel.
static NOW: [std::sync::atomic::AtomicU64; 4] = [const { std::sync::atomic::AtomicU64::new(0) }; 4];

#[derive(Default)]
struct Ticks<const K: usize>;

impl<const K: usize> Ticks<K> {
    fn set(tick: u64) {
        NOW[K].store(tick, Ordering::Relaxed);
    }
}

impl<const K: usize> dinah_core::telemetry::Clock for Ticks<K> {
    fn now(&self) -> u64 {
        NOW[K].load(Ordering::Relaxed)
    }
    fn ticks_per_second(&self) -> u64 {
        1_000
    }
}

#[test]
fn a_timed_queue_tells_each_poll_how_long_it_waited() {
    use dinah_core::TaskId;
    use dinah_core::telemetry::{Log2Histogram, PollObserver, PollTimes, Timed};

    type Now = Ticks<0>;
    fn at(tick: u64) {
        Now::set(tick);
    }
    /// Every call, in order.
    #[derive(Default)]
    struct Calls(RefCell<Vec<(&'static str, TaskId, bool, u64)>>);
    impl PollObserver for Calls {
        fn poll_started(&self, task: TaskId) {
            self.0.borrow_mut().push(("start", task, false, 0));
        }
        fn poll_ended(&self, _: TaskId) {}
        fn poll_waited(&self, task: TaskId, first: bool, ticks: u64) {
            self.0.borrow_mut().push(("waited", task, first, ticks));
        }
    }

    static QUEUE: ReadyQueue<2, Timed<Now>> = ReadyQueue::new();
    let probe = Probe::default();
    let mut a = pin!(Some(async {
        yield_now().await;
        probe.gate().await;
    }));
    let mut b = pin!(Some(async {}));
    let mut executor: AsyncExecutor<'_, 2, (), Timed<Now>> = AsyncExecutor::new(&QUEUE).unwrap();
    let calls = Calls::default();
    let times: PollTimes<Now, 8> = PollTimes::new(Ticks, 100);
    let observer = (&calls, &times);

    at(5);
    let a_id = executor.try_spawn(a.as_mut()).unwrap();
    at(9);
    let b_id = executor.try_spawn(b.as_mut()).unwrap();
    // First polls: 7 and 3 ticks after the spawns. `a` wakes itself at 12.
    at(12);
    executor.tick_observed(8, &observer);
    // Its second poll waited from its own wake at 12.
    at(20);
    executor.tick_observed(8, &observer);
    // Two wakes coalesce: the wait runs from the first.
    at(30);
    probe.open();
    let waker = probe.take_parked();
    waker.wake_by_ref();
    at(31);
    waker.wake_by_ref();
    at(45);
    assert_eq!(executor.tick_observed(8, &observer).completed, 1);
    // A stale wake stamps nothing and polls nothing.
    at(50);
    waker.wake_by_ref();
    assert_eq!(executor.tick_observed(8, &observer).polled, 0);

    assert_eq!(
        *calls.0.borrow(),
        [
            ("waited", a_id, true, 7),
            ("start", a_id, false, 0),
            ("waited", b_id, true, 3),
            ("start", b_id, false, 0),
            ("waited", a_id, false, 8),
            ("start", a_id, false, 0),
            ("waited", a_id, false, 15),
            ("start", a_id, false, 0),
        ]
    );
    let histogram = |samples: &[u64]| {
        let mut h: Log2Histogram<8> = Log2Histogram::new();
        samples.iter().for_each(|&s| h.record(s));
        h
    };
    let figures = times.figures();
    assert_eq!(figures.first_poll_delay, histogram(&[7, 3]));
    assert_eq!(figures.wake_to_poll, histogram(&[8, 15]));
    assert_eq!(figures.poll_time, histogram(&[0, 0, 0, 0]));
    assert_eq!((figures.polls, figures.ticks_per_second), (4, 1_000));
    assert_eq!(counts(executor.task_figures(a_id)), Some([3, 2, 1, 1]));
}

#[test]
fn task_times_keep_each_tasks_polls_and_waits_until_its_slot_is_reused() {
    /// polls, busy, longest poll, first-poll delay, longest wake-to-poll.
    type Times = (u64, u64, u64, Option<u64>, u64);
    fn times(figures: Option<dinah_core::telemetry::TaskFigures>) -> Option<Times> {
        figures.map(|f| {
            (
                f.polls,
                f.busy,
                f.longest_poll,
                f.first_poll_delay,
                f.longest_wake_to_poll,
            )
        })
    }
    use dinah_core::telemetry::{TaskTimes, Timed};
    type Now = Ticks<3>;
    static QUEUE: ReadyQueue<2, Timed<Now>> = ReadyQueue::new();
    // `a` runs from 10 to 13, wakes itself, then from 20 to 30.
    let mut a = pin!(Some(async {
        Now::set(13);
        yield_now().await;
        Now::set(30);
    }));
    let mut b = pin!(Some(async {}));
    let mut executor: AsyncExecutor<'_, 2, (), Timed<Now>> = AsyncExecutor::new(&QUEUE).unwrap();
    let per_task: TaskTimes<Now, 2> = TaskTimes::new(Ticks);
    Now::set(4);
    let a_id = executor.try_spawn(a.as_mut()).unwrap();
    Now::set(8);
    let b_id = executor.try_spawn(b.as_mut()).unwrap();
    assert_eq!(per_task.task(a_id), None, "not polled yet");
    Now::set(10);
    executor.tick_observed(8, &per_task);
    Now::set(20);
    executor.tick_observed(8, &per_task);
    assert_eq!(times(per_task.task(a_id)), Some((2, 13, 10, Some(6), 7)));
    assert_eq!(times(per_task.task(b_id)), Some((1, 0, 0, Some(5), 0)));
    assert_eq!(per_task.task(a_id).map(|f| f.ticks_per_second), Some(1_000));
    // A new task's first poll in one of the two slots replaces what that
    // slot's old task had; the other keeps its figures.
    let mut c = pin!(Some(async {}));
    let c_id = executor.try_spawn(c.as_mut()).unwrap();
    executor.tick_observed(8, &per_task);
    assert_eq!(per_task.task(c_id).map(|time| time.polls), Some(1));
    assert_eq!(
        [per_task.task(a_id), per_task.task(b_id)]
            .iter()
            .filter(|time| time.is_none())
            .count(),
        1
    );
}

#[test]
fn a_stamp_is_never_older_than_the_wake_that_queued_the_poll() {
    use dinah_core::TaskId;
    use dinah_core::telemetry::{PollObserver, Timed};

    type Now = Ticks<1>;
    struct Waits(Mutex<Vec<u64>>);
    impl PollObserver for Waits {
        fn poll_started(&self, _: TaskId) {}
        fn poll_ended(&self, _: TaskId) {}
        fn poll_waited(&self, _: TaskId, _: bool, ticks: u64) {
            self.0.lock().unwrap().push(ticks);
        }
    }

    // A wake made during the task's poll, after the executor took the wake
    // that queued that poll, queues it anew: the next poll is timed from the
    // new wake, not the old one.
    static QUEUE: ReadyQueue<1, Timed<Now>> = ReadyQueue::new();
    let probe = Probe::default();
    let mut task = pin!(Some(async {
        probe.gate().await;
        // Woken at 100 by the wake below and polled at 110; it wakes itself
        // at 130.
        Now::set(130);
        yield_now().await;
    }));
    let mut executor: AsyncExecutor<'_, 1, (), Timed<Now>> = AsyncExecutor::new(&QUEUE).unwrap();
    let waits = Waits(Mutex::new(Vec::new()));
    executor.try_spawn(task.as_mut()).unwrap();
    executor.tick_observed(8, &waits);
    Now::set(100);
    probe.open();
    probe.take_parked().wake();
    Now::set(110);
    executor.tick_observed(8, &waits);
    Now::set(131);
    executor.tick_observed(8, &waits);
    assert_eq!(*waits.0.lock().unwrap(), [0, 10, 1]);
}

#[test]
fn without_counters_a_slot_costs_nothing_extra() {
    use core::mem::size_of;
    use dinah_core::executor::TaskRef;
    use dinah_core::telemetry::Counted;
    // The queue: 12 bytes a slot without counters (the state word, the
    // link, the waker count, the generation's high bits), 16 with them
    // (measured over two slots, so that the struct's tail padding cancels).
    assert_eq!(
        size_of::<ReadyQueue<5>>() - size_of::<ReadyQueue<3>>(),
        2 * 12
    );
    assert_eq!(
        size_of::<ReadyQueue<5, Counted>>() - size_of::<ReadyQueue<3, Counted>>(),
        2 * 16
    );
    // With wake stamps: 20.
    assert_eq!(
        size_of::<ReadyQueue<5, dinah_core::telemetry::Timed<Ticks<2>>>>()
            - size_of::<ReadyQueue<3, dinah_core::telemetry::Timed<Ticks<2>>>>(),
        2 * 20
    );
    // The executor: exactly the borrowed task pointer a slot, plus the
    // counts (16) and the task's name with counters.
    let slot = size_of::<Option<TaskRef<'static, ()>>>();
    assert_eq!(
        size_of::<AsyncExecutor<'static, 4>>() - size_of::<AsyncExecutor<'static, 3>>(),
        slot
    );
    assert_eq!(
        size_of::<AsyncExecutor<'static, 4, (), Counted>>()
            - size_of::<AsyncExecutor<'static, 3, (), Counted>>(),
        slot + 16 + size_of::<Option<&'static str>>()
    );
}

/// A future whose first poll hands a clone of its waker to another thread,
/// which wakes it there and is joined before the poll returns, so the wake
/// lands during that poll; ready at its `ready_at`-th poll.
struct WokenElsewhere {
    polls: usize,
    ready_at: usize,
}

impl Future for WokenElsewhere {
    type Output = usize;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<usize> {
        self.polls += 1;
        if self.polls == 1 {
            let waker = cx.waker().clone();
            thread::spawn(move || waker.wake()).join().unwrap();
        }
        if self.polls >= self.ready_at {
            Poll::Ready(self.polls)
        } else {
            Poll::Pending
        }
    }
}

#[test]
fn run_until_starts_afresh_after_a_wake_that_landed_in_the_last_poll() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    // Woken from another thread during the poll that returns `Ready`: its
    // entry outlives the call.
    let first = WokenElsewhere {
        polls: 0,
        ready_at: 1,
    };
    assert_eq!(executor.run_until(first, 8, || {}), 1);
    // The next call's future is woken the same way during its first poll
    // and is ready when polled again: it must be, once (or twice, for the
    // entry the first call left), and the calls after it too.
    for _ in 0..3 {
        let next = WokenElsewhere {
            polls: 0,
            ready_at: 2,
        };
        let polls = executor.run_until(next, 8, || {});
        assert_eq!(polls, 2);
    }
    // Nothing is left over: no phantom work keeps `run` from idling.
    assert!(!executor.tick(8).work_remaining);
}

#[test]
fn a_panic_in_run_until_leaves_nothing_behind() {
    use dinah_core::telemetry::{NoClock, PollWatch};
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    static WATCH: PollWatch<NoClock> = PollWatch::new(NoClock);
    let kept: Mutex<Option<Waker>> = Mutex::new(None);
    let mut task = pin!(Some(std::future::poll_fn(|cx| {
        *kept.lock().unwrap() = Some(cx.waker().clone());
        Poll::<()>::Pending
    })));
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    executor.try_spawn(task.as_mut()).unwrap();
    executor.tick(8);
    let payload = panic::catch_unwind(AssertUnwindSafe(|| {
        executor.run_until_observed(
            std::future::poll_fn(|_| -> Poll<()> { panic!("main exploded") }),
            8,
            || {},
            &WATCH,
        )
    }))
    .expect_err("the main future's panic reaches the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"main exploded"));
    // The watch heard that the poll ended.
    assert_eq!(WATCH.blocked(0), None);
    // No poll is marked as running: a wake from here now is from outside.
    kept.lock().unwrap().take().unwrap().wake();
    let report = executor.tick(8);
    assert_eq!(
        (report.polled, report.woken_outside, report.woken_in_poll),
        (1, 1, 0)
    );
    // And the executor runs the next call as usual.
    assert_eq!(executor.run_until(async { 7 }, 8, || {}), 7);
}

#[test]
fn a_panicking_poll_is_reported_ended_to_the_observer() {
    use dinah_core::telemetry::{NoClock, PollWatch};
    static QUEUE: ReadyQueue<2> = ReadyQueue::new();
    static WATCH: PollWatch<NoClock> = PollWatch::new(NoClock);
    let mut bad = pin!(Some(async {
        panic!("task exploded");
    }));
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
    let id = executor.try_spawn(bad.as_mut()).unwrap();
    panic::catch_unwind(AssertUnwindSafe(|| executor.tick_observed(8, &WATCH)))
        .expect_err("the panic reaches the caller");
    assert_eq!(WATCH.blocked(0), None, "no poll runs any more");
    assert_eq!(executor.task_state(id), Some(TaskState::Failed));
}

/// Counts its drops and panics in the first.
struct PanicsOnDrop<'a>(&'a AtomicUsize);

impl Drop for PanicsOnDrop<'_> {
    fn drop(&mut self) {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("destructor exploded");
        }
    }
}

#[test]
fn a_cancelled_task_whose_destructor_panics_fails_and_gives_its_slot_back() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    let drops = AtomicUsize::new(0);
    let guard = PanicsOnDrop(&drops);
    let mut task = pin!(Some(async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    }));
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    let id = executor.try_spawn(task.as_mut()).unwrap();
    executor.tick(8);
    executor.cancel(id).unwrap();
    let payload = panic::catch_unwind(AssertUnwindSafe(|| executor.tick(8)))
        .expect_err("the destructor's panic reaches the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"destructor exploded"));
    assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped once");
    assert_eq!(executor.task_state(id), Some(TaskState::Failed));
    assert_eq!(executor.live_tasks(), 0);
    // The slot comes back at the next tick.
    executor.tick(8);
    let mut next = pin!(Some(async {}));
    let next = executor
        .try_spawn(next.as_mut())
        .expect("the slot is free again");
    executor.tick(8);
    assert_eq!(executor.task_state(next), Some(TaskState::Completed));
}

#[test]
fn ids_never_repeat_however_often_a_slot_is_reused() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    // More reuses than a 13-bit generation counts.
    let reuses = if cfg!(miri) { 40 } else { 8_200 };
    let mut storage: Vec<_> = (0..=reuses)
        .map(|_| Box::pin(Some(std::future::ready(()))))
        .collect();
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    let mut tasks = storage.iter_mut();
    let first = executor.try_spawn(tasks.next().unwrap().as_mut()).unwrap();
    executor.tick(8);
    assert_eq!((first.slot(), first.generation()), (Some(0), Some(1)));
    let mut last = first;
    for task in tasks {
        last = executor.try_spawn(task.as_mut()).unwrap();
        executor.tick(8);
    }
    let reuses = reuses as u64;
    assert_eq!(last.generation(), Some(1 + reuses));
    assert_ne!(last, first);
    assert_eq!(executor.task_state(first), None, "a stale id names nothing");
    assert_eq!(executor.cancel(first), Err(CancelError::UnknownTask(first)));
    assert_eq!(executor.task_state(last), Some(TaskState::Completed));
    assert_eq!(
        last.to_string(),
        format!("slot 0, generation {}", 1 + reuses)
    );
}

#[test]
fn a_slot_comes_back_once_every_cloned_waker_is_dropped_however_many() {
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    let clones = if cfg!(miri) { 50 } else { 5_000 };
    let kept: Mutex<Vec<Waker>> = Mutex::new(Vec::new());
    let mut task = pin!(Some(std::future::poll_fn(|cx| {
        let mut kept = kept.lock().unwrap();
        for _ in 0..clones {
            kept.push(cx.waker().clone());
        }
        Poll::Ready(())
    })));
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    executor.try_spawn(task.as_mut()).unwrap();
    executor.tick(8);
    let mut next = pin!(Some(async {}));
    let next = executor
        .try_spawn(next.as_mut())
        .expect_err("wakers of the finished task are alive")
        .into_inner();
    let wakers = std::mem::take(&mut *kept.lock().unwrap());
    // Cloned again and dropped, from two threads, then the rest.
    thread::scope(|s| {
        for half in wakers.chunks(clones / 2) {
            s.spawn(move || drop(half.to_vec()));
        }
    });
    drop(wakers);
    executor.tick(8);
    let next = executor.try_spawn(next).expect("no waker keeps the slot");
    executor.tick(8);
    assert_eq!(executor.task_state(next), Some(TaskState::Completed));
}

/// Names the running thread, for a queue that tells its wakes apart.
fn thread_context() -> usize {
    thread_local! {
        static MARK: u8 = const { 0 };
    }
    MARK.with(|mark| std::ptr::from_ref(mark) as usize)
}

#[test]
fn a_wake_from_another_thread_during_a_poll_is_not_the_tasks_own() {
    use dinah_core::telemetry::Counted;
    static QUEUE: ReadyQueue<1, Counted> = ReadyQueue::new().with_context(thread_context);
    let mut task = pin!(Some(async {
        WokenElsewhere {
            polls: 0,
            ready_at: 2,
        }
        .await;
        yield_now().await;
    }));
    let mut executor: AsyncExecutor<'_, 1, (), Counted> = AsyncExecutor::new(&QUEUE).unwrap();
    let id = executor.try_spawn(task.as_mut()).unwrap();
    executor.tick(8);
    let woken = executor.tick(8);
    assert_eq!(
        (woken.woken_outside, woken.woken_in_poll, woken.self_woken),
        (1, 0, 0),
        "the other thread's wake landed during the poll, and is not the task's own"
    );
    // `yield_now` wakes the task on the executor's thread: its own.
    let own = executor.tick(8);
    assert_eq!((own.self_woken, own.completed), (1, 1));
    assert_eq!(counts(executor.task_figures(id)), Some([3, 2, 1, 0]));
}

#[test]
fn a_task_that_never_ends_is_accepted_and_can_be_cancelled() {
    static QUEUE: ReadyQueue<2> = ReadyQueue::new();
    let spins = AtomicUsize::new(0);
    // Its output is `!`: the loop never breaks.
    let mut forever = pin!(Some(async {
        loop {
            spins.fetch_add(1, Ordering::SeqCst);
            yield_now().await;
        }
    }));
    let mut ends = pin!(Some(async {}));
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
    let id = executor.try_spawn(forever.as_mut()).unwrap();
    executor.try_spawn(ends.as_mut()).unwrap();
    executor.tick(8);
    executor.tick(8);
    assert_eq!(spins.load(Ordering::SeqCst), 2);
    executor.cancel(id).unwrap();
    while executor.tick(8).work_remaining {}
    assert_eq!(executor.task_state(id), Some(TaskState::Cancelled));
    assert!(!forever.has_future());
}

#[test]
fn a_host_run_loop_sleeps_holding_no_lock() {
    use dinah_core::executor::Pended;
    use dinah_core::telemetry::{TraceEvent, TraceEventKind};
    use dinah_core::{TaskId, TraceRing};
    use std::sync::OnceLock;
    static EXECUTOR: OnceLock<thread::Thread> = OnceLock::new();
    fn pend() {
        if let Some(thread) = EXECUTOR.get() {
            thread.unpark();
        }
    }
    static QUEUE: ReadyQueue<1> = ReadyQueue::with_pender(pend);
    static TRACE: TraceRing<64> = TraceRing::new();
    EXECUTOR.set(thread::current()).unwrap();
    let (send, receive) = std::sync::mpsc::channel::<Waker>();
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    thread::scope(|s| {
        // Another thread enters a critical section (the trace ring's) before
        // each wake: with the executor asleep inside one, it never would.
        s.spawn(move || {
            for waker in receive {
                let task = TaskId::new(1).unwrap();
                TRACE
                    .record(TraceEvent::new(task, TraceEventKind::Woken))
                    .unwrap();
                waker.wake();
            }
        });
        let mut rounds = 0;
        let finished = executor.run_until(
            std::future::poll_fn(|cx| {
                rounds += 1;
                if rounds > 20 {
                    return Poll::Ready(rounds);
                }
                send.send(cx.waker().clone()).unwrap();
                Poll::Pending
            }),
            8,
            Pended(thread::park),
        );
        assert_eq!(finished, 21);
        drop(send);
    });
    assert_eq!(TRACE.len(), 20);
}
