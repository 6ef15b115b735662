//! [`PollStamp`]: the poll an executor runs now, published to other
//! threads and interrupt handlers through a sequence lock.
#![forbid(unsafe_code)]

use crate::id::TaskId;

/// The poll an executor is running now, published for readers on other
/// threads, cores or interrupt handlers: which task, and since when.
///
/// One writer (the executor, between and around its polls) and any number
/// of readers, none of which ever waits for the other. It is a sequence
/// lock over the task's id and the start stamp, 64 bits each, kept as
/// 32-bit atomics so that it works on every target (`const fn new`; 20
/// bytes).
///
/// # Guarantees
///
/// - A reader gets `None` between polls, and otherwise the id and stamp of
///   one poll, published together: never the id of one poll with the stamp
///   of another. (The sequence number is odd while a poll runs; a reading
///   is kept only if the number is odd and unchanged after the fields were
///   read, and the writer orders each poll's end before the next poll's
///   fields.)
/// - A poll that never ends is seen by every reading after its start.
///
/// # What it does not promise
///
/// A reading that overlaps a poll's end or start says `None`, even if a poll
/// was running at some moment during it.
pub struct PollStamp {
    /// Even: no poll. Odd: a poll runs, with the fields below.
    sequence: crate::atomic::AtomicU32,
    task_low: crate::atomic::AtomicU32,
    task_high: crate::atomic::AtomicU32,
    at_low: crate::atomic::AtomicU32,
    at_high: crate::atomic::AtomicU32,
}

impl PollStamp {
    crate::raw::const_unless_loom! {
        /// No poll running.
        #[must_use]
        pub fn new() -> Self {
            Self {
                sequence: crate::atomic::AtomicU32::new(0),
                task_low: crate::atomic::AtomicU32::new(0),
                task_high: crate::atomic::AtomicU32::new(0),
                at_low: crate::atomic::AtomicU32::new(0),
                at_high: crate::atomic::AtomicU32::new(0),
            }
        }
    }

    /// A poll of `task` began at `at`. The writer only, with no poll
    /// running.
    #[inline]
    pub fn start(&self, task: TaskId, at: u64) {
        use crate::atomic::{Ordering, fence};
        // Orders the previous poll's end before the stores below: a reader
        // that sees any of them also sees the sequence move past the
        // previous poll.
        fence(Ordering::Release);
        let id = task.get();
        self.task_low.store(id as u32, Ordering::Relaxed);
        self.task_high.store((id >> 32) as u32, Ordering::Relaxed);
        self.at_low.store(at as u32, Ordering::Relaxed);
        self.at_high.store((at >> 32) as u32, Ordering::Relaxed);
        // Odd: the fields above are published.
        self.advance();
    }

    /// That poll ended. The writer only.
    #[inline]
    pub fn end(&self) {
        self.advance();
    }

    /// Moves the sequence on by one, releasing what the writer stored
    /// before. A load and a store, not a read-modify-write: there is one
    /// writer, and no locked operation (on a core without them, no critical
    /// section) is needed.
    #[inline]
    fn advance(&self) {
        use crate::atomic::Ordering;
        let sequence = self.sequence.load(Ordering::Relaxed);
        self.sequence
            .store(sequence.wrapping_add(1), Ordering::Release);
    }

    /// The poll running now and its start, or `None`. Any thread or
    /// interrupt handler.
    #[must_use]
    pub fn read(&self) -> Option<(TaskId, u64)> {
        use crate::atomic::{Ordering, fence};
        let before = self.sequence.load(Ordering::Acquire);
        if before & 1 == 0 {
            return None;
        }
        let task = (u64::from(self.task_high.load(Ordering::Relaxed)) << 32)
            | u64::from(self.task_low.load(Ordering::Relaxed));
        let at = (u64::from(self.at_high.load(Ordering::Relaxed)) << 32)
            | u64::from(self.at_low.load(Ordering::Relaxed));
        // Orders the field loads before the second look at the sequence.
        fence(Ordering::Acquire);
        if self.sequence.load(Ordering::Relaxed) != before {
            return None;
        }
        Some((TaskId::from_raw(task).ok()?, at))
    }

    /// Whether a poll is running now.
    #[must_use]
    #[inline]
    pub fn is_polling(&self) -> bool {
        self.sequence.load(crate::atomic::Ordering::Relaxed) & 1 == 1
    }
}

impl Default for PollStamp {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for PollStamp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PollStamp")
            .field("polling", &self.is_polling())
            .finish_non_exhaustive()
    }
}
