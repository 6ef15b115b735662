//! [`TaskProbe`]: one slot's figures, atomics any thread may read, with
//! the stamps that say since when its task has been ready, waiting or in a
//! line; and [`Waited`], what a poll waited for before it began, packed in
//! one word.
#![forbid(unsafe_code)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dinah_core::TaskId;

use crate::io::IoWait;
use crate::primitives::lock_std;
use crate::telemetry::hook::{Stamp, stamped};

/// The figures' ticks: microseconds.
pub(super) const MICROS_PER_SECOND: u64 = 1_000_000;

/// One slot's figures. Reset when a new task takes the slot.
///
/// Laid out in declaration order from a cache line's start, with what
/// every poll and wake touches first, together: with hundreds of tasks, a
/// poll reaches two of the probe's cache lines instead of all of them.
#[repr(C, align(64))]
pub(crate) struct TaskProbe {
    /// The slot's latest task's id (kept after it ends, for stale wakes),
    /// or 0.
    pub(super) task: AtomicU64,
    /// Since when it has been ready (spawned or woken), if it is.
    pub(super) ready: ReadyStamp,
    /// Since when it has been pending after a poll with no wake, if it is.
    pub(super) waiting: Stamp,
    /// While it waits: when the timer its last poll armed is due, if that
    /// poll armed one (then a wait up to then is no lost wake).
    pub(super) timer_due: Stamp,
    pub(super) polls: AtomicU64,
    pub(super) busy: AtomicU64,
    pub(super) longest: AtomicU64,
    pub(super) longest_wait: AtomicU64,
    /// Wakes from the executor's own thread while it runs, self-wakes
    /// apart: one writer, so a load and a store, no read-modify-write.
    /// Readers add `wakes`, this and `self_wakes`.
    pub(super) local_wakes: AtomicU64,
    /// Only ever counted on the executor's thread (a self-wake is made
    /// by the task's own poll): one writer. Not in `local_wakes`, so a
    /// self-wake moves one counter, not two.
    pub(super) self_wakes: AtomicU64,
    /// `line` is set (read without the lock).
    pub(super) in_line: AtomicBool,
    /// `io_wait` is set (read without the lock).
    pub(super) on_io: AtomicBool,
    /// That task has not ended.
    pub(super) live: AtomicBool,
    /// Wakes from other threads (any writer).
    pub(super) wakes: AtomicU64,
    pub(super) stale_wakes: AtomicU64,
    /// When it was submitted, for its first-poll delay.
    pub(super) spawned: Stamp,
    /// How long its first poll waited after its submission.
    pub(super) first_poll_delay: Stamp,
    /// That task's name, if it was given one.
    pub(super) name: Mutex<Option<&'static str>>,
    /// While it waits in the line of a channel or semaphore, or for a
    /// value: the name of what it waits on (if any), since when, and
    /// whether it waits to receive (a known wake path: the other side).
    pub(super) line: Mutex<Option<(Option<&'static str>, u64, bool)>>,
    /// While it waits on a socket: which, and which way.
    pub(super) io_wait: Mutex<Option<IoWait>>,
}

impl TaskProbe {
    pub(super) fn new() -> Self {
        Self {
            task: AtomicU64::new(0),
            live: AtomicBool::new(false),
            name: Mutex::new(None),
            ready: ReadyStamp::new(),
            waiting: Stamp::new(),
            timer_due: Stamp::new(),
            line: Mutex::new(None),
            in_line: AtomicBool::new(false),
            on_io: AtomicBool::new(false),
            io_wait: Mutex::new(None),
            spawned: Stamp::new(),
            first_poll_delay: Stamp::new(),
            polls: AtomicU64::new(0),
            wakes: AtomicU64::new(0),
            local_wakes: AtomicU64::new(0),
            self_wakes: AtomicU64::new(0),
            stale_wakes: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            longest: AtomicU64::new(0),
            longest_wait: AtomicU64::new(0),
        }
    }

    /// The slot's latest task, live or not.
    pub(super) fn id(&self) -> Option<TaskId> {
        TaskId::from_raw(self.task.load(Ordering::Relaxed)).ok()
    }

    /// The slot's task's name.
    pub(super) fn name(&self) -> Option<&'static str> {
        *lock_std(&self.name)
    }

    /// The slot's task, if it has not ended.
    pub(super) fn live(&self) -> Option<TaskId> {
        if self.live.load(Ordering::Relaxed) {
            self.id()
        } else {
            None
        }
    }
}

/// Since when a task has been ready: stamped by the executor's thread (its
/// spawns, its polls' wakes, a poll's end) in one stamp that only it writes,
/// with plain stores; and by wakes from other threads in another, with a
/// compare-and-swap. The earlier of the two counts. So a task that the
/// executor's own thread makes ready costs no locked operation.
///
/// Each is a time stored as a [`Stamp`] stores it, 0 being "not ready".
pub(super) struct ReadyStamp {
    here: AtomicU64,
    elsewhere: AtomicU64,
}

impl ReadyStamp {
    pub(super) const fn new() -> Self {
        Self {
            here: AtomicU64::new(0),
            elsewhere: AtomicU64::new(0),
        }
    }

    /// Ready since `at` (the executor's thread), unless already ready.
    pub(super) fn set_here(&self, at: u64) {
        if self.here.load(Ordering::Relaxed) == 0 {
            self.here.store(stamped(at), Ordering::Relaxed);
        }
    }

    /// Ready since `at` (any thread), unless already ready.
    pub(super) fn set_elsewhere(&self, at: u64) {
        if self.elsewhere.load(Ordering::Relaxed) == 0 {
            let _ = self.elsewhere.compare_exchange(
                0,
                stamped(at),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// Since when, if ready. Any thread.
    pub(super) fn get(&self) -> Option<u64> {
        earlier(
            self.here.load(Ordering::Relaxed),
            self.elsewhere.load(Ordering::Relaxed),
        )
    }

    /// Takes the stamp, leaving it unset: the executor's thread. A wake
    /// from elsewhere that lands after this look stays for the next take.
    pub(super) fn take(&self) -> Option<u64> {
        let here = self.here.load(Ordering::Relaxed);
        self.here.store(0, Ordering::Relaxed);
        let mut elsewhere = self.elsewhere.load(Ordering::Relaxed);
        if elsewhere != 0 {
            elsewhere = self.elsewhere.swap(0, Ordering::Relaxed);
        }
        earlier(here, elsewhere)
    }

    /// Ready since `at` and nothing earlier: a new task (the executor's
    /// thread).
    pub(super) fn reset(&self, at: u64) {
        self.here.store(stamped(at), Ordering::Relaxed);
        self.elsewhere.store(0, Ordering::Relaxed);
    }

    /// Not ready: the task ended (the executor's thread).
    pub(super) fn clear(&self) {
        self.here.store(0, Ordering::Relaxed);
        self.elsewhere.store(0, Ordering::Relaxed);
    }
}

/// The earlier of two stored stamps (`!t`, 0 for none): the complement of
/// 0 is `u64::MAX`, so the smaller complement is the one set.
pub(super) fn earlier(a: u64, b: u64) -> Option<u64> {
    let earlier = (!a).min(!b);
    (earlier != u64::MAX).then_some(earlier)
}

pub(super) fn add(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// [`add`] for a counter that only the executor's thread writes: a load
/// and a store, no read-modify-write (readers on other threads still see
/// whole values).
#[inline(always)]
pub(super) fn add_single_writer(counter: &AtomicU64, by: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

/// What a poll waited for before it began.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Waited {
    /// Its task's first poll, this long after the submission.
    FirstPoll(u64),
    /// This long after the wake that made it ready.
    Woken(u64),
    /// No stamp (a wake raced the previous poll's end).
    Unknown,
}

impl Waited {
    /// The longest wait kept: 2^62 - 1 ns (146 years); longer ones are
    /// kept as this.
    const MOST: u64 = (1 << 62) - 1;
    /// Bit 63: a first poll's delay.
    const FIRST: u64 = 1 << 63;
    /// Bit 62 alone: no stamp.
    const UNKNOWN: u64 = 1 << 62;

    /// One word for it, so that a [`PollStart`] is two words: returned
    /// in registers, not through memory the caller then reads back whole
    /// (a stall on every poll when it was three).
    pub(super) fn pack(self) -> PackedWait {
        PackedWait(match self {
            Self::FirstPoll(nanos) => Self::FIRST | nanos.min(Self::MOST),
            Self::Woken(nanos) => nanos.min(Self::MOST),
            Self::Unknown => Self::UNKNOWN,
        })
    }
}

/// A [`Waited`] in one word: a wake's wait with both top bits clear, a
/// first poll's with bit 63 set, none as bit 62 alone. Read back by
/// testing the top bits, with no enum in between.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct PackedWait(u64);

impl PackedWait {
    /// The wait after a wake, if that is what it is.
    #[inline]
    pub(super) fn woken(self) -> Option<u64> {
        (self.0 & (Waited::FIRST | Waited::UNKNOWN) == 0).then_some(self.0)
    }

    /// The first poll's delay, if that is what it is.
    #[inline]
    pub(super) fn first_poll(self) -> Option<u64> {
        (self.0 & Waited::FIRST != 0).then_some(self.0 & Waited::MOST)
    }

    /// The [`Waited`] it holds.
    #[cfg(all(test, not(loom)))]
    fn unpack(self) -> Waited {
        match (self.woken(), self.first_poll()) {
            (Some(nanos), _) => Waited::Woken(nanos),
            (_, Some(nanos)) => Waited::FirstPoll(nanos),
            _ => Waited::Unknown,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{ReadyStamp, Stamp, Waited};

    #[test]
    fn a_packed_wait_unpacks_to_itself_and_the_longest_are_clamped() {
        for nanos in [0, 1, 999, 1 << 40, Waited::MOST] {
            for waited in [Waited::FirstPoll(nanos), Waited::Woken(nanos)] {
                assert_eq!(waited.pack().unpack(), waited);
            }
        }
        assert_eq!(Waited::Unknown.pack().unpack(), Waited::Unknown);
        assert_eq!(
            Waited::Woken(u64::MAX).pack().unpack(),
            Waited::Woken(Waited::MOST)
        );
        assert_eq!(
            Waited::FirstPoll(u64::MAX).pack().unpack(),
            Waited::FirstPoll(Waited::MOST)
        );
    }

    #[test]
    fn the_earlier_of_the_two_stamps_counts_and_a_take_clears_both() {
        let ready = ReadyStamp::new();
        assert_eq!(ready.get(), None);
        assert_eq!(ready.take(), None);
        ready.set_elsewhere(10);
        ready.set_here(20);
        assert_eq!(ready.get(), Some(10), "woken elsewhere first");
        ready.set_elsewhere(5);
        ready.set_here(1);
        assert_eq!(ready.get(), Some(10), "each keeps its first stamp");
        assert_eq!(ready.take(), Some(10));
        assert_eq!(ready.get(), None);
        ready.set_here(7);
        ready.set_elsewhere(9);
        assert_eq!(ready.take(), Some(7), "woken here first");
        ready.set_here(0);
        assert_eq!(ready.get(), Some(0), "time zero is a time");
        ready.reset(3);
        assert_eq!(ready.get(), Some(3));
        ready.clear();
        assert_eq!(ready.get(), None);
    }

    #[test]
    fn a_stamp_is_unset_only_when_cleared() {
        let stamp = Stamp::new();
        assert_eq!(stamp.get(), None);
        for at in [0, 1, 1_000, u64::MAX / 2, u64::MAX - 1] {
            stamp.set(at);
            assert_eq!(stamp.get(), Some(at));
        }
        stamp.clear();
        assert_eq!(stamp.get(), None);
        // A time that saturated (a timer due `Duration::MAX` from now) is
        // kept as the farthest time there is, never as none.
        stamp.set(u64::MAX);
        assert_eq!(stamp.get(), Some(u64::MAX - 1));
        let ready = ReadyStamp::new();
        ready.set_elsewhere(u64::MAX);
        assert_eq!(ready.get(), Some(u64::MAX - 1));
        ready.clear();
        ready.set_here(u64::MAX);
        assert_eq!(ready.take(), Some(u64::MAX - 1));
    }
}
