//! [`PollStamp`]: the poll an executor runs now, published to other
//! threads and interrupt handlers through a sequence lock.
#![forbid(unsafe_code)]

use crate::id::TaskId;

/// The poll an executor is running now, published for readers on other
/// threads, cores or interrupt handlers: which task, and since when.
///
/// One writer (the executor, between and around its polls) and any number
/// of readers, none of which ever waits for the other. It is a sequence
/// lock over the task's id and the start stamp, 64 bits each: one 64-bit
/// atomic each where the target has them (24 bytes), two 32-bit halves
/// each elsewhere, so that it works on every target (20 bytes). `new` is a
/// `const fn`.
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
    task: Wide,
    at: Wide,
}

impl PollStamp {
    crate::raw::const_unless_loom! {
        /// No poll running.
        #[must_use]
        pub fn new() -> Self {
            Self {
                sequence: crate::atomic::AtomicU32::new(0),
                task: Wide::new(),
                at: Wide::new(),
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
        self.task.store(task.get());
        self.at.store(at);
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
        let task = self.task.load();
        let at = self.at.load();
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

/// A 64-bit field of the sequence lock, stored and loaded relaxed: the
/// sequence orders it. One atomic where the target has 64-bit atomics.
#[cfg(any(loom, target_has_atomic = "64"))]
struct Wide(crate::atomic::AtomicU64);

#[cfg(any(loom, target_has_atomic = "64"))]
impl Wide {
    crate::raw::const_unless_loom! {
        fn new() -> Self {
            Self(crate::atomic::AtomicU64::new(0))
        }
    }

    #[inline(always)]
    fn store(&self, value: u64) {
        self.0.store(value, crate::atomic::Ordering::Relaxed);
    }

    #[inline(always)]
    fn load(&self) -> u64 {
        self.0.load(crate::atomic::Ordering::Relaxed)
    }
}

/// A 64-bit field of the sequence lock as two 32-bit halves, where the
/// target has no 64-bit atomics: the sequence still publishes the two
/// halves together.
#[cfg(not(any(loom, target_has_atomic = "64")))]
struct Wide {
    low: crate::atomic::AtomicU32,
    high: crate::atomic::AtomicU32,
}

#[cfg(not(any(loom, target_has_atomic = "64")))]
impl Wide {
    const fn new() -> Self {
        Self {
            low: crate::atomic::AtomicU32::new(0),
            high: crate::atomic::AtomicU32::new(0),
        }
    }

    #[inline(always)]
    fn store(&self, value: u64) {
        self.low
            .store(value as u32, crate::atomic::Ordering::Relaxed);
        self.high
            .store((value >> 32) as u32, crate::atomic::Ordering::Relaxed);
    }

    #[inline(always)]
    fn load(&self) -> u64 {
        (u64::from(self.high.load(crate::atomic::Ordering::Relaxed)) << 32)
            | u64::from(self.low.load(crate::atomic::Ordering::Relaxed))
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
