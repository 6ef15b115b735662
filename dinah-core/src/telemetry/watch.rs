//! [`PollWatch`]: a stall watchdog an interrupt handler reads, and
//! [`Blocked`], what it reports.
#![forbid(unsafe_code)]

use super::{Clock, PollObserver, PollStamp};
use crate::id::TaskId;

/// A poll that has run too long, as a [`PollWatch`] sees it: the core's
/// `WorkerBlocked` verdict.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub struct Blocked {
    /// The task being polled.
    pub task: TaskId,
    /// How long its poll has run, in ticks of the watch's clock.
    pub running_for: u64,
}

/// The running poll of one executor, published for an interrupt handler or
/// another core to read: the firmware form of a stall watchdog.
///
/// The executor stamps each poll's start with `clock` (as a
/// [`PollObserver`]) in a [`PollStamp`]; [`blocked`](Self::blocked), called
/// from anywhere (a SysTick handler, say), reports a poll that has run at
/// least a threshold. `const fn new`, so it lives in a `static`; it holds
/// the stamp's five 32-bit atomics and the clock.
///
/// # Guarantees
///
/// - Only the executor writes; readers never block it and never see one
///   poll's task with another's stamp (see [`PollStamp`]).
/// - A poll that never returns is seen by every later reading.
///
/// # What it does not promise
///
/// It watches one executor. It does not stop the poll; what to do (log,
/// cancel through the queue, reset) is the reader's choice.
pub struct PollWatch<K: Clock> {
    clock: K,
    stamp: PollStamp,
}

impl<K: Clock> PollWatch<K> {
    crate::raw::const_unless_loom! {
        /// A watch stamping with `clock`, seeing no poll.
        pub fn new(clock: K) -> Self {
            Self {
                clock,
                stamp: PollStamp::new(),
            }
        }
    }

    /// The clock it stamps with.
    pub const fn clock(&self) -> &K {
        &self.clock
    }

    /// The poll that has been running for at least `threshold` ticks, if
    /// any. Any thread or interrupt handler.
    #[must_use]
    pub fn blocked(&self, threshold: u64) -> Option<Blocked> {
        let (task, started) = self.stamp.read()?;
        let running_for = self.clock.now().saturating_sub(started);
        (running_for >= threshold).then_some(Blocked { task, running_for })
    }
}

impl<K: Clock> PollObserver for PollWatch<K> {
    fn poll_started(&self, task: TaskId) {
        self.stamp.start(task, self.clock.now());
    }

    fn poll_ended(&self, _: TaskId) {
        self.stamp.end();
    }
}

impl<K: Clock> core::fmt::Debug for PollWatch<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PollWatch")
            .field("polling", &self.stamp.is_polling())
            .finish_non_exhaustive()
    }
}
