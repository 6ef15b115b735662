//! One tick of either executor: [`tick`] takes what was woken, then steps
//! through the ready tasks in wake order, asking the executor's [`Tick`]
//! storage to release, cancel or poll each, and counts what happened in a
//! [`TickTally`].
#![forbid(unsafe_code)]

use super::report::TickReport;
use super::word::{CANCEL, SELF_WOKEN, WOKEN_IN_POLL, Word};

/// What an executor's storage does for [`tick`]: the parts that differ
/// between the fixed-slot executor and the hosted one. The order of the
/// steps, what each word means, and the counting are [`tick`]'s.
///
/// Every method is called by the executor's own thread (the consumer).
pub trait Tick {
    /// Puts every task woken since the last look behind the ready list.
    fn take_woken(&mut self);
    /// The next ready entry (a cell index), oldest first, or `None`.
    fn next_ready(&mut self) -> Option<u32>;
    /// Handles `entry` if it is not a task's (the future that `run_until` or
    /// `block_on` drives) and says whether it was. Such an entry is not a
    /// poll and does not count against the budget.
    fn other_entry(&mut self, entry: u32) -> bool;
    /// Takes task `entry` off the list for its next step: clears its
    /// `QUEUED` (and, when the storage wants it in the same step, starts a
    /// first poll) and returns its word as it was.
    fn take(&mut self, entry: u32) -> Word;
    /// The task of `entry` is over and its entry came off the list: let go
    /// of its storage, and recycle it if nothing refers to it any more.
    fn release(&mut self, entry: u32);
    /// Cancellation of `entry`'s task was requested: drop its future and end
    /// it.
    fn cancel(&mut self, entry: u32);
    /// Polls `entry`'s task once (`first`: it was never polled;
    /// `self_woken`: it woke itself in its last poll). `word` is what
    /// [`take`](Self::take) returned. Returns `Some(completed)` when the
    /// task ended (`completed`: it succeeded), `None` when it is pending.
    fn poll(&mut self, entry: u32, word: Word, first: bool, self_woken: bool) -> Option<bool>;
    /// Wakes that arrived for tasks already over since the last call.
    fn stale_wakes(&mut self) -> u32;
    /// Whether a task is still ready (left over by the budget, or woken
    /// during the tick).
    fn has_work(&self) -> bool;
}

/// One tick: takes the wakes so far, then polls at most `budget` ready
/// tasks in the order they were woken; cancellations and releases of
/// finished tasks do not count against the budget. Tasks woken during the
/// tick wait for the next one.
#[inline(always)]
pub fn tick<S: Tick + ?Sized>(storage: &mut S, budget: usize) -> TickReport {
    let mut tally = TickTally::new();
    storage.take_woken();
    while tally.polled() < budget {
        let Some(entry) = storage.next_ready() else {
            break;
        };
        if storage.other_entry(entry) {
            continue;
        }
        let word = storage.take(entry);
        match tally.step(word) {
            Step::Release => storage.release(entry),
            Step::Cancel => storage.cancel(entry),
            Step::Poll { first, self_woken } => {
                if let Some(completed) = storage.poll(entry, word, first, self_woken) {
                    tally.ended(completed);
                }
            }
        }
    }
    let stale_wakes = storage.stale_wakes();
    tally.report(stale_wakes, storage.has_work())
}

/// What [`TickTally::step`] says to do with a task taken off the stack.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Step {
    /// The task is over (its last waker is gone, or its poll unwound): let
    /// go of its storage and recycle the cell if nothing still needs it.
    Release,
    /// Cancellation was requested: drop the future and end it `Cancelled`.
    Cancel,
    /// Poll it. `first`: it was never polled (set it `Running`).
    /// `self_woken`: it woke itself during its previous poll.
    Poll {
        /// Never polled before.
        first: bool,
        /// Woken during its own previous poll.
        self_woken: bool,
    },
}

/// What one tick did, counted as it goes; becomes a
/// [`TickReport`](TickReport).
#[derive(Clone, Copy, Debug, Default)]
pub struct TickTally {
    polled: usize,
    completed: usize,
    failed: usize,
    cancelled: usize,
    outside: usize,
    in_poll: usize,
    self_woken: usize,
}

impl TickTally {
    /// Nothing done yet.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            polled: 0,
            completed: 0,
            failed: 0,
            cancelled: 0,
            outside: 0,
            in_poll: 0,
            self_woken: 0,
        }
    }

    /// Tasks polled so far (what a budget is measured in).
    #[inline(always)]
    #[must_use]
    pub const fn polled(&self) -> usize {
        self.polled
    }

    /// Decides what to do with a task whose [`TaskCell::take_for_poll`](super::TaskCell::take_for_poll)
    /// returned `word`, and counts it: a cancellation, or a poll and its
    /// cause (first poll, self-wake, wake during another poll, or from
    /// outside).
    #[inline(always)]
    pub fn step(&mut self, word: Word) -> Step {
        if !word.is_live() {
            return Step::Release;
        }
        if word.has(CANCEL) {
            self.cancelled += 1;
            return Step::Cancel;
        }
        let first = word.is_pending();
        let self_woken = word.has(SELF_WOKEN);
        if !first {
            if self_woken {
                self.self_woken += 1;
            } else if word.has(WOKEN_IN_POLL) {
                self.in_poll += 1;
            } else {
                self.outside += 1;
            }
        }
        self.polled += 1;
        Step::Poll { first, self_woken }
    }

    /// Counts a task that ended after its poll: completed, or failed.
    #[inline(always)]
    pub fn ended(&mut self, completed: bool) {
        if completed {
            self.completed += 1;
        } else {
            self.failed += 1;
        }
    }

    /// The report, with the stale wakes seen since the previous tick and
    /// whether work remains.
    #[must_use]
    pub const fn report(self, stale_wakes: u32, work_remaining: bool) -> TickReport {
        TickReport {
            polled: self.polled,
            completed: self.completed,
            failed: self.failed,
            cancelled: self.cancelled,
            woken_outside: self.outside,
            woken_in_poll: self.in_poll,
            self_woken: self.self_woken,
            stale_wakes,
            work_remaining,
        }
    }
}
