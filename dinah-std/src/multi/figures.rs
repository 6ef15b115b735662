//! What a multi-thread executor counts of itself: [`MultiFigures`], read
//! from any thread, and each worker's [`WorkerFigures`]; the counters
//! behind them, [`Counters`], one per worker, written by that worker only.
//!
//! Counting is off unless [`MultiConfig::measure`](super::MultiConfig::measure)
//! is on: then each poll costs two clock reads and a few relaxed adds on
//! its worker's own cache line; off, one predictable branch per poll.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use dinah_core::telemetry::Clock;
use dinah_core::{TaskId, WorkerId};

use crate::telemetry::StdClock;

/// One worker's counters: written by its own thread, read by anyone.
/// Aligned to keep each worker's on its own cache lines.
#[derive(Default)]
#[repr(align(128))]
pub(super) struct Counters {
    polls: AtomicU64,
    /// Nanoseconds spent in polls.
    busy: AtomicU64,
    steals: AtomicU64,
    stolen: AtomicU64,
    sleeps: AtomicU64,
    /// The task in its poll now (its id), or 0.
    polling: AtomicU64,
    /// When that poll began, on the executor's clock.
    started: AtomicU64,
    /// Polls that followed a wake (or a spawn), and the nanoseconds from
    /// each wake to its poll, in all and the longest.
    woken_polls: AtomicU64,
    wake_to_poll: AtomicU64,
    longest_wake_to_poll: AtomicU64,
}

impl Counters {
    /// A poll of `task`, ready since `ready_since` (0: not stamped),
    /// begins `now`.
    #[inline]
    pub(super) fn poll_begins(&self, now: u64, task: TaskId, ready_since: u64) {
        self.started.store(now, Ordering::Relaxed);
        self.polling.store(task.get(), Ordering::Release);
        if ready_since != 0 {
            let waited = now.saturating_sub(ready_since);
            add(&self.woken_polls, 1);
            add(&self.wake_to_poll, waited);
            if waited > self.longest_wake_to_poll.load(Ordering::Relaxed) {
                self.longest_wake_to_poll.store(waited, Ordering::Relaxed);
            }
        }
    }

    /// The poll that began at `started` ended `now`.
    #[inline]
    pub(super) fn poll_ended(&self, now: u64, started: u64) {
        let took = now.saturating_sub(started);
        self.polling.store(0, Ordering::Relaxed);
        add(&self.polls, 1);
        add(&self.busy, took);
    }

    /// A steal took `tasks` tasks from another worker's deque.
    pub(super) fn stole(&self, tasks: usize) {
        add(&self.steals, 1);
        add(&self.stolen, tasks as u64);
    }

    /// The task this worker polls now and how long it has, if it has for
    /// longer than `limit`.
    pub(super) fn blocked(&self, clock: &StdClock, limit: Duration) -> Option<(TaskId, Duration)> {
        let task = self.polling.load(Ordering::Acquire);
        let started = self.started.load(Ordering::Relaxed);
        let running_for = Duration::from_nanos(clock.now().saturating_sub(started));
        let task = TaskId::new(task).ok().filter(|_| task != 0)?;
        // A poll that ended and a new one that began between the two loads
        // is at most as old as it looks: never blamed longer than it ran.
        (running_for > limit && self.polling.load(Ordering::Acquire) == task.get())
            .then_some((task, running_for))
    }

    /// The worker went to sleep.
    pub(super) fn slept(&self) {
        add(&self.sleeps, 1);
    }

    fn read(&self, worker: usize, queued: usize) -> WorkerFigures {
        let polling = self.polling.load(Ordering::Relaxed);
        WorkerFigures {
            worker: WorkerId::new(worker as u64 + 1).unwrap_or(WorkerId::MAX),
            polls: self.polls.load(Ordering::Relaxed),
            busy: Duration::from_nanos(self.busy.load(Ordering::Relaxed)),
            steals: self.steals.load(Ordering::Relaxed),
            stolen: self.stolen.load(Ordering::Relaxed),
            sleeps: self.sleeps.load(Ordering::Relaxed),
            queued,
            polling: TaskId::new(polling).ok().filter(|_| polling != 0),
            woken_polls: self.woken_polls.load(Ordering::Relaxed),
            wake_to_poll: Duration::from_nanos(self.wake_to_poll.load(Ordering::Relaxed)),
            longest_wake_to_poll: Duration::from_nanos(
                self.longest_wake_to_poll.load(Ordering::Relaxed),
            ),
        }
    }
}

/// A relaxed add by the counter's only writer: a load and a store, no
/// locked instruction.
#[inline]
fn add(counter: &AtomicU64, by: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

/// One worker's figures, since the executor started (all zero unless it
/// measures itself, except `queued`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub struct WorkerFigures {
    /// The worker, from 1 (its thread is named `{name}-{worker}`).
    pub worker: WorkerId,
    /// Polls it made.
    pub polls: u64,
    /// Time spent in those polls: its utilization is this over the
    /// executor's age.
    pub busy: Duration,
    /// Steals that took work from another worker's deque.
    pub steals: u64,
    /// Tasks those steals moved (a steal takes up to half a deque).
    pub stolen: u64,
    /// Times it went to sleep for lack of work.
    pub sleeps: u64,
    /// Tasks in its deque now (its next-task slot aside).
    pub queued: usize,
    /// The task it is polling now, if any.
    pub polling: Option<TaskId>,
    /// Its polls that followed a wake or a spawn (each task's first poll,
    /// and each poll after the task was woken).
    pub woken_polls: u64,
    /// Wake-to-poll: the time from each such wake (or spawn) to its poll,
    /// in all; over `woken_polls`, the mean. It counts the time a task
    /// waited in any queue (the global one, another worker's deque it was
    /// stolen from, this worker's), not only this worker's.
    pub wake_to_poll: Duration,
    /// The longest of those waits.
    pub longest_wake_to_poll: Duration,
}

impl WorkerFigures {
    /// The mean wake-to-poll time of this worker's polls; zero before any.
    #[must_use]
    pub fn mean_wake_to_poll(&self) -> Duration {
        match u32::try_from(self.woken_polls) {
            Ok(0) => Duration::ZERO,
            Ok(polls) => self.wake_to_poll / polls,
            Err(_) => Duration::from_nanos(
                u64::try_from(self.wake_to_poll.as_nanos() / u128::from(self.woken_polls))
                    .unwrap_or(u64::MAX),
            ),
        }
    }
}

/// A multi-thread executor's figures, read at one moment (each read is
/// its own: the figures of a running executor are not one snapshot).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub struct MultiFigures {
    /// Each worker's figures, in worker order.
    pub workers: Vec<WorkerFigures>,
    /// Tasks in the global queue now.
    pub global_queued: usize,
    /// Workers awake (running tasks or looking for them).
    pub awake: usize,
    /// Of those, the ones searching other queues.
    pub searching: usize,
    /// Workers asleep.
    pub asleep: usize,
    /// Tasks accepted and not ended.
    pub live_tasks: usize,
}

/// Reads the figures of an executor from its parts.
pub(super) fn read(
    counters: &[Counters],
    queued: impl Fn(usize) -> usize,
    global_queued: usize,
    (awake, searching): (usize, usize),
    live_tasks: usize,
) -> MultiFigures {
    MultiFigures {
        workers: counters
            .iter()
            .enumerate()
            .map(|(worker, counters)| counters.read(worker, queued(worker)))
            .collect(),
        global_queued,
        awake,
        searching,
        asleep: counters.len().saturating_sub(awake),
        live_tasks,
    }
}
