//! The hosted `LocalExecutor`: tasks that yield in turn, a task woken from
//! another thread, a task submitted from another thread, a cancelled task
//! and a panicking task, each result read from its join handle.
//!
//! Run with `cargo run --example executor_basics`.

use std::cell::RefCell;
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::thread;

use dinah::{JoinError, LocalExecutor, yield_now};

fn main() {
    let executor = LocalExecutor::new();

    // Two tasks that yield after each step take turns. They share an `Rc`,
    // which a local executor allows (nothing here is sent across threads).
    let log = Rc::new(RefCell::new(Vec::new()));
    let workers: Vec<_> = ["A", "B"]
        .into_iter()
        .map(|name| {
            let log = Rc::clone(&log);
            executor
                .try_spawn(async move {
                    for step in 0..3 {
                        log.borrow_mut().push(format!("{name}{step}"));
                        yield_now().await;
                    }
                    Ok::<_, ()>(name)
                })
                .expect("no cap was set")
        })
        .collect();

    // A task that waits for a wake from another thread.
    let parked: Arc<Mutex<(bool, Option<Waker>)>> = Arc::default();
    let woken = {
        let parked = Arc::clone(&parked);
        executor
            .try_spawn(poll_fn(move |cx| {
                let mut state = parked.lock().unwrap();
                if state.0 {
                    return Poll::Ready(Ok::<_, ()>("woken by another thread"));
                }
                state.1 = Some(cx.waker().clone());
                Poll::Pending
            }))
            .unwrap()
    };

    // A task that would never finish, and one that panics.
    let cancelled = executor.try_spawn(std::future::pending::<()>()).unwrap();
    let panicking = executor
        .try_spawn(async {
            yield_now().await;
            let divisor = 0;
            if divisor == 0 {
                panic!("task 3 cannot divide by {divisor}");
            }
        })
        .unwrap();
    // Keep the default hook from printing the caught panic.
    std::panic::set_hook(Box::new(|_| {}));

    // Another thread hands in a `Send` future through the bounded ingress,
    // then wakes the parked task.
    let spawner = executor.spawner();
    let waker_thread = {
        let parked = Arc::clone(&parked);
        thread::spawn(move || {
            let submitted = spawner
                .try_spawn(async { Ok::<_, ()>(6 * 7) })
                .expect("the ingress has room");
            // Set the flag and take the waker under one lock, so the task
            // either sees the flag or has parked the waker taken here.
            let waker = {
                let mut state = parked.lock().unwrap();
                state.0 = true;
                state.1.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
            submitted
        })
    };

    let results = executor.block_on(async {
        let mut names = Vec::new();
        for worker in workers {
            names.push(worker.await);
        }
        cancelled.cancel();
        (names, woken.await, cancelled.await, panicking.await)
    });
    let submitted = waker_thread.join().unwrap();
    let _ = std::panic::take_hook();

    let (names, woken, cancelled, panicking) = results;
    println!("turns:      {}", log.borrow().join(" "));
    println!("workers:    {names:?}");
    println!("woken:      {woken:?}");
    println!("submitted:  {:?}", executor.block_on(submitted));
    println!("cancelled:  {cancelled:?}");
    match panicking {
        Err(JoinError::Panicked(message)) => println!("panicked:   {message:?}"),
        other => println!("panicked:   unexpected {other:?}"),
    }
    let report = executor.shutdown();
    println!("shutdown:   {} task(s) left", report.left());
}
