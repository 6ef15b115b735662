//! [`Wheel`]: the hierarchical timer wheel every dinah timer store is built
//! on, over storage its owner chooses (a fixed array on firmware, a growing
//! `Vec` on a host).
//!
//! Six levels of 64 slots. A timer whose deadline first differs from the
//! wheel's current time in bits `6k..6k+6` sits in level `k`, in the slot
//! given by those bits; a level keeps a 64-bit map of its occupied slots, so
//! the next slot to expire is found with a few `trailing_zeros`, whatever
//! the number of timers. When the wheel reaches a slot of level `k > 0`, its
//! timers move to lower levels (at most six moves in a timer's life); a
//! slot of level 0 holds timers of one deadline, which fire. Timers further
//! than `2^36` ticks away wait on an overflow list that is sorted again
//! once per `2^36` ticks.
//!
//! Costs: arming, re-arming and cancelling are O(1) (a doubly linked list
//! per slot, threaded through the entries by index). Expiring is O(timers
//! that fire, plus their moves between levels, plus six per slot reached).
//! Fired timers wait on a list of their own until their wakers are taken
//! ([`Wheel::take_fired`]), so an owner that holds a lock can wake them
//! after letting go of it.
//!
//! The wheel is a value: it does not lock and does not read a clock. Its
//! owner passes the time in.
#![forbid(unsafe_code)]

use core::task::Waker;

/// Levels of the wheel.
const LEVELS: usize = 6;
/// Slots per level.
const SLOTS: usize = 64;
/// Bits of a deadline each level resolves.
const SLOT_BITS: usize = 6;
/// The list an entry is on, in its `list` field: 0 for none, `1 + level`
/// for a level's slot, then the overflow and fired lists. (Zero for none,
/// so that a vacant store is all zero bytes: a `static` store then takes
/// no flash for its initial value.)
const NO_LIST: u8 = 0;
/// The overflow list (also the `level` [`Wheel::next_slot`] names it by).
const OVERFLOW: u8 = LEVELS as u8 + 1;
/// The fired list.
const FIRED_LIST: u8 = LEVELS as u8 + 2;
/// Ticks one full turn of the top level spans.
const SPAN: u64 = 1 << (LEVELS * SLOT_BITS);

/// The index type that links a wheel's entries: `u16` for small fixed
/// stores (the wheel's 384 list heads then take 768 bytes), `u32` for
/// large ones. An index is stored plus one, so that zero means none and a
/// vacant wheel is all zero bytes. Sealed.
pub trait WheelIndex: Copy + Eq + sealed::Sealed + core::fmt::Debug {
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

mod sealed {
    pub trait Sealed {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
}

macro_rules! wheel_index {
    ($t:ty) => {
        impl WheelIndex for $t {
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
wheel_index!(u16);
wheel_index!(u32);

/// Where a wheel keeps its entries: a fixed array, or storage that can
/// grow.
pub trait TimerStore<I: WheelIndex> {
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
    /// are forgotten ([`Wheel::forget_kept_wakers`]), or the wheel is
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

impl<I: WheelIndex, const T: usize> TimerStore<I> for [TimerEntry<I>; T] {
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

/// What an entry is doing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// On the free list (or never used).
    Vacant,
    /// Held by a timer future, not armed.
    Reserved,
    /// Armed: on a slot's list, or on the overflow list.
    Armed,
    /// Its deadline was reached; its waker may still wait on the fired list.
    Fired,
}

/// One timer's place in a store.
#[derive(Debug)]
pub struct TimerEntry<I: WheelIndex> {
    deadline: u64,
    waker: Option<Waker>,
    prev: I,
    next: I,
    generation: u32,
    state: State,
    /// The list it is on (see `NO_LIST`).
    list: u8,
    slot: u8,
}

impl<I: WheelIndex> TimerEntry<I> {
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

/// Names one reservation of one entry: a key kept after its entry was
/// released (and perhaps reserved again) names nothing.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TimerKey {
    index: u32,
    generation: u32,
}

/// What [`Wheel::arm`] did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Armed {
    /// The timer waits for its deadline; the waker given is the one it
    /// will wake.
    Waiting,
    /// The deadline is not after the wheel's time: it is due now (a fire
    /// that [`expire`](Wheel::expire) did not count), and the timer is
    /// reserved, not armed.
    Due,
    /// The timer had fired (counted by `expire`); it is reserved again.
    Fired,
    /// The key names no reservation.
    Stale,
}

/// A hierarchical timer wheel over the store `S`: O(1) arm and cancel,
/// expiry work in proportion to the timers that fire.
///
/// Six levels of 64 slots. A timer whose deadline first differs from the
/// wheel's time in bits `6k..6k+6` sits in level `k`, in the slot those
/// bits name; each level keeps a 64-bit map of its occupied slots, so the
/// next slot with work is found with a few `trailing_zeros`. Reaching a slot
/// of level `k > 0` moves its timers to lower levels (at most six moves in a
/// timer's life); a slot of level 0 holds one deadline, whose timers fire.
/// Timers more than `2^36` ticks away wait on an overflow list, sorted again
/// once per `2^36` ticks. Fired timers wait on a list of their own until
/// their wakers are taken ([`take_fired`](Self::take_fired)), so an owner
/// that holds a lock can wake them after letting go of it.
///
/// Deadlines are in ticks of whatever clock the owner uses; the wheel only
/// compares them. A deadline is never fired before [`expire`](Self::expire)
/// is given a time at or after it.
#[derive(Debug)]
pub struct Wheel<S, I: WheelIndex> {
    store: S,
    /// The wheel's time: every armed deadline is after it.
    elapsed: u64,
    occupied: [u64; LEVELS],
    heads: [[I; SLOTS]; LEVELS],
    overflow: I,
    fired_head: I,
    fired_tail: I,
    free: I,
    /// Entries `fresh..` of the store have never been used.
    fresh: usize,
    armed: usize,
}

impl<S: TimerStore<I>, I: WheelIndex> Wheel<S, I> {
    /// A wheel at time 0 whose every entry in `store` is vacant.
    pub const fn new(store: S) -> Self {
        Self {
            store,
            elapsed: 0,
            occupied: [0; LEVELS],
            heads: [[I::NONE; SLOTS]; LEVELS],
            overflow: I::NONE,
            fired_head: I::NONE,
            fired_tail: I::NONE,
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

    /// The store, to change (its entries are the wheel's: only what the
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

    /// The wheel's time: the latest time given to [`expire`](Self::expire)
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
    /// full and cannot grow.
    pub fn reserve(&mut self) -> Option<TimerKey> {
        let index = if let Some(index) = self.free.get() {
            self.free = self.entry(index).next;
            index
        } else {
            if self.fresh >= I::LIMIT
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
    /// not after the wheel's time ([`Armed::Due`]). `None` when the store is
    /// full and cannot grow.
    pub fn start(&mut self, deadline: u64, waker: &Waker) -> Option<(TimerKey, Armed)> {
        let key = self.reserve()?;
        if deadline <= self.elapsed {
            return Some((key, Armed::Due));
        }
        self.arm_reserved(key.index as usize, deadline, waker);
        Some((key, Armed::Waiting))
    }

    /// Arms reserved entry `index` for `deadline` (after the wheel's time)
    /// to wake `waker`.
    #[inline(always)]
    fn arm_reserved(&mut self, index: usize, deadline: u64, waker: &Waker) {
        let entry = self.entry_mut(index);
        entry.deadline = deadline;
        entry.state = State::Armed;
        self.set_waker(index, waker);
        self.armed += 1;
        self.link(index);
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

    /// Takes `key`'s timer off every list and leaves it reserved, not
    /// armed. Returns `Some(false)` if it had fired, `Some(true)` if it had
    /// not (it was armed, or only reserved), `None` for a stale key.
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

    /// The earliest time at which [`expire`](Self::expire) has work: a
    /// deadline, or a time at which timers move between levels (never after
    /// the earliest armed deadline). `None` when nothing is armed.
    #[must_use]
    pub fn next_expiry(&self) -> Option<u64> {
        self.next_slot().map(|(when, _, _)| when)
    }

    /// Moves the wheel's time to `now` (never back) and fires every armed
    /// timer whose deadline is at or before it: each goes on the fired list,
    /// whose wakers [`take_fired`](Self::take_fired) hands out. Returns how
    /// many fired.
    pub fn expire(&mut self, now: u64) -> usize {
        let mut fired = 0;
        while let Some((when, level, slot)) = self.next_slot() {
            if when > now {
                break;
            }
            self.elapsed = self.elapsed.max(when);
            // Detach the whole list first: a timer moved on from it may
            // land on the same list (the overflow list).
            let mut cursor = if level == usize::from(OVERFLOW) {
                core::mem::replace(&mut self.overflow, I::NONE)
            } else {
                *self.occupied_mut(level) &= !(1 << slot);
                core::mem::replace(self.head_mut(level, slot), I::NONE)
            };
            while let Some(index) = cursor.get() {
                let entry = self.entry_mut(index);
                cursor = entry.next;
                entry.list = NO_LIST;
                if entry.deadline <= now {
                    entry.state = State::Fired;
                    self.armed -= 1;
                    self.push_fired(index);
                    fired += 1;
                } else {
                    self.link(index);
                }
            }
        }
        self.elapsed = self.elapsed.max(now);
        fired
    }

    /// Takes the waker of the oldest fired timer off the fired list, or
    /// `None` when none waits. The timer stays fired until its owner arms or
    /// releases it.
    pub fn take_fired(&mut self) -> Option<Waker> {
        loop {
            let index = self.fired_head.get()?;
            self.unlink(index);
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
        match self.store.entries().get(index) {
            Some(entry) => entry,
            None => out_of_range(),
        }
    }

    fn entry_mut(&mut self, index: usize) -> &mut TimerEntry<I> {
        match self.store.entries_mut().get_mut(index) {
            Some(entry) => entry,
            None => out_of_range(),
        }
    }

    fn occupied_mut(&mut self, level: usize) -> &mut u64 {
        match self.occupied.get_mut(level) {
            Some(occupied) => occupied,
            None => out_of_range(),
        }
    }

    fn head_mut(&mut self, level: usize, slot: usize) -> &mut I {
        match self
            .heads
            .get_mut(level)
            .and_then(|heads| heads.get_mut(slot))
        {
            Some(head) => head,
            None => out_of_range(),
        }
    }

    /// The next slot with work: `(when, level, slot)`, level `OVERFLOW` for
    /// the overflow list. The minimum over the levels: a slot of a higher
    /// level that is being worked through starts at or before the time.
    fn next_slot(&self) -> Option<(u64, usize, usize)> {
        let mut best: Option<(u64, usize, usize)> = None;
        for (level, &occupied) in self.occupied.iter().enumerate() {
            if occupied == 0 {
                continue;
            }
            let shift = level * SLOT_BITS;
            let position = ((self.elapsed >> shift) & (SLOTS as u64 - 1)) as u32;
            let slot =
                (occupied.rotate_right(position).trailing_zeros() + position) as usize % SLOTS;
            let span = 1u64 << (shift + SLOT_BITS);
            let base = self.elapsed & !(span - 1);
            let mut when = base + ((slot as u64) << shift);
            if when + (1 << shift) <= self.elapsed {
                // Behind the time: only after a turn of this level (not
                // reached while the wheel's invariants hold).
                when = when.saturating_add(span);
            }
            if best.is_none_or(|(earliest, _, _)| when < earliest) {
                best = Some((when, level, slot));
            }
        }
        if self.overflow.get().is_some() {
            let when = (self.elapsed | (SPAN - 1)).saturating_add(1);
            if best.is_none_or(|(earliest, _, _)| when < earliest) {
                best = Some((when, usize::from(OVERFLOW), 0));
            }
        }
        best
    }

    /// Puts armed entry `index` on the list its deadline belongs to.
    fn link(&mut self, index: usize) {
        let deadline = self.entry(index).deadline;
        let masked = (self.elapsed ^ deadline) | (SLOTS as u64 - 1);
        let level = (63 - masked.leading_zeros() as usize) / SLOT_BITS;
        let (list, slot) = if level < LEVELS {
            let slot = ((deadline >> (level * SLOT_BITS)) as usize) % SLOTS;
            (level as u8 + 1, slot)
        } else {
            (OVERFLOW, 0)
        };
        let head = if list == OVERFLOW {
            &mut self.overflow
        } else {
            *self.occupied_mut(level) |= 1 << slot;
            self.head_mut(level, slot)
        };
        let next = core::mem::replace(head, I::of(index));
        if let Some(next) = next.get() {
            self.entry_mut(next).prev = I::of(index);
        }
        let entry = self.entry_mut(index);
        entry.prev = I::NONE;
        entry.next = next;
        entry.list = list;
        entry.slot = slot as u8;
    }

    /// Appends fired entry `index` to the fired list.
    fn push_fired(&mut self, index: usize) {
        let tail = core::mem::replace(&mut self.fired_tail, I::of(index));
        match tail.get() {
            Some(tail) => self.entry_mut(tail).next = I::of(index),
            None => self.fired_head = I::of(index),
        }
        let entry = self.entry_mut(index);
        entry.prev = tail;
        entry.next = I::NONE;
        entry.list = FIRED_LIST;
    }

    /// Takes entry `index` off whichever list holds it, if any.
    fn unlink(&mut self, index: usize) {
        let entry = self.entry_mut(index);
        let (prev, next, list, slot) = (entry.prev, entry.next, entry.list, entry.slot);
        if list == NO_LIST {
            return;
        }
        entry.list = NO_LIST;
        entry.prev = I::NONE;
        entry.next = I::NONE;
        match next.get() {
            Some(next) => self.entry_mut(next).prev = prev,
            None if list == FIRED_LIST => self.fired_tail = prev,
            None => {}
        }
        if let Some(prev) = prev.get() {
            self.entry_mut(prev).next = next;
            return;
        }
        match list {
            FIRED_LIST => self.fired_head = next,
            OVERFLOW => self.overflow = next,
            list => {
                let (level, slot) = (usize::from(list - 1), usize::from(slot));
                *self.head_mut(level, slot) = next;
                if next.get().is_none() {
                    *self.occupied_mut(level) &= !(1 << slot);
                }
            }
        }
    }
}

/// An index from the wheel's own links was out of range: a broken
/// invariant, reported with a fixed message (so that a firmware does not
/// link `core::fmt` for it).
#[cold]
fn out_of_range() -> ! {
    crate::fmt::fail!("dinah: timer wheel index out of range")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;
    use std::vec::Vec;

    use proptest::prelude::*;

    use super::*;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn waker() -> (Waker, Arc<Count>) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (Waker::from(Arc::clone(&count)), count)
    }

    type Small = Wheel<[TimerEntry<u16>; 16], u16>;

    fn small() -> Small {
        Wheel::new([const { TimerEntry::VACANT }; 16])
    }

    #[derive(Clone, Debug)]
    enum Op {
        Arm(u64),
        Release(usize),
        Advance(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            // Deadlines from the next tick to beyond the wheel's span.
            4 => prop_oneof![1u64..70, 1u64..5_000, 1u64..300_000, 1u64..(SPAN * 3)].prop_map(Op::Arm),
            1 => (0usize..16).prop_map(Op::Release),
            3 => prop_oneof![0u64..70, 0u64..5_000, 0u64..400_000, 0u64..(SPAN * 2)].prop_map(Op::Advance),
        ]
    }

    proptest! {
        // Interpreted by Miri, a few cases cover every path.
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 1 } else { 256 }))]

        /// Against a model that keeps deadlines in a sorted map: after every
        /// advance, exactly the timers due by then have fired, none early,
        /// and the next expiry is never after the earliest armed deadline.
        #[test]
        fn the_wheel_fires_exactly_what_is_due(
            ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 40 } else { 120 })
        ) {
            let mut wheel = small();
            let (waker, _) = waker();
            let mut armed: BTreeMap<usize, (TimerKey, u64)> = BTreeMap::new();
            let mut held: Vec<TimerKey> = Vec::new();
            let mut now = 0u64;
            for op in ops {
                match op {
                    Op::Arm(after) => {
                        if let Some(key) = wheel.reserve() {
                            let deadline = now + after;
                            prop_assert_eq!(wheel.arm(key, deadline, &waker), Armed::Waiting);
                            armed.insert(key.index as usize, (key, deadline));
                            held.push(key);
                        } else {
                            prop_assert_eq!(held.len(), 16, "only a full store refuses");
                        }
                    }
                    Op::Release(i) => {
                        if !held.is_empty() {
                            let key = held.swap_remove(i % held.len());
                            let was_armed = armed.remove(&(key.index as usize)).is_some();
                            prop_assert_eq!(wheel.release(key).0, was_armed);
                            prop_assert!(matches!(wheel.release(key), (false, None)), "stale");
                        }
                    }
                    Op::Advance(by) => {
                        now += by;
                        let due: Vec<usize> = armed.iter().filter(|(_, (_, d))| *d <= now).map(|(i, _)| *i).collect();
                        prop_assert_eq!(wheel.expire(now), due.len());
                        let mut woken = 0;
                        while wheel.take_fired().is_some() {
                            woken += 1;
                        }
                        prop_assert_eq!(woken, due.len());
                        for index in due {
                            let (key, _) = armed.remove(&index).unwrap();
                            prop_assert!(!wheel.is_armed(key));
                            prop_assert_eq!(wheel.arm(key, 0, &waker), Armed::Fired);
                        }
                    }
                }
                prop_assert_eq!(wheel.armed(), armed.len());
                prop_assert_eq!(wheel.held(), held.len());
                let earliest = armed.values().map(|(_, d)| *d).min();
                match (wheel.next_expiry(), earliest) {
                    (None, None) => {}
                    (Some(next), Some(earliest)) => prop_assert!(next <= earliest && next > now),
                    (next, earliest) => prop_assert!(false, "next {:?}, earliest {:?}", next, earliest),
                }
            }
        }
    }

    #[test]
    fn fired_wakers_come_in_deadline_order_and_rearming_moves_a_timer() {
        let mut wheel = small();
        let wakers: Vec<_> = (0..3).map(|_| waker()).collect();
        let keys: Vec<_> = (0..3).map(|_| wheel.reserve().unwrap()).collect();
        for (i, deadline) in [300u64, 100, 200].into_iter().enumerate() {
            assert_eq!(wheel.arm(keys[i], deadline, &wakers[i].0), Armed::Waiting);
        }
        // Moved from 300 to 50: fires first.
        assert_eq!(wheel.arm(keys[0], 50, &wakers[0].0), Armed::Waiting);
        assert_eq!(wheel.next_expiry(), Some(50));
        assert_eq!(wheel.expire(150), 2);
        assert_eq!(wheel.armed(), 1);
        while let Some(w) = wheel.take_fired() {
            w.wake();
        }
        let woken: Vec<_> = wakers
            .iter()
            .map(|(_, c)| c.0.load(Ordering::Relaxed))
            .collect();
        assert_eq!(woken, [1, 1, 0]);
        assert_eq!(wheel.arm(keys[0], 400, &wakers[0].0), Armed::Fired);
        assert_eq!(
            wheel.arm(keys[0], 100, &wakers[0].0),
            Armed::Due,
            "behind the wheel's time"
        );
        assert!(wheel.release(keys[2]).0, "cancelled while armed");
        assert_eq!(wheel.next_expiry(), None);
    }

    /// A store of 4 entries that keeps wakers while `keep` says so, and
    /// keeps the replaced one for the test.
    struct Keeping {
        entries: [TimerEntry<u16>; 4],
        keep: bool,
        replaced: Option<Waker>,
    }

    impl TimerStore<u16> for Keeping {
        fn entries(&self) -> &[TimerEntry<u16>] {
            &self.entries
        }
        fn entries_mut(&mut self) -> &mut [TimerEntry<u16>] {
            &mut self.entries
        }
        fn grow(&mut self) -> bool {
            false
        }
        fn keeps_wakers(&self) -> bool {
            self.keep
        }
        fn replaced(&mut self, waker: Waker) {
            assert!(self.replaced.replace(waker).is_none(), "taken each time");
        }
    }

    #[test]
    fn a_store_that_keeps_wakers_gets_them_reused_and_replaced_ones_handed_over() {
        let mut wheel = Wheel::new(Keeping {
            entries: [const { TimerEntry::VACANT }; 4],
            keep: true,
            replaced: None,
        });
        let ((mine, my_count), (other, _)) = (waker(), waker());
        // One strong count for `my_count`, one for `mine`, one per clone.
        let clones = || Arc::strong_count(&my_count) - 2;
        let (key, armed) = wheel.start(100, &mine).unwrap();
        assert_eq!(armed, Armed::Waiting);
        assert_eq!(clones(), 1);
        assert!(
            matches!(wheel.release(key), (true, None)),
            "the entry keeps it"
        );
        assert_eq!(clones(), 1);
        // The same task again: the entry it reuses still holds its waker,
        // so nothing was cloned or replaced, as far as `will_wake` can tell
        // (it compares vtable addresses, which need not be unique: under
        // Miri two clones of one waker may differ, and then the kept one is
        // replaced by a new clone, and handed to the store).
        let (key, _) = wheel.start(200, &mine).unwrap();
        if let Some(replaced) = wheel.store_mut().replaced.take() {
            assert_eq!(replaced.data(), mine.data(), "the same task's");
            #[cfg(not(miri))]
            panic!("a native `will_wake` knows a clone of the same waker");
        }
        assert_eq!(clones(), 1, "one clone in the entry, not two");
        assert!(matches!(wheel.release(key), (true, None)));
        // Another task: the kept waker goes to the store, not dropped.
        let (key, _) = wheel.start(300, &other).unwrap();
        let replaced = wheel.store_mut().replaced.take().expect("handed over");
        assert_eq!(replaced.data(), mine.data(), "the kept one");
        drop(replaced);
        assert_eq!(clones(), 0);
        let _ = wheel.release(key);
        let mut forgotten = Vec::new();
        wheel.forget_kept_wakers(|w| forgotten.push(w));
        assert_eq!(forgotten.len(), 1);
        assert_eq!(forgotten[0].data(), other.data());
        // Not keeping: a release hands the waker back at once.
        wheel.store_mut().keep = false;
        let (key, _) = wheel.start(400, &mine).unwrap();
        assert!(
            wheel
                .release(key)
                .1
                .is_some_and(|w| w.data() == mine.data())
        );
        let mut none = 0;
        wheel.forget_kept_wakers(|_| none += 1);
        assert_eq!(none, 0);
    }

    #[test]
    fn a_growing_store_grows_until_its_index_type_is_full() {
        struct Growing(Vec<TimerEntry<u16>>);
        impl TimerStore<u16> for Growing {
            fn entries(&self) -> &[TimerEntry<u16>] {
                &self.0
            }
            fn entries_mut(&mut self) -> &mut [TimerEntry<u16>] {
                &mut self.0
            }
            fn grow(&mut self) -> bool {
                self.0.push(TimerEntry::VACANT);
                true
            }
        }
        let mut wheel = Wheel::new(Growing(Vec::new()));
        for _ in 0..3 {
            assert!(wheel.reserve().is_some(), "it grows");
        }
        assert_eq!(wheel.store.0.len(), 3);
        // The last index a u16 names is 65,534 (stored as 65,535; 0 is
        // none): past it, the store refuses rather than wrap.
        assert_eq!(<u16 as WheelIndex>::of(65_534).get(), Some(65_534));
        assert_eq!(<u16 as WheelIndex>::NONE.get(), None);
        wheel.fresh = <u16 as WheelIndex>::LIMIT;
        assert_eq!(wheel.reserve(), None, "no index left");
        assert_eq!(wheel.store.0.len(), 3, "and it did not grow");
    }
}
