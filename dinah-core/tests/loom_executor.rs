//! Loom models of the async executor's wake protocol: the real `waker` and
//! `async_executor` code, with loom's atomics swapped in (`src/sync.rs`).
//! The executor runs on the model's main thread; a second thread wakes,
//! cancels or drops wakers at every point loom can interleave.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test --release -p dinah-core --test loom_executor`.
#![cfg(loom)]

use std::future::Future;
use std::pin::pin;
use std::task::Poll;

mod support;
use support::Probe;

use dinah_core::executor::CancelError;
use dinah_core::{AsyncExecutor, ReadyQueue, TaskState, yield_now};
use loom::sync::Mutex;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

/// A fresh queue per execution; wakers need it `'static`.
fn queue<const N: usize>() -> &'static ReadyQueue<N> {
    Box::leak(Box::new(ReadyQueue::new()))
}

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// Spawns `task` (which parks its waker at `probe`'s gate on its first
/// poll), queues it again, and lets another thread open the gate and wake
/// it while the executor's next tick polls it; then ticks `more` times.
/// Returns the task's state then, and whether any work was left.
fn race_a_wake_with_a_poll(
    probe: &'static Probe,
    task: impl Future<Output = ()>,
    more: usize,
) -> (Option<TaskState>, bool) {
    let queue = queue::<1>();
    let mut task = pin!(Some(task));
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
    let id = executor.try_spawn(task.as_mut()).unwrap();
    executor.tick(4);
    let waker = probe.take_parked();
    // Queued again, so the next tick polls while the other thread wakes.
    waker.wake_by_ref();
    let other = thread::spawn(move || {
        probe.open();
        waker.wake();
    });
    executor.tick(4);
    other.join().unwrap();
    for _ in 0..more {
        executor.tick(4);
    }
    (executor.task_state(id), executor.tick(4).work_remaining)
}

#[test]
fn a_wake_racing_the_poll_is_never_lost() {
    loom::model(|| {
        let probe: &'static Probe = leak(Probe::default());
        let (state, _) = race_a_wake_with_a_poll(probe, probe.gate(), 1);
        assert_eq!(state, Some(TaskState::Completed));
        assert!(probe.polls() <= 3);
    });
}

#[test]
fn a_wake_from_another_thread_during_a_poll_that_wakes_itself_is_queued_once() {
    loom::model(|| {
        let probe: &'static Probe = leak(Probe::default());
        // Once through the gate, the task wakes itself in the same poll: a
        // wake from the other thread may land before, during or after that
        // self-wake, or after the poll, and must be neither lost nor queued
        // twice.
        let task = async move {
            probe.gate().await;
            yield_now().await;
        };
        let (state, work_left) = race_a_wake_with_a_poll(probe, task, 2);
        assert_eq!(state, Some(TaskState::Completed));
        assert!(probe.polls() <= 3);
        assert!(!work_left);
    });
}

#[test]
fn a_wake_after_completion_is_stale_and_frees_the_slot_once() {
    loom::model(|| {
        let queue = queue::<1>();
        let probe: &'static Probe = leak(Probe::default());
        let mut task = pin!(Some(probe.gate()));
        let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
        let id = executor.try_spawn(task.as_mut()).unwrap();
        executor.tick(4);
        let waker = probe.take_parked();
        probe.open();
        waker.wake_by_ref();
        // The task completes on this thread while the clone wakes and drops.
        let other = thread::spawn(move || waker.wake());
        executor.tick(4);
        other.join().unwrap();
        executor.tick(4);
        executor.tick(4);
        assert_eq!(executor.task_state(id), Some(TaskState::Completed));
        // The slot is free exactly once: one spawn fits, a second does not.
        let mut next = pin!(Some(async {}));
        let mut extra = pin!(Some(async {}));
        executor.try_spawn(next.as_mut()).unwrap();
        assert!(executor.try_spawn(extra.as_mut()).is_err());
    });
}

#[test]
fn cancel_between_polls_drops_the_future_exactly_once() {
    loom::model(|| {
        let queue = queue::<1>();
        let drops = leak(AtomicUsize::new(0));
        struct Counted(&'static AtomicUsize);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        // Owned by the future from the start, so it drops with the future
        // whether or not the future was ever polled.
        let counted = Counted(drops);
        let mut task = pin!(Some(async move {
            let _counted = counted;
            yield_now().await;
            yield_now().await;
        }));
        let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
        let id = executor.try_spawn(task.as_mut()).unwrap();
        let other = thread::spawn(move || queue.cancel(id));
        executor.tick(4);
        executor.tick(4);
        let cancelled = other.join().unwrap();
        executor.tick(4);
        executor.tick(4);
        let state = executor.task_state(id);
        match cancelled {
            Ok(()) => assert_eq!(state, Some(TaskState::Cancelled)),
            Err(CancelError::AlreadyFinished(_)) => {
                assert_eq!(state, Some(TaskState::Completed))
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
        assert_eq!(drops.load(Ordering::Relaxed), 1);
    });
}

#[test]
fn a_stale_waker_never_reaches_the_next_task_in_its_slot() {
    loom::model(|| {
        let queue = queue::<1>();
        let closed: &'static Probe = leak(Probe::default());
        let kept = Mutex::new(None);
        let mut first = pin!(Some(std::future::poll_fn(|cx| {
            *kept.lock().unwrap() = Some(cx.waker().clone());
            Poll::Ready(())
        })));
        let mut second = pin!(Some(closed.gate()));
        let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
        executor.try_spawn(first.as_mut()).unwrap();
        executor.tick(4);
        let stale = kept.lock().unwrap().take().unwrap();
        // The old waker wakes and is dropped while the executor tries to
        // reuse its slot.
        let other = thread::spawn(move || stale.wake());
        let mut second: Option<dinah_core::executor::TaskRef<'_, ()>> = Some(second.as_mut());
        for _ in 0..2 {
            executor.tick(4);
            if let Some(task) = second.take()
                && let Err(refused) = executor.try_spawn(task)
            {
                second = Some(refused.into_inner());
            }
        }
        other.join().unwrap();
        executor.tick(4);
        if let Some(task) = second.take() {
            executor.try_spawn(task).unwrap();
        }
        executor.tick(4);
        executor.tick(4);
        // Polled once, by its own spawn; never by the old task's waker.
        assert_eq!(closed.polls(), 1);
    });
}

/// The pend signal, as a real one (an unpark, an event flag) behaves:
/// sequentially consistent. A plain std atomic, reset by each execution;
/// loom still interleaves the queue's own atomics around it.
static PENDED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn pend() {
    PENDED.store(true, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn the_idle_check_never_sleeps_through_a_wake() {
    loom::model(|| {
        let queue: &'static ReadyQueue<1> = leak(ReadyQueue::with_pender(pend));
        let probe: &'static Probe = leak(Probe::default());
        let mut task = pin!(Some(probe.gate()));
        let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
        let id = executor.try_spawn(task.as_mut()).unwrap();
        executor.tick(4);
        PENDED.store(false, std::sync::atomic::Ordering::SeqCst);
        let waker = probe.take_parked();
        let other = thread::spawn(move || {
            probe.open();
            waker.wake();
        });
        // The run loop: tick; if nothing is ready and nothing was pended,
        // this is where the executor would sleep.
        let report = executor.tick(4);
        let slept = !report.work_remaining
            && executor.task_state(id) != Some(TaskState::Completed)
            && !PENDED.swap(false, std::sync::atomic::Ordering::SeqCst);
        other.join().unwrap();
        if slept {
            // Whoever made the task ready must have pended after the check,
            // so a real sleeper would have been woken.
            assert!(PENDED.load(std::sync::atomic::Ordering::SeqCst));
        }
        executor.tick(4);
        assert_eq!(executor.task_state(id), Some(TaskState::Completed));
    });
}

/// The tick source of the timed model: a plain atomic that the model resets
/// in each execution (it is a reading, not part of the wake protocol).
static NOW: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[derive(Default)]
struct Now;

impl dinah_core::telemetry::Clock for Now {
    fn now(&self) -> u64 {
        NOW.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn ticks_per_second(&self) -> u64 {
        1
    }
}

/// The waits an executor reports, in order.
struct Waits(std::cell::RefCell<Vec<(bool, u64)>>);

impl dinah_core::telemetry::PollObserver for Waits {
    fn poll_started(&self, _: dinah_core::TaskId) {}
    fn poll_ended(&self, _: dinah_core::TaskId) {}
    fn poll_waited(&self, _: dinah_core::TaskId, first: bool, ticks: u64) {
        self.0.borrow_mut().push((first, ticks));
    }
}

#[test]
fn a_timed_wake_racing_the_poll_is_never_lost_and_every_poll_is_timed() {
    use dinah_core::telemetry::Timed;
    loom::model(|| {
        NOW.store(0, std::sync::atomic::Ordering::SeqCst);
        let queue: &'static ReadyQueue<1, Timed<Now>> = leak(ReadyQueue::new());
        let probe: &'static Probe = leak(Probe::default());
        let mut task = pin!(Some(probe.gate()));
        let mut executor: AsyncExecutor<'_, 1, (), Timed<Now>> = AsyncExecutor::new(queue).unwrap();
        let waits = Waits(std::cell::RefCell::new(Vec::new()));
        let id = executor.try_spawn(task.as_mut()).unwrap();
        executor.tick_observed(4, &waits);
        let waker = probe.take_parked();
        // Queued at 0; the other thread wakes at 7, racing the next poll.
        waker.wake_by_ref();
        let other = thread::spawn(move || {
            NOW.store(7, std::sync::atomic::Ordering::SeqCst);
            probe.open();
            waker.wake();
        });
        executor.tick_observed(4, &waits);
        other.join().unwrap();
        executor.tick_observed(4, &waits);
        assert_eq!(executor.task_state(id), Some(TaskState::Completed));
        let waits = waits.0.into_inner();
        // One wait per poll; only the first is a first poll; a wait runs
        // from the stamp at 0 or at 7 to a poll at 0 or 7, never backwards.
        assert_eq!(waits.len(), probe.polls());
        assert_eq!(waits[0], (true, 0));
        assert!(
            waits[1..]
                .iter()
                .all(|&(first, ticks)| !first && (ticks == 0 || ticks == 7))
        );
    });
}

#[test]
fn the_last_waker_dropped_as_its_task_ends_frees_the_slot_exactly_once() {
    loom::model(|| {
        let queue = queue::<1>();
        let kept = leak(Mutex::new(None));
        let mut first = pin!(Some(std::future::poll_fn(|cx| {
            *kept.lock().unwrap() = Some(cx.waker().clone());
            Poll::Ready(())
        })));
        let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
        executor.try_spawn(first.as_mut()).unwrap();
        // The task's one poll keeps a clone and ends; the other thread takes
        // the clone and drops it, racing the executor's end of the task and
        // its claim on the slot.
        let other = thread::spawn(move || {
            loop {
                if let Some(waker) = kept.lock().unwrap().take() {
                    drop(waker);
                    break;
                }
                thread::yield_now();
            }
        });
        executor.tick(4);
        other.join().unwrap();
        executor.tick(4);
        // Free exactly once: one spawn fits, a second does not.
        let mut next = pin!(Some(async {}));
        let mut extra = pin!(Some(async {}));
        executor.try_spawn(next.as_mut()).unwrap();
        assert!(executor.try_spawn(extra.as_mut()).is_err());
    });
}

#[test]
fn a_poll_stamp_never_pairs_one_poll_s_task_with_another_s_start() {
    use dinah_core::TaskId;
    use dinah_core::telemetry::PollStamp;
    loom::model(|| {
        let stamp: &'static PollStamp = leak(PollStamp::new());
        let (a, b) = (TaskId::new(1).unwrap(), TaskId::new(2).unwrap());
        let writer = thread::spawn(move || {
            stamp.start(a, 10);
            stamp.end();
            stamp.start(b, 20);
            stamp.end();
        });
        for _ in 0..2 {
            match stamp.read() {
                None => {}
                Some(reading) => assert!(
                    reading == (a, 10) || reading == (b, 20),
                    "a torn reading: {reading:?}"
                ),
            }
        }
        writer.join().unwrap();
        assert_eq!(stamp.read(), None);
    });
}

/// Storage that runs its future, then asks to run it again once, as a new
/// task in the same slot (what a `TaskPool` worker does per job), and
/// records its starts and its polls as the second task.
struct Twice<'p> {
    gate: Option<support::Gate<'p>>,
    starts: &'p Mutex<Vec<dinah_core::TaskId>>,
    polls_after_restart: &'p AtomicUsize,
}

impl dinah_core::Task for Twice<'_> {
    type Error = std::convert::Infallible;

    fn poll_task(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Result<(), Self::Error>> {
        let this = self.get_mut();
        if this.starts.lock().unwrap().len() > 1 {
            this.polls_after_restart.fetch_add(1, Ordering::Relaxed);
            return Poll::Pending;
        }
        match this.gate.as_mut() {
            Some(gate) => match std::pin::Pin::new(gate).poll(cx) {
                Poll::Ready(()) => {
                    this.gate = None;
                    Poll::Ready(Ok(()))
                }
                Poll::Pending => Poll::Pending,
            },
            None => Poll::Pending,
        }
    }

    fn drop_future(self: std::pin::Pin<&mut Self>) {
        self.get_mut().gate = None;
    }

    fn has_future(&self) -> bool {
        true
    }

    fn turn(self: std::pin::Pin<&mut Self>, started: Option<dinah_core::TaskId>) -> bool {
        let this = self.get_mut();
        let mut starts = this.starts.lock().unwrap();
        match started {
            Some(id) => starts.push(id),
            None => this.gate = None,
        }
        starts.len() < 2
    }
}

#[test]
fn storage_that_runs_again_restarts_once_and_only_after_its_last_waker_is_gone() {
    loom::model(|| {
        let queue = queue::<1>();
        let probe: &'static Probe = leak(Probe::default());
        let starts: &'static Mutex<Vec<dinah_core::TaskId>> = leak(Mutex::new(Vec::new()));
        let polls_after_restart: &'static AtomicUsize = leak(AtomicUsize::new(0));
        let mut twice = pin!(Twice {
            gate: Some(probe.gate()),
            starts,
            polls_after_restart,
        });
        let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
        let first = executor.try_spawn(twice.as_mut()).unwrap();
        executor.tick(4);
        // The task parked its waker; another thread wakes and drops it
        // while the task completes here.
        let waker = probe.take_parked();
        probe.open();
        waker.wake_by_ref();
        let other = thread::spawn(move || waker.wake());
        executor.tick(4);
        other.join().unwrap();
        for _ in 0..3 {
            executor.tick(4);
        }
        // Ended, then started again once, as a new task, in the same slot
        // (only once the other thread's waker was gone), and polled as
        // that task.
        let starts = starts.lock().unwrap().clone();
        assert_eq!(starts.len(), 2);
        assert_eq!(starts[0], first);
        assert_ne!(starts[1], first);
        assert_eq!(executor.task_state(first), None);
        assert_eq!(executor.task_state(starts[1]), Some(TaskState::Running));
        assert_eq!(polls_after_restart.load(Ordering::Relaxed), 1);
    });
}
