//! [`TimerQueue`]: the timers of one store, over storage its owner chooses
//! (a fixed array on firmware, a growing `Vec` on a host), kept in deadline
//! order by the [`TimerOrder`] the storage names.
//!
//! The queue does what is the same for every order: it hands out entries
//! and keys (a key kept after its entry was released names nothing), keeps
//! each armed timer's waker, counts what is armed, and keeps fired timers on
//! a list of their own until their wakers are taken
//! ([`TimerQueue::take_fired`]), so that an owner that holds a lock can wake
//! them after letting go of it. The order only knows deadlines:
//!
//! - [`TimerHeap`](super::TimerHeap), for fixed stores: a binary heap of
//!   the store's `N` entries. O(log N) arm and cancel, O(log N) per timer
//!   that fires, and the next expiry is the earliest deadline itself, so a
//!   tickless firmware wakes only for deadlines. It takes `N` indices of
//!   RAM and little code.
//! - [`Wheel`](super::Wheel), for growing stores: a hierarchical timer
//!   wheel. O(1) arm and cancel whatever the number of timers, at the price
//!   of 384 list heads and of expiries at which timers only move between
//!   levels.
//!
//! The queue is a value: it does not lock and does not read a clock. Its
//! owner passes the time in.
#![forbid(unsafe_code)]

use core::task::Waker;

/// The list an entry is on, in its `list` field: 0 for none (so that a
/// vacant store is all zero bytes: a `static` store then takes no flash for
/// its initial value); the fired list; an order's lists are from 1 up.
pub(super) const NO_LIST: u8 = 0;
/// The fired list.
pub(super) const FIRED_LIST: u8 = u8::MAX;

/// The index type that links a queue's entries: `u16` for small fixed
/// stores, `u32` for large ones. An index is stored plus one, so that zero
/// means none and a vacant queue is all zero bytes. Sealed.
pub trait TimerIndex: Copy + Eq + sealed::Index + core::fmt::Debug {
    /// No entry.
    #[doc(hidden)]
    const NONE: Self;
    #[doc(hidden)]
    fn get(self) -> Option<usize>;
    #[doc(hidden)]
    fn of(index: usize) -> Self;
    /// How many entries the type can name.
    #[doc(hidden)]
    const LIMIT: usize;
}

/// The traits no other crate implements.
pub(super) mod sealed {
    /// Sealed [`TimerIndex`](super::TimerIndex).
    pub trait Index {}
    impl Index for u16 {}
    impl Index for u32 {}
    /// Sealed [`TimerOrder`](super::TimerOrder).
    pub trait Order {}
}

macro_rules! timer_index {
    ($t:ty) => {
        impl TimerIndex for $t {
            const NONE: Self = 0;
            const LIMIT: usize = <$t>::MAX as usize;
            #[inline]
            fn get(self) -> Option<usize> {
                (self as usize).checked_sub(1)
            }
            #[inline]
            fn of(index: usize) -> Self {
                // Callers stay below `LIMIT`.
                (index + 1) as $t
            }
        }
    };
}
timer_index!(u16);
timer_index!(u32);

/// Where a queue keeps its entries (a fixed array, or storage that can
/// grow), and the order that suits it.
pub trait TimerStore<I: TimerIndex> {
    /// How the queue keeps armed timers in deadline order: a fixed array
    /// uses a [`TimerHeap`](super::TimerHeap) of its length, a growing
    /// store a [`Wheel`](super::Wheel). The order's capacity also bounds
    /// the store: past it, [`TimerQueue::reserve`] refuses.
    type Order: TimerOrder<I>;
    /// Every entry.
    fn entries(&self) -> &[TimerEntry<I>];
    /// Every entry, to change.
    fn entries_mut(&mut self) -> &mut [TimerEntry<I>];
    /// Adds one vacant entry at the end and says so; a fixed store cannot.
    fn grow(&mut self) -> bool;

    /// Whether a released entry keeps its waker (`false` unless the store
    /// says so).
    ///
    /// Kept, the waker is not dropped at release, and an entry reused by
    /// the same task does not clone it again (`Waker::will_wake`): a task
    /// that makes and drops timers in a loop pays no waker clone or drop.
    /// The cost: each vacant entry keeps the last waker it held (and what
    /// that waker keeps alive) until the entry is reused, the kept wakers
    /// are forgotten ([`TimerQueue::forget_kept_wakers`]), or the queue is
    /// dropped. A kept waker is never woken.
    fn keeps_wakers(&self) -> bool {
        false
    }

    /// Takes a waker that an arm replaced in an entry. By default it is
    /// dropped at once, inside whatever lock the owner holds; a store can
    /// keep it for the owner to drop after letting go.
    fn replaced(&mut self, waker: Waker) {
        drop(waker);
    }
}

impl<I: TimerIndex, const T: usize> TimerStore<I> for [TimerEntry<I>; T] {
    type Order = super::TimerHeap<I, T>;
    fn entries(&self) -> &[TimerEntry<I>] {
        self
    }
    fn entries_mut(&mut self) -> &mut [TimerEntry<I>] {
        self
    }
    fn grow(&mut self) -> bool {
        false
    }
}

/// How a [`TimerQueue`] keeps its armed timers in deadline order: a
/// [`TimerHeap`](super::TimerHeap) or a [`Wheel`](super::Wheel). Sealed: the
/// queue's invariants rest on the order's.
///
/// An order owns the `list`, `slot`, `prev` and `next` fields of the entries
/// it holds (the `list` values from 1 up to, not including, the fired
/// list's), and hands an entry back with its `list` at none.
pub trait TimerOrder<I: TimerIndex>: sealed::Order + core::fmt::Debug {
    /// An order that holds nothing.
    #[doc(hidden)]
    const EMPTY: Self;
    /// How many entries it can hold at once.
    #[doc(hidden)]
    const CAPACITY: usize;
    /// Orders armed entry `index`, whose deadline is after `elapsed`.
    #[doc(hidden)]
    fn insert(&mut self, entries: &mut [TimerEntry<I>], index: usize, elapsed: u64);
    /// Takes entry `index`, which it holds, out of order.
    #[doc(hidden)]
    fn remove(&mut self, entries: &mut [TimerEntry<I>], index: usize);
    /// The earliest time at which [`expire`](Self::expire) has work (never
    /// after the earliest deadline it holds), `None` when it holds nothing.
    #[doc(hidden)]
    fn next_expiry(&self, entries: &[TimerEntry<I>], elapsed: u64) -> Option<u64>;
    /// Hands `due` each entry whose deadline is at or before `now`, out of
    /// order. An order whose placement depends on the time (the wheel)
    /// moves `elapsed` towards `now` as it goes, never past it; the queue
    /// moves it to `now` afterwards.
    #[doc(hidden)]
    fn expire(
        &mut self,
        entries: &mut [TimerEntry<I>],
        elapsed: &mut u64,
        now: u64,
        due: impl FnMut(&mut [TimerEntry<I>], usize),
    );
}

/// What an entry is doing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// On the free list (or never used).
    Vacant,
    /// Held by a timer future, not armed.
    Reserved,
    /// Armed: held by the order.
    Armed,
    /// Its deadline was reached; its waker may still wait on the fired list.
    Fired,
}

/// One timer's place in a store.
#[derive(Debug)]
pub struct TimerEntry<I: TimerIndex> {
    pub(super) deadline: u64,
    waker: Option<Waker>,
    /// The previous entry on its list (a heap keeps the entry's place in it
    /// here instead).
    pub(super) prev: I,
    /// The next entry on its list, or on the free list.
    pub(super) next: I,
    generation: u32,
    state: State,
    /// The list it is on (see `NO_LIST`).
    pub(super) list: u8,
    /// Its slot in its level, for a wheel.
    pub(super) slot: u8,
}

impl<I: TimerIndex> TimerEntry<I> {
    /// An entry no timer holds.
    pub const VACANT: Self = Self {
        deadline: 0,
        waker: None,
        prev: I::NONE,
        next: I::NONE,
        generation: 0,
        state: State::Vacant,
        list: NO_LIST,
        slot: 0,
    };
}

/// Entry `index` of `entries`, which the queue's own links name.
#[inline]
pub(super) fn entry<I: TimerIndex>(entries: &[TimerEntry<I>], index: usize) -> &TimerEntry<I> {
    match entries.get(index) {
        Some(entry) => entry,
        None => out_of_range(),
    }
}

/// Entry `index` of `entries`, to change.
#[inline]
pub(super) fn entry_mut<I: TimerIndex>(
    entries: &mut [TimerEntry<I>],
    index: usize,
) -> &mut TimerEntry<I> {
    match entries.get_mut(index) {
        Some(entry) => entry,
        None => out_of_range(),
    }
}

/// Names one reservation of one entry: a key kept after its entry was
/// released (and perhaps reserved again) names nothing.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TimerKey {
    index: u32,
    generation: u32,
}

/// What [`TimerQueue::arm`] did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Armed {
    /// The timer waits for its deadline; the waker given is the one it
    /// will wake.
    Waiting,
    /// The deadline is not after the queue's time: it is due now (a fire
    /// that [`expire`](TimerQueue::expire) did not count), and the timer is
    /// reserved, not armed.
    Due,
    /// The timer had fired (counted by `expire`); it is reserved again.
    Fired,
    /// The key names no reservation.
    Stale,
}

/// Fired timers, oldest first, linked through their entries.
#[derive(Debug)]
struct FiredList<I: TimerIndex> {
    head: I,
    tail: I,
}

impl<I: TimerIndex> FiredList<I> {
    /// Appends entry `index`, which is on no list.
    fn push(&mut self, entries: &mut [TimerEntry<I>], index: usize) {
        let tail = core::mem::replace(&mut self.tail, I::of(index));
        match tail.get() {
            Some(tail) => entry_mut(entries, tail).next = I::of(index),
            None => self.head = I::of(index),
        }
        let entry = entry_mut(entries, index);
        entry.prev = tail;
        entry.next = I::NONE;
        entry.list = FIRED_LIST;
    }

    /// Takes entry `index`, which is on it, off.
    fn remove(&mut self, entries: &mut [TimerEntry<I>], index: usize) {
        let entry = entry_mut(entries, index);
        let (prev, next) = (entry.prev, entry.next);
        entry.list = NO_LIST;
        entry.prev = I::NONE;
        entry.next = I::NONE;
        match next.get() {
            Some(next) => entry_mut(entries, next).prev = prev,
            None => self.tail = prev,
        }
        match prev.get() {
            Some(prev) => entry_mut(entries, prev).next = next,
            None => self.head = next,
        }
    }
}

/// The timers of the store `S`, in the order `S` names: entries, keys,
/// wakers, and fired timers waiting to be woken.
///
/// Deadlines are in ticks of whatever clock the owner uses; the queue only
/// compares them. A deadline is never fired before [`expire`](Self::expire)
/// is given a time at or after it. Costs are the order's (see
/// [`TimerHeap`](super::TimerHeap) and [`Wheel`](super::Wheel)); taking a
/// fired waker, reserving and releasing are O(1).
#[derive(Debug)]
pub struct TimerQueue<S: TimerStore<I>, I: TimerIndex> {
    store: S,
    order: S::Order,
    /// The queue's time: every armed deadline is after it.
    elapsed: u64,
    fired: FiredList<I>,
    free: I,
    /// Entries `fresh..` of the store have never been used.
    fresh: usize,
    armed: usize,
}

impl<S: TimerStore<I>, I: TimerIndex> TimerQueue<S, I> {
    /// A queue at time 0 whose every entry in `store` is vacant.
    pub const fn new(store: S) -> Self {
        Self {
            store,
            order: S::Order::EMPTY,
            elapsed: 0,
            fired: FiredList {
                head: I::NONE,
                tail: I::NONE,
            },
            free: I::NONE,
            fresh: 0,
            armed: 0,
        }
    }

    /// The store, to read.
    #[must_use]
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The store, to change (its entries are the queue's: only what the
    /// store keeps beside them is the owner's).
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// Hands each waker kept by a vacant entry to `each` (to drop where
    /// the owner likes), leaving none kept.
    pub fn forget_kept_wakers(&mut self, mut each: impl FnMut(Waker)) {
        for entry in self.store.entries_mut() {
            if entry.state == State::Vacant
                && let Some(waker) = entry.waker.take()
            {
                each(waker);
            }
        }
    }

    /// Keeps `waker` in entry `index`, unless the entry's waker already
    /// wakes the same task; the one replaced goes to the store
    /// ([`TimerStore::replaced`]).
    #[inline(always)]
    fn set_waker(&mut self, index: usize, waker: &Waker) {
        let entry = self.entry_mut(index);
        if !entry.waker.as_ref().is_some_and(|w| w.will_wake(waker))
            && let Some(old) = entry.waker.replace(waker.clone())
        {
            self.store.replaced(old);
        }
    }

    /// The queue's time: the latest time given to [`expire`](Self::expire)
    /// (0 before the first).
    #[must_use]
    pub fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// How many timers are armed.
    #[must_use]
    pub fn armed(&self) -> usize {
        self.armed
    }

    /// How many entries are reserved, armed or fired (not vacant).
    #[must_use]
    pub fn held(&self) -> usize {
        self.store
            .entries()
            .iter()
            .filter(|entry| entry.state != State::Vacant)
            .count()
    }

    /// Takes a vacant entry for a new timer, or `None` when the store is
    /// full and cannot grow (or its order holds no more).
    pub fn reserve(&mut self) -> Option<TimerKey> {
        let index = if let Some(index) = self.free.get() {
            self.free = self.entry(index).next;
            index
        } else {
            if self.fresh >= I::LIMIT.min(<S::Order as TimerOrder<I>>::CAPACITY)
                || (self.fresh == self.store.entries().len() && !self.store.grow())
            {
                return None;
            }
            self.fresh += 1;
            self.fresh - 1
        };
        let entry = self.entry_mut(index);
        entry.state = State::Reserved;
        entry.next = I::NONE;
        Some(TimerKey {
            index: index as u32,
            generation: entry.generation,
        })
    }

    /// [`reserve`](Self::reserve) and [`arm`](Self::arm) in one step, for a
    /// timer's first poll: a fresh entry armed for `deadline` to wake
    /// `waker` ([`Armed::Waiting`]), or left reserved when the deadline is
    /// not after the queue's time ([`Armed::Due`]). `None` when the store is
    /// full and cannot grow.
    pub fn start(&mut self, deadline: u64, waker: &Waker) -> Option<(TimerKey, Armed)> {
        let key = self.reserve()?;
        if deadline <= self.elapsed {
            return Some((key, Armed::Due));
        }
        self.arm_reserved(key.index as usize, deadline, waker);
        Some((key, Armed::Waiting))
    }

    /// Arms reserved entry `index` for `deadline` (after the queue's time)
    /// to wake `waker`.
    #[inline(always)]
    fn arm_reserved(&mut self, index: usize, deadline: u64, waker: &Waker) {
        let entry = self.entry_mut(index);
        entry.deadline = deadline;
        entry.state = State::Armed;
        self.set_waker(index, waker);
        self.armed += 1;
        self.order
            .insert(self.store.entries_mut(), index, self.elapsed);
    }

    /// Arms `key`'s timer for `deadline`, to wake `waker` (a clone is kept,
    /// and replaced only when it would wake another task). Re-arming with
    /// another deadline moves it; a timer that fired is only reported.
    pub fn arm(&mut self, key: TimerKey, deadline: u64, waker: &Waker) -> Armed {
        let Some(index) = self.index_of(key) else {
            return Armed::Stale;
        };
        let entry = self.entry_mut(index);
        if entry.state == State::Armed && entry.deadline == deadline {
            self.set_waker(index, waker);
            return Armed::Waiting;
        }
        if self.settle(key) == Some(false) {
            return Armed::Fired;
        }
        if deadline <= self.elapsed {
            return Armed::Due;
        }
        self.arm_reserved(index, deadline, waker);
        Armed::Waiting
    }

    /// Takes `key`'s timer out of order and off the fired list and leaves
    /// it reserved, not armed. Returns `Some(false)` if it had fired,
    /// `Some(true)` if it had not (it was armed, or only reserved), `None`
    /// for a stale key.
    pub fn settle(&mut self, key: TimerKey) -> Option<bool> {
        let index = self.index_of(key)?;
        let state = self.entry(index).state;
        if state == State::Armed {
            self.armed -= 1;
        }
        self.unlink(index);
        self.entry_mut(index).state = State::Reserved;
        Some(state != State::Fired)
    }

    /// Whether `key`'s timer is armed.
    #[must_use]
    pub fn is_armed(&self, key: TimerKey) -> bool {
        self.index_of(key)
            .is_some_and(|index| self.entry(index).state == State::Armed)
    }

    /// Gives `key`'s entry back: an armed timer is cancelled (and `true`
    /// returned), a fired one's waker is forgotten. Returns the waker the
    /// entry held, for the caller to drop after letting go of any lock, or
    /// `None` when the store [keeps wakers](TimerStore::keeps_wakers) (the
    /// entry keeps it). A stale key changes nothing.
    pub fn release(&mut self, key: TimerKey) -> (bool, Option<Waker>) {
        let Some(index) = self.index_of(key) else {
            return (false, None);
        };
        let was_armed = self.entry(index).state == State::Armed;
        if was_armed {
            self.armed -= 1;
        }
        self.unlink(index);
        let (free, keep) = (self.free, self.store.keeps_wakers());
        let entry = self.entry_mut(index);
        entry.state = State::Vacant;
        entry.generation = entry.generation.wrapping_add(1);
        entry.next = free;
        let waker = if keep { None } else { entry.waker.take() };
        self.free = I::of(index);
        (was_armed, waker)
    }

    /// The earliest time at which [`expire`](Self::expire) has work: never
    /// after the earliest armed deadline (with a heap, that deadline; a
    /// wheel may name an earlier time at which timers move between its
    /// levels). `None` when nothing is armed.
    #[must_use]
    pub fn next_expiry(&self) -> Option<u64> {
        self.order.next_expiry(self.store.entries(), self.elapsed)
    }

    /// Moves the queue's time to `now` (never back) and fires every armed
    /// timer whose deadline is at or before it: each goes on the fired list,
    /// whose wakers [`take_fired`](Self::take_fired) hands out. Returns how
    /// many fired.
    pub fn expire(&mut self, now: u64) -> usize {
        let (fired_list, armed) = (&mut self.fired, &mut self.armed);
        let mut fired = 0;
        self.order.expire(
            self.store.entries_mut(),
            &mut self.elapsed,
            now,
            |entries, index| {
                entry_mut(entries, index).state = State::Fired;
                *armed -= 1;
                fired_list.push(entries, index);
                fired += 1;
            },
        );
        self.elapsed = self.elapsed.max(now);
        fired
    }

    /// Takes the waker of the oldest fired timer off the fired list, or
    /// `None` when none waits. The timer stays fired until its owner arms or
    /// releases it.
    pub fn take_fired(&mut self) -> Option<Waker> {
        loop {
            let index = self.fired.head.get()?;
            self.fired.remove(self.store.entries_mut(), index);
            if let Some(waker) = self.entry_mut(index).waker.take() {
                return Some(waker);
            }
        }
    }

    fn index_of(&self, key: TimerKey) -> Option<usize> {
        let index = key.index as usize;
        let entry = self.store.entries().get(index)?;
        (entry.generation == key.generation && entry.state != State::Vacant).then_some(index)
    }

    fn entry(&self, index: usize) -> &TimerEntry<I> {
        entry(self.store.entries(), index)
    }

    fn entry_mut(&mut self, index: usize) -> &mut TimerEntry<I> {
        entry_mut(self.store.entries_mut(), index)
    }

    /// Takes entry `index` off whichever list holds it, if any.
    fn unlink(&mut self, index: usize) {
        let entries = self.store.entries_mut();
        match entry(entries, index).list {
            NO_LIST => {}
            FIRED_LIST => self.fired.remove(entries, index),
            _ => self.order.remove(entries, index),
        }
    }
}

/// An index from the queue's own links was out of range: a broken
/// invariant, reported with a fixed message (so that a firmware does not
/// link `core::fmt` for it).
#[cold]
pub(super) fn out_of_range() -> ! {
    crate::fmt::fail!("dinah: timer queue index out of range")
}

#[cfg(test)]
mod tests;
