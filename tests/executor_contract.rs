//! The executor contract, written once for every async executor dinah ships
//! (the core `AsyncExecutor` and the hosted `LocalExecutor`): the seed's
//! deterministic facts. A wake
//! enqueues and never polls; `yield_once` is polled twice; chunked work on
//! two tasks interleaves; a task that always wakes itself cannot starve the
//! others; ready tasks run in wake order.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::{Barrier, Mutex};
use std::task::{Poll, Waker};
use std::thread::{self, Thread};

use dinah::task::chunked;
use dinah::{AsyncExecutor, LocalExecutor, ReadyQueue, yield_now};

mod support;
use support::models::{EXECUTOR_SLOTS, fresh_queue};

type TaskFuture<'a> = Pin<&'a mut dyn Future<Output = ()>>;

/// An async executor under the contract.
trait ExecutorFamily {
    /// Spawns `tasks` in order, then runs exactly `ticks` ticks, calling
    /// `between(n)` before tick `n`; returns how many tasks each tick polled.
    fn run(tasks: Vec<TaskFuture<'_>>, ticks: usize, between: &mut dyn FnMut(usize)) -> Vec<usize>;

    /// Drives `main` to completion on this thread, parking it whenever
    /// nothing is ready.
    fn block_on(main: TaskFuture<'_>);
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

/// The core `AsyncExecutor`, each task stored as `Some(borrowed future)`.
struct Core;

impl ExecutorFamily for Core {
    fn run(tasks: Vec<TaskFuture<'_>>, ticks: usize, between: &mut dyn FnMut(usize)) -> Vec<usize> {
        let mut storage: Vec<Option<TaskFuture<'_>>> = tasks.into_iter().map(Some).collect();
        let mut executor: AsyncExecutor<'_, EXECUTOR_SLOTS> =
            AsyncExecutor::new(fresh_queue()).unwrap();
        for task in &mut storage {
            let task: Pin<&mut Option<TaskFuture<'_>>> = Pin::new(task);
            executor.try_spawn(task).unwrap();
        }
        (0..ticks)
            .map(|n| {
                between(n);
                executor.tick(usize::MAX).polled
            })
            .collect()
    }

    fn block_on(main: TaskFuture<'_>) {
        // A queue whose pender unparks this thread: the binary's part of the
        // contract for wakes from other threads.
        let queue: &'static ReadyQueue<EXECUTOR_SLOTS> =
            Box::leak(Box::new(ReadyQueue::with_pender(unpark_all)));
        // Kept reachable, so that Miri and LeakSanitizer see no leak.
        QUEUES.lock().unwrap().push(queue);
        PARKED.lock().unwrap().push(thread::current());
        let mut executor: AsyncExecutor<'_, EXECUTOR_SLOTS> = AsyncExecutor::new(queue).unwrap();
        executor.run_until(main, usize::MAX, thread::park);
    }
}

/// The hosted `LocalExecutor`, each task spawned onto the heap (borrowing
/// the test's state: its futures need not be `'static`).
struct Hosted;

impl ExecutorFamily for Hosted {
    fn run(tasks: Vec<TaskFuture<'_>>, ticks: usize, between: &mut dyn FnMut(usize)) -> Vec<usize> {
        let executor = LocalExecutor::new();
        let handles: Vec<_> = tasks
            .into_iter()
            .map(|task| executor.try_spawn(task).unwrap())
            .collect();
        let polled = (0..ticks)
            .map(|n| {
                between(n);
                executor.tick(usize::MAX).polled
            })
            .collect();
        drop(handles);
        polled
    }

    fn block_on(main: TaskFuture<'_>) {
        LocalExecutor::new().block_on(main);
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

support::contract!(
    [core_async_executor: Core, local_executor: Hosted],
    [
        yield_once_is_polled_twice,
        chunked_work_on_two_tasks_interleaves,
        a_wake_enqueues_and_never_polls,
        a_self_waking_task_cannot_starve_the_others,
        ready_tasks_run_in_wake_order,
        a_wake_from_another_thread_unparks_block_on,
    ]
);
