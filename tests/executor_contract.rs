//! The executor contract, written once for every async executor dinah ships
//! (today the core `AsyncExecutor`): the seed's deterministic facts. A wake
//! enqueues and never polls; `yield_once` is polled twice; chunked work on
//! two tasks interleaves; a task that always wakes itself cannot starve the
//! others; ready tasks run in wake order.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::{Poll, Waker};

use dinah::{AsyncExecutor, chunked, yield_now};

mod support;
use support::models::{EXECUTOR_SLOTS, fresh_queue};

type TaskFuture<'a> = Pin<&'a mut dyn Future<Output = ()>>;

/// An async executor under the contract.
trait ExecutorFamily {
    /// Spawns `tasks` in order, then runs exactly `ticks` ticks, calling
    /// `between(n)` before tick `n`; returns how many tasks each tick polled.
    fn run(tasks: Vec<TaskFuture<'_>>, ticks: usize, between: &mut dyn FnMut(usize)) -> Vec<usize>;
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
            executor.spawn(task).unwrap();
        }
        (0..ticks)
            .map(|n| {
                between(n);
                executor.tick(usize::MAX).polled
            })
            .collect()
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

support::contract!(
    [core_async_executor: Core],
    [
        yield_once_is_polled_twice,
        chunked_work_on_two_tasks_interleaves,
        a_wake_enqueues_and_never_polls,
        a_self_waking_task_cannot_starve_the_others,
        ready_tasks_run_in_wake_order,
    ]
);
