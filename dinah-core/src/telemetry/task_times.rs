//! [`TaskTimes`]: the observer that keeps the core executor's per-task
//! poll times, as [`TaskFigures`].
#![forbid(unsafe_code)]

use core::cell::Cell;

use super::poll_times::Stopwatch;
use super::{Clock, PollObserver, TaskFigures};
use crate::id::TaskId;

/// One slot's times, as [`TaskTimes`] keeps them.
#[derive(Clone, Copy)]
struct Times {
    /// The slot's latest observed task (`TaskId::get`), or 0.
    task: u64,
    polls: u32,
    busy: u64,
    longest_poll: u64,
    first_poll_delay: Option<u64>,
    longest_wake_to_poll: u64,
}

impl Times {
    const NONE: Self = Self {
        task: 0,
        polls: 0,
        busy: 0,
        longest_poll: 0,
        first_poll_delay: None,
        longest_wake_to_poll: 0,
    };
}

/// A [`PollObserver`] that keeps per-task poll times for an
/// [`AsyncExecutor`](crate::executor::AsyncExecutor) with `N` slots: the
/// core executor's per-task figures, next to the per-executor ones of
/// [`PollTimes`](super::PollTimes).
///
/// It keeps one entry per slot, for the slot's latest task: a task's figures
/// are readable by id until another task's poll is seen in its slot. It
/// lives with the executor (it is not `Sync`): read it between ticks. Poll
/// durations are in ticks of `clock`, waits in ticks of the queue's clock
/// (give it the same clock).
///
/// Not kept: anything about a task before its first observed poll, about
/// tasks of another executor (their ids may collide), or its wakes (the
/// executor's [`task_figures`](crate::executor::AsyncExecutor::task_figures)
/// counts those).
pub struct TaskTimes<K: Clock, const N: usize> {
    watch: Stopwatch<K>,
    slots: [Cell<Times>; N],
}

impl<K: Clock, const N: usize> TaskTimes<K, N> {
    /// No figures yet, measuring with `clock`.
    pub const fn new(clock: K) -> Self {
        Self {
            watch: Stopwatch::new(clock),
            slots: [const { Cell::new(Times::NONE) }; N],
        }
    }

    /// The figures of task `task` (its polls and their times), if it is
    /// its slot's latest observed task.
    #[must_use]
    pub fn task(&self, task: TaskId) -> Option<TaskFigures> {
        let times = self.slots.get(usize::from(task.slot()?))?.get();
        if times.task != task.get() {
            return None;
        }
        let mut figures = TaskFigures::new(task, self.watch.clock.ticks_per_second());
        figures.polls = u64::from(times.polls);
        figures.busy = times.busy;
        figures.longest_poll = times.longest_poll;
        figures.first_poll_delay = times.first_poll_delay;
        figures.longest_wake_to_poll = times.longest_wake_to_poll;
        Some(figures)
    }

    /// Changes the entry of `task`'s slot with `change`, starting it afresh
    /// when the slot last held another task.
    fn update(&self, task: TaskId, change: impl FnOnce(&mut Times)) {
        let Some(slot) = task.slot().and_then(|i| self.slots.get(usize::from(i))) else {
            return;
        };
        let mut times = slot.get();
        if times.task != task.get() {
            times = Times::NONE;
            times.task = task.get();
        }
        change(&mut times);
        slot.set(times);
    }
}

impl<K: Clock, const N: usize> PollObserver for TaskTimes<K, N> {
    fn poll_started(&self, _: TaskId) {
        self.watch.start();
    }

    fn poll_ended(&self, task: TaskId) {
        let took = self.watch.stop();
        self.update(task, |times| {
            times.polls = times.polls.saturating_add(1);
            times.busy = times.busy.saturating_add(took);
            times.longest_poll = times.longest_poll.max(took);
        });
    }

    fn poll_waited(&self, task: TaskId, first: bool, ticks: u64) {
        self.update(task, |times| {
            if first {
                times.first_poll_delay = Some(ticks);
            } else {
                times.longest_wake_to_poll = times.longest_wake_to_poll.max(ticks);
            }
        });
    }
}

impl<K: Clock, const N: usize> core::fmt::Debug for TaskTimes<K, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TaskTimes")
            .field("slots", &N)
            .finish_non_exhaustive()
    }
}
