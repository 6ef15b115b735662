//! [`Crowd`]: receivers waiting for the next value, each woken once when
//! it comes, the line behind both crates' watches and broadcasts.
#![forbid(unsafe_code)]

use core::task::Waker;

use super::error::Refusal;
use super::list::{Turn, WaitKey, WaitList, WaitStore, WakeBatch};

/// A line of receivers that a send wakes all at once (a batch of wakers at
/// a time), and that a close turns away.
///
/// It does not lock or wake; its owner does.
#[derive(Debug)]
pub struct Crowd<S> {
    line: WaitList<S>,
    /// Receivers in line at the last send that it has not woken yet.
    releasing: u32,
}

impl<S: WaitStore> Crowd<S> {
    /// Nobody waiting, over `store`.
    pub const fn new(store: S) -> Self {
        Self {
            line: WaitList::new(store),
            releasing: 0,
        }
    }

    /// Receivers waiting now.
    #[must_use]
    pub fn waiting(&self) -> u32 {
        self.line.waiting()
    }

    /// Wakes every receiver waiting now, a batch at a time (call
    /// [`settle`](Self::settle) while the batch comes back full).
    pub fn wake_all(&mut self, batch: &mut WakeBatch) {
        self.releasing = self.line.waiting();
        self.release(batch);
    }

    fn release(&mut self, batch: &mut WakeBatch) {
        while self.releasing > 0 && batch.has_room() && self.line.waiting() > 0 {
            batch.push(self.line.settle_head(true));
            self.releasing -= 1;
        }
        if self.line.waiting() == 0 {
            self.releasing = 0;
        }
    }

    /// Turns everyone in line away, a batch at a time.
    pub fn close(&mut self, batch: &mut WakeBatch) {
        self.line.close_into(batch);
    }

    /// Continues the wake or the close that filled the last batch.
    pub fn settle(&mut self, closed: bool, batch: &mut WakeBatch) {
        if closed {
            self.line.close_into(batch);
        } else {
            self.release(batch);
        }
    }

    /// Whether a receiver at `waiting` still waits: it does while in line
    /// and nothing is `ready` for it (its waker is then kept up to date).
    /// Otherwise it leaves the line and `waiting` is cleared.
    pub fn still_waiting(
        &mut self,
        waiting: &mut Option<WaitKey>,
        waker: &Waker,
        ready: bool,
    ) -> bool {
        let Some(key) = *waiting else {
            return false;
        };
        match self.line.poll(key, waker) {
            Turn::Waiting if !ready => return true,
            // Ready before the send's batch reached it: it leaves.
            Turn::Waiting => {
                self.line.cancel(key);
            }
            Turn::Granted(_) | Turn::Closed => {}
        }
        *waiting = None;
        false
    }

    /// Joins the line at the time `now` reads; the key goes to `waiting`.
    ///
    /// # Errors
    ///
    /// [`Refusal::LineFull`] from a full fixed store.
    pub fn join(
        &mut self,
        waiting: &mut Option<WaitKey>,
        waker: &Waker,
        now: impl FnOnce() -> u64,
    ) -> Result<(), Refusal> {
        let key = self.line.push(waker, 1, now()).ok_or(Refusal::LineFull)?;
        *waiting = Some(key);
        Ok(())
    }

    /// Wakes the receiver that has waited longest, if any (into `batch`,
    /// which must have room); `false` when nobody waits.
    pub fn wake_first(&mut self, batch: &mut WakeBatch) -> bool {
        if self.line.waiting() == 0 {
            return false;
        }
        batch.push(self.line.settle_head(true));
        true
    }

    /// Looks at a receiver's turn, keeping its waker up to date.
    pub fn poll(&mut self, key: WaitKey, waker: &Waker) -> Turn {
        self.line.poll(key, waker)
    }

    /// A receiver waiting at `key` gives up its place; says whether it had
    /// been woken (its turn given) before it saw it.
    pub fn cancel(&mut self, key: WaitKey) -> bool {
        self.line.cancel(key) > 0
    }
}
