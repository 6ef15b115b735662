//! [`Channel`]: a bounded, many-sender, one-receiver channel in static
//! storage, with its [`Sender`], [`Receiver`], [`SendFuture`] and [`Recv`]
//! future. Its halves are named as those of the hosted `sync::mpsc`
//! channel, which is sized at run time, and live in this module so the two
//! sets of names never meet (`sync::channel::Sender`, `sync::mpsc::Sender`).
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use critical_section::Mutex;
use heapless::Deque;

use super::{ChannelFigures, SendError, TryRecvError};
use crate::raw;
use crate::raw::wait::{ChannelLock, ChannelState, Lock, Sending, WaitEntry};

type State<T, const N: usize, const W: usize> = ChannelState<Deque<T, N>, [WaitEntry; W]>;

/// A channel of at most `N` values of `T`, where at most `W` senders can
/// wait for a slot at once: no heap, a `const` constructor, safe from
/// interrupt handlers.
///
/// [`split`](Self::split) hands out its one [`Receiver`] and a first
/// [`Sender`]; senders are cloned for more. An interrupt handler with no
/// sender of its own calls [`try_send`](Self::try_send) on the channel.
///
/// ```
/// use core::pin::pin;
/// use dinah::executor::{AsyncExecutor, ReadyQueue};
/// use dinah::sync::Channel;
///
/// static READINGS: Channel<u16, 4> = Channel::named("readings");
/// static QUEUE: ReadyQueue<2> = ReadyQueue::new();
///
/// let (tx, mut rx) = READINGS.split().unwrap();
/// let mut producer = pin!(Some(async move {
///     for reading in 0..10 {
///         tx.send(reading).await.unwrap(); // waits while all 4 slots are full
///     }
/// }));
/// let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
/// executor.try_spawn(producer.as_mut()).unwrap();
/// let sum = executor.run_until(
///     async move {
///         let mut sum = 0;
///         while let Some(reading) = rx.recv().await {
///             sum += reading;
///         }
///         sum // the end: every sender is gone and nothing is left
///     },
///     64,
///     || {},
/// );
/// assert_eq!(sum, 45);
/// assert_eq!(READINGS.figures().high_water, 4);
/// ```
///
/// # Guarantees
///
/// - Values come out in the order they went in.
/// - Senders waiting for room are served first in, first out; a slot freed
///   by a receive goes to the first in line, and a `try_send` never jumps
///   the line. No waiter spins: each is woken once, when its turn comes.
/// - A value never is lost: it is received, or handed back in a
///   [`SendError`] (closed, or the line of `W` waiters full), or dropped
///   with the receiver (values sent and not received when the receiver goes
///   away are dropped then).
/// - Receivers see the end (`None`) once the channel is closed or every
///   [`Sender`] is gone, and every value sent before has been received.
///
/// # What it does not do
///
/// It has one receiver. It keeps no clock, so its figures do not say how
/// long senders have waited. `W` bounds the line: a `send` that finds `W`
/// senders already waiting is refused with
/// [`Refusal::LineFull`](super::Refusal::LineFull) rather than wait
/// unseen. Values sent through [`try_send`](Self::try_send) on the channel
/// do not count as a sender: they are refused once the channel ends.
pub struct Channel<T, const N: usize, const W: usize = 4> {
    name: Option<&'static str>,
    state: Mutex<RefCell<State<T, N, W>>>,
}

impl<T, const N: usize, const W: usize> Channel<T, N, W> {
    const SIZES: () = assert!(
        N > 0 && W < u32::MAX as usize,
        "a channel holds at least one value"
    );

    /// An empty channel with no name.
    #[must_use]
    pub const fn new() -> Self {
        Self::with_name(None)
    }

    /// An empty channel named `name` in its figures.
    #[must_use]
    pub const fn named(name: &'static str) -> Self {
        Self::with_name(Some(name))
    }

    const fn with_name(name: Option<&'static str>) -> Self {
        let () = Self::SIZES;
        Self {
            name,
            state: Mutex::new(RefCell::new(ChannelState::new(
                Deque::new(),
                [const { WaitEntry::VACANT }; W],
            ))),
        }
    }

    /// Its receiver and a first sender; `None` if they were handed out
    /// before (a channel has one receiver, once).
    pub fn split(&self) -> Option<(Sender<'_, T, N, W>, Receiver<'_, T, N, W>)> {
        self.with(ChannelState::open)
            .then(|| (Sender { channel: self }, Receiver { channel: self }))
    }

    /// Sends `value` if a slot is free and no sender waits; from a task or
    /// an interrupt handler.
    ///
    /// # Errors
    ///
    /// The value, with [`Refusal::WouldWait`](super::Refusal::WouldWait)
    /// or [`Refusal::Closed`](super::Refusal::Closed).
    pub fn try_send(&self, value: T) -> Result<(), SendError<T>> {
        raw::wait::try_send(self, value)
    }

    /// Its name, if it was given one.
    #[must_use]
    pub fn name(&self) -> Option<&'static str> {
        self.name
    }

    /// What it holds and who waits, now.
    #[must_use]
    pub fn figures(&self) -> ChannelFigures {
        self.with(|state| state.figures(self.name))
    }
}

impl<T, const N: usize, const W: usize> Default for Channel<T, N, W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize, const W: usize> fmt::Debug for Channel<T, N, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("figures", &self.figures())
            .finish()
    }
}

impl<T, const N: usize, const W: usize> Lock for Channel<T, N, W> {
    type State = State<T, N, W>;

    fn with<R>(&self, f: impl FnOnce(&mut Self::State) -> R) -> R {
        crate::raw::wait::critical(&self.state, f)
    }
}

impl<T, const N: usize, const W: usize> ChannelLock for Channel<T, N, W> {
    type Buffer = Deque<T, N>;
    type Store = [WaitEntry; W];
}

/// The future of [`Sender::send`].
pub type SendFuture<'a, T, const N: usize, const W: usize> = Sending<&'a Channel<T, N, W>>;

/// A sending end of a [`Channel`]; clone it for more. When the last one
/// goes, the receiver sees the end once it has taken what was sent.
pub struct Sender<'a, T, const N: usize, const W: usize = 4> {
    channel: &'a Channel<T, N, W>,
}

impl<'a, T, const N: usize, const W: usize> Sender<'a, T, N, W> {
    /// Sends `value`, waiting in line while the channel is full.
    ///
    /// Dropping the future before it completes takes `value` back out of
    /// line (it is dropped with the future), and a slot it had been granted
    /// goes to the next sender.
    ///
    /// # Errors
    ///
    /// The value, with [`Refusal::Closed`](super::Refusal::Closed) when
    /// the receiver closed or went away, or
    /// [`Refusal::LineFull`](super::Refusal::LineFull) when `W` senders
    /// already wait.
    pub fn send(&self, value: T) -> SendFuture<'a, T, N, W> {
        Sending::new(self.channel, value)
    }

    /// Sends `value` if a slot is free and no sender waits.
    ///
    /// # Errors
    ///
    /// As [`Channel::try_send`].
    pub fn try_send(&self, value: T) -> Result<(), SendError<T>> {
        self.channel.try_send(value)
    }

    /// Whether the receiver closed the channel or went away.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.channel.with(|state| state.is_closed())
    }

    /// The channel.
    #[must_use]
    pub fn channel(&self) -> &'a Channel<T, N, W> {
        self.channel
    }
}

impl<T, const N: usize, const W: usize> Clone for Sender<'_, T, N, W> {
    fn clone(&self) -> Self {
        self.channel.with(ChannelState::add_sender);
        Self {
            channel: self.channel,
        }
    }
}

impl<T, const N: usize, const W: usize> Drop for Sender<'_, T, N, W> {
    fn drop(&mut self) {
        if let Some(receiver) = self.channel.with(ChannelState::drop_sender) {
            receiver.wake();
        }
    }
}

impl<T, const N: usize, const W: usize> fmt::Debug for Sender<'_, T, N, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("name", &self.channel.name)
            .finish()
    }
}

/// The receiving end of a [`Channel`]. Dropping it closes the channel:
/// waiting senders get their values back, and values not yet received are
/// dropped.
pub struct Receiver<'a, T, const N: usize, const W: usize = 4> {
    channel: &'a Channel<T, N, W>,
}

impl<'a, T, const N: usize, const W: usize> Receiver<'a, T, N, W> {
    /// Receives the oldest value, waiting while there is none; `None` at
    /// the end (closed or every sender gone, and nothing left).
    pub fn recv(&mut self) -> Recv<'_, 'a, T, N, W> {
        Recv { receiver: self }
    }

    /// [`recv`](Self::recv) as a poll, for hand-written futures and streams.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        raw::wait::poll_recv(self.channel, cx)
    }

    /// Receives the oldest value without waiting.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] or [`TryRecvError::Closed`].
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        raw::wait::with_batch(self.channel, |state, batch| state.try_recv(batch))
    }

    /// Closes the channel: senders waiting and senders to come get their
    /// values back; values already sent can still be received.
    pub fn close(&mut self) {
        raw::wait::with_batch(self.channel, ChannelState::close);
    }

    /// The channel.
    #[must_use]
    pub fn channel(&self) -> &'a Channel<T, N, W> {
        self.channel
    }
}

impl<T, const N: usize, const W: usize> Drop for Receiver<'_, T, N, W> {
    fn drop(&mut self) {
        raw::wait::with_batch(self.channel, ChannelState::drop_receiver);
        // One at a time, outside the critical section: a value's drop may
        // take its time.
        while let Some(value) = self.channel.with(ChannelState::pop) {
            drop(value);
        }
    }
}

impl<T, const N: usize, const W: usize> fmt::Debug for Receiver<'_, T, N, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("name", &self.channel.name)
            .finish()
    }
}

/// The future of [`Receiver::recv`].
#[must_use = "a receive does nothing unless awaited"]
pub struct Recv<'r, 'a, T, const N: usize, const W: usize> {
    receiver: &'r mut Receiver<'a, T, N, W>,
}

impl<T, const N: usize, const W: usize> Future for Recv<'_, '_, T, N, W> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.get_mut().receiver.poll_recv(cx)
    }
}

impl<T, const N: usize, const W: usize> fmt::Debug for Recv<'_, '_, T, N, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recv").finish_non_exhaustive()
    }
}
