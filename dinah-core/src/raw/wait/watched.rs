//! [`Watched`]: a value with a version, and the line of receivers waiting
//! for the next version, the one logic behind the core's `Watch` and
//! `dinah-std`'s `watch` channel.
#![forbid(unsafe_code)]

use core::task::{Poll, Waker};

use super::crowd::Crowd;
use super::error::Refusal;
use super::list::{WaitKey, WaitStore, WakeBatch};
use super::waiting::Settle;

/// The latest value, its version (how many values were sent), whether the
/// sending side is gone, and the receivers waiting for a newer version.
///
/// It does not lock or wake; its owner does (see
/// [`Lock`](super::Lock)). A receiver remembers the version it saw last.
#[derive(Debug)]
pub struct Watched<V, S> {
    value: V,
    version: u64,
    closed: bool,
    crowd: Crowd<S>,
}

impl<V, S: WaitStore> Watched<V, S> {
    /// `value` at version 0, nobody waiting, over `store`.
    pub const fn new(value: V, store: S) -> Self {
        Self {
            value,
            version: 0,
            closed: false,
            crowd: Crowd::new(store),
        }
    }

    /// The value now.
    pub fn value(&self) -> &V {
        &self.value
    }

    /// How many values were sent.
    #[must_use]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Whether the sending side is gone.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Receivers waiting now.
    #[must_use]
    pub fn waiting(&self) -> u32 {
        self.crowd.waiting()
    }

    /// Replaces the value with `value` (returned: drop it after the lock),
    /// counts a version, and wakes every receiver waiting now, a batch of
    /// wakers at a time (call [`Settle::settle`] while the batch comes back
    /// full).
    pub fn send(&mut self, value: V, batch: &mut WakeBatch) -> V {
        let old = core::mem::replace(&mut self.value, value);
        self.version = self.version.wrapping_add(1);
        self.crowd.wake_all(batch);
        old
    }

    /// The sending side is gone: every receiver waiting is woken, and a
    /// receiver that has seen the last version is told so.
    pub fn close(&mut self, batch: &mut WakeBatch) {
        self.closed = true;
        self.crowd.close(batch);
    }

    /// A receiver that saw version `seen` and waits at `waiting` looks for
    /// a newer one: `Ready(Ok(()))` with `seen` moved to the version now,
    /// `Ready(Err(Closed))` when none will come, `Ready(Err(LineFull))`
    /// from a full fixed store; otherwise it waits in line, stamped `now`.
    pub fn poll_changed(
        &mut self,
        seen: &mut u64,
        waiting: &mut Option<WaitKey>,
        waker: &Waker,
        now: impl FnOnce() -> u64,
    ) -> Poll<Result<(), Refusal>> {
        if self
            .crowd
            .still_waiting(waiting, waker, self.version != *seen)
        {
            return Poll::Pending;
        }
        if self.version != *seen {
            *seen = self.version;
            return Poll::Ready(Ok(()));
        }
        if self.closed {
            return Poll::Ready(Err(Refusal::Closed));
        }
        self.crowd
            .join(waiting, waker, now)
            .map_or_else(|refusal| Poll::Ready(Err(refusal)), |()| Poll::Pending)
    }

    /// A receiver waiting at `key` gives up its place.
    pub fn cancel(&mut self, key: WaitKey) {
        // Nothing to pass on: a send wakes every receiver.
        self.crowd.cancel(key);
    }
}

impl<V, S: WaitStore> Settle for Watched<V, S> {
    fn settle(&mut self, batch: &mut WakeBatch) {
        self.crowd.settle(self.closed, batch);
    }
}
