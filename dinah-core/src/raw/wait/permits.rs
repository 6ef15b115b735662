//! [`Permits`]: a count of permits and the line of tasks waiting for
//! them, the one logic behind the core's and `dinah-std`'s semaphores.
#![forbid(unsafe_code)]

use core::task::Waker;

use super::error::{PermitOverflow, Refusal};
use super::figures::SemaphoreFigures;
use super::list::{Turn, WaitKey, WaitList, WaitStore, WakeBatch};

/// A number of free permits, a closed flag and a [`WaitList`].
///
/// Its permits, free and handed out together, never pass `u32::MAX`: an
/// [`add`](Self::add) that would take them past it is refused whole, so a
/// permit given back always fits.
///
/// Fair: while anyone waits, permits go to the first in line, and a
/// `try_take` that would jump the line is refused. It does not lock or
/// wake; its owner does (see [`Lock`](super::Lock)).
#[derive(Debug)]
pub struct Permits<S> {
    free: u32,
    /// Permits handed out and not yet given back or forgotten.
    out: u32,
    closed: bool,
    line: WaitList<S>,
    acquired: u64,
    refused: u64,
}

impl<S: WaitStore> Permits<S> {
    /// `permits` free permits and an empty line over `store`.
    pub const fn new(permits: u32, store: S) -> Self {
        Self {
            free: permits,
            out: 0,
            closed: false,
            line: WaitList::new(store),
            acquired: 0,
            refused: 0,
        }
    }

    /// Permits free now.
    #[must_use]
    pub fn free(&self) -> u32 {
        self.free
    }

    /// Whether it was closed.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The line of waiters.
    #[must_use]
    pub fn line(&self) -> &WaitList<S> {
        &self.line
    }

    /// Its free permits and who waits, now, named `name`; the head's wait
    /// is left to the owner, who has the clock (see
    /// [`WaitList::oldest_since`]).
    #[must_use]
    pub fn figures(&self, name: Option<&'static str>) -> SemaphoreFigures {
        SemaphoreFigures {
            name,
            available: self.free,
            waiting: self.line.waiting(),
            peak_waiting: self.line.peak(),
            longest_wait_micros: None,
            acquired: self.acquired,
            refused: self.refused,
            closed: self.closed,
        }
    }

    /// Takes `want` permits now, if they are free and nobody waits.
    ///
    /// # Errors
    ///
    /// [`Refusal::Closed`] or [`Refusal::WouldWait`] (counted).
    pub fn try_take(&mut self, want: u32) -> Result<(), Refusal> {
        if self.closed {
            return Err(Refusal::Closed);
        }
        if self.line.waiting() == 0 && self.free >= want {
            self.free -= want;
            self.out += want;
            self.acquired += 1;
            Ok(())
        } else {
            self.refused += 1;
            Err(Refusal::WouldWait)
        }
    }

    /// Takes `want` permits now, or joins the line at the time `now` reads
    /// (read only then): `Ok(None)` when taken, `Ok(Some(key))` when
    /// waiting.
    ///
    /// # Errors
    ///
    /// [`Refusal::Closed`], or [`Refusal::LineFull`] from a fixed store.
    pub fn take_or_wait(
        &mut self,
        want: u32,
        waker: &Waker,
        now: impl FnOnce() -> u64,
    ) -> Result<Option<WaitKey>, Refusal> {
        if self.closed {
            return Err(Refusal::Closed);
        }
        if self.line.waiting() == 0 && self.free >= want {
            self.free -= want;
            self.out += want;
            self.acquired += 1;
            return Ok(None);
        }
        self.line
            .push(waker, want, now())
            .map(Some)
            .ok_or(Refusal::LineFull)
    }

    /// Looks at a waiter's turn; a grant counts as an acquisition.
    pub fn poll(&mut self, key: WaitKey, waker: &Waker) -> Turn {
        let turn = self.line.poll(key, waker);
        if let Turn::Granted(_) = turn {
            self.acquired += 1;
        }
        turn
    }

    /// A waiter gives up; what it had been granted goes back (and on to
    /// the next in line, into `batch`).
    pub fn cancel(&mut self, key: WaitKey, batch: &mut WakeBatch) {
        let granted = self.line.cancel(key);
        self.give(granted, batch);
    }

    /// Returns `permits` handed out before and grants the first in line
    /// while they suffice, up to a batch of wakers. Call
    /// [`give`](Self::give) with 0 again while the batch comes back full.
    pub fn give(&mut self, permits: u32, batch: &mut WakeBatch) {
        self.out = self.out.saturating_sub(permits);
        // Fits: free and out together never pass `u32::MAX`.
        self.free = self.free.saturating_add(permits);
        self.grant(batch);
    }

    /// Returns `permits` handed out before if nobody waits, and says
    /// whether it did; with someone in line it changes nothing (then
    /// [`give`](Self::give) hands them on).
    pub fn give_if_idle(&mut self, permits: u32) -> bool {
        if self.line.waiting() != 0 {
            return false;
        }
        self.out = self.out.saturating_sub(permits);
        self.free = self.free.saturating_add(permits);
        true
    }

    /// Adds `permits` new permits and grants the first in line (see
    /// [`give`](Self::give)).
    ///
    /// # Errors
    ///
    /// [`PermitOverflow`] when the permits, free and handed out together,
    /// would pass `u32::MAX`: nothing is added.
    pub fn add(&mut self, permits: u32, batch: &mut WakeBatch) -> Result<(), PermitOverflow> {
        let room = u32::MAX - self.free - self.out;
        if permits > room {
            return Err(PermitOverflow { room });
        }
        self.free += permits;
        self.grant(batch);
        Ok(())
    }

    /// `permits` handed out leave for good (a permit forgotten).
    pub fn forget(&mut self, permits: u32) {
        self.out = self.out.saturating_sub(permits);
    }

    /// Grants the first in line while the free permits suffice.
    fn grant(&mut self, batch: &mut WakeBatch) {
        while batch.has_room() {
            match self.line.head_want() {
                Some(want) if want <= self.free => {
                    self.free -= want;
                    self.out += want;
                    batch.push(self.line.settle_head(true));
                }
                _ => break,
            }
        }
    }

    /// Closes it: every waiter is turned away (into `batch`; call again
    /// while it comes back full), and later takes are refused.
    pub fn close(&mut self, batch: &mut WakeBatch) {
        self.closed = true;
        self.line.close_into(batch);
    }
}
