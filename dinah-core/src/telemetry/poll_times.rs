//! [`PollTimes`]: the observer that keeps the core executor's
//! [`ExecutorFigures`], and the stopwatch the poll-time observers share.
#![forbid(unsafe_code)]

use core::cell::{Cell, RefCell};

use super::{Clock, ExecutorFigures, PollObserver};
use crate::id::TaskId;

/// Times one poll at a time with a clock: what the poll-time observers
/// share.
pub(super) struct Stopwatch<K: Clock> {
    pub(super) clock: K,
    started: Cell<u64>,
}

impl<K: Clock> Stopwatch<K> {
    pub(super) const fn new(clock: K) -> Self {
        Self {
            clock,
            started: Cell::new(0),
        }
    }

    /// A poll begins now.
    pub(super) fn start(&self) {
        self.started.set(self.clock.now());
    }

    /// The ticks since the last `start` (0 if the clock went back).
    pub(super) fn stop(&self) -> u64 {
        self.clock.now().saturating_sub(self.started.get())
    }
}

/// A [`PollObserver`] that keeps the core executor's [`ExecutorFigures`]:
/// its polls, the distribution of their durations and the long ones, and,
/// on an executor whose queue stamps wakes ([`Timed`](super::Timed)), the
/// distributions of wake-to-poll delay and first-poll delay.
///
/// It lives with the executor (it is not `Sync`): read it between ticks.
/// Durations are in ticks of `clock`; a poll lasting at least `long_poll`
/// ticks is long. Delays are in ticks of the queue's clock: give
/// `PollTimes` the same clock and every figure is in one unit. Without
/// `Timed`, the two delay histograms stay empty. It does not see spawns or
/// wakes: those figures stay 0 (the executor's tick reports count them).
///
/// ```
/// use dinah::telemetry::{NoClock, PollTimes};
///
/// let times: PollTimes<NoClock, 16> = PollTimes::new(NoClock, 50);
/// let figures = times.figures();
/// assert_eq!((figures.polls, figures.poll_time.count()), (0, 0));
/// ```
pub struct PollTimes<K: Clock, const B: usize = 24> {
    watch: Stopwatch<K>,
    long_poll: u64,
    figures: RefCell<ExecutorFigures<B>>,
}

impl<K: Clock, const B: usize> PollTimes<K, B> {
    /// Empty figures, measuring with `clock`; `long_poll` in its ticks.
    /// (The figures' tick rate is read from the clock when they are read.)
    pub const fn new(clock: K, long_poll: u64) -> Self {
        Self {
            watch: Stopwatch::new(clock),
            long_poll,
            figures: RefCell::new(ExecutorFigures::new(0)),
        }
    }

    /// The figures so far.
    #[must_use]
    pub fn figures(&self) -> ExecutorFigures<B> {
        let mut figures = self.figures.borrow().clone();
        figures.ticks_per_second = self.watch.clock.ticks_per_second();
        // Every poll is in the poll-time histogram: counted once, there.
        figures.polls = figures.poll_time.count();
        figures
    }
}

impl<K: Clock, const B: usize> PollObserver for PollTimes<K, B> {
    fn poll_started(&self, _: TaskId) {
        self.watch.start();
    }

    fn poll_ended(&self, _: TaskId) {
        let took = self.watch.stop();
        let mut figures = self.figures.borrow_mut();
        figures.poll_time.record(took);
        if took >= self.long_poll {
            figures.long_polls = figures.long_polls.saturating_add(1);
        }
    }

    fn poll_waited(&self, _: TaskId, first: bool, ticks: u64) {
        let mut figures = self.figures.borrow_mut();
        if first {
            figures.first_poll_delay.record(ticks);
        } else {
            figures.wake_to_poll.record(ticks);
        }
    }
}

impl<K: Clock, const B: usize> core::fmt::Debug for PollTimes<K, B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let figures = self.figures.borrow();
        f.debug_struct("PollTimes")
            .field("polls", &figures.poll_time.count())
            .field("long_polls", &figures.long_polls)
            .finish_non_exhaustive()
    }
}
