//! [`Mailbox`]: one value waiting for one receiver, the one logic behind
//! the core's `Signal` and `dinah-std`'s `oneshot` channel.
#![forbid(unsafe_code)]

use core::task::{Poll, Waker};

/// At most one value, the waker of the one task waiting for it, and
/// whether either side has gone.
///
/// It does not lock or wake; its owner does: every method that frees a
/// waker or a value returns it, to be woken or dropped after the lock is
/// released.
#[derive(Debug)]
pub struct Mailbox<T> {
    value: Option<T>,
    waker: Option<Waker>,
    /// No value will come any more (the sender is gone).
    ended: bool,
    /// Values are refused (the receiver is gone or closed).
    refused: bool,
}

/// What a [`Mailbox::put`] did.
#[derive(Debug)]
pub enum Put<T> {
    /// Stored; wake this waker (the receiver's), if any; drop the value it
    /// replaced, if any.
    Stored(Option<Waker>, Option<T>),
    /// Refused: the receiver is gone. The value, handed back.
    Refused(T),
}

impl<T> Mailbox<T> {
    /// Empty, both sides there.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            value: None,
            waker: None,
            ended: false,
            refused: false,
        }
    }

    /// Stores `value` (replacing one not yet taken) and takes the waiting
    /// receiver's waker, unless values are refused.
    pub fn put(&mut self, value: T) -> Put<T> {
        if self.refused {
            return Put::Refused(value);
        }
        let replaced = self.value.replace(value);
        Put::Stored(self.waker.take(), replaced)
    }

    /// The value if there is one; `Ready(None)` if none is there and none
    /// will come; otherwise keeps `waker` (the one waiting task's: a waker
    /// kept for another task is handed back, to be woken so it is not left
    /// hanging).
    pub fn poll_take(&mut self, waker: &Waker) -> (Poll<Option<T>>, Option<Waker>) {
        if let Some(value) = self.value.take() {
            return (Poll::Ready(Some(value)), None);
        }
        if self.ended {
            return (Poll::Ready(None), None);
        }
        let displaced = match &self.waker {
            Some(kept) if kept.will_wake(waker) => None,
            _ => self.waker.replace(waker.clone()),
        };
        (Poll::Pending, displaced)
    }

    /// The value, if there is one, without waiting.
    pub fn take(&mut self) -> Option<T> {
        self.value.take()
    }

    /// Whether a value waits to be taken.
    #[must_use]
    pub fn has_value(&self) -> bool {
        self.value.is_some()
    }

    /// Whether it is as [`new`](Self::new) made it: no value, no waker,
    /// neither side gone.
    #[must_use]
    pub fn is_fresh(&self) -> bool {
        self.value.is_none() && self.waker.is_none() && !self.ended && !self.refused
    }

    /// Whether no value will come any more.
    #[must_use]
    pub fn has_ended(&self) -> bool {
        self.ended
    }

    /// Whether values are refused.
    #[must_use]
    pub fn is_refused(&self) -> bool {
        self.refused
    }

    /// The sending side is gone: no value comes after the one stored.
    /// Returns the waiting receiver's waker, to wake.
    pub fn end(&mut self) -> Option<Waker> {
        self.ended = true;
        self.waker.take()
    }

    /// The receiving side is gone or closed: later puts are refused (a
    /// value stored already stays, to be taken).
    pub fn refuse(&mut self) {
        self.refused = true;
    }

    /// Forgets the waiting task's waker (its wait was dropped).
    pub fn forget_waker(&mut self) -> Option<Waker> {
        self.waker.take()
    }
}

impl<T> Default for Mailbox<T> {
    fn default() -> Self {
        Self::new()
    }
}
