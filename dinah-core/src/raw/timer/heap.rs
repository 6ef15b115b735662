//! [`TimerHeap`]: a binary min-heap of deadlines, the order of fixed timer
//! stores (a firmware's).
#![forbid(unsafe_code)]

use super::queue::{
    NO_LIST, TimerEntry, TimerIndex, TimerOrder, entry, entry_mut, out_of_range, sealed,
};

/// The heap, in an entry's `list`.
const IN_HEAP: u8 = 1;

/// A binary min-heap over the entries of a fixed store of `N`: the
/// [`TimerOrder`] of `[TimerEntry<I>; N]`.
///
/// Arming and cancelling are O(log N); firing is O(log N) per timer that
/// fires, and nothing else (no work for timers not yet due); the next
/// expiry is the earliest armed deadline itself, in O(1). Logarithmic
/// rather than a wheel's constant time because a firmware's store is small
/// (`N` is its capacity, fixed at compile time), and because in return:
///
/// - a tickless firmware's alarm is set for deadlines only (a wheel's next
///   expiry is often a time at which timers only move between levels: an
///   interrupt and a wake-up for nothing);
/// - it takes `N` indices of RAM (16 bytes for eight `u16`-indexed timers,
///   where a wheel's list heads take 768);
/// - its code is a few hundred bytes smaller on a Cortex-M0.
///
/// Each entry keeps its place in the heap, so a timer is cancelled where it
/// sits, without a search. Timers of equal deadlines fire in no promised
/// order.
#[derive(Debug)]
pub struct TimerHeap<I: TimerIndex, const N: usize> {
    /// `heap[..len]`: entry indices, each deadline at or after its parent's
    /// (the entry at `k` has its children at `2k + 1` and `2k + 2`).
    heap: [I; N],
    len: usize,
}

impl<I: TimerIndex, const N: usize> sealed::Order for TimerHeap<I, N> {}

impl<I: TimerIndex, const N: usize> TimerOrder<I> for TimerHeap<I, N> {
    const EMPTY: Self = Self {
        heap: [I::NONE; N],
        len: 0,
    };
    const CAPACITY: usize = N;

    fn insert(&mut self, entries: &mut [TimerEntry<I>], index: usize, _: u64) {
        // The queue reserves no more than `CAPACITY` entries, so `place` is
        // in the heap (`put` checks it all the same).
        let place = self.len;
        self.len += 1;
        entry_mut(entries, index).list = IN_HEAP;
        self.settle(entries, place, index);
    }

    fn remove(&mut self, entries: &mut [TimerEntry<I>], index: usize) {
        let entry = entry_mut(entries, index);
        let Some(place) = entry.prev.get() else {
            out_of_range()
        };
        entry.list = NO_LIST;
        entry.prev = I::NONE;
        self.len -= 1;
        if place < self.len {
            // The last entry fills the hole, then finds its place.
            let last = self.at(self.len);
            self.settle(entries, place, last);
        }
    }

    fn next_expiry(&self, entries: &[TimerEntry<I>], _: u64) -> Option<u64> {
        (self.len > 0).then(|| entry(entries, self.at(0)).deadline)
    }

    fn expire(
        &mut self,
        entries: &mut [TimerEntry<I>],
        _: &mut u64,
        now: u64,
        mut due: impl FnMut(&mut [TimerEntry<I>], usize),
    ) {
        while self.len > 0 {
            let index = self.at(0);
            if entry(entries, index).deadline > now {
                break;
            }
            self.remove(entries, index);
            due(entries, index);
        }
    }
}

impl<I: TimerIndex, const N: usize> TimerHeap<I, N> {
    /// The entry at `place` of the heap.
    fn at(&self, place: usize) -> usize {
        match self.heap.get(place).and_then(|index| index.get()) {
            Some(index) => index,
            None => out_of_range(),
        }
    }

    /// Puts entry `index` at `place`, and notes the place in the entry.
    fn put(&mut self, entries: &mut [TimerEntry<I>], place: usize, index: usize) {
        match self.heap.get_mut(place) {
            Some(slot) => *slot = I::of(index),
            None => out_of_range(),
        }
        entry_mut(entries, index).prev = I::of(place);
    }

    /// Puts entry `index` in the hole at `place`, moving it up past later
    /// parents or down past earlier children until the heap is in order.
    fn settle(&mut self, entries: &mut [TimerEntry<I>], mut place: usize, index: usize) {
        let deadline = entry(entries, index).deadline;
        while place > 0 {
            let parent = (place - 1) / 2;
            let above = self.at(parent);
            if entry(entries, above).deadline <= deadline {
                break;
            }
            self.put(entries, place, above);
            place = parent;
        }
        loop {
            let mut child = 2 * place + 1;
            if child >= self.len {
                break;
            }
            let mut below = self.at(child);
            if child + 1 < self.len {
                let right = self.at(child + 1);
                if entry(entries, right).deadline < entry(entries, below).deadline {
                    (child, below) = (child + 1, right);
                }
            }
            if entry(entries, below).deadline >= deadline {
                break;
            }
            self.put(entries, place, below);
            place = child;
        }
        self.put(entries, place, index);
    }
}
