//! A channel for one value, sent once: the reply of a request to an actor,
//! the end of a job. [`channel`] (or [`named`]) makes a [`Sender`] and a
//! [`Receiver`], as tokio's `oneshot`.
//!
//! The same logic as the core's static [`Signal`](dinah_core::sync::Signal)
//! (one [`Mailbox`]), behind a short-held
//! lock, in one allocation shared by the two ends.
//!
//! ```
//! use dinah::LocalExecutor;
//! use dinah::sync::oneshot;
//!
//! let executor = LocalExecutor::new();
//! let (reply, answer) = oneshot::named("lookup reply");
//! executor
//!     .try_spawn(async move {
//!         let _ = reply.send(42); // the asker may have given up: fine
//!         Ok::<(), ()>(())
//!     })
//!     .unwrap();
//! assert_eq!(executor.block_on(answer), Ok(42));
//! ```
//!
//! # Guarantees
//!
//! - [`Sender::send`] hands the value to the receiver, or back to the
//!   caller if the receiver is gone or closed; it never waits.
//! - Awaiting the [`Receiver`] gives the value, or [`RecvError`] once the
//!   sender is dropped without sending.
//! - A value sent and never received is dropped with the receiver (or with
//!   the last end, outside any lock).
//!
//! # What it does not do
//!
//! It allocates once per channel (an `Arc` of its state), as tokio's does.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use dinah_core::raw::wait::{Mailbox, Put};
use dinah_core::sync::TryRecvError;

use super::line::Guarded;

/// What both ends share.
struct Inner<T> {
    name: Option<&'static str>,
    mailbox: Guarded<Mailbox<T>>,
}

/// A channel for one value, with no name.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    build(None)
}

/// A channel for one value, named `name` in telemetry: a task awaiting its
/// receiver is reported as waiting in line for `name`.
pub fn named<T>(name: &'static str) -> (Sender<T>, Receiver<T>) {
    build(Some(name))
}

fn build<T>(name: Option<&'static str>) -> (Sender<T>, Receiver<T>) {
    let inner = Arc::new(Inner {
        name,
        mailbox: Guarded::new(Mailbox::new()),
    });
    (
        Sender {
            inner: Some(Arc::clone(&inner)),
        },
        Receiver { inner, done: false },
    )
}

/// The end that sends the value, once.
pub struct Sender<T> {
    /// Taken by `send`, so its drop has nothing to end: the value stands
    /// for the end.
    inner: Option<Arc<Inner<T>>>,
}

impl<T> Sender<T> {
    /// Sends `value`: the receiver's await completes with it.
    ///
    /// # Errors
    ///
    /// `Err(value)`, handed back, when the receiver is gone or closed.
    pub fn send(mut self, value: T) -> Result<(), T> {
        let Some(inner) = self.inner.take() else {
            unreachable!("a sender sends once, consuming itself")
        };
        match inner.mailbox.with(|mailbox| mailbox.put(value)) {
            Put::Stored(waker, _) => {
                if let Some(waker) = waker {
                    waker.wake();
                }
                Ok(())
            }
            Put::Refused(value) => Err(value),
        }
    }

    /// Whether the receiver is gone or closed (a send would be refused).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.inner
            .as_ref()
            .is_none_or(|inner| inner.mailbox.with(|mailbox| mailbox.is_refused()))
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if let Some(inner) = &self.inner
            && let Some(waker) = inner.mailbox.with(Mailbox::end)
        {
            waker.wake();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("name", &self.inner.as_ref().and_then(|inner| inner.name))
            .finish_non_exhaustive()
    }
}

/// The sender was dropped without sending.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RecvError;

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the sender was dropped without sending")
    }
}

impl std::error::Error for RecvError {}

/// The end that receives the value: await it (a future of
/// `Result<T, RecvError>`). Dropping it refuses later sends.
#[must_use = "a receiver does nothing unless awaited"]
pub struct Receiver<T> {
    inner: Arc<Inner<T>>,
    done: bool,
}

impl<T> Receiver<T> {
    /// The value if it was sent, without waiting.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] while none was sent and the sender lives;
    /// [`TryRecvError::Closed`] when the sender is gone without sending, or
    /// the value was already received.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        if self.done {
            return Err(TryRecvError::Closed);
        }
        let (value, ended) = self
            .inner
            .mailbox
            .with(|mailbox| (mailbox.take(), mailbox.has_ended()));
        match value {
            Some(value) => {
                self.done = true;
                Ok(value)
            }
            None if ended => Err(TryRecvError::Closed),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Refuses sends from now on; a value already sent can still be
    /// received.
    pub fn close(&mut self) {
        self.inner.mailbox.with(Mailbox::refuse);
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(Err(RecvError));
        }
        let (poll, displaced) = this
            .inner
            .mailbox
            .with(|mailbox| mailbox.poll_take(cx.waker()));
        // The one receiver's own earlier waker: no other task waits here.
        drop(displaced);
        match poll {
            Poll::Ready(value) => {
                this.done = true;
                Poll::Ready(value.ok_or(RecvError))
            }
            Poll::Pending => {
                super::note_receive(this.inner.name);
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if self.done {
            // Received, or ended: no value is left and no send comes.
            return;
        }
        // The value and the waker are dropped after the lock.
        let left = self.inner.mailbox.with(|mailbox| {
            mailbox.refuse();
            (mailbox.take(), mailbox.forget_waker())
        });
        drop(left);
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("name", &self.inner.name)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}
