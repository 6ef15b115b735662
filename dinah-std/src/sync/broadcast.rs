//! Messages that every receiver reads: events, invalidations, a fan-out of
//! log lines. [`channel`] (or [`named`]) makes a [`Sender`] and a first
//! [`Receiver`], as tokio's `broadcast`.
//!
//! The same logic as the core's static [`PubSub`](dinah_core::sync::PubSub)
//! (one [`Ring`]), behind a short-held lock, with its slots allocated once.
//!
//! ```
//! use dinah::LocalExecutor;
//! use dinah::sync::broadcast;
//!
//! let executor = LocalExecutor::new();
//! let (events, mut audit) = broadcast::named("events", 16).unwrap();
//! let mut cache = events.subscribe();
//! events.send("user 7 renamed").unwrap();
//! executor.block_on(async {
//!     assert_eq!(audit.recv().await, Ok("user 7 renamed"));
//!     assert_eq!(cache.recv().await, Ok("user 7 renamed"));
//! });
//! ```
//!
//! # Guarantees
//!
//! - Each receiver reads every value sent after it subscribed, in order,
//!   unless it falls more than `capacity` behind: then its next receive
//!   says how many it missed ([`RecvError::Lagged`]) and it goes on from
//!   the oldest value kept.
//! - A send never waits, and wakes every receiver waiting, once.
//! - Once every sender is gone, a receiver reads what is left, then
//!   [`RecvError::Closed`].
//!
//! # What it does not do
//!
//! Senders never wait for slow receivers (no backpressure: use an
//! [`mpsc`](super::mpsc) channel for that). A value stays in its slot
//! until it is overwritten, read or not. Receiving clones the value.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use dinah_core::raw;
use dinah_core::raw::wait::{Lock, Missed, Ring, RingSlots, WaitKey};

use super::line::{Growing, Locked};
use crate::primitives::{AtomicUsize, Ordering};
use crate::queue::CapacityError;

/// The slots of a broadcast, allocated once.
struct Slots<T>(Box<[Option<T>]>);

impl<T> RingSlots for Slots<T> {
    type Item = T;
    fn slots(&self) -> &[Option<T>] {
        &self.0
    }
    fn slots_mut(&mut self) -> &mut [Option<T>] {
        &mut self.0
    }
}

/// What the senders and receivers share.
struct Shared<T> {
    state: Locked<Ring<Slots<T>, Growing>>,
    senders: AtomicUsize,
    receivers: AtomicUsize,
}

/// A broadcast keeping the last `capacity` values, with no name.
///
/// # Errors
///
/// [`CapacityError::Zero`] for a capacity of 0, [`CapacityError::Allocation`]
/// when its slots cannot be allocated.
pub fn channel<T: Clone>(capacity: usize) -> Result<(Sender<T>, Receiver<T>), CapacityError> {
    build(None, capacity)
}

/// [`channel`], named `name` in telemetry: a task waiting in `recv` is
/// reported as waiting in line for `name`.
///
/// # Errors
///
/// As [`channel`].
pub fn named<T: Clone>(
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
    let mut slots = Vec::new();
    slots
        .try_reserve_exact(capacity)
        .map_err(|_| CapacityError::Allocation {
            requested: capacity,
            item_size: size_of::<Option<T>>(),
        })?;
    slots.resize_with(capacity, || None);
    let shared = Arc::new(Shared {
        state: Locked::new(
            name,
            Ring::new(Slots(slots.into_boxed_slice()), Growing::default()),
        ),
        senders: AtomicUsize::new(1),
        receivers: AtomicUsize::new(1),
    });
    Ok((
        Sender {
            shared: Arc::clone(&shared),
        },
        Receiver { shared, next: 0 },
    ))
}

/// Every receiver is gone: the value, handed back.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SendError<T>(pub T);

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("every receiver of the broadcast is gone")
    }
}

impl<T: fmt::Debug> std::error::Error for SendError<T> {}

/// Why a receive gave no value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum RecvError {
    /// Every sender is gone and every value was read.
    Closed,
    /// The receiver fell behind: this many values were overwritten before
    /// it read them. The next receive reads the oldest value kept.
    Lagged(u64),
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Closed => f.write_str("every sender of the broadcast is gone"),
            Self::Lagged(missed) => write!(f, "the receiver fell behind by {missed} values"),
        }
    }
}

impl std::error::Error for RecvError {}

/// Why a `try_recv` gave no value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum TryRecvError {
    /// No value is there now.
    Empty,
    /// As [`RecvError::Closed`].
    Closed,
    /// As [`RecvError::Lagged`].
    Lagged(u64),
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("no value is there now"),
            Self::Closed => fmt::Display::fmt(&RecvError::Closed, f),
            Self::Lagged(missed) => fmt::Display::fmt(&RecvError::Lagged(*missed), f),
        }
    }
}

impl std::error::Error for TryRecvError {}

fn recv_error(missed: Missed) -> RecvError {
    match missed {
        Missed::Lagged(count) => RecvError::Lagged(count),
        // A growing line refuses no one: only a close ends a receive.
        Missed::Closed | Missed::LineFull => RecvError::Closed,
    }
}

/// An end that sends; clone it for more. The last one dropped closes the
/// broadcast.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Sender<T> {
    /// Sends `value` to every receiver, overwriting the oldest value kept
    /// if the broadcast is full (dropped after the lock), and wakes every
    /// receiver waiting. Returns how many receivers there are.
    ///
    /// # Errors
    ///
    /// [`SendError`] with the value, not kept, when every receiver is gone.
    pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
        let receivers = self.receiver_count();
        if receivers == 0 {
            return Err(SendError(value));
        }
        let old =
            raw::wait::with_batch(&self.shared.state, |state, batch| state.send(value, batch));
        drop(old);
        Ok(receivers)
    }

    /// A new receiver that reads the values sent from now on.
    pub fn subscribe(&self) -> Receiver<T> {
        self.shared.receivers.fetch_add(1, Ordering::Relaxed);
        Receiver {
            shared: Arc::clone(&self.shared),
            next: self.shared.state.with(|state| state.tail()),
        }
    }

    /// Receivers alive now.
    #[must_use]
    pub fn receiver_count(&self) -> usize {
        self.shared.receivers.load(Ordering::Acquire)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::Relaxed);
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            raw::wait::with_batch(&self.shared.state, Ring::close);
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("name", &self.shared.state.name)
            .field("receivers", &self.receiver_count())
            .finish_non_exhaustive()
    }
}

/// One reader: it remembers which value it reads next.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    next: u64,
}

impl<T: Clone> Receiver<T> {
    /// Waits for the next value and reads it (a clone).
    ///
    /// # Errors
    ///
    /// [`RecvError::Lagged`] after falling behind; [`RecvError::Closed`]
    /// once every sender is gone and every value was read.
    pub fn recv(&mut self) -> Recv<'_, T> {
        Recv {
            receiver: self,
            waiting: None,
        }
    }

    /// The next value if there is one, without waiting.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] when none is there now, and the errors of
    /// [`recv`](Self::recv).
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let mut waiting = None;
        let waker = std::task::Waker::noop();
        let poll = self
            .shared
            .state
            .with(|state| state.poll_recv(&mut self.next, &mut waiting, waker, || 0));
        if let Some(key) = waiting {
            self.shared.state.with(|state| state.cancel(key));
        }
        match poll {
            Poll::Ready(Ok(value)) => Ok(value),
            Poll::Ready(Err(missed)) => Err(match recv_error(missed) {
                RecvError::Closed => TryRecvError::Closed,
                RecvError::Lagged(count) => TryRecvError::Lagged(count),
            }),
            Poll::Pending => Err(TryRecvError::Empty),
        }
    }
}

impl<T> Receiver<T> {
    /// A new receiver that reads the values sent from now on.
    #[must_use]
    pub fn resubscribe(&self) -> Self {
        self.shared.receivers.fetch_add(1, Ordering::Relaxed);
        Self {
            shared: Arc::clone(&self.shared),
            next: self.shared.state.with(|state| state.tail()),
        }
    }

    /// Values sent that it has not read (those overwritten included).
    #[must_use]
    pub fn len(&self) -> u64 {
        self.shared.state.with(|state| state.unread(self.next))
    }

    /// Whether it has read every value sent.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.shared.receivers.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("name", &self.shared.state.name)
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

/// The future of [`Receiver::recv`]. Dropping it gives up its place in
/// line; nothing is lost.
#[must_use = "a receive does nothing unless awaited"]
pub struct Recv<'a, T> {
    receiver: &'a mut Receiver<T>,
    waiting: Option<WaitKey>,
}

impl<T: Clone> Future for Recv<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let receiver = &mut *this.receiver;
        let state = &receiver.shared.state;
        let now = || state.now();
        let poll = state
            .with(|ring| ring.poll_recv(&mut receiver.next, &mut this.waiting, cx.waker(), now));
        if poll.is_pending() {
            super::note_receive(state.name);
        }
        poll.map(|received| received.map_err(recv_error))
    }
}

impl<T> Drop for Recv<'_, T> {
    fn drop(&mut self) {
        if let Some(key) = self.waiting.take() {
            self.receiver.shared.state.with(|state| state.cancel(key));
        }
    }
}

impl<T> fmt::Debug for Recv<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recv")
            .field("waiting", &self.waiting.is_some())
            .finish_non_exhaustive()
    }
}
