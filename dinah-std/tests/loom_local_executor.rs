//! Loom models of the hosted executor's cross-thread paths: a wake from
//! another thread against `block_on` parking (no lost wakeup), a submission
//! through the ingress against the executor parking (no lost wakeup), and a
//! submission against shutdown (every accepted future polled or dropped
//! exactly once, its handle resolved once).
#![cfg(loom)]

use std::future::poll_fn;
use std::task::{Poll, Waker};

use dinah_core::executor::SpawnError;
use dinah_std::executor::ExecutorConfig;
use dinah_std::{JoinError, LocalExecutor};
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

fn small() -> LocalExecutor<'static> {
    LocalExecutor::with_config(ExecutorConfig {
        max_tasks: Some(2),
        ingress_capacity: 1,
        ..ExecutorConfig::default()
    })
    .unwrap()
}

/// Waits until `flag` is set, with its waker parked in `slot` (checked again
/// after parking it, as any correct future does).
fn wait_for(
    flag: &AtomicBool,
    slot: &Mutex<Option<Waker>>,
    cx: &mut std::task::Context<'_>,
) -> Poll<()> {
    if flag.load(Ordering::Acquire) {
        return Poll::Ready(());
    }
    *slot.lock().unwrap() = Some(cx.waker().clone());
    if flag.load(Ordering::Acquire) {
        Poll::Ready(())
    } else {
        Poll::Pending
    }
}

fn signal(flag: &AtomicBool, slot: &Mutex<Option<Waker>>) {
    flag.store(true, Ordering::Release);
    let waker = slot.lock().unwrap().take();
    if let Some(waker) = waker {
        waker.wake();
    }
}

#[test]
fn a_wake_from_another_thread_is_never_lost_by_block_on() {
    loom::model(|| {
        let executor = small();
        let flag = Arc::new(AtomicBool::new(false));
        let slot = Arc::new(Mutex::new(None));
        let waker_thread = {
            let (flag, slot) = (Arc::clone(&flag), Arc::clone(&slot));
            thread::spawn(move || signal(&flag, &slot))
        };
        // If the wake were lost, the executor would park forever and loom
        // would report a deadlock.
        executor.block_on(poll_fn(|cx| wait_for(&flag, &slot, cx)));
        waker_thread.join().unwrap();
    });
}

#[test]
fn a_submission_always_reaches_a_parked_executor() {
    loom::model(|| {
        let executor = small();
        let spawner = executor.spawner();
        let flag = Arc::new(AtomicBool::new(false));
        let slot = Arc::new(Mutex::new(None));
        let submitter = {
            let (flag, slot) = (Arc::clone(&flag), Arc::clone(&slot));
            thread::spawn(move || {
                // The submitted task itself releases `block_on`.
                let accepted = spawner.try_spawn(async move { signal(&flag, &slot) });
                assert!(accepted.is_ok(), "room for one");
            })
        };
        executor.block_on(poll_fn(|cx| wait_for(&flag, &slot, cx)));
        submitter.join().unwrap();
    });
}

#[test]
fn a_submission_racing_shutdown_is_polled_or_dropped_exactly_once() {
    loom::model(|| {
        let executor = small();
        let spawner = executor.spawner();
        let polls = Arc::new(AtomicUsize::new(0));
        let drops = Arc::new(AtomicUsize::new(0));
        let submitter = {
            let (polls, drops) = (Arc::clone(&polls), Arc::clone(&drops));
            thread::spawn(move || {
                let guard = Counted(drops);
                let future = async move {
                    let _guard = guard;
                    polls.fetch_add(1, Ordering::SeqCst);
                };
                match spawner.try_spawn(future) {
                    Ok(handle) => Some(handle),
                    Err(SpawnError::Shutdown(future) | SpawnError::Full(future)) => {
                        drop(future);
                        None
                    }
                    Err(other) => panic!("a spawner refuses only Full or Shutdown: {other:?}"),
                }
            })
        };
        executor.tick(usize::MAX);
        let report = executor.shutdown();
        let handle = submitter.join().unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped exactly once");
        let polled = polls.load(Ordering::SeqCst);
        assert!(polled <= 1);
        match handle {
            Some(mut handle) => {
                let result = handle
                    .try_take()
                    .expect("resolved by shutdown at the latest");
                if polled == 1 {
                    assert_eq!(result, Ok(()));
                } else {
                    assert_eq!(result, Err(JoinError::Cancelled));
                    assert_eq!(report.cancelled_submissions, 1);
                }
            }
            None => assert_eq!(polled, 0),
        }
    });
}

#[test]
fn a_cancel_racing_the_ingress_never_lets_the_task_run_after_it() {
    loom::model(|| {
        let executor = small();
        let spawner = executor.spawner();
        let polls = Arc::new(AtomicUsize::new(0));
        let handle = {
            let polls = Arc::clone(&polls);
            spawner
                .try_spawn(async move {
                    polls.fetch_add(1, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                })
                .unwrap()
        };
        let handle = Arc::new(handle);
        let done = Arc::new(AtomicBool::new(false));
        let canceller = {
            let (handle, done) = (Arc::clone(&handle), Arc::clone(&done));
            thread::spawn(move || {
                assert!(handle.cancel(), "not finished before");
                done.store(true, Ordering::Release);
            })
        };
        executor.tick(usize::MAX);
        // Loom models an unpark aimed at a thread blocked in `join` as a
        // spurious notification of that join, which it then rejects; so wait
        // for the canceller's last unpark before joining it.
        while !done.load(Ordering::Acquire) {
            thread::yield_now();
        }
        canceller.join().unwrap();
        // Whatever the order, the cancellation is carried out by the next
        // scheduling point and the task is never polled after it.
        executor.tick(usize::MAX);
        assert!(handle.is_finished());
        assert!(polls.load(Ordering::SeqCst) <= 1);
        assert_eq!(executor.live_tasks(), 0);
    });
}

struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_wake_that_lands_in_block_on_s_last_poll_does_not_trouble_the_next_call() {
    loom::model(|| {
        let executor = small();
        // The first call's future hands its waker to another thread and is
        // ready at once: the wake lands during that poll, after the call,
        // or during the next call.
        let mut waker_thread = None;
        executor.block_on(poll_fn(|cx| {
            let waker = cx.waker().clone();
            waker_thread = Some(thread::spawn(move || waker.wake()));
            Poll::Ready(())
        }));
        // The next call's future is pending once, woken by its own poll: it
        // is polled again and returns, however the first call's wake fell.
        let mut polls = 0;
        let second = poll_fn(|cx| {
            polls += 1;
            if polls == 1 {
                cx.waker().wake_by_ref();
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        });
        executor.block_on(second);
        waker_thread.unwrap().join().unwrap();
        assert!(!executor.tick(4).work_remaining);
    });
}

#[test]
fn cancel_racing_the_last_poll_returns_true_only_for_a_cancelled_handle() {
    loom::model(|| {
        let executor = small();
        let handle = executor.try_spawn(async { Ok::<_, ()>(7) }).unwrap();
        // The other thread cancels while the task's one poll returns its
        // value.
        let canceller = thread::spawn(move || {
            let accepted = handle.cancel();
            (handle, accepted)
        });
        executor.tick(4);
        let (mut handle, accepted) = canceller.join().unwrap();
        executor.tick(4);
        let outcome = handle.try_take().expect("resolved");
        if accepted {
            assert_eq!(outcome, Err(JoinError::Cancelled));
        } else {
            assert_eq!(outcome, Ok(Ok(7)));
        }
    });
}
