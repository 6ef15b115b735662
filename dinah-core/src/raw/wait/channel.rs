//! [`ChannelState`]: a bounded buffer, its senders' line and its receiver's
//! waker, the one logic behind the core's and `dinah-std`'s channels.
//!
//! A slot is either filled (a value in the buffer), reserved (granted to
//! the first sender in line, who fills it on its next poll) or free. Free
//! slots exist only while nobody waits: a slot freed by a receive goes to
//! the first in line at once, so a late `try_send` never jumps the line.
#![forbid(unsafe_code)]

use core::task::{Poll, Waker};

use super::error::{Refusal, TryRecvError};
use super::figures::ChannelFigures;
use super::list::{Turn, WaitKey, WaitList, WaitStore, WakeBatch};

/// Where a channel keeps its values: first in, first out, bounded.
pub trait Slots {
    /// What it holds.
    type Item;
    /// Appends `value`, or hands it back when full.
    ///
    /// # Errors
    ///
    /// The value, when no slot is left.
    fn push(&mut self, value: Self::Item) -> Result<(), Self::Item>;
    /// Takes the oldest value.
    fn pop(&mut self) -> Option<Self::Item>;
    /// Values held.
    fn len(&self) -> usize;
    /// Values it can hold.
    fn capacity(&self) -> usize;
    /// Whether it holds no value.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T, const N: usize> Slots for heapless::Deque<T, N> {
    type Item = T;
    fn push(&mut self, value: T) -> Result<(), T> {
        self.push_back(value)
    }
    fn pop(&mut self) -> Option<T> {
        self.pop_front()
    }
    fn len(&self) -> usize {
        heapless::Deque::len(self)
    }
    fn capacity(&self) -> usize {
        N
    }
}

/// A sending future's part: the value until it is sent, and its place in
/// line while it waits.
#[derive(Debug)]
pub struct SendSlot<T> {
    value: Option<T>,
    key: Option<WaitKey>,
}

impl<T> SendSlot<T> {
    /// A slot carrying `value`, not in line.
    pub const fn new(value: T) -> Self {
        Self {
            value: Some(value),
            key: None,
        }
    }

    /// Whether it waits in line.
    #[must_use]
    pub fn is_waiting(&self) -> bool {
        self.key.is_some()
    }
}

/// What one poll of a send found.
#[derive(Debug)]
pub enum SendPoll<T> {
    /// Sent; wake the receiver (if it waits).
    Sent(Option<Waker>),
    /// Waiting in line.
    Pending,
    /// Not sent, and never will be: the value comes back.
    Refused(T, Refusal),
}

/// The state of one bounded channel.
#[derive(Debug)]
pub struct ChannelState<B, S> {
    buffer: B,
    reserved: usize,
    senders: usize,
    opened: bool,
    closed: bool,
    receiver_gone: bool,
    receiver: Option<Waker>,
    line: WaitList<S>,
    high_water: usize,
    sent: u64,
    received: u64,
    refused: u64,
}

impl<B, S: WaitStore> ChannelState<B, S> {
    /// An empty channel over `buffer`, with no sender yet.
    pub const fn new(buffer: B, store: S) -> Self {
        Self {
            buffer,
            reserved: 0,
            senders: 0,
            opened: false,
            closed: false,
            receiver_gone: false,
            receiver: None,
            line: WaitList::new(store),
            high_water: 0,
            sent: 0,
            received: 0,
            refused: 0,
        }
    }

    /// Opens it once: the first sender exists. `false` if it was opened
    /// before (its receiver is taken).
    pub fn open(&mut self) -> bool {
        if self.opened {
            return false;
        }
        self.opened = true;
        self.senders = 1;
        true
    }

    /// Another sender.
    pub fn add_sender(&mut self) {
        self.senders += 1;
    }

    /// A sender went away; when it was the last, the receiver's waker is
    /// returned (it will see the end once the buffer is empty).
    pub fn drop_sender(&mut self) -> Option<Waker> {
        self.senders -= 1;
        if self.senders == 0 {
            self.receiver.take()
        } else {
            None
        }
    }

    /// Closes it: everyone in line is turned away (into `batch`; call
    /// again while it comes back full); values already sent stay to be
    /// received.
    pub fn close(&mut self, batch: &mut WakeBatch) {
        self.closed = true;
        self.line.close_into(batch);
    }

    /// The receiver went away: closes it, and a sender granted a slot
    /// gets its value back instead of filling it. Values already sent are
    /// left for the owner to take out with `pop`.
    pub fn drop_receiver(&mut self, batch: &mut WakeBatch) {
        self.receiver_gone = true;
        self.close(batch);
    }

    /// Whether it is closed.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed
    }
}

impl<B: Slots<Item = T>, S: WaitStore, T> ChannelState<B, S> {
    fn free(&self) -> usize {
        self.buffer.capacity() - self.buffer.len() - self.reserved
    }

    fn put(&mut self, value: T) -> Option<Waker> {
        if self.buffer.push(value).is_err() {
            crate::fmt::fail!("a channel slot counted free was not");
        }
        self.sent += 1;
        self.high_water = self.high_water.max(self.buffer.len());
        self.receiver.take()
    }

    /// Sends `value` now if a slot is free and nobody waits; returns the
    /// receiver's waker to wake.
    ///
    /// # Errors
    ///
    /// The value, with [`Refusal::Closed`] or [`Refusal::WouldWait`] (counted).
    pub fn try_send(&mut self, value: T) -> Result<Option<Waker>, (T, Refusal)> {
        if self.closed {
            return Err((value, Refusal::Closed));
        }
        if self.free() == 0 || self.line.waiting() > 0 {
            self.refused += 1;
            return Err((value, Refusal::WouldWait));
        }
        Ok(self.put(value))
    }

    /// One poll of a send: sends, joins the line (at the time `now` reads,
    /// read only then), or finds its slot.
    ///
    /// # Panics
    ///
    /// If `slot` was already sent or refused.
    pub fn poll_send(
        &mut self,
        slot: &mut SendSlot<T>,
        waker: &Waker,
        now: impl FnOnce() -> u64,
    ) -> SendPoll<T> {
        let Some(value) = slot.value.take() else {
            crate::fmt::fail!("a send polled after it completed");
        };
        let Some(key) = slot.key else {
            if self.closed {
                return SendPoll::Refused(value, Refusal::Closed);
            }
            if self.free() > 0 && self.line.waiting() == 0 {
                return SendPoll::Sent(self.put(value));
            }
            return match self.line.push(waker, 1, now()) {
                Some(key) => {
                    slot.key = Some(key);
                    slot.value = Some(value);
                    SendPoll::Pending
                }
                None => SendPoll::Refused(value, Refusal::LineFull),
            };
        };
        match self.line.poll(key, waker) {
            Turn::Waiting => {
                slot.value = Some(value);
                SendPoll::Pending
            }
            Turn::Granted(_) => {
                slot.key = None;
                self.reserved -= 1;
                if self.receiver_gone {
                    return SendPoll::Refused(value, Refusal::Closed);
                }
                SendPoll::Sent(self.put(value))
            }
            Turn::Closed => {
                slot.key = None;
                SendPoll::Refused(value, Refusal::Closed)
            }
        }
    }

    /// A send gives up (its future dropped): it leaves the line, and a slot
    /// it had been granted goes to the next in line (into `batch`, with the
    /// receiver's waker, which may now see the end).
    pub fn cancel_send(&mut self, slot: &mut SendSlot<T>, batch: &mut WakeBatch) {
        if let Some(key) = slot.key.take()
            && self.line.cancel(key) > 0
        {
            self.reserved -= 1;
            batch.push(self.receiver.take());
            self.grant(batch);
        }
    }

    /// Grants free slots to the first in line, into `batch`.
    fn grant(&mut self, batch: &mut WakeBatch) {
        while batch.has_room() && self.free() > 0 && self.line.waiting() > 0 {
            self.reserved += 1;
            batch.push(self.line.settle_head(true));
        }
    }

    /// One poll of a receive: the oldest value (and the waker of a sender
    /// granted the freed slot), the end (`Ready(None)`: closed or every
    /// sender gone, and nothing left or reserved), or `Pending`.
    pub fn poll_recv(&mut self, waker: &Waker) -> (Poll<Option<T>>, WakeBatch) {
        let mut batch = WakeBatch::new();
        let poll = match self.try_recv(&mut batch) {
            Ok(value) => Poll::Ready(Some(value)),
            Err(TryRecvError::Closed) => Poll::Ready(None),
            Err(TryRecvError::Empty) => {
                if !self
                    .receiver
                    .as_ref()
                    .is_some_and(|kept| kept.will_wake(waker))
                {
                    self.receiver = Some(waker.clone());
                }
                Poll::Pending
            }
        };
        (poll, batch)
    }

    /// Takes the oldest value without waiting; the sender granted the
    /// freed slot goes into `batch`.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] while a value may still come,
    /// [`TryRecvError::Closed`] at the end: closed or every sender gone,
    /// and nothing left or reserved.
    pub fn try_recv(&mut self, batch: &mut WakeBatch) -> Result<T, TryRecvError> {
        if let Some(value) = self.buffer.pop() {
            self.received += 1;
            self.grant(batch);
            return Ok(value);
        }
        if (self.closed || self.senders == 0) && self.reserved == 0 {
            Err(TryRecvError::Closed)
        } else {
            Err(TryRecvError::Empty)
        }
    }

    /// Takes a value without waiting (for draining a closed channel).
    pub fn pop(&mut self) -> Option<T> {
        let value = self.buffer.pop();
        if value.is_some() {
            self.received += 1;
        }
        value
    }

    /// What it holds and who waits, now, named `name`; the head's wait is
    /// left to the owner, who has the clock (see
    /// [`oldest_since`](Self::oldest_since)).
    #[must_use]
    pub fn figures(&self, name: Option<&'static str>) -> ChannelFigures {
        ChannelFigures {
            name,
            len: self.buffer.len(),
            capacity: self.buffer.capacity(),
            high_water: self.high_water,
            waiting: self.line.waiting(),
            peak_waiting: self.line.peak(),
            longest_wait_micros: None,
            sent: self.sent,
            received: self.received,
            refused: self.refused,
            closed: self.closed,
        }
    }

    /// When the sender waiting longest joined the line.
    #[must_use]
    pub fn oldest_since(&self) -> Option<u64> {
        self.line.oldest_since()
    }
}
