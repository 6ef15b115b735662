//! A bounded, many-sender channel sized at run time: [`channel`],
//! [`named`], [`Sender`] and [`Receiver`], which [`Receiver::shared`] turns
//! into a [`SharedReceiver`] for many consumers.
//!
//! The same logic as the core's static
//! [`Channel`](dinah_core::sync::Channel) (one
//! [`dinah_core::raw::wait::ChannelState`]), behind a short-held lock, with a
//! line of waiting senders that grows as needed and a clock for how long
//! the first of them has waited.
//!
//! ```
//! use dinah::LocalExecutor;
//! use dinah::sync::mpsc;
//!
//! let mut executor = LocalExecutor::new();
//! let (tx, mut rx) = mpsc::named("jobs", 2).unwrap();
//! for worker in 0..3 {
//!     let tx = tx.clone();
//!     executor
//!         .try_spawn(async move {
//!             for job in 0..4 {
//!                 tx.send(worker * 10 + job).await.unwrap(); // waits while full
//!             }
//!         })
//!         .unwrap();
//! }
//! drop(tx);
//! let total = executor.block_on(async move {
//!     let mut total = 0;
//!     while let Some(job) = rx.recv().await {
//!         total += job;
//!     }
//!     total // every sender is gone and nothing is left
//! });
//! assert_eq!(total, 3 * (0 + 1 + 2 + 3) + 4 * (0 + 10 + 20));
//! ```
//!
//! # Guarantees
//!
//! Those of the core channel: values in order; waiting senders served first
//! in, first out, each woken once, never passed by a `try_send`; a value is
//! received, handed back in a [`SendError`], or dropped with the receiver;
//! the receiver sees the end once every sender is gone (or it closed) and
//! it has taken every value. Any number of senders may wait: the line grows.
//!
//! # What it does not do
//!
//! Its receiver is one consumer until it is shared, and it does not allocate the whole buffer up front
//! (the buffer grows up to its capacity as values arrive).
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use dinah_core::raw;
use dinah_core::raw::wait::{ChannelLock, ChannelState, Lock, Sending};
use dinah_core::sync::{ChannelFigures, SendError, TryRecvError};

use super::line::{Bounded, Growing, Locked};
use super::{SharedLocking, SharedMutex, SharedMutexGuard};
use crate::queue::CapacityError;

type Inner<T> = Locked<ChannelState<Bounded<T>, Growing>>;

impl<T> ChannelLock for Inner<T> {
    type Buffer = Bounded<T>;
    type Store = Growing;
}

/// A channel holding at most `capacity` values: its first sender and its
/// receiver.
///
/// # Errors
///
/// [`CapacityError::Zero`] for a capacity of 0.
pub fn channel<T>(capacity: usize) -> Result<(Sender<T>, Receiver<T>), CapacityError> {
    build(None, capacity)
}

/// [`channel`], named `name` in its figures and in what
/// [`diagnose`](crate::executor::ExecutorMonitor::diagnose) reports about
/// tasks waiting on it.
///
/// # Errors
///
/// [`CapacityError::Zero`] for a capacity of 0.
pub fn named<T>(
    name: &'static str,
    capacity: usize,
) -> Result<(Sender<T>, Receiver<T>), CapacityError> {
    build(Some(name), capacity)
}

fn build<T>(
    name: Option<&'static str>,
    capacity: usize,
) -> Result<(Sender<T>, Receiver<T>), CapacityError> {
    if capacity == 0 {
        return Err(CapacityError::Zero);
    }
    let mut state = ChannelState::new(Bounded::new(capacity), Growing::default());
    state.open();
    let inner = Arc::new(Locked::new(name, state));
    Ok((
        Sender {
            inner: Arc::clone(&inner),
        },
        Receiver { inner },
    ))
}

fn figures<T>(inner: &Inner<T>) -> ChannelFigures {
    let (mut figures, since) =
        inner.with(|state| (state.figures(inner.name), state.oldest_since()));
    figures.longest_wait_micros = inner.waited(since);
    figures
}

/// A sending end; clone it for more. When the last one goes, the receiver
/// sees the end once it has taken what was sent.
pub struct Sender<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Sender<T> {
    /// Sends `value`, waiting in line while the channel is full.
    ///
    /// Dropping the future before it completes takes `value` out of line
    /// (it is dropped with the future); a slot it had been granted goes to
    /// the next sender.
    ///
    /// # Errors
    ///
    /// The value, with [`Refusal::Closed`](dinah_core::sync::Refusal::Closed)
    /// once the receiver closed or went away.
    pub fn send(&self, value: T) -> SendFuture<'_, T> {
        SendFuture {
            inner: Sending::new(&*self.inner, value),
            name: self.inner.name,
        }
    }

    /// Sends `value` if a slot is free and no sender waits.
    ///
    /// # Errors
    ///
    /// The value, with [`Refusal::WouldWait`](dinah_core::sync::Refusal::WouldWait)
    /// (counted in the figures' `refused`) or `Closed`.
    pub fn try_send(&self, value: T) -> Result<(), SendError<T>> {
        raw::wait::try_send(&*self.inner, value)
    }

    /// Whether the receiver closed the channel or went away.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.inner.with(|state| state.is_closed())
    }

    /// What it holds and who waits, now.
    #[must_use]
    pub fn figures(&self) -> ChannelFigures {
        figures(&self.inner)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.inner.with(ChannelState::add_sender);
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if let Some(receiver) = self.inner.with(ChannelState::drop_sender) {
            receiver.wake();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

/// The future of [`Sender::send`].
#[must_use = "a send does nothing unless awaited"]
pub struct SendFuture<'a, T> {
    inner: Sending<&'a Inner<T>>,
    name: Option<&'static str>,
}

impl<T> Future for SendFuture<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let was_waiting = this.inner.is_waiting();
        let poll = Pin::new(&mut this.inner).poll(cx);
        if poll.is_pending() {
            super::note_wait(this.name, !was_waiting);
        }
        poll
    }
}

impl<T> fmt::Debug for SendFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFuture")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The receiving end. Dropping it closes the channel: waiting senders get
/// their values back, and values not yet received are dropped.
pub struct Receiver<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Receiver<T> {
    /// Receives the oldest value, waiting while there is none; `None` at
    /// the end (closed or every sender gone, and nothing left).
    pub fn recv(&mut self) -> Recv<'_, T> {
        Recv { receiver: self }
    }

    /// [`recv`](Self::recv) as a poll, for hand-written futures and streams.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let poll = raw::wait::poll_recv(&*self.inner, cx);
        if poll.is_pending() {
            super::note_receive(self.inner.name);
        }
        poll
    }

    /// Receives the oldest value without waiting.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] or [`TryRecvError::Closed`].
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        raw::wait::with_batch(&*self.inner, |state, batch| state.try_recv(batch))
    }

    /// Closes the channel: senders waiting and senders to come get their
    /// values back; values already sent can still be received.
    pub fn close(&mut self) {
        raw::wait::with_batch(&*self.inner, ChannelState::close);
    }

    /// What it holds and who waits, now.
    #[must_use]
    pub fn figures(&self) -> ChannelFigures {
        figures(&self.inner)
    }

    /// Turns it into a receiver that many consumers share: clone the
    /// [`SharedReceiver`] for each (a pool of long-lived handlers, say).
    pub fn shared(self) -> SharedReceiver<T> {
        let name = self.inner.name;
        let turn = match name {
            Some(name) => SharedMutex::named(name, self),
            None => SharedMutex::new(self),
        };
        SharedReceiver {
            turn: Arc::new(turn),
            name,
        }
    }
}

/// A channel's receiver shared by many consumers, each `recv` taking the
/// next value: made by [`Receiver::shared`], cloned for each consumer.
///
/// A consumer waiting for its turn or for a value is reported by
/// `diagnose()` as waiting to receive from the channel, by its name.
///
/// Consumers take turns first come, first served: the one whose turn it is
/// waits for the next value while the others wait behind it (an async
/// [`SharedMutex`] around the one receiver), so each value goes to exactly
/// one consumer and none is lost when a consumer's `recv` is dropped.
///
/// ```
/// use dinah::LocalExecutor;
/// use dinah::sync::mpsc;
///
/// let executor = LocalExecutor::new();
/// let (jobs, rx) = mpsc::named("jobs", 8).unwrap();
/// let rx = rx.shared();
/// let handlers: Vec<_> = (0..3)
///     .map(|_| {
///         let rx = rx.clone();
///         executor
///             .try_spawn(async move {
///                 let mut done = 0u32;
///                 while let Some(job) = rx.recv().await {
///                     done += job;
///                 }
///                 Ok::<u32, ()>(done)
///             })
///             .unwrap()
///     })
///     .collect();
/// drop(rx);
/// let total = executor.block_on(async move {
///     for job in 1..=10 {
///         jobs.send(job).await.unwrap();
///     }
///     drop(jobs); // the handlers see the end
///     let mut total = 0;
///     for handler in handlers {
///         total += handler.await.unwrap().unwrap();
///     }
///     total
/// });
/// assert_eq!(total, 55, "each job handled once");
/// ```
///
/// # What it does not do
///
/// A consumer's turn lasts until a value comes: a value is never handed to
/// a consumer that is not awaiting `recv`. Each value costs one more lock
/// (the turn) than a single receiver's.
pub struct SharedReceiver<T> {
    turn: Arc<SharedMutex<Receiver<T>>>,
    name: Option<&'static str>,
}

impl<T> SharedReceiver<T> {
    /// Receives the next value, after the consumers ahead in line; `None`
    /// at the end (closed or every sender gone, and nothing left).
    pub fn recv(&self) -> SharedRecv<'_, T> {
        SharedRecv {
            turn: Turn::Waiting(self.turn.lock()),
            name: self.name,
        }
    }

    /// Receives the next value without waiting.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] also when another consumer holds the turn
    /// (a value there is promised to it); [`TryRecvError::Closed`].
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        match self.turn.try_lock() {
            Ok(mut receiver) => receiver.try_recv(),
            Err(_) => Err(TryRecvError::Empty),
        }
    }
}

/// The future of [`SharedReceiver::recv`]. Dropping it gives up its turn
/// (or its place in line for one); no value is lost.
#[must_use = "a receive does nothing unless awaited"]
pub struct SharedRecv<'a, T> {
    turn: Turn<'a, T>,
    name: Option<&'static str>,
}

/// Where a shared receive stands.
enum Turn<'a, T> {
    /// In line for the turn.
    Waiting(SharedLocking<'a, Receiver<T>>),
    /// Holding the turn: waiting for a value.
    Holding(SharedMutexGuard<'a, Receiver<T>>),
    /// Received, or saw the end.
    Done,
}

impl<T> Future for SharedRecv<'_, T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        loop {
            match &mut this.turn {
                Turn::Waiting(locking) => match Pin::new(locking).poll(cx) {
                    Poll::Ready(guard) => this.turn = Turn::Holding(guard),
                    Poll::Pending => {
                        // Behind another consumer: waiting for a value, as
                        // it is (not for room).
                        super::note_receive(this.name);
                        return Poll::Pending;
                    }
                },
                Turn::Holding(receiver) => {
                    let received = std::task::ready!(receiver.poll_recv(cx));
                    this.turn = Turn::Done;
                    return Poll::Ready(received);
                }
                Turn::Done => panic!("a receive polled after it completed"),
            }
        }
    }
}

impl<T> fmt::Debug for SharedRecv<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stands = match self.turn {
            Turn::Waiting(_) => "waiting for its turn",
            Turn::Holding(_) => "waiting for a value",
            Turn::Done => "done",
        };
        f.debug_struct("SharedRecv")
            .field("stands", &stands)
            .finish()
    }
}

impl<T> Clone for SharedReceiver<T> {
    fn clone(&self) -> Self {
        Self {
            turn: Arc::clone(&self.turn),
            name: self.name,
        }
    }
}

impl<T> fmt::Debug for SharedReceiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedReceiver")
            .field("consumers", &Arc::strong_count(&self.turn))
            .finish_non_exhaustive()
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        raw::wait::with_batch(&*self.inner, ChannelState::drop_receiver);
        while let Some(value) = self.inner.with(ChannelState::pop) {
            drop(value);
        }
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

/// The future of [`Receiver::recv`].
#[must_use = "a receive does nothing unless awaited"]
pub struct Recv<'a, T> {
    receiver: &'a mut Receiver<T>,
}

impl<T> Future for Recv<'_, T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.get_mut().receiver.poll_recv(cx)
    }
}

impl<T> fmt::Debug for Recv<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recv").finish_non_exhaustive()
    }
}
