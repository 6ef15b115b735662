//! The executor contract, written once for every async executor dinah ships
//! (the core `AsyncExecutor` and the hosted `LocalExecutor`), and run against
//! each by one line of the `contract!` call at the end: what a task sees
//! (polls, wakes, order, fairness), how it ends (completed, failed, panicked,
//! cancelled), what a waker may do (from other threads, during a poll, after
//! its task or its executor is gone) and what driving the executor does
//! (ticks, budgets, `block_on`/`run_until`). Each executor's own suite keeps
//! only what is particular to it (the core's fixed slots and ids, the hosted
//! one's ingress and caps). What every hosted runtime promises through its
//! join handles (values, panics, cancellation from any thread, timers,
//! shutdown and its report) is the other contract, `runtime_contract.rs`.
//!
//! Where the two differ by design, the harness says so in one place: a
//! panicking task's panic reaches the caller of the core executor's `tick`
//! (a firmware's panic handler decides what follows), while the hosted
//! executor catches it at the task's boundary; both fail that task alone.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::panic::{self, AssertUnwindSafe};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::{self, Thread};

use dinah::executor::{TickReport, thread_context};
use dinah::task::{JoinError, JoinHandle, TaskFailureKind, TaskState, chunked};
use dinah::{AsyncExecutor, LocalExecutor, ReadyQueue, TaskId, yield_now};

mod support;
use support::WokenElsewhere;
use support::models::EXECUTOR_SLOTS;

/// A task that ends, with an error or not, owned by its executor (so that
/// cancelling it drops it).
type Task<'a> = Pin<Box<dyn Future<Output = Result<(), &'static str>> + 'a>>;
/// A task whose output says nothing.
type TaskFuture<'a> = Pin<&'a mut dyn Future<Output = ()>>;

/// How a task ended, in words both executors can say.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ended {
    Completed,
    Failed(&'static str),
    Panicked,
    Cancelled,
}

/// An executor with its tasks spawned, as a test drives it. Tasks are named
/// by their place in the list they were spawned from.
trait Running {
    /// One tick with `budget` polls at most; `None` when a task's panic
    /// unwound out of it (the core executor's way: the task is failed
    /// first).
    fn tick(&mut self, budget: usize) -> Option<TickReport>;
    /// Requests cancellation of task `n`: whether it was still live.
    fn cancel(&mut self, n: usize) -> bool;
    /// How task `n` ended, once it has.
    fn ended(&mut self, n: usize) -> Option<Ended>;
    /// Tasks not over yet.
    fn live(&self) -> usize;
    /// Ticks until no work remains (at most `limit` ticks).
    fn settle(&mut self, limit: usize) {
        for _ in 0..limit {
            if let Some(report) = self.tick(usize::MAX)
                && !report.work_remaining
            {
                return;
            }
        }
    }
}

/// An async executor under the contract.
trait ExecutorFamily {
    /// Spawns `tasks` in order and hands the executor to `script`.
    fn with<'a>(tasks: Vec<Task<'a>>, script: &mut dyn FnMut(&mut dyn Running));

    /// Drives `main` to completion on this thread, parking it whenever
    /// nothing is ready.
    fn block_on<T>(main: Pin<&mut dyn Future<Output = T>>) -> T;

    /// Spawns `tasks` in order, then runs exactly `ticks` ticks, calling
    /// `between(n)` before tick `n`; returns how many tasks each tick polled.
    fn run(tasks: Vec<TaskFuture<'_>>, ticks: usize, between: &mut dyn FnMut(usize)) -> Vec<usize> {
        let tasks: Vec<Task<'_>> = tasks
            .into_iter()
            .map(|task| Box::pin(Unit(task)) as Task<'_>)
            .collect();
        let mut polled = Vec::new();
        Self::with(tasks, &mut |running| {
            for n in 0..ticks {
                between(n);
                polled.push(running.tick(usize::MAX).expect("no task panics").polled);
            }
        });
        polled
    }
}

/// A task of output `()` as one of output `Ok(())`.
struct Unit<'a>(TaskFuture<'a>);

impl Future for Unit<'_> {
    type Output = Result<(), &'static str>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx).map(Ok)
    }
}

/// Threads that the core executor's pender unparks: those parked in
/// `Core::block_on`'s idle hook.
static PARKED: Mutex<Vec<Thread>> = Mutex::new(Vec::new());

static QUEUES: Mutex<Vec<&'static ReadyQueue<EXECUTOR_SLOTS>>> = Mutex::new(Vec::new());

fn unpark_all() {
    for thread in PARKED.lock().unwrap().iter() {
        thread.unpark();
    }
}

/// A new `'static` queue for the core executor as a host runs it: it names
/// the thread a wake comes from (`with_context(thread_context)`), so that a
/// wake from another thread during a poll is not taken for the task's own.
fn host_queue() -> &'static ReadyQueue<EXECUTOR_SLOTS> {
    let queue: &'static ReadyQueue<EXECUTOR_SLOTS> =
        Box::leak(Box::new(ReadyQueue::new().with_context(thread_context)));
    // Kept reachable, so that Miri and LeakSanitizer see no leak.
    QUEUES.lock().unwrap().push(queue);
    queue
}

/// The core `AsyncExecutor`, each task stored as `Some(boxed future)` in
/// storage the harness owns.
struct Core;

/// The core executor running, with its tasks' ids.
struct CoreRunning<'s> {
    executor: AsyncExecutor<'s, EXECUTOR_SLOTS, Result<(), &'static str>>,
    ids: Vec<TaskId>,
    ended: Vec<Option<Ended>>,
}

impl Running for CoreRunning<'_> {
    fn tick(&mut self, budget: usize) -> Option<TickReport> {
        panic::catch_unwind(AssertUnwindSafe(|| self.executor.tick(budget))).ok()
    }

    fn cancel(&mut self, n: usize) -> bool {
        self.executor.cancel(self.ids[n]).is_ok()
    }

    fn ended(&mut self, n: usize) -> Option<Ended> {
        if self.ended[n].is_none() {
            let id = self.ids[n];
            self.ended[n] = match self.executor.task_state(id)? {
                TaskState::Completed => Some(Ended::Completed),
                TaskState::Cancelled => Some(Ended::Cancelled),
                TaskState::Failed => Some(match self.executor.take_failure(id) {
                    Some(failure) => {
                        assert_eq!(failure.kind(), TaskFailureKind::ReturnedError);
                        Ended::Failed(failure.into_error())
                    }
                    None => Ended::Panicked,
                }),
                TaskState::Pending | TaskState::Running => None,
            };
        }
        self.ended[n].clone()
    }

    fn live(&self) -> usize {
        self.executor.live_tasks()
    }
}

impl ExecutorFamily for Core {
    fn with<'a>(tasks: Vec<Task<'a>>, script: &mut dyn FnMut(&mut dyn Running)) {
        let mut storage: Vec<Option<Task<'a>>> = tasks.into_iter().map(Some).collect();
        let mut executor = AsyncExecutor::new(host_queue()).unwrap();
        let ids: Vec<TaskId> = storage
            .iter_mut()
            .map(|task| {
                let slot: Pin<&mut Option<Task<'a>>> = Pin::new(task);
                executor.try_spawn(slot).unwrap()
            })
            .collect();
        let ended = vec![None; ids.len()];
        script(&mut CoreRunning {
            executor,
            ids,
            ended,
        });
    }

    fn block_on<T>(main: Pin<&mut dyn Future<Output = T>>) -> T {
        // A queue whose pender unparks this thread: the binary's part of the
        // contract for wakes from other threads.
        let queue: &'static ReadyQueue<EXECUTOR_SLOTS> =
            Box::leak(Box::new(ReadyQueue::with_pender(unpark_all)));
        // Kept reachable, so that Miri and LeakSanitizer see no leak.
        QUEUES.lock().unwrap().push(queue);
        PARKED.lock().unwrap().push(thread::current());
        let mut executor: AsyncExecutor<'_, EXECUTOR_SLOTS> = AsyncExecutor::new(queue).unwrap();
        executor.run_until(main, usize::MAX, thread::park)
    }
}

/// The hosted `LocalExecutor`, each task spawned onto the heap (borrowing
/// the test's state: its futures need not be `'static`).
struct Hosted;

/// The hosted executor running, with its tasks' handles.
struct HostedRunning<'e, 'a> {
    executor: &'e LocalExecutor<'a>,
    handles: Vec<JoinHandle<Result<(), &'static str>>>,
    ended: Vec<Option<Ended>>,
}

impl Running for HostedRunning<'_, '_> {
    fn tick(&mut self, budget: usize) -> Option<TickReport> {
        Some(self.executor.tick(budget))
    }

    fn cancel(&mut self, n: usize) -> bool {
        self.handles[n].cancel()
    }

    fn ended(&mut self, n: usize) -> Option<Ended> {
        if self.ended[n].is_none() {
            self.ended[n] = self.handles[n].try_take().map(|end| match end {
                Ok(Ok(())) => Ended::Completed,
                Ok(Err(error)) => Ended::Failed(error),
                Err(JoinError::Panicked(_)) => Ended::Panicked,
                Err(JoinError::Cancelled) => Ended::Cancelled,
                Err(other) => panic!("a join error the contract does not know: {other:?}"),
            });
        }
        self.ended[n].clone()
    }

    fn live(&self) -> usize {
        self.executor.live_tasks()
    }
}

impl ExecutorFamily for Hosted {
    fn with<'a>(tasks: Vec<Task<'a>>, script: &mut dyn FnMut(&mut dyn Running)) {
        let executor = LocalExecutor::new();
        let handles: Vec<_> = tasks
            .into_iter()
            .map(|task| executor.try_spawn(task).unwrap_or_else(|_| unreachable!()))
            .collect();
        let ended = vec![None; handles.len()];
        script(&mut HostedRunning {
            executor: &executor,
            handles,
            ended,
        });
    }

    fn block_on<T>(main: Pin<&mut dyn Future<Output = T>>) -> T {
        LocalExecutor::new().block_on(main)
    }
}

type Log = RefCell<Vec<&'static str>>;

fn yield_once_is_polled_twice<F: ExecutorFamily>() {
    let log = Log::default();
    let task = pin!(async {
        log.borrow_mut().push("task");
        yield_now().await;
        log.borrow_mut().push("task");
    });
    assert_eq!(F::run(vec![task], 3, &mut |_| {}), [1, 1, 0]);
    assert_eq!(*log.borrow(), ["task", "task"]);
}

fn chunked_work_on_two_tasks_interleaves<F: ExecutorFamily>() {
    let log = Log::default();
    let a = pin!(chunked(0..2, |_| log.borrow_mut().push("A")));
    let b = pin!(chunked(0..2, |_| log.borrow_mut().push("B")));
    F::run(vec![a, b], 4, &mut |_| {});
    assert_eq!(*log.borrow(), ["A", "B", "A", "B"]);
}

fn a_wake_enqueues_and_never_polls<F: ExecutorFamily>() {
    let parked: RefCell<Option<Waker>> = RefCell::new(None);
    let polls = RefCell::new(0);
    let task = pin!(poll_fn(|cx| {
        *polls.borrow_mut() += 1;
        if *polls.borrow() == 2 {
            return Poll::Ready(());
        }
        *parked.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }));
    let per_tick = F::run(vec![task], 3, &mut |n| {
        if n == 1 {
            let waker = parked.borrow_mut().take().expect("parked in tick 0");
            waker.wake();
            assert_eq!(*polls.borrow(), 1, "the wake itself polled nothing");
        }
    });
    assert_eq!(per_tick, [1, 1, 0]);
    assert_eq!(*polls.borrow(), 2);
}

fn a_self_waking_task_cannot_starve_the_others<F: ExecutorFamily>() {
    let spins = RefCell::new(0);
    let finished = RefCell::new(false);
    let spinner = pin!(async {
        loop {
            *spins.borrow_mut() += 1;
            yield_now().await;
        }
    });
    let other = pin!(async {
        yield_now().await;
        *finished.borrow_mut() = true;
    });
    // Each tick polls each task once: the spinner's self-wake waits its turn.
    assert_eq!(F::run(vec![spinner, other], 3, &mut |_| {}), [2, 2, 1]);
    assert!(*finished.borrow());
    assert_eq!(*spins.borrow(), 3);
}

fn ready_tasks_run_in_wake_order<F: ExecutorFamily>() {
    let parked: [RefCell<Option<Waker>>; 3] = Default::default();
    let order = RefCell::new(Vec::new());
    let gate = |i: usize| {
        let (parked, order) = (&parked[i], &order);
        let mut first = true;
        poll_fn(move |cx| {
            if first {
                first = false;
                *parked.borrow_mut() = Some(cx.waker().clone());
                return Poll::Pending;
            }
            order.borrow_mut().push(i);
            Poll::Ready(())
        })
    };
    let (a, b, c) = (pin!(gate(0)), pin!(gate(1)), pin!(gate(2)));
    F::run(vec![a, b, c], 2, &mut |n| {
        if n == 1 {
            for i in [2, 0, 1] {
                parked[i].borrow_mut().take().unwrap().wake();
            }
        }
    });
    assert_eq!(*order.borrow(), [2, 0, 1]);
}

fn a_wake_from_another_thread_unparks_block_on<F: ExecutorFamily>() {
    let parked: Mutex<Option<Waker>> = Mutex::new(None);
    let barrier = Barrier::new(2);
    let polls = Mutex::new(0);
    thread::scope(|scope| {
        scope.spawn(|| {
            // Released once the main future has parked its waker and gone
            // Pending; from here on, only this wake can make it ready.
            barrier.wait();
            parked.lock().unwrap().take().expect("parked").wake();
        });
        let mut released = false;
        F::block_on(pin!(poll_fn(|cx| {
            *polls.lock().unwrap() += 1;
            if released {
                return Poll::Ready(());
            }
            released = true;
            *parked.lock().unwrap() = Some(cx.waker().clone());
            barrier.wait();
            Poll::Pending
        })));
    });
    assert_eq!(
        *polls.lock().unwrap(),
        2,
        "polled once, then once after the wake"
    );
}

/// A future parked until its waker, kept in `parked`, is woken; counts its
/// polls.
fn parked_until_woken<'a>(
    parked: &'a Mutex<Option<Waker>>,
    polls: &'a AtomicUsize,
) -> impl Future<Output = Result<(), &'static str>> + 'a {
    let mut woken = false;
    poll_fn(move |cx| {
        polls.fetch_add(1, Ordering::SeqCst);
        if woken {
            return Poll::Ready(Ok(()));
        }
        woken = true;
        *parked.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    })
}

fn wakes_before_the_next_poll_coalesce<F: ExecutorFamily>() {
    let parked = Mutex::new(None);
    let polls = AtomicUsize::new(0);
    let task = Box::pin(parked_until_woken(&parked, &polls));
    F::with(vec![task], &mut |running| {
        running.tick(16);
        let waker = parked.lock().unwrap().clone().unwrap();
        for _ in 0..5 {
            waker.wake_by_ref();
        }
        assert_eq!(running.tick(16).unwrap().polled, 1, "five wakes, one poll");
        assert!(!running.tick(16).unwrap().work_remaining);
    });
    assert_eq!(polls.load(Ordering::SeqCst), 2);
}

fn the_budget_leaves_the_rest_for_the_next_tick_in_order<F: ExecutorFamily>() {
    let log = Log::default();
    let log = &log;
    let push = |name| {
        Box::pin(async move {
            log.borrow_mut().push(name);
            Ok(())
        }) as Task<'_>
    };
    let mut budgets = Vec::new();
    F::with(vec![push("a"), push("b"), push("c")], &mut |running| {
        for _ in 0..2 {
            let report = running.tick(2).unwrap();
            budgets.push((report.polled, report.work_remaining));
        }
    });
    assert_eq!(budgets, [(2, true), (1, false)]);
    assert_eq!(*log.borrow(), ["a", "b", "c"]);
}

fn tasks_left_by_the_budget_go_before_those_that_woke_themselves<F: ExecutorFamily>() {
    // Each task logs, yields (waking itself), and logs again. A tick of two
    // leaves `c` ready; `a` and `b` woke themselves during that tick, so they
    // queue behind `c`, in the order they woke, and the tick after polls
    // each of the three once (`c` waking itself waits once more).
    let log = Log::default();
    let log = &log;
    let task = |first, second| {
        Box::pin(async move {
            log.borrow_mut().push(first);
            yield_now().await;
            log.borrow_mut().push(second);
            Ok(())
        }) as Task<'_>
    };
    let mut polled = Vec::new();
    F::with(
        vec![task("a1", "a2"), task("b1", "b2"), task("c1", "c2")],
        &mut |running| {
            polled.push(running.tick(2).unwrap().polled);
            for _ in 0..2 {
                polled.push(running.tick(usize::MAX).unwrap().polled);
            }
            assert!(!running.tick(usize::MAX).unwrap().work_remaining);
        },
    );
    assert_eq!(polled, [2, 3, 1]);
    assert_eq!(*log.borrow(), ["a1", "b1", "c1", "a2", "b2", "c2"]);
}

fn each_task_ends_once_as_it_returned<F: ExecutorFamily>() {
    let done = Box::pin(async {
        yield_now().await;
        Ok(())
    });
    let failed = Box::pin(async { Err("disk full") });
    let pending = Box::pin(std::future::pending::<Result<(), &'static str>>());
    F::with(vec![done, failed, pending], &mut |running| {
        assert_eq!(running.live(), 3);
        assert_eq!(running.ended(0), None, "not polled yet");
        let first = running.tick(usize::MAX).unwrap();
        assert_eq!((first.polled, first.completed, first.failed), (3, 0, 1));
        assert_eq!(running.ended(1), Some(Ended::Failed("disk full")));
        assert_eq!(running.ended(0), None, "yielded: still live");
        let second = running.tick(usize::MAX).unwrap();
        assert_eq!((second.polled, second.completed), (1, 1));
        assert_eq!(running.ended(0), Some(Ended::Completed));
        assert_eq!(running.ended(2), None);
        assert_eq!(running.live(), 1, "the pending task");
        assert!(!running.tick(usize::MAX).unwrap().work_remaining);
    });
}

/// Panics with `"task exploded"` when polled.
async fn explodes() -> Result<(), &'static str> {
    panic!("task exploded")
}

fn a_panicking_poll_fails_that_task_only<F: ExecutorFamily>() {
    let ran = RefCell::new(false);
    let bad = Box::pin(explodes());
    let good = Box::pin(async {
        yield_now().await;
        *ran.borrow_mut() = true;
        Ok(())
    });
    F::with(vec![bad, good], &mut |running| {
        running.tick(usize::MAX);
        assert_eq!(running.ended(0), Some(Ended::Panicked));
        running.settle(4);
        assert_eq!(running.ended(1), Some(Ended::Completed));
        assert_eq!(running.live(), 0);
    });
    assert!(*ran.borrow());
}

/// Counts its drops; panics in its drop when `explode` is set.
struct Guard<'a> {
    drops: &'a AtomicUsize,
    explode: bool,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.explode {
            panic!("destructor exploded");
        }
    }
}

fn cancel_drops_the_future_once_at_the_next_scheduling_point<F: ExecutorFamily>() {
    let drops = AtomicUsize::new(0);
    let polls = AtomicUsize::new(0);
    let task = Box::pin(async {
        let _guard = Guard {
            drops: &drops,
            explode: false,
        };
        loop {
            polls.fetch_add(1, Ordering::SeqCst);
            yield_now().await;
        }
    });
    F::with(vec![task], &mut |running| {
        running.tick(usize::MAX);
        running.tick(usize::MAX);
        assert!(running.cancel(0));
        assert_eq!(drops.load(Ordering::SeqCst), 0, "requested, not yet done");
        assert_eq!(running.ended(0), None);
        let report = running.tick(usize::MAX).unwrap();
        assert_eq!((report.cancelled, report.polled), (1, 0));
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert_eq!(running.ended(0), Some(Ended::Cancelled));
        assert!(!running.cancel(0), "already over");
        assert_eq!(running.live(), 0);
    });
    assert_eq!(
        polls.load(Ordering::SeqCst),
        2,
        "never polled after the request"
    );
    assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped once");
}

fn a_cancelled_task_whose_destructor_panics_ends_panicked<F: ExecutorFamily>() {
    let drops = AtomicUsize::new(0);
    let after = RefCell::new(false);
    let task = Box::pin(async {
        let _guard = Guard {
            drops: &drops,
            explode: true,
        };
        std::future::pending::<Result<(), &'static str>>().await
    });
    let next = Box::pin(async {
        yield_now().await;
        yield_now().await;
        *after.borrow_mut() = true;
        Ok(())
    });
    F::with(vec![task, next], &mut |running| {
        running.tick(usize::MAX);
        assert!(running.cancel(0));
        running.tick(usize::MAX);
        assert_eq!(running.ended(0), Some(Ended::Panicked));
        running.settle(4);
        assert_eq!(running.ended(1), Some(Ended::Completed));
        assert_eq!(running.live(), 0);
    });
    assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped once");
    assert!(*after.borrow(), "the other task ran on");
}

fn a_wake_after_its_task_ended_is_stale_and_ignored<F: ExecutorFamily>() {
    let kept: Mutex<Option<Waker>> = Mutex::new(None);
    let ends = Box::pin(poll_fn(|cx| {
        *kept.lock().unwrap() = Some(cx.waker().clone());
        Poll::Ready(Ok(()))
    }));
    let polls = AtomicUsize::new(0);
    let parked = Mutex::new(None);
    let other = Box::pin(parked_until_woken(&parked, &polls));
    F::with(vec![ends, other], &mut |running| {
        assert_eq!(running.tick(usize::MAX).unwrap().completed, 1);
        assert_eq!(running.ended(0), Some(Ended::Completed));
        let waker = kept.lock().unwrap().take().unwrap();
        waker.wake_by_ref();
        let report = running.tick(usize::MAX).unwrap();
        assert_eq!((report.polled, report.stale_wakes), (0, 1));
        // The other task is still woken as usual, and the stale waker
        // never reaches it.
        waker.wake();
        parked.lock().unwrap().take().unwrap().wake();
        let report = running.tick(usize::MAX).unwrap();
        assert_eq!(
            (report.polled, report.completed, report.stale_wakes),
            (1, 1, 1)
        );
    });
    assert_eq!(polls.load(Ordering::SeqCst), 2);
}

fn a_waker_may_outlive_its_executor<F: ExecutorFamily>() {
    let kept: Mutex<Option<Waker>> = Mutex::new(None);
    let task = Box::pin(poll_fn(|cx| {
        *kept.lock().unwrap() = Some(cx.waker().clone());
        Poll::<Result<(), &'static str>>::Pending
    }));
    F::with(vec![task], &mut |running| {
        running.tick(usize::MAX);
    });
    // The executor and its task are gone; the waker still works, and wakes
    // nothing.
    let waker = kept.lock().unwrap().take().unwrap();
    let clone = waker.clone();
    waker.wake();
    clone.wake_by_ref();
    drop(clone);
}

fn a_task_that_wakes_itself_and_ends_in_one_poll_ends_once<F: ExecutorFamily>() {
    let polls = AtomicUsize::new(0);
    let task = Box::pin(poll_fn(|cx| {
        polls.fetch_add(1, Ordering::SeqCst);
        cx.waker().wake_by_ref();
        Poll::Ready(Ok(()))
    }));
    F::with(vec![task], &mut |running| {
        let report = running.tick(usize::MAX).unwrap();
        assert_eq!((report.polled, report.completed), (1, 1));
        assert_eq!(running.ended(0), Some(Ended::Completed));
        let next = running.tick(usize::MAX).unwrap();
        assert_eq!(next.polled, 0, "its own wake polls nothing");
        assert!(!next.work_remaining);
        assert_eq!(running.live(), 0);
    });
    assert_eq!(polls.load(Ordering::SeqCst), 1);
}

fn a_wake_from_another_thread_during_a_poll_is_not_the_tasks_own<F: ExecutorFamily>() {
    let task = Box::pin(async {
        WokenElsewhere {
            polls: 0,
            ready_at: 2,
        }
        .await;
        yield_now().await;
        Ok(())
    });
    F::with(vec![task], &mut |running| {
        running.tick(usize::MAX);
        let woken = running.tick(usize::MAX).unwrap();
        assert_eq!(
            (woken.woken_outside, woken.woken_in_poll, woken.self_woken),
            (1, 0, 0),
            "the other thread's wake landed during the poll, and is not the task's own"
        );
        // `yield_now` wakes the task on the executor's thread: its own.
        let own = running.tick(usize::MAX).unwrap();
        assert_eq!((own.self_woken, own.completed), (1, 1));
    });
}

fn block_on_returns_its_future_s_output_and_drives_woken_futures_afresh<F: ExecutorFamily>() {
    // Woken from another thread during the poll that returns `Ready`.
    let mut first = WokenElsewhere {
        polls: 0,
        ready_at: 1,
    };
    assert_eq!(
        F::block_on(Pin::new(&mut first) as Pin<&mut dyn Future<Output = usize>>),
        1
    );
    let mut next = WokenElsewhere {
        polls: 0,
        ready_at: 2,
    };
    assert_eq!(
        F::block_on(Pin::new(&mut next) as Pin<&mut dyn Future<Output = usize>>),
        2
    );
}

support::contract!(
    [core_async_executor: Core, local_executor: Hosted],
    [
        yield_once_is_polled_twice,
        chunked_work_on_two_tasks_interleaves,
        a_wake_enqueues_and_never_polls,
        a_self_waking_task_cannot_starve_the_others,
        ready_tasks_run_in_wake_order,
        a_wake_from_another_thread_unparks_block_on,
        wakes_before_the_next_poll_coalesce,
        the_budget_leaves_the_rest_for_the_next_tick_in_order,
        tasks_left_by_the_budget_go_before_those_that_woke_themselves,
        each_task_ends_once_as_it_returned,
        a_panicking_poll_fails_that_task_only,
        cancel_drops_the_future_once_at_the_next_scheduling_point,
        a_cancelled_task_whose_destructor_panics_ends_panicked,
        a_wake_after_its_task_ended_is_stale_and_ignored,
        a_waker_may_outlive_its_executor,
        a_task_that_wakes_itself_and_ends_in_one_poll_ends_once,
        a_wake_from_another_thread_during_a_poll_is_not_the_tasks_own,
        block_on_returns_its_future_s_output_and_drives_woken_futures_afresh,
    ]
);
