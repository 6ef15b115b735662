//! [`Ring`]: the last values sent, each received by every receiver, the
//! one logic behind the core's `PubSub` and `dinah-std`'s `broadcast`.
#![forbid(unsafe_code)]

use core::task::{Poll, Waker};

use super::crowd::Crowd;
use super::list::{WaitKey, WaitStore, WakeBatch};
use super::waiting::Settle;

/// Where a [`Ring`] keeps its values: a fixed array, or a slice allocated
/// once.
pub trait RingSlots {
    /// What it holds.
    type Item;
    /// Every slot.
    fn slots(&self) -> &[Option<Self::Item>];
    /// Every slot, to change.
    fn slots_mut(&mut self) -> &mut [Option<Self::Item>];
}

impl<T, const N: usize> RingSlots for [Option<T>; N] {
    type Item = T;
    fn slots(&self) -> &[Option<T>] {
        self
    }
    fn slots_mut(&mut self) -> &mut [Option<T>] {
        self
    }
}

/// Why a receive gave no value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Missed {
    /// The receiver fell behind: this many values were overwritten before
    /// it read them. It goes on from the oldest value kept.
    Lagged(u64),
    /// Every sender is gone and the receiver has read every value.
    Closed,
    /// A fixed line was full.
    LineFull,
}

/// The last `capacity` values sent (`capacity` being the number of slots),
/// numbered from 0, and the receivers waiting for the next.
///
/// A receiver remembers the number of the next value it reads. A send never
/// waits: it overwrites the oldest value, and a receiver that had not read
/// it is told how many it missed. It does not lock or wake; its owner does.
#[derive(Debug)]
pub struct Ring<B, S> {
    slots: B,
    /// The number the next value sent gets.
    tail: u64,
    closed: bool,
    crowd: Crowd<S>,
}

impl<B: RingSlots, S: WaitStore> Ring<B, S> {
    /// No value yet, nobody waiting, over `slots` (all empty) and `store`.
    pub const fn new(slots: B, store: S) -> Self {
        Self {
            slots,
            tail: 0,
            closed: false,
            crowd: Crowd::new(store),
        }
    }

    fn capacity(&self) -> u64 {
        self.slots.slots().len() as u64
    }

    fn index(&self, number: u64) -> usize {
        // The remainder is below the slot count, a `usize`; a ring with no
        // slot stores nothing (its owners refuse to make one).
        number
            .checked_rem(self.capacity())
            .and_then(|index| usize::try_from(index).ok())
            .unwrap_or(0)
    }

    /// The number the next value sent gets (where a new receiver starts).
    #[must_use]
    pub fn tail(&self) -> u64 {
        self.tail
    }

    /// Values a receiver that reads number `next` next has yet to read
    /// (those overwritten included).
    #[must_use]
    pub fn unread(&self, next: u64) -> u64 {
        self.tail.saturating_sub(next)
    }

    /// Whether every sender is gone.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Receivers waiting now.
    #[must_use]
    pub fn waiting(&self) -> u32 {
        self.crowd.waiting()
    }

    /// Keeps `value` as the newest, and wakes every receiver waiting. The
    /// value it overwrote, if any, is returned: drop it after the lock.
    pub fn send(&mut self, value: B::Item, batch: &mut WakeBatch) -> Option<B::Item> {
        let index = self.index(self.tail);
        let old = self.slots.slots_mut().get_mut(index)?.replace(value);
        self.tail += 1;
        self.crowd.wake_all(batch);
        old
    }

    /// Every sender is gone: receivers waiting are woken, and a receiver
    /// that has read everything is told so.
    pub fn close(&mut self, batch: &mut WakeBatch) {
        self.closed = true;
        self.crowd.close(batch);
    }

    /// A receiver that reads number `next` next, waiting at `waiting`,
    /// looks for a value: a copy of it (and `next` moves on), or what it
    /// missed; otherwise it waits in line, stamped `now`.
    pub fn poll_recv(
        &mut self,
        next: &mut u64,
        waiting: &mut Option<WaitKey>,
        waker: &Waker,
        now: impl FnOnce() -> u64,
    ) -> Poll<Result<B::Item, Missed>>
    where
        B::Item: Clone,
    {
        if self.crowd.still_waiting(waiting, waker, *next < self.tail) {
            return Poll::Pending;
        }
        let oldest = self.tail.saturating_sub(self.capacity());
        if *next < oldest {
            let missed = oldest - *next;
            *next = oldest;
            return Poll::Ready(Err(Missed::Lagged(missed)));
        }
        if *next < self.tail {
            let value = self.slots.slots().get(self.index(*next)).cloned().flatten();
            *next += 1;
            // Every number from `oldest` to the tail has its value.
            return Poll::Ready(value.ok_or(Missed::Closed));
        }
        if self.closed {
            return Poll::Ready(Err(Missed::Closed));
        }
        match self.crowd.join(waiting, waker, now) {
            Ok(()) => Poll::Pending,
            Err(_) => Poll::Ready(Err(Missed::LineFull)),
        }
    }

    /// A receiver waiting at `key` gives up its place.
    pub fn cancel(&mut self, key: WaitKey) {
        // Nothing to pass on: a send wakes every receiver.
        self.crowd.cancel(key);
    }
}

impl<B: RingSlots, S: WaitStore> Settle for Ring<B, S> {
    fn settle(&mut self, batch: &mut WakeBatch) {
        self.crowd.settle(self.closed, batch);
    }
}
