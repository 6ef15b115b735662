//! [`Notice`]: a notification that waits for a task, and the line of tasks
//! waiting for one, the one logic behind the core's `Notify` and
//! `dinah-std`'s `SharedNotify`; with [`Notified`], their future, written
//! once over a [`NoticeLock`].
#![forbid(unsafe_code)]

use core::future::Future;
use core::ops::Deref;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use super::crowd::Crowd;
use super::error::Refusal;
use super::list::{Turn, WaitKey, WaitStore, WakeBatch};
use super::waiting::{Lock, Settle, with_batch};

/// A kept notification (at most one), a line of waiters, and how many of
/// them a `notify_waiters` still has to release.
///
/// It does not lock or wake; its owner does (see [`Lock`]).
#[derive(Debug)]
pub struct Notice<S> {
    /// A `notify_one` that found nobody waiting, for the next wait.
    kept: bool,
    /// The line, which a `notify_waiters` releases a batch of wakers at a
    /// time.
    line: Crowd<S>,
    /// `notify_waiters` calls so far (wrapping): a waiter that joined before
    /// the latest one may have been released by it.
    epoch: u32,
}

impl<S: WaitStore> Notice<S> {
    /// No notification kept and nobody waiting, over `store`.
    pub const fn new(store: S) -> Self {
        Self {
            kept: false,
            line: Crowd::new(store),
            epoch: 0,
        }
    }

    /// Waiters in line now.
    #[must_use]
    pub fn waiting(&self) -> u32 {
        self.line.waiting()
    }

    /// Whether a notification is kept for the next wait.
    #[must_use]
    pub fn is_kept(&self) -> bool {
        self.kept
    }

    /// Notifies the first in line (its waker into `batch`), or keeps the
    /// notification for the next wait if nobody waits (at most one is
    /// kept: a second is the same as the first).
    pub fn notify_one(&mut self, batch: &mut WakeBatch) {
        if !self.line.wake_first(batch) {
            self.kept = true;
        }
    }

    /// Notifies every task in line now, a batch of wakers at a time (call
    /// [`Settle::settle`] while the batch comes back full); keeps nothing
    /// for later waits.
    pub fn notify_waiters(&mut self, batch: &mut WakeBatch) {
        self.epoch = self.epoch.wrapping_add(1);
        self.line.wake_all(batch);
    }

    /// Takes the kept notification, or joins the line at the time `now`
    /// reads: `Ok(None)` when notified at once, `Ok(Some((key, epoch)))`
    /// when waiting.
    ///
    /// # Errors
    ///
    /// [`Refusal::LineFull`] from a fixed store.
    pub fn wait(
        &mut self,
        waker: &Waker,
        now: impl FnOnce() -> u64,
    ) -> Result<Option<(WaitKey, u32)>, Refusal> {
        if core::mem::take(&mut self.kept) {
            return Ok(None);
        }
        let mut waiting = None;
        self.line.join(&mut waiting, waker, now)?;
        Ok(waiting.map(|key| (key, self.epoch)))
    }

    /// Looks at a waiter's turn.
    pub fn poll(&mut self, key: WaitKey, waker: &Waker) -> Turn {
        self.line.poll(key, waker)
    }

    /// A waiter that joined at `epoch` gives up. A notification it was
    /// given by `notify_one` and had not seen goes on to the next in line
    /// (or is kept); one a `notify_waiters` since it joined may have given
    /// it is not passed on.
    pub fn cancel(&mut self, key: WaitKey, epoch: u32, batch: &mut WakeBatch) {
        if self.line.cancel(key) && epoch == self.epoch {
            self.notify_one(batch);
        }
    }
}

impl<S: WaitStore> Settle for Notice<S> {
    fn settle(&mut self, batch: &mut WakeBatch) {
        self.line.settle(false, batch);
    }
}

/// A [`Lock`] over a notice.
pub trait NoticeLock: Lock<State = Notice<Self::Store>> {
    /// Where its waiters wait.
    type Store: WaitStore;
}

/// Notifies the first waiter of `notice`, or keeps the notification.
pub fn notify_one<L: NoticeLock + ?Sized>(notice: &L) {
    with_batch(notice, Notice::notify_one);
}

/// Notifies every task waiting on `notice` now.
pub fn notify_waiters<L: NoticeLock + ?Sized>(notice: &L) {
    with_batch(notice, Notice::notify_waiters);
}

/// The future of a notify's `notified`: completes once notified.
///
/// It joins the line at its first poll (a notification kept for it then
/// completes it at once). Dropping it gives up its place; a `notify_one`
/// it had been given and not seen goes to the next waiter.
#[must_use = "a wait does nothing unless awaited"]
#[derive(Debug)]
pub struct Notified<H: Deref>
where
    H::Target: NoticeLock,
{
    notice: H,
    waiting: Option<(WaitKey, u32)>,
    done: bool,
}

impl<H: Deref> Notified<H>
where
    H::Target: NoticeLock,
{
    /// A wait on `notice`.
    pub fn new(notice: H) -> Self {
        Self {
            notice,
            waiting: None,
            done: false,
        }
    }

    /// Whether it waits in line.
    #[must_use]
    pub fn is_waiting(&self) -> bool {
        self.waiting.is_some()
    }
}

impl<H: Deref> Unpin for Notified<H> where H::Target: NoticeLock {}

impl<H: Deref> Future for Notified<H>
where
    H::Target: NoticeLock,
{
    type Output = Result<(), Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.done {
            crate::fmt::fail!("a notified future polled after it completed");
        }
        let notice = &*this.notice;
        let outcome = match this.waiting {
            None => {
                let now = || notice.now();
                match notice.with(|state| state.wait(cx.waker(), now)) {
                    Ok(None) => Ok(()),
                    Ok(Some(waiting)) => {
                        this.waiting = Some(waiting);
                        return Poll::Pending;
                    }
                    Err(refusal) => Err(refusal),
                }
            }
            Some((key, _)) => match notice.with(|state| state.poll(key, cx.waker())) {
                Turn::Waiting => return Poll::Pending,
                Turn::Granted(_) => Ok(()),
                Turn::Closed => Err(Refusal::Closed),
            },
        };
        this.waiting = None;
        this.done = true;
        Poll::Ready(outcome)
    }
}

impl<H: Deref> Drop for Notified<H>
where
    H::Target: NoticeLock,
{
    fn drop(&mut self) {
        if let Some((key, epoch)) = self.waiting.take() {
            with_batch(&*self.notice, |state, batch| {
                state.cancel(key, epoch, batch)
            });
        }
    }
}
