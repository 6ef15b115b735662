//! [`WakeStack`]: the lock-free stack of woken cells, and the operations
//! that queue a cell on it (wake, cancel, start) or take cells off it.
#![forbid(unsafe_code)]

use super::cell::{CancelRefused, Link, TaskCell};
use super::word::{KEEPS_POLLED_WAKES, QUEUED, SELF_WOKEN, WOKEN_IN_POLL};
use crate::atomic::{AtomicU32, Ordering};

/// A wake for a task that is already over: counted, otherwise ignored.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Stale;

/// The lock-free stack of woken cells, plus the two counters every wake
/// consults: which cell is being polled, and how many wakes were stale.
///
/// Entries are `index + 1` of a cell (0 ends the stack), linked through the
/// cells themselves, so pushing never allocates and never fails.
#[derive(Debug)]
pub struct WakeStack {
    head: AtomicU32,
    polling: AtomicU32,
    stale: AtomicU32,
}

impl WakeStack {
    super::const_unless_loom! {
        /// An empty stack.
        #[must_use]
        pub fn new() -> Self {
            Self {
                head: AtomicU32::new(0),
                polling: AtomicU32::new(0),
                stale: AtomicU32::new(0),
            }
        }
    }

    /// Wakes that arrived after their task was over. Wraps at `u32::MAX`.
    #[inline]
    #[must_use]
    pub fn stale_wakes(&self) -> u32 {
        self.stale.load(Ordering::Relaxed)
    }

    /// Whether any wake waits on the stack.
    #[inline(always)]
    #[must_use]
    pub fn has_woken(&self) -> bool {
        self.head.load(Ordering::Acquire) != 0
    }

    /// Which cell is being polled (`index + 1`), or `0` for none.
    #[inline(always)]
    #[must_use]
    pub fn polling(&self) -> u32 {
        self.polling.load(Ordering::Relaxed)
    }

    /// Records which cell is being polled (`index + 1`), or none (`0`), so
    /// that wakes can say whether they came during a poll. Consumer only.
    #[inline(always)]
    pub fn set_polling(&self, entry: u32) {
        self.polling.store(entry, Ordering::Relaxed);
    }

    /// Pushes `cell`. The caller set its `QUEUED`.
    #[inline(always)]
    pub fn push<L: Link>(&self, cell: &TaskCell<L>) {
        self.push_at(cell, cell.index());
    }

    /// [`push`](Self::push) for a caller that read the cell's
    /// [`index`](TaskCell::index) already, so that it is read once per wake.
    #[inline(always)]
    pub fn push_at<L: Link>(&self, cell: &TaskCell<L>, index: u32) {
        debug_assert_eq!(index, cell.index(), "the index of another cell");
        let entry = index + 1;
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            cell.set_link(head);
            match self
                .head
                .compare_exchange_weak(head, entry, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(actual) => head = actual,
            }
        }
    }

    /// Wakes `cell`: sets `QUEUED` (with the wake flags) and pushes it,
    /// unless it is queued already (the wake coalesces), its consumer is
    /// polling it (`POLLING`: the consumer queues it when the poll ends), or
    /// its task is over (counted as stale). Returns `true` when it pushed, so the caller can
    /// signal whoever sleeps waiting for work. Any thread or interrupt; the
    /// wake counts as made outside any poll's context.
    ///
    /// # Errors
    ///
    /// [`Stale`] when the task is over.
    #[inline(always)]
    pub fn wake<L: Link>(&self, cell: &TaskCell<L>) -> Result<bool, Stale> {
        let marked = self.mark(cell, || true)?;
        if marked {
            self.push(cell);
        }
        Ok(marked)
    }

    /// The first half of [`wake`](Self::wake): sets `QUEUED` (with the wake
    /// flags) unless it is set already, and returns `true` when this call set
    /// it and the cell is not `POLLING` (whose consumer queues it when the
    /// poll ends). The caller then owns the duty of queuing the cell exactly once:
    /// on this stack with [`push`](Self::push), or, on the consumer's own
    /// thread while it runs, in a list of the consumer's.
    ///
    /// `here` says whether the wake runs in the consumer's own context (its
    /// thread, not another thread, core or interrupt handler); it is asked
    /// only when a poll is running, and only a wake made here sets the poll
    /// flags, so a wake from elsewhere that lands during a poll is never
    /// taken for the polled task's own.
    ///
    /// # Errors
    ///
    /// [`Stale`] (counted) when the task is over.
    #[inline(always)]
    pub fn mark<L: Link>(
        &self,
        cell: &TaskCell<L>,
        here: impl FnOnce() -> bool,
    ) -> Result<bool, Stale> {
        self.mark_at(cell, cell.index(), here)
    }

    /// [`mark`](Self::mark) for a caller that read the cell's
    /// [`index`](TaskCell::index) already.
    ///
    /// # Errors
    ///
    /// [`Stale`] (counted) when the task is over.
    #[inline(always)]
    pub fn mark_at<L: Link>(
        &self,
        cell: &TaskCell<L>,
        index: u32,
        here: impl FnOnce() -> bool,
    ) -> Result<bool, Stale> {
        debug_assert_eq!(index, cell.index(), "the index of another cell");
        let polling = self.polling.load(Ordering::Relaxed);
        let mut flags = QUEUED;
        if polling != 0 && here() {
            flags |= WOKEN_IN_POLL;
            if polling == index + 1 {
                flags |= SELF_WOKEN;
            }
        }
        match cell.mark(flags) {
            Some(was) => Ok(!(was.is_queued() || (KEEPS_POLLED_WAKES && was.is_polling()))),
            None => {
                self.stale.fetch_add(1, Ordering::Relaxed);
                Err(Stale)
            }
        }
    }

    /// Requests cancellation of the task of generation `generation` (its
    /// low 24 bits, as [`Word::generation`](super::Word::generation)) in `cell`: sets `CANCEL` and
    /// queues it (unless queued already, or `POLLING`: its consumer queues
    /// it when the poll ends), so that the consumer drops the future at its
    /// next scheduling point. Returns `true` when it pushed.
    /// Any thread or interrupt.
    ///
    /// # Errors
    ///
    /// [`CancelRefused::Unknown`] when the cell holds another generation,
    /// [`CancelRefused::Finished`] when the task is over.
    pub fn cancel<L: Link>(
        &self,
        cell: &TaskCell<L>,
        generation: u32,
    ) -> Result<bool, CancelRefused> {
        let queued = cell.request_cancel(generation)?;
        if !queued {
            self.push(cell);
        }
        Ok(!queued)
    }

    /// Starts a new task in `cell`: the next generation, `Pending`, and
    /// queued for its first poll. Consumer only, and only for a cell whose
    /// previous task is over and that is not on the stack (for heap-free
    /// wakers: with no cloned waker left). Returns the new generation's low
    /// bits.
    pub fn start<L: Link>(&self, cell: &TaskCell<L>) -> u32 {
        let generation = Self::begin(cell);
        self.push(cell);
        generation
    }

    /// [`start`](Self::start) without the push: the new task is `QUEUED`
    /// and the caller queues it exactly once (rule 2), on this stack or on a
    /// list of the consumer's own. Consumer only.
    pub fn begin<L: Link>(cell: &TaskCell<L>) -> u32 {
        let word = cell.word();
        debug_assert!(!word.is_live());
        let next = word.next_task();
        cell.begin(next);
        next.generation()
    }

    /// Queues `cell` again from the consumer's side unless it is queued
    /// already (used when a poll unwinds). Returns `true` when it pushed.
    pub fn requeue<L: Link>(&self, cell: &TaskCell<L>) -> bool {
        let push = cell.requeue();
        if push {
            self.push(cell);
        }
        push
    }

    /// Takes every entry off the stack and returns them as a chain in wake
    /// order, oldest first, linked through the cells (`index + 1`, ending in
    /// 0): its first and last entries, or `None` when nothing was woken.
    /// `cell_of(index)` finds a cell by its index. Consumer only.
    #[inline(always)]
    pub fn take<'c, L: Link + 'c>(
        &self,
        cell_of: impl Fn(usize) -> &'c TaskCell<L>,
    ) -> Option<(u32, u32)> {
        let last = self.head.swap(0, Ordering::Acquire);
        if last == 0 {
            return None;
        }
        // The stack is newest first: reverse it through the links. The
        // newest entry ends the chain; alone (the common case between two
        // ticks), it is the whole chain, and its link is already 0.
        let newest = cell_of(last as usize - 1);
        let mut top = newest.link();
        if top == 0 {
            return Some((last, last));
        }
        newest.set_link(0);
        let mut reversed = last;
        while top != 0 {
            let cell = cell_of(top as usize - 1);
            let below = cell.link();
            cell.set_link(reversed);
            reversed = top;
            top = below;
        }
        Some((reversed, last))
    }
}

impl Default for WakeStack {
    fn default() -> Self {
        Self::new()
    }
}
