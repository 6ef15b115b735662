//! Loom models of the interrupt executor's hand-off: the real `handoff`
//! and `interrupt` code, with loom's atomics swapped in. Threads play the
//! interrupt handler; the model's main thread lends the tasks for a scope.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test --release -p dinah-core --test loom_interrupt`.
#![cfg(loom)]

use std::future::poll_fn;
use std::pin::pin;
use std::task::{Poll, Waker};

use dinah_core::ReadyQueue;
use dinah_core::executor::{InterruptExecutor, InterruptTasks};
use loom::sync::Mutex;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

#[test]
fn a_handler_racing_the_end_of_the_scope_never_polls_after_it() {
    loom::model(|| {
        let high: &'static InterruptExecutor = leak(InterruptExecutor::new("high", 1));
        let queue: &'static ReadyQueue<1> = leak(ReadyQueue::new());
        let ended: &'static AtomicBool = leak(AtomicBool::new(false));
        let late: &'static AtomicBool = leak(AtomicBool::new(false));
        let mut task = pin!(Some(poll_fn(move |_| {
            if ended.load(Ordering::SeqCst) {
                late.store(true, Ordering::SeqCst);
            }
            Poll::<()>::Pending
        })));
        let mut tasks: InterruptTasks<'_, 1> = InterruptTasks::new(queue).unwrap();
        tasks.try_spawn(task.as_mut()).unwrap();
        let handler = thread::spawn(move || high.on_interrupt());
        high.serve(&mut tasks, || {}).unwrap();
        ended.store(true, Ordering::SeqCst);
        let ran = handler.join().unwrap();
        assert!(!late.load(Ordering::SeqCst), "a poll after the scope ended");
        // It ran inside the scope, or found nothing served.
        let _ = ran;
        assert!(!high.figures().serving);
    });
}

#[test]
fn two_handlers_at_once_lose_no_request() {
    loom::model(|| {
        let high: &'static InterruptExecutor = leak(InterruptExecutor::new("high", 1));
        let queue: &'static ReadyQueue<1> = leak(ReadyQueue::new());
        let requests: &'static AtomicUsize = leak(AtomicUsize::new(0));
        let seen: &'static AtomicUsize = leak(AtomicUsize::new(0));
        let parked: &'static Mutex<Option<Waker>> = leak(Mutex::new(None));
        let mut task = pin!(Some(poll_fn(move |cx| {
            seen.store(requests.load(Ordering::Acquire), Ordering::Release);
            *parked.lock().unwrap() = Some(cx.waker().clone());
            Poll::<()>::Pending
        })));
        let mut tasks: InterruptTasks<'_, 1> = InterruptTasks::new(queue).unwrap();
        tasks.try_spawn(task.as_mut()).unwrap();
        high.serve(&mut tasks, || {
            // The first poll parks the waker.
            assert!(high.on_interrupt());
            let waker = parked.lock().unwrap().take().unwrap();
            let other_waker = waker.clone();
            let request = move |waker: Waker| {
                requests.fetch_add(1, Ordering::AcqRel);
                waker.wake();
                high.on_interrupt();
            };
            let one = thread::spawn(move || request(waker));
            request(other_waker);
            one.join().unwrap();
            // Each request was served after it was made: by its own
            // handler run, or by the run in progress going round again.
            assert_eq!(seen.load(Ordering::Acquire), 2);
        })
        .unwrap();
        drop(parked.lock().unwrap().take());
    });
}
