//! [`Wheel`]: a hierarchical timer wheel, the order of growing timer stores
//! (a host's).
//!
//! Six levels of 64 slots. A timer whose deadline first differs from the
//! queue's current time in bits `6k..6k+6` sits in level `k`, in the slot
//! given by those bits; a level keeps a 64-bit map of its occupied slots, so
//! the next slot to expire is found with a few `trailing_zeros`, whatever
//! the number of timers. When the queue's time reaches a slot of level
//! `k > 0`, its timers move to lower levels (at most six moves in a timer's
//! life); a slot of level 0 holds timers of one deadline, which fire. Timers
//! further than `2^36` ticks away wait on an overflow list that is sorted
//! again once per `2^36` ticks.
//!
//! Costs: arming, re-arming and cancelling are O(1) (a doubly linked list
//! per slot, threaded through the entries by index). Expiring is O(timers
//! that fire, plus their moves between levels, plus six per slot reached).
#![forbid(unsafe_code)]

use super::queue::{
    NO_LIST, TimerEntry, TimerIndex, TimerOrder, entry, entry_mut, out_of_range, sealed,
};

/// Levels of the wheel.
const LEVELS: usize = 6;
/// Slots per level.
const SLOTS: usize = 64;
/// Bits of a deadline each level resolves.
const SLOT_BITS: usize = 6;
/// The overflow list, in an entry's `list` (a level's slot is `1 + level`).
const OVERFLOW: u8 = LEVELS as u8 + 1;
/// Ticks one full turn of the top level spans.
const SPAN: u64 = 1 << (LEVELS * SLOT_BITS);

/// A hierarchical timer wheel: the [`TimerOrder`] of growing stores. O(1)
/// arm and cancel, expiry work in proportion to the timers that fire.
///
/// Six levels of 64 slots. A timer whose deadline first differs from the
/// queue's time in bits `6k..6k+6` sits in level `k`, in the slot those
/// bits name; each level keeps a 64-bit map of its occupied slots, so the
/// next slot with work is found with a few `trailing_zeros`. Reaching a slot
/// of level `k > 0` moves its timers to lower levels (at most six moves in a
/// timer's life); a slot of level 0 holds one deadline, whose timers fire.
/// Timers more than `2^36` ticks away wait on an overflow list, sorted again
/// once per `2^36` ticks.
///
/// What it does not do: name the earliest deadline. Its next expiry may be
/// a time at which timers only move between levels, so an owner that sleeps
/// until it wakes, finds nothing due and sleeps again. Its 384 list heads
/// take 768 bytes with `u16` indices, 1,536 with `u32`.
#[derive(Debug)]
pub struct Wheel<I: TimerIndex> {
    occupied: [u64; LEVELS],
    heads: [[I; SLOTS]; LEVELS],
    overflow: I,
}

impl<I: TimerIndex> sealed::Order for Wheel<I> {}

impl<I: TimerIndex> TimerOrder<I> for Wheel<I> {
    const EMPTY: Self = Self {
        occupied: [0; LEVELS],
        heads: [[I::NONE; SLOTS]; LEVELS],
        overflow: I::NONE,
    };
    const CAPACITY: usize = usize::MAX;

    /// Puts armed entry `index` on the list its deadline belongs to.
    fn insert(&mut self, entries: &mut [TimerEntry<I>], index: usize, elapsed: u64) {
        let deadline = entry(entries, index).deadline;
        let masked = (elapsed ^ deadline) | (SLOTS as u64 - 1);
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
            entry_mut(entries, next).prev = I::of(index);
        }
        let entry = entry_mut(entries, index);
        entry.prev = I::NONE;
        entry.next = next;
        entry.list = list;
        entry.slot = slot as u8;
    }

    /// Takes entry `index` off its slot's list or the overflow list.
    fn remove(&mut self, entries: &mut [TimerEntry<I>], index: usize) {
        let entry = entry_mut(entries, index);
        let (prev, next, list, slot) = (entry.prev, entry.next, entry.list, entry.slot);
        entry.list = NO_LIST;
        entry.prev = I::NONE;
        entry.next = I::NONE;
        if let Some(next) = next.get() {
            entry_mut(entries, next).prev = prev;
        }
        if let Some(prev) = prev.get() {
            entry_mut(entries, prev).next = next;
            return;
        }
        if list == OVERFLOW {
            self.overflow = next;
        } else {
            let (level, slot) = (usize::from(list - 1), usize::from(slot));
            *self.head_mut(level, slot) = next;
            if next.get().is_none() {
                *self.occupied_mut(level) &= !(1 << slot);
            }
        }
    }

    fn next_expiry(&self, _: &[TimerEntry<I>], elapsed: u64) -> Option<u64> {
        self.next_slot(elapsed).map(|(when, _, _)| when)
    }

    fn expire(
        &mut self,
        entries: &mut [TimerEntry<I>],
        elapsed: &mut u64,
        now: u64,
        mut due: impl FnMut(&mut [TimerEntry<I>], usize),
    ) {
        while let Some((when, level, slot)) = self.next_slot(*elapsed) {
            if when > now {
                break;
            }
            *elapsed = (*elapsed).max(when);
            // Detach the whole list first: a timer moved on from it may
            // land on the same list (the overflow list).
            let mut cursor = if level == usize::from(OVERFLOW) {
                core::mem::replace(&mut self.overflow, I::NONE)
            } else {
                *self.occupied_mut(level) &= !(1 << slot);
                core::mem::replace(self.head_mut(level, slot), I::NONE)
            };
            while let Some(index) = cursor.get() {
                let entry = entry_mut(entries, index);
                cursor = entry.next;
                entry.list = NO_LIST;
                if entry.deadline <= now {
                    due(entries, index);
                } else {
                    self.insert(entries, index, *elapsed);
                }
            }
        }
    }
}

impl<I: TimerIndex> Wheel<I> {
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

    /// The next slot with work at time `elapsed`: `(when, level, slot)`,
    /// level `OVERFLOW` for the overflow list. The minimum over the levels:
    /// a slot of a higher level that is being worked through starts at or
    /// before the time.
    fn next_slot(&self, elapsed: u64) -> Option<(u64, usize, usize)> {
        let mut best: Option<(u64, usize, usize)> = None;
        for (level, &occupied) in self.occupied.iter().enumerate() {
            if occupied == 0 {
                continue;
            }
            let shift = level * SLOT_BITS;
            let position = ((elapsed >> shift) & (SLOTS as u64 - 1)) as u32;
            let slot =
                (occupied.rotate_right(position).trailing_zeros() + position) as usize % SLOTS;
            let span = 1u64 << (shift + SLOT_BITS);
            let base = elapsed & !(span - 1);
            let mut when = base + ((slot as u64) << shift);
            if when + (1 << shift) <= elapsed {
                // Behind the time: only after a turn of this level (not
                // reached while the wheel's invariants hold).
                when = when.saturating_add(span);
            }
            if best.is_none_or(|(earliest, _, _)| when < earliest) {
                best = Some((when, level, slot));
            }
        }
        if self.overflow.get().is_some() {
            let when = (elapsed | (SPAN - 1)).saturating_add(1);
            if best.is_none_or(|(earliest, _, _)| when < earliest) {
                best = Some((when, usize::from(OVERFLOW), 0));
            }
        }
        best
    }
}
