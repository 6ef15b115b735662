//! [`Held`]: a mutex's value and its one permit under one lock, the one
//! logic behind the core's `Mutex` and `dinah-std`'s `SharedMutex`, with
//! their [`Locking`] future and [`HeldValue`] guard written once over a
//! [`HeldLock`].
//!
//! The value is in the state exactly while the permit is free or being
//! handed on: a lock takes the permit and the value in one pass, and an
//! unlock puts the value back and gives the permit in one pass (a second
//! hands the permit to a waiter, if one waits). The guard owns the value
//! while it is held, so it is `Send` and lives across awaits with no
//! `unsafe`; the value moves (a copy of its bytes) into each guard and
//! back.
#![forbid(unsafe_code)]

use core::future::Future;
use core::ops::{Deref, DerefMut};
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use super::error::Refusal;
use super::figures::SemaphoreFigures;
use super::list::{Turn, WaitKey, WaitStore, WakeBatch};
use super::permits::Permits;
use super::waiting::{Lock, Settle, with_batch};

/// A mutex's permit (one, first in, first out) and its value while nobody
/// holds it.
///
/// It does not lock or wake; its owner does.
#[derive(Debug)]
pub struct Held<T, S> {
    permit: Permits<S>,
    value: Option<T>,
}

impl<T, S: WaitStore> Held<T, S> {
    /// `value`, unlocked, nobody waiting, over `store`.
    pub const fn new(value: T, store: S) -> Self {
        Self {
            permit: Permits::new(1, store),
            value: Some(value),
        }
    }

    /// Whether a guard holds the value (or a waiter was just granted it).
    #[must_use]
    pub fn is_locked(&self) -> bool {
        self.permit.free() == 0
    }

    /// Who waits and the refused tries, named `name`: its permit's figures.
    #[must_use]
    pub fn figures(&self, name: Option<&'static str>) -> SemaphoreFigures {
        self.permit.figures(name)
    }

    /// When the waiter waiting longest joined the line.
    #[must_use]
    pub fn oldest_since(&self) -> Option<u64> {
        self.permit.line().oldest_since()
    }

    /// The value, out of the state (`None` while a guard holds it).
    pub fn into_value(self) -> Option<T> {
        self.value
    }

    /// The value, for whoever just took the permit.
    fn lend(&mut self) -> T {
        match self.value.take() {
            Some(value) => value,
            None => crate::fmt::fail!("a mutex's value was not there for its permit"),
        }
    }

    /// Takes the value if nobody holds it and nobody waits.
    ///
    /// # Errors
    ///
    /// [`Refusal::WouldWait`] (counted).
    pub fn try_lock(&mut self) -> Result<T, Refusal> {
        self.permit.try_take(1)?;
        Ok(self.lend())
    }

    /// Takes the value now, or joins the line at the time `now` reads.
    ///
    /// # Errors
    ///
    /// [`Refusal::LineFull`] from a fixed store.
    pub fn lock_or_wait(
        &mut self,
        waker: &Waker,
        now: impl FnOnce() -> u64,
    ) -> Result<Result<T, WaitKey>, Refusal> {
        Ok(match self.permit.take_or_wait(1, waker, now)? {
            None => Ok(self.lend()),
            Some(key) => Err(key),
        })
    }

    /// Looks at a waiter's turn: the value once it was granted.
    pub fn poll(&mut self, key: WaitKey, waker: &Waker) -> Poll<Result<T, Refusal>> {
        match self.permit.poll(key, waker) {
            Turn::Waiting => Poll::Pending,
            Turn::Granted(_) => Poll::Ready(Ok(self.lend())),
            Turn::Closed => Poll::Ready(Err(Refusal::Closed)),
        }
    }

    /// A waiter gives up; a turn it had been granted goes to the next.
    pub fn cancel(&mut self, key: WaitKey, batch: &mut WakeBatch) {
        self.permit.cancel(key, batch);
    }

    /// Puts the value back and, if nobody waits, frees the permit; says
    /// whether it did (otherwise [`hand_on`](Self::hand_on) gives the turn
    /// to the first in line).
    pub fn unlock(&mut self, value: T) -> bool {
        self.value = Some(value);
        self.permit.give_if_idle(1)
    }

    /// Gives the permit to the first in line, after an
    /// [`unlock`](Self::unlock) that found someone waiting.
    pub fn hand_on(&mut self, batch: &mut WakeBatch) {
        self.permit.give(1, batch);
    }
}

impl<T, S: WaitStore> Settle for Held<T, S> {
    fn settle(&mut self, batch: &mut WakeBatch) {
        self.permit.settle(batch);
    }
}

/// A [`Lock`] over a mutex's state.
pub trait HeldLock: Lock<State = Held<Self::Value, Self::Store>> {
    /// What the mutex holds.
    type Value;
    /// Where its waiters wait.
    type Store: WaitStore;
}

/// The value of the mutex behind `H`, held; dropping it puts the value
/// back and unlocks the mutex.
pub struct HeldValue<H: Deref>
where
    H::Target: HeldLock,
{
    value: Option<<H::Target as HeldLock>::Value>,
    mutex: H,
}

impl<H: Deref> HeldValue<H>
where
    H::Target: HeldLock,
{
    /// Holds `value`, just taken from `mutex` with its permit.
    pub fn new(mutex: H, value: <H::Target as HeldLock>::Value) -> Self {
        Self {
            value: Some(value),
            mutex,
        }
    }

    /// Takes the value now if nobody holds it and nobody waits.
    ///
    /// # Errors
    ///
    /// [`Refusal::WouldWait`].
    pub fn try_new(mutex: H) -> Result<Self, Refusal> {
        let value = mutex.with(Held::try_lock)?;
        Ok(Self::new(mutex, value))
    }
}

/// The value is only taken in `drop`, after which nothing reads it.
#[cold]
fn gone() -> ! {
    crate::fmt::fail!("a held value read after it went back")
}

impl<H: Deref> Deref for HeldValue<H>
where
    H::Target: HeldLock,
{
    type Target = <H::Target as HeldLock>::Value;

    fn deref(&self) -> &Self::Target {
        match &self.value {
            Some(value) => value,
            None => gone(),
        }
    }
}

impl<H: Deref> DerefMut for HeldValue<H>
where
    H::Target: HeldLock,
{
    fn deref_mut(&mut self) -> &mut Self::Target {
        match &mut self.value {
            Some(value) => value,
            None => gone(),
        }
    }
}

impl<H: Deref> Drop for HeldValue<H>
where
    H::Target: HeldLock,
{
    fn drop(&mut self) {
        if let Some(value) = self.value.take() {
            let mutex = &*self.mutex;
            // Nobody waits (the common case): one pass. Someone waits: a
            // second hands the turn on; the value is back already.
            if !mutex.with(|state| state.unlock(value)) {
                with_batch(mutex, Held::hand_on);
            }
        }
    }
}

/// The future of a mutex's `lock`: the value at once if it is free and
/// nobody waits, or at its turn in line.
///
/// Dropping it gives up its place; a turn it had been granted goes to the
/// next in line.
#[must_use = "a lock does nothing unless awaited"]
#[derive(Debug)]
pub struct Locking<H: Deref>
where
    H::Target: HeldLock,
{
    mutex: Option<H>,
    key: Option<WaitKey>,
}

impl<H: Deref> Locking<H>
where
    H::Target: HeldLock,
{
    /// A lock of `mutex`.
    pub fn new(mutex: H) -> Self {
        Self {
            mutex: Some(mutex),
            key: None,
        }
    }

    /// Whether it waits in line.
    #[must_use]
    pub fn is_waiting(&self) -> bool {
        self.key.is_some()
    }

    /// The mutex it locks, until it completes.
    #[must_use]
    pub fn mutex(&self) -> Option<&H::Target> {
        self.mutex.as_deref()
    }
}

impl<H: Deref> Unpin for Locking<H> where H::Target: HeldLock {}

impl<H: Deref> Future for Locking<H>
where
    H::Target: HeldLock,
{
    type Output = Result<HeldValue<H>, Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(mutex) = this.mutex.as_deref() else {
            crate::fmt::fail!("a lock polled after it completed");
        };
        let taken = match this.key {
            None => {
                let now = || mutex.now();
                match mutex.with(|state| state.lock_or_wait(cx.waker(), now)) {
                    Ok(Ok(value)) => Ok(value),
                    Ok(Err(key)) => {
                        this.key = Some(key);
                        return Poll::Pending;
                    }
                    Err(refusal) => Err(refusal),
                }
            }
            Some(key) => match mutex.with(|state| state.poll(key, cx.waker())) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(taken) => taken,
            },
        };
        this.key = None;
        let Some(mutex) = this.mutex.take() else {
            crate::fmt::fail!("a lock polled after it completed");
        };
        Poll::Ready(taken.map(|value| HeldValue::new(mutex, value)))
    }
}

impl<H: Deref> Drop for Locking<H>
where
    H::Target: HeldLock,
{
    fn drop(&mut self) {
        if let (Some(key), Some(mutex)) = (self.key.take(), self.mutex.as_deref()) {
            with_batch(mutex, |state, batch| state.cancel(key, batch));
        }
    }
}
