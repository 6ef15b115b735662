//! The two figures records: [`ExecutorFigures`], one per executor, and
//! [`TaskFigures`], one per task. The core executor's observers and the
//! hosted executor's monitor fill the same records.
#![forbid(unsafe_code)]

use super::Log2Histogram;
use crate::id::TaskId;

/// Converts `ticks` at `ticks_per_second` to whole microseconds, rounding
/// down and saturating.
const fn to_micros(ticks: u64, ticks_per_second: u64) -> u64 {
    let per_second = if ticks_per_second == 0 {
        1
    } else {
        ticks_per_second as u128
    };
    let micros = ticks as u128 * 1_000_000 / per_second;
    if micros > u64::MAX as u128 {
        u64::MAX
    } else {
        micros as u64
    }
}

/// What an executor has measured: the one per-executor record.
///
/// Durations and histogram samples are in ticks of the clock that measured
/// them, at [`ticks_per_second`](Self::ticks_per_second): microseconds for
/// the hosted executor's monitor, the observer's clock for the core's
/// [`PollTimes`](super::PollTimes). Each producer fills what it sees and
/// leaves the rest at zero: `PollTimes` sees polls and their waits, not
/// spawns or wakes (the core's [`TickReport`](crate::executor::TickReport)s
/// count those).
///
/// Counters saturate; a record is a copy, read at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecutorFigures<const B: usize = 24> {
    /// The rate of the ticks below.
    pub ticks_per_second: u64,
    /// Tasks accepted (spawned, or submitted through a spawner).
    pub spawned: u64,
    /// Spawns and submissions refused (full or shut down).
    pub rejected: u64,
    /// Polls begun.
    pub polls: u64,
    /// Polls that lasted at least the long-poll threshold.
    pub long_polls: u64,
    /// Wakes that made a task ready, self-wakes included.
    pub wakes: u64,
    /// Of those, wakes a task made during its own poll. On the core
    /// executor without a context function, also wakes from another
    /// thread or interrupt that landed during the poll (see
    /// [`ReadyQueue`](crate::ReadyQueue)'s "Telling a task's own wakes
    /// apart"); the hosted executors tell them apart.
    pub self_wakes: u64,
    /// Wakes that arrived after their task was over.
    pub stale_wakes: u64,
    /// From a wake to the poll it caused (ready-queue age), in ticks.
    pub wake_to_poll: Log2Histogram<B>,
    /// From a spawn to the task's first poll, in ticks.
    pub first_poll_delay: Log2Histogram<B>,
    /// How long each poll took, in ticks.
    pub poll_time: Log2Histogram<B>,
}

impl<const B: usize> ExecutorFigures<B> {
    /// Empty figures in ticks of `ticks_per_second`.
    #[must_use]
    pub const fn new(ticks_per_second: u64) -> Self {
        Self {
            ticks_per_second,
            spawned: 0,
            rejected: 0,
            polls: 0,
            long_polls: 0,
            wakes: 0,
            self_wakes: 0,
            stale_wakes: 0,
            wake_to_poll: Log2Histogram::new(),
            first_poll_delay: Log2Histogram::new(),
            poll_time: Log2Histogram::new(),
        }
    }

    /// `ticks` of this record in whole microseconds (rounded down).
    #[must_use]
    pub const fn micros(&self, ticks: u64) -> u64 {
        to_micros(ticks, self.ticks_per_second)
    }
}

/// Where a live task is, as a monitor sees it; durations in ticks of its
/// record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskPhase {
    /// Woken (or new) and waiting for its poll, for this many ticks.
    Ready {
        /// Ticks since it became ready.
        for_ticks: u64,
    },
    /// Being polled, for this many ticks.
    Polling {
        /// Ticks since its poll began.
        for_ticks: u64,
    },
    /// Pending after a poll, with no wake since, for this many ticks.
    Waiting {
        /// Ticks since its last poll returned.
        for_ticks: u64,
    },
}

/// What one task has done: the one per-task record.
///
/// Durations are in ticks at [`ticks_per_second`](Self::ticks_per_second).
/// Each producer fills what it sees and leaves the rest at zero (or
/// `None`): the core executor's [`task_figures`](crate::executor::AsyncExecutor::task_figures)
/// counts polls and wakes; the core's [`TaskTimes`](super::TaskTimes)
/// observer times polls and their waits; the hosted executor's monitor
/// fills everything, the task's phase included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TaskFigures {
    /// The task.
    pub task: TaskId,
    /// The task's name, if it was spawned with one.
    pub name: Option<&'static str>,
    /// The rate of the ticks below.
    pub ticks_per_second: u64,
    /// Times it was polled.
    pub polls: u64,
    /// Polls caused by a wake (every poll but the first); wakes that
    /// coalesce into one poll count once.
    pub wakes: u64,
    /// Of those, wakes it made during its own poll (on the core executor
    /// without a context function, any wake that landed during its poll;
    /// see [`ReadyQueue`](crate::ReadyQueue)'s "Telling a task's own wakes
    /// apart").
    pub self_wakes: u64,
    /// Wakes that arrived after it was over.
    pub stale_wakes: u64,
    /// Time spent in its polls, in ticks (saturating).
    pub busy: u64,
    /// Its longest poll, in ticks.
    pub longest_poll: u64,
    /// How long its first poll waited after its spawn, in ticks, when seen.
    pub first_poll_delay: Option<u64>,
    /// The longest a later poll waited after the wake that queued it, in
    /// ticks.
    pub longest_wake_to_poll: u64,
    /// What it is doing now, when the producer knows.
    pub phase: Option<TaskPhase>,
}

impl TaskFigures {
    /// A record of `task` with nothing counted yet, in ticks of
    /// `ticks_per_second`.
    #[must_use]
    pub const fn new(task: TaskId, ticks_per_second: u64) -> Self {
        Self {
            task,
            name: None,
            ticks_per_second,
            polls: 0,
            wakes: 0,
            self_wakes: 0,
            stale_wakes: 0,
            busy: 0,
            longest_poll: 0,
            first_poll_delay: None,
            longest_wake_to_poll: 0,
            phase: None,
        }
    }

    /// `ticks` of this record in whole microseconds (rounded down).
    #[must_use]
    pub const fn micros(&self, ticks: u64) -> u64 {
        to_micros(ticks, self.ticks_per_second)
    }
}
