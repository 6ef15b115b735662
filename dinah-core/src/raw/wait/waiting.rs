//! The futures of dinah's channels and semaphores, written once over a
//! [`Lock`]: the core locks with a critical section, `dinah-std` with a
//! short-held spin lock, and both keep their state in the same
//! [`ChannelState`] and [`Permits`].
//!
//! Wakers are never woken under the lock: each operation collects them in
//! a [`WakeBatch`] and wakes them after, taking the lock again while a
//! batch comes back full.
#![forbid(unsafe_code)]

use core::future::Future;
use core::ops::Deref;
use core::pin::Pin;
use core::task::{Context, Poll};

use super::channel::{ChannelState, SendPoll, SendSlot, Slots};
use super::error::{Refusal, SendError};
use super::list::{Turn, WaitKey, WaitStore, WakeBatch};
use super::permits::Permits;

/// State behind a lock, with the clock its waits are stamped with.
pub trait Lock {
    /// What the lock guards.
    type State: Settle;

    /// Runs `f` with the state locked. `f` runs no user code.
    fn with<R>(&self, f: impl FnOnce(&mut Self::State) -> R) -> R;

    /// The time a wait starts at, in the ticks figures are read in; 0
    /// where there is no clock.
    fn now(&self) -> u64 {
        0
    }
}

/// State that may have more wakers to hand out after a full batch.
pub trait Settle {
    /// Continues the grant or close that filled the last batch.
    fn settle(&mut self, batch: &mut WakeBatch);
}

impl<B, S: WaitStore> Settle for ChannelState<B, S> {
    fn settle(&mut self, batch: &mut WakeBatch) {
        if self.is_closed() {
            self.close(batch);
        }
    }
}

impl<S: WaitStore> Settle for Permits<S> {
    fn settle(&mut self, batch: &mut WakeBatch) {
        if self.is_closed() {
            self.close(batch);
        } else {
            self.give(0, batch);
        }
    }
}

/// A [`Lock`] over a channel.
pub trait ChannelLock: Lock<State = ChannelState<Self::Buffer, Self::Store>> {
    /// Where its values live.
    type Buffer: Slots;
    /// Where its senders wait.
    type Store: WaitStore;
}

/// A [`Lock`] over permits.
pub trait PermitLock: Lock<State = Permits<Self::Store>> {
    /// Where its waiters wait.
    type Store: WaitStore;
}

/// Runs `f` on the state in `cell` inside a critical section: the lock of
/// every core channel, semaphore and timer store. Borrowing the state again
/// from inside `f` (a waker that calls back in) panics with a fixed message,
/// so a firmware does not link `core::fmt` for it.
pub fn critical<T, R>(
    cell: &critical_section::Mutex<core::cell::RefCell<T>>,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    critical_section::with(|cs| critical_in(cs, cell, f))
}

/// [`critical`] inside the critical section `cs` the caller holds already
/// (no second masking of interrupts).
pub fn critical_in<T, R>(
    cs: critical_section::CriticalSection<'_>,
    cell: &critical_section::Mutex<core::cell::RefCell<T>>,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    match cell.borrow(cs).try_borrow_mut() {
        Ok(mut state) => f(&mut state),
        Err(_) => reentered(),
    }
}

#[cold]
fn reentered() -> ! {
    crate::fmt::fail!("dinah: a critical-section lock was taken again from inside itself")
}

/// Wakes `batch`, then keeps handing out what `lock`'s state has left to
/// hand out, a batch at a time.
pub fn wake<L: Lock + ?Sized>(lock: &L, batch: WakeBatch) {
    if batch.wake_was_full() {
        wake_rest(&|batch| lock.with(|state| state.settle(batch)));
    }
}

/// [`wake`]'s rare second part, after a full batch: fills batches with
/// `settle` and wakes them until one comes back short. Not generic over the
/// lock (only `settle` is), so a firmware with several kinds of lock keeps
/// one copy of the loop.
#[inline(never)]
fn wake_rest(settle: &dyn Fn(&mut WakeBatch)) {
    loop {
        let mut batch = WakeBatch::new();
        settle(&mut batch);
        if !batch.wake_was_full() {
            return;
        }
    }
}

/// Runs `f` on the state and wakes the batch it fills.
pub fn with_batch<L: Lock + ?Sized, R>(
    lock: &L,
    f: impl FnOnce(&mut L::State, &mut WakeBatch) -> R,
) -> R {
    let mut batch = WakeBatch::new();
    let result = lock.with(|state| f(state, &mut batch));
    wake(lock, batch);
    result
}

/// The future of a channel's `send`: waits in line for a slot.
///
/// Dropping it gives up its place; a slot it had been granted goes to
/// the next in line.
#[must_use = "a send does nothing unless awaited"]
pub struct Sending<H: Deref>
where
    H::Target: ChannelLock,
{
    channel: H,
    slot: SendSlot<Item<H>>,
}

/// What a channel behind `H` carries.
pub type Item<H> = <<<H as Deref>::Target as ChannelLock>::Buffer as Slots>::Item;

impl<H: Deref> Sending<H>
where
    H::Target: ChannelLock,
{
    /// A send of `value` into `channel`.
    pub fn new(channel: H, value: Item<H>) -> Self {
        Self {
            channel,
            slot: SendSlot::new(value),
        }
    }

    /// Whether it waits in line.
    #[must_use]
    pub fn is_waiting(&self) -> bool {
        self.slot.is_waiting()
    }
}

impl<H: Deref> Unpin for Sending<H> where H::Target: ChannelLock {}

impl<H: Deref> core::fmt::Debug for Sending<H>
where
    H::Target: ChannelLock,
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Sending")
            .field("waiting", &self.slot.is_waiting())
            .finish_non_exhaustive()
    }
}

impl<H: Deref> Future for Sending<H>
where
    H::Target: ChannelLock,
{
    type Output = Result<(), SendError<Item<H>>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let channel = &*this.channel;
        let now = || channel.now();
        match channel.with(|state| state.poll_send(&mut this.slot, cx.waker(), now)) {
            SendPoll::Pending => Poll::Pending,
            SendPoll::Sent(receiver) => {
                if let Some(receiver) = receiver {
                    receiver.wake();
                }
                Poll::Ready(Ok(()))
            }
            SendPoll::Refused(value, reason) => Poll::Ready(Err(SendError::new(value, reason))),
        }
    }
}

impl<H: Deref> Drop for Sending<H>
where
    H::Target: ChannelLock,
{
    fn drop(&mut self) {
        // A finished send is out of line: only a waiting one has a place.
        if self.slot.is_waiting() {
            let slot = &mut self.slot;
            with_batch(&*self.channel, |state, batch| {
                state.cancel_send(slot, batch)
            });
        }
    }
}

/// Sends `value` into `channel` if a slot is free and nobody waits, and
/// wakes the receiver.
///
/// # Errors
///
/// The value, with `WouldWait` (counted) or `Closed`.
pub fn try_send<L: ChannelLock + ?Sized>(
    channel: &L,
    value: <L::Buffer as Slots>::Item,
) -> Result<(), SendError<<L::Buffer as Slots>::Item>> {
    match channel.with(|state| state.try_send(value)) {
        Ok(receiver) => {
            if let Some(receiver) = receiver {
                receiver.wake();
            }
            Ok(())
        }
        Err((value, reason)) => Err(SendError::new(value, reason)),
    }
}

/// Polls a channel's receive once: a value, the end (`None`), or
/// `Pending` with the waker kept.
pub fn poll_recv<L: ChannelLock + ?Sized>(
    channel: &L,
    cx: &Context<'_>,
) -> Poll<Option<<L::Buffer as Slots>::Item>> {
    let (poll, batch) = channel.with(|state| state.poll_recv(cx.waker()));
    wake(channel, batch);
    poll
}

/// The future of a semaphore's `acquire`: waits in line for `want`
/// permits, and resolves to the handle it was made with once they are
/// taken (the caller wraps that in its permit type).
///
/// Dropping it gives up its place; permits it had been granted go back.
#[must_use = "an acquire does nothing unless awaited"]
#[derive(Debug)]
pub struct Acquiring<H: Deref>
where
    H::Target: PermitLock,
{
    semaphore: Option<H>,
    want: u32,
    key: Option<WaitKey>,
}

impl<H: Deref> Acquiring<H>
where
    H::Target: PermitLock,
{
    /// An acquisition of `want` permits from `semaphore`.
    pub fn new(semaphore: H, want: u32) -> Self {
        Self {
            semaphore: Some(semaphore),
            want,
            key: None,
        }
    }

    /// Whether it waits in line.
    #[must_use]
    pub fn is_waiting(&self) -> bool {
        self.key.is_some()
    }
}

impl<H: Deref> Unpin for Acquiring<H> where H::Target: PermitLock {}

impl<H: Deref> Future for Acquiring<H>
where
    H::Target: PermitLock,
{
    type Output = Result<H, Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(semaphore) = this.semaphore.as_deref() else {
            crate::fmt::fail!("an acquire polled after it completed");
        };
        let taken = match this.key {
            None => {
                let now = || semaphore.now();
                match semaphore.with(|state| state.take_or_wait(this.want, cx.waker(), now)) {
                    Ok(None) => Ok(()),
                    Ok(Some(key)) => {
                        this.key = Some(key);
                        return Poll::Pending;
                    }
                    Err(refusal) => Err(refusal),
                }
            }
            Some(key) => match semaphore.with(|state| state.poll(key, cx.waker())) {
                Turn::Waiting => return Poll::Pending,
                Turn::Granted(_) => Ok(()),
                Turn::Closed => Err(Refusal::Closed),
            },
        };
        this.key = None;
        let semaphore = this.semaphore.take();
        Poll::Ready(taken.and_then(|()| semaphore.ok_or(Refusal::Closed)))
    }
}

impl<H: Deref> Drop for Acquiring<H>
where
    H::Target: PermitLock,
{
    fn drop(&mut self) {
        if let (Some(key), Some(semaphore)) = (self.key.take(), self.semaphore.as_deref()) {
            with_batch(semaphore, |state, batch| state.cancel(key, batch));
        }
    }
}

/// Returns `permits` to `semaphore`, waking whoever they go to.
pub fn release<L: PermitLock + ?Sized>(semaphore: &L, permits: u32) {
    // Nobody waits (the common case): one pass, no batch of wakers to fill
    // and walk. Someone waits: a second pass hands the permits on.
    if !semaphore.with(|state| state.give_if_idle(permits)) {
        with_batch(semaphore, |state, batch| state.give(permits, batch));
    }
}

/// Adds `permits` new permits to `semaphore`, waking whoever they go to.
///
/// # Errors
///
/// [`PermitOverflow`](crate::sync::PermitOverflow) as
/// [`Permits::add`](super::Permits::add): nothing is added.
pub fn add_permits<L: PermitLock + ?Sized>(
    semaphore: &L,
    permits: u32,
) -> Result<(), crate::sync::PermitOverflow> {
    with_batch(semaphore, |state, batch| state.add(permits, batch))
}

/// `permits` that a permit held leave `semaphore` for good.
pub fn forget_permits<L: PermitLock + ?Sized>(semaphore: &L, permits: u32) {
    semaphore.with(|state| state.forget(permits));
}
