//! [`PubSub`]: the last `CAP` messages in static storage, each read by
//! every subscriber, with its [`Subscriber`] and [`NextMessage`] future.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use critical_section::Mutex;

use crate::raw;
use crate::raw::wait::{Lock, Missed, Ring, WaitEntry, WaitKey};

/// Messages that every subscriber reads, as embassy-sync's `PubSubChannel`
/// with immediate publishing and tokio's `broadcast`: the last `CAP`
/// messages kept, at most `W` subscribers waiting at once, no heap, a
/// `const` constructor, published to from anywhere (an interrupt handler
/// too).
///
/// ```
/// use dinah::executor::{AsyncExecutor, ReadyQueue};
/// use dinah::sync::PubSub;
///
/// static EVENTS: PubSub<u8, 4> = PubSub::new();
/// static QUEUE: ReadyQueue<1> = ReadyQueue::new();
///
/// let (mut logger, mut display) = (EVENTS.subscriber(), EVENTS.subscriber());
/// EVENTS.publish(1);
/// EVENTS.publish(2);
/// let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
/// let seen = executor.run_until(
///     async move {
///         let a = logger.next_message().await.unwrap();
///         let b = logger.next_message().await.unwrap();
///         let c = display.next_message().await.unwrap();
///         (a, b, c)
///     },
///     8,
///     || {},
/// );
/// assert_eq!(seen, (1, 2, 1), "each subscriber reads every message");
/// ```
///
/// # Guarantees
///
/// - Each subscriber reads every message published after it subscribed, in
///   order, unless it falls more than `CAP` behind: then its next read says
///   how many it missed ([`Missed::Lagged`]) and it goes on from the oldest
///   message kept.
/// - A publish never waits, and wakes every subscriber waiting, once.
///
/// # What it does not do
///
/// Publishers never wait for slow subscribers (no backpressure: use a
/// [`Channel`](super::Channel) for that). A message stays in its slot until
/// it is overwritten, read or not. Reading clones the message (`T:
/// Clone`). A wait that finds `W` subscribers waiting is refused with
/// [`Missed::LineFull`]. Nothing closes a static `PubSub`.
pub struct PubSub<T, const CAP: usize, const W: usize = 4> {
    state: Mutex<RefCell<Kept<T, CAP, W>>>,
}

/// A static `PubSub`'s messages and line.
type Kept<T, const CAP: usize, const W: usize> = Ring<[Option<T>; CAP], [WaitEntry; W]>;

impl<T, const CAP: usize, const W: usize> PubSub<T, CAP, W> {
    const FITS: () = assert!(
        CAP > 0 && W < u32::MAX as usize,
        "a PubSub keeps at least one message"
    );

    /// No message yet, nobody waiting.
    #[must_use]
    pub const fn new() -> Self {
        let () = Self::FITS;
        Self {
            state: Mutex::new(RefCell::new(Ring::new(
                [const { None }; CAP],
                [const { WaitEntry::VACANT }; W],
            ))),
        }
    }

    /// Publishes `message`, overwriting the oldest kept if `CAP` are kept
    /// (dropped after the critical section), and wakes every subscriber
    /// waiting.
    pub fn publish(&self, message: T) {
        let old = raw::wait::with_batch(self, |state, batch| state.send(message, batch));
        drop(old);
    }

    /// A subscriber that reads the messages published from now on.
    pub fn subscriber(&self) -> Subscriber<'_, T, CAP, W> {
        Subscriber {
            pubsub: self,
            next: self.with(|state| state.tail()),
        }
    }

    /// Messages published so far.
    #[must_use]
    pub fn published(&self) -> u64 {
        self.with(|state| state.tail())
    }
}

impl<T, const CAP: usize, const W: usize> Default for PubSub<T, CAP, W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const CAP: usize, const W: usize> Lock for PubSub<T, CAP, W> {
    type State = Kept<T, CAP, W>;

    fn with<R>(&self, f: impl FnOnce(&mut Self::State) -> R) -> R {
        raw::wait::critical(&self.state, f)
    }
}

impl<T, const CAP: usize, const W: usize> fmt::Debug for PubSub<T, CAP, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (published, waiting) = self.with(|state| (state.tail(), state.waiting()));
        f.debug_struct("PubSub")
            .field("published", &published)
            .field("waiting", &waiting)
            .finish_non_exhaustive()
    }
}

/// One reader of a [`PubSub`]: it remembers which message it reads next.
/// A clone reads from the same place on.
#[derive(Clone)]
pub struct Subscriber<'a, T, const CAP: usize, const W: usize = 4> {
    pubsub: &'a PubSub<T, CAP, W>,
    next: u64,
}

impl<'a, T: Clone, const CAP: usize, const W: usize> Subscriber<'a, T, CAP, W> {
    /// Waits for the next message and reads it.
    ///
    /// # Errors
    ///
    /// [`Missed::Lagged`] after falling behind (the next read goes on from
    /// the oldest message kept), [`Missed::LineFull`] when `W` subscribers
    /// already wait.
    pub fn next_message(&mut self) -> NextMessage<'_, 'a, T, CAP, W> {
        NextMessage {
            subscriber: self,
            waiting: None,
        }
    }

    /// The next message if there is one, without waiting.
    ///
    /// # Errors
    ///
    /// [`Missed::Lagged`] as for [`next_message`](Self::next_message).
    pub fn try_next_message(&mut self) -> Option<Result<T, Missed>> {
        let mut waiting = None;
        let waker = core::task::Waker::noop();
        let poll = self
            .pubsub
            .with(|state| state.poll_recv(&mut self.next, &mut waiting, waker, || 0));
        if let Some(key) = waiting {
            self.pubsub.with(|state| state.cancel(key));
        }
        match poll {
            Poll::Ready(outcome) => Some(outcome),
            Poll::Pending => None,
        }
    }
}

impl<T, const CAP: usize, const W: usize> Subscriber<'_, T, CAP, W> {
    /// Messages published that it has not read (those overwritten
    /// included).
    #[must_use]
    pub fn unread(&self) -> u64 {
        self.pubsub.with(|state| state.unread(self.next))
    }
}

impl<T, const CAP: usize, const W: usize> fmt::Debug for Subscriber<'_, T, CAP, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscriber")
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

/// The future of [`Subscriber::next_message`]. Dropping it gives up its
/// place in line; nothing is lost.
#[must_use = "a wait does nothing unless awaited"]
pub struct NextMessage<'s, 'a, T, const CAP: usize, const W: usize = 4> {
    subscriber: &'s mut Subscriber<'a, T, CAP, W>,
    waiting: Option<WaitKey>,
}

impl<T: Clone, const CAP: usize, const W: usize> Future for NextMessage<'_, '_, T, CAP, W> {
    type Output = Result<T, Missed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let subscriber = &mut *this.subscriber;
        let waiting = &mut this.waiting;
        subscriber
            .pubsub
            .with(|state| state.poll_recv(&mut subscriber.next, waiting, cx.waker(), || 0))
    }
}

impl<T, const CAP: usize, const W: usize> Drop for NextMessage<'_, '_, T, CAP, W> {
    fn drop(&mut self) {
        if let Some(key) = self.waiting.take() {
            self.subscriber.pubsub.with(|state| state.cancel(key));
        }
    }
}

impl<T, const CAP: usize, const W: usize> fmt::Debug for NextMessage<'_, '_, T, CAP, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NextMessage")
            .field("waiting", &self.waiting.is_some())
            .finish_non_exhaustive()
    }
}
