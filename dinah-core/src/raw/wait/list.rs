//! [`WaitList`]: the first-in, first-out line of tasks waiting for room,
//! the one wait protocol behind every dinah channel and semaphore.
//!
//! # Invariants
//!
//! 1. An entry is on the line (linked from `head`) exactly while it is
//!    `Waiting`; its waker is then `Some`.
//! 2. An entry leaves the line only at its owner's request (`cancel`, or a
//!    `poll` that finds it settled) or at the head (`settle_head`), so the
//!    line is served strictly in order.
//! 3. A settled entry (`Granted` or `Closed`) stays held until its owner
//!    polls or cancels it: what it was granted is never lost, only handed
//!    back (by `cancel`) for the next in line.
//! 4. A key names one use of an entry: the generation changes each time
//!    an entry is freed, so an old key cannot touch a new waiter.
#![forbid(unsafe_code)]

use core::task::Waker;

/// Wakers taken under one lock and woken after it is released.
pub const WAKE_BATCH: usize = 4;

/// Where a [`WaitList`] keeps its entries: a fixed array, or storage that
/// can grow.
pub trait WaitStore {
    /// Every entry.
    fn entries(&self) -> &[WaitEntry];
    /// Every entry, to change.
    fn entries_mut(&mut self) -> &mut [WaitEntry];
    /// Adds one vacant entry at the end and says so; a fixed store cannot.
    fn grow(&mut self) -> bool;
}

impl<const W: usize> WaitStore for [WaitEntry; W] {
    fn entries(&self) -> &[WaitEntry] {
        self
    }
    fn entries_mut(&mut self) -> &mut [WaitEntry] {
        self
    }
    fn grow(&mut self) -> bool {
        false
    }
}

/// Where an entry stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage {
    Vacant,
    Waiting,
    Granted,
    Closed,
}

/// One waiter's place in a [`WaitList`].
#[derive(Debug)]
pub struct WaitEntry {
    waker: Option<Waker>,
    since: u64,
    want: u32,
    generation: u32,
    /// Index + 1 of the next entry on the line or the free list; 0: none.
    next: u32,
    /// Index + 1 of the previous entry on the line; 0: none.
    prev: u32,
    stage: Stage,
}

impl WaitEntry {
    /// An entry no waiter holds.
    pub const VACANT: Self = Self {
        waker: None,
        since: 0,
        want: 0,
        generation: 0,
        next: 0,
        prev: 0,
        stage: Stage::Vacant,
    };
}

/// A waiter's claim on its entry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct WaitKey {
    index: u32,
    generation: u32,
}

/// What a waiter finds when it looks at its entry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Turn {
    /// Still in line; the waker is kept up to date.
    Waiting,
    /// Served: it holds what it asked for. The entry is freed.
    Granted(u32),
    /// The line was closed before it was served. The entry is freed.
    Closed,
}

/// Wakers to wake once the lock that found them is released.
#[derive(Debug, Default)]
pub struct WakeBatch {
    wakers: [Option<Waker>; WAKE_BATCH],
    len: usize,
}

impl WakeBatch {
    /// An empty batch.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            wakers: [const { None }; WAKE_BATCH],
            len: 0,
        }
    }

    /// Whether another waker fits.
    #[must_use]
    pub fn has_room(&self) -> bool {
        self.len < WAKE_BATCH
    }

    /// Adds `waker`, if any.
    ///
    /// # Panics
    ///
    /// If the batch is full; check [`has_room`](Self::has_room) first.
    pub fn push(&mut self, waker: Option<Waker>) {
        if let Some(waker) = waker {
            match self.wakers.get_mut(self.len) {
                Some(place) => *place = Some(waker),
                None => batch_full(),
            }
            self.len += 1;
        }
    }

    /// Whether the batch filled up (so more may be waiting to be taken).
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.len == WAKE_BATCH
    }

    /// Whether no waker was taken.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Wakes every waker taken, in order.
    pub fn wake(self) {
        self.wake_was_full();
    }

    /// Wakes every waker taken, in order, and says whether the batch was
    /// full (its owner may have more to hand out).
    pub fn wake_was_full(mut self) -> bool {
        let full = self.is_full();
        for waker in self.wakers.iter_mut().take(self.len) {
            if let Some(waker) = waker.take() {
                waker.wake();
            }
        }
        full
    }
}

/// A first-in, first-out line of waiters, each asking for some amount
/// (a semaphore's permits, a channel's slot), in a [`WaitStore`].
///
/// It does not lock, read a clock or wake anyone: its owner does all three
/// and passes the time in. Every operation is O(1). See the module's
/// invariants.
#[derive(Debug)]
pub struct WaitList<S> {
    store: S,
    line: Line,
}

/// A line's links and counts. Its logic works on a slice of entries
/// whatever the store, so it is compiled once for every store (a firmware
/// with lines of several sizes keeps one copy); only taking a fresh entry
/// asks the store to grow.
#[derive(Debug)]
struct Line {
    head: u32,
    tail: u32,
    free: u32,
    /// Entries ever handed out; beyond it, entries are vacant and unlinked.
    used: u32,
    waiting: u32,
    peak: u32,
}

impl<S: WaitStore> WaitList<S> {
    /// An empty line over `store` (its entries all vacant).
    pub const fn new(store: S) -> Self {
        Self {
            store,
            line: Line {
                head: 0,
                tail: 0,
                free: 0,
                used: 0,
                waiting: 0,
                peak: 0,
            },
        }
    }

    /// Waiters in line now.
    #[must_use]
    pub fn waiting(&self) -> u32 {
        self.line.waiting
    }

    /// The most waiters ever in line at once.
    #[must_use]
    pub fn peak(&self) -> u32 {
        self.line.peak
    }

    /// When the first in line joined it (it has waited longest).
    #[must_use]
    pub fn oldest_since(&self) -> Option<u64> {
        self.line
            .at(self.store.entries(), self.line.head)
            .map(|entry| entry.since)
    }

    /// How much the first in line asks for.
    #[must_use]
    pub fn head_want(&self) -> Option<u32> {
        self.line
            .at(self.store.entries(), self.line.head)
            .map(|entry| entry.want)
    }

    /// Joins the end of the line asking for `want`, at time `now`; `None`
    /// when the store is full.
    pub fn push(&mut self, waker: &Waker, want: u32, now: u64) -> Option<WaitKey> {
        let index = self.vacant()?;
        Some(
            self.line
                .push(self.store.entries_mut(), index, waker, want, now),
        )
    }

    fn vacant(&mut self) -> Option<u32> {
        if let Some(index) = self.line.free.checked_sub(1) {
            self.line.free = entry(self.store.entries_mut(), index).next;
            return Some(index);
        }
        let index = self.line.used;
        if (index as usize) >= self.store.entries().len() && !self.store.grow() {
            return None;
        }
        self.line.used += 1;
        Some(index)
    }

    /// Looks at `key`'s entry: still waiting (its waker replaced by `waker`
    /// if they differ), or settled, which frees it.
    pub fn poll(&mut self, key: WaitKey, waker: &Waker) -> Turn {
        self.line.poll(self.store.entries_mut(), key, waker)
    }

    /// Gives up `key`'s entry; returns what it had been granted and not yet
    /// taken, which the owner must hand on.
    pub fn cancel(&mut self, key: WaitKey) -> u32 {
        self.line.cancel(self.store.entries_mut(), key)
    }

    /// Serves (`grant`) or turns away (`!grant`) the first in line: it
    /// leaves the line, settled, and its waker is returned to be woken.
    pub fn settle_head(&mut self, grant: bool) -> Option<Waker> {
        self.line.settle_head(self.store.entries_mut(), grant)
    }

    /// Turns away everyone in line, up to a batch: their wakers go into
    /// `batch`. Call again while the batch comes back full.
    pub fn close_into(&mut self, batch: &mut WakeBatch) {
        self.line.close_into(self.store.entries_mut(), batch);
    }
}

/// Entry `index` of `entries`; an index from the line's own links that is
/// out of range is a broken invariant.
fn entry(entries: &mut [WaitEntry], index: u32) -> &mut WaitEntry {
    match entries.get_mut(index as usize) {
        Some(entry) => entry,
        None => out_of_range(),
    }
}

impl Line {
    fn at<'e>(&self, entries: &'e [WaitEntry], link: u32) -> Option<&'e WaitEntry> {
        let index = link.checked_sub(1)?;
        entries.get(index as usize)
    }

    fn push(
        &mut self,
        entries: &mut [WaitEntry],
        index: u32,
        waker: &Waker,
        want: u32,
        now: u64,
    ) -> WaitKey {
        let tail = self.tail;
        let entry = entry(entries, index);
        entry.waker = Some(waker.clone());
        entry.since = now;
        entry.want = want;
        entry.stage = Stage::Waiting;
        entry.prev = tail;
        entry.next = 0;
        let key = WaitKey {
            index,
            generation: entry.generation,
        };
        match tail.checked_sub(1) {
            Some(last) => self::entry(entries, last).next = index + 1,
            None => self.head = index + 1,
        }
        self.tail = index + 1;
        self.waiting += 1;
        self.peak = self.peak.max(self.waiting);
        key
    }

    fn release(&mut self, entries: &mut [WaitEntry], index: u32) {
        let free = self.free;
        let entry = entry(entries, index);
        entry.waker = None;
        entry.stage = Stage::Vacant;
        entry.generation = entry.generation.wrapping_add(1);
        entry.prev = 0;
        entry.next = free;
        self.free = index + 1;
    }

    fn unlink(&mut self, entries: &mut [WaitEntry], index: u32) {
        let (prev, next) = {
            let entry = entry(entries, index);
            (entry.prev, entry.next)
        };
        match prev.checked_sub(1) {
            Some(before) => entry(entries, before).next = next,
            None => self.head = next,
        }
        match next.checked_sub(1) {
            Some(after) => entry(entries, after).prev = prev,
            None => self.tail = prev,
        }
        self.waiting -= 1;
    }

    fn checked(entries: &mut [WaitEntry], key: WaitKey) -> &mut WaitEntry {
        let entry = entry(entries, key.index);
        if entry.generation != key.generation || entry.stage == Stage::Vacant {
            crate::fmt::fail!("a wait key outlived its entry");
        }
        entry
    }

    fn poll(&mut self, entries: &mut [WaitEntry], key: WaitKey, waker: &Waker) -> Turn {
        let entry = Self::checked(entries, key);
        let turn = match entry.stage {
            Stage::Waiting => {
                if !entry
                    .waker
                    .as_ref()
                    .is_some_and(|kept| kept.will_wake(waker))
                {
                    entry.waker = Some(waker.clone());
                }
                return Turn::Waiting;
            }
            Stage::Granted => Turn::Granted(entry.want),
            Stage::Closed | Stage::Vacant => Turn::Closed,
        };
        self.release(entries, key.index);
        turn
    }

    fn cancel(&mut self, entries: &mut [WaitEntry], key: WaitKey) -> u32 {
        let entry = Self::checked(entries, key);
        let granted = match entry.stage {
            Stage::Granted => entry.want,
            Stage::Waiting => {
                self.unlink(entries, key.index);
                0
            }
            Stage::Closed | Stage::Vacant => 0,
        };
        self.release(entries, key.index);
        granted
    }

    fn settle_head(&mut self, entries: &mut [WaitEntry], grant: bool) -> Option<Waker> {
        let index = self.head.checked_sub(1)?;
        self.unlink(entries, index);
        let entry = entry(entries, index);
        entry.stage = if grant { Stage::Granted } else { Stage::Closed };
        entry.waker.take()
    }

    fn close_into(&mut self, entries: &mut [WaitEntry], batch: &mut WakeBatch) {
        while batch.has_room() && self.head != 0 {
            batch.push(self.settle_head(entries, false));
        }
    }
}

/// A waker was pushed into a full batch: a broken invariant (callers check
/// `has_room`), reported with a fixed message.
#[cold]
fn batch_full() -> ! {
    crate::fmt::fail!("dinah: wake batch full")
}

/// An index from the line's own links was out of range: a broken
/// invariant, reported with a fixed message (so that a firmware does not
/// link `core::fmt` for it).
#[cold]
fn out_of_range() -> ! {
    crate::fmt::fail!("dinah: wait line index out of range")
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use super::*;
    use std::sync::Arc;
    use std::task::Wake;

    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    fn waker() -> Waker {
        Waker::from(Arc::new(Noop))
    }

    #[test]
    fn the_line_is_served_in_order_and_a_cancel_hands_on_its_grant() {
        let mut list = WaitList::new([const { WaitEntry::VACANT }; 3]);
        let w = waker();
        let a = list.push(&w, 1, 10).unwrap();
        let b = list.push(&w, 2, 11).unwrap();
        let c = list.push(&w, 1, 12).unwrap();
        assert!(list.push(&w, 1, 13).is_none(), "a fixed store is full");
        assert_eq!((list.waiting(), list.oldest_since()), (3, Some(10)));
        assert_eq!(list.cancel(b), 0, "a waiter leaves from the middle");
        assert_eq!(list.head_want(), Some(1));
        assert!(list.settle_head(true).is_some());
        assert_eq!(list.oldest_since(), Some(12));
        assert_eq!(list.poll(a, &w), Turn::Granted(1));
        assert!(list.settle_head(true).is_some());
        assert_eq!(list.cancel(c), 1, "an untaken grant comes back");
        assert_eq!((list.waiting(), list.peak()), (0, 3));
        let d = list.push(&w, 5, 20).unwrap();
        assert_ne!(d, a, "a reused entry has a new generation");
        let mut batch = WakeBatch::new();
        list.close_into(&mut batch);
        assert_eq!(list.poll(d, &w), Turn::Closed);
    }
}
