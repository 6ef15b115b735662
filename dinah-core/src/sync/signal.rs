//! [`Signal`]: the latest value, in static storage, for one task to wait
//! for, with its [`SignalWait`] future.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use critical_section::Mutex;

use crate::raw::wait::{Mailbox, Put, critical};

/// The latest value, sent from anywhere (an interrupt handler, another
/// task) to the one task that waits for it, as embassy-sync's `Signal`: no
/// heap, a `const` constructor, one critical section per operation.
///
/// ```
/// use dinah::executor::{AsyncExecutor, ReadyQueue};
/// use dinah::sync::Signal;
///
/// static READING: Signal<u16> = Signal::new();
/// static QUEUE: ReadyQueue<1> = ReadyQueue::new();
///
/// READING.signal(512); // say, from an ADC interrupt
/// READING.signal(640); // replaces the reading not yet taken
/// let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
/// let seen = executor.run_until(READING.wait(), 8, || {});
/// assert_eq!(seen, 640);
/// assert!(!READING.signaled(), "taken");
/// ```
///
/// # Guarantees
///
/// - [`signal`](Self::signal) keeps the value until it is taken, replacing
///   one not yet taken (dropped after the critical section), and wakes the
///   waiting task.
/// - A wait completes with the value as soon as there is one, taking it.
///
/// # What it does not do
///
/// It keeps one waiter: a second task waiting at the same time displaces
/// the first, which is woken and, polled again, displaces the second, so
/// two waiters keep waking each other until a value comes (as embassy's;
/// use a [`Notify`](super::Notify) or a [`Channel`](super::Channel) for
/// several). Dropping a wait leaves its waker kept until the next signal
/// or wait (one spurious wake at most).
/// A value is not queued: signals faster than the waiter takes them are
/// merged into the latest.
pub struct Signal<T> {
    state: Mutex<RefCell<Mailbox<T>>>,
}

impl<T> Signal<T> {
    /// No value, nobody waiting.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            state: Mutex::new(RefCell::new(Mailbox::new())),
        }
    }

    /// Keeps `value` for the waiting task (replacing one not taken) and
    /// wakes it.
    pub fn signal(&self, value: T) {
        let put = critical(&self.state, |mailbox| mailbox.put(value));
        // A signal is never refused: nothing closes it.
        if let Put::Stored(waker, replaced) = put {
            drop(replaced);
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    /// Waits for a value and takes it.
    pub fn wait(&self) -> SignalWait<'_, T> {
        SignalWait { signal: self }
    }

    /// Takes the value, if there is one, without waiting.
    pub fn try_take(&self) -> Option<T> {
        critical(&self.state, Mailbox::take)
    }

    /// Drops the value not yet taken, if any.
    pub fn reset(&self) {
        drop(self.try_take());
    }

    /// Whether a value waits to be taken.
    #[must_use]
    pub fn signaled(&self) -> bool {
        critical(&self.state, |mailbox| mailbox.has_value())
    }

    fn poll_take(&self, waker: &Waker) -> Poll<T> {
        let (poll, displaced) = critical(&self.state, |mailbox| mailbox.poll_take(waker));
        if let Some(displaced) = displaced {
            displaced.wake();
        }
        match poll {
            Poll::Ready(Some(value)) => Poll::Ready(value),
            // A signal never ends.
            Poll::Ready(None) | Poll::Pending => Poll::Pending,
        }
    }
}

impl<T> Default for Signal<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for Signal<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("signaled", &self.signaled())
            .finish()
    }
}

/// The future of [`Signal::wait`]: completes with the next value, taking
/// it. Dropping it takes nothing.
#[must_use = "a wait does nothing unless awaited"]
pub struct SignalWait<'a, T> {
    signal: &'a Signal<T>,
}

impl<T> Future for SignalWait<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        self.signal.poll_take(cx.waker())
    }
}

impl<T> fmt::Debug for SignalWait<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignalWait").finish_non_exhaustive()
    }
}
