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
//! - The two ends share one cell (an `Arc` of its state). A receiver that
//!   has its value (or learns none comes) while it is the cell's last end
//!   puts the cell back to new and keeps it on its thread for the next
//!   channel of the same value type made there: a request/reply loop
//!   allocates nothing once warm. At most 32 cells of each of 16 value
//!   types are kept per thread, and they are freed when the thread exits.
//!
//! # What it does not do
//!
//! The value type must be `'static` (the kept cells are found by type). A
//! cell is not kept when its receiver is dropped before the value came or
//! the sender went, nor when the sender's end is still being dropped on
//! another thread as the receiver finishes: it is freed, as tokio frees each
//! of its own.
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
    mailbox: Guarded<Mailbox<T>>,
}

/// A channel for one value, with no name.
pub fn channel<T: 'static>() -> (Sender<T>, Receiver<T>) {
    build(None)
}

/// A channel for one value, named `name` in telemetry: a task awaiting its
/// receiver is reported as waiting in line for `name`.
pub fn named<T: 'static>(name: &'static str) -> (Sender<T>, Receiver<T>) {
    build(Some(name))
}

fn build<T: 'static>(name: Option<&'static str>) -> (Sender<T>, Receiver<T>) {
    let inner = reuse().unwrap_or_else(|| {
        Arc::new(Inner {
            mailbox: Guarded::new(Mailbox::new()),
        })
    });
    (
        Sender {
            inner: Some(Arc::clone(&inner)),
        },
        Receiver {
            inner: Some(inner),
            name,
        },
    )
}

/// A cell kept on this thread by an earlier channel's receiver.
#[cfg(not(loom))]
fn reuse<T: 'static>() -> Option<Arc<Inner<T>>> {
    super::spare::take()
}

/// Loom's locks belong to one model run: none is kept for the next.
#[cfg(loom)]
fn reuse<T: 'static>() -> Option<Arc<Inner<T>>> {
    None
}

/// The receiver is done with `inner`, whose mailbox it saw `fresh` (as
/// new) when it took the value: keep it for the next channel if it is the
/// last end, put back to new first if it was not.
#[cfg(not(loom))]
fn retire<T: 'static>(inner: Arc<Inner<T>>, fresh: bool) {
    if !fresh {
        if Arc::strong_count(&inner) != 1 {
            return;
        }
        // The old state (a closed or ended mailbox) is dropped after the lock.
        let old = inner.mailbox.with(std::mem::take);
        drop(old);
    }
    super::spare::keep(inner);
}

#[cfg(loom)]
fn retire<T: 'static>(inner: Arc<Inner<T>>, _fresh: bool) {
    drop(inner);
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
        f.debug_struct("Sender").finish_non_exhaustive()
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
    /// Let go once the value is received or none can come.
    inner: Option<Arc<Inner<T>>>,
    name: Option<&'static str>,
}

impl<T: 'static> Receiver<T> {
    /// The value if it was sent, without waiting.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] while none was sent and the sender lives;
    /// [`TryRecvError::Closed`] when the sender is gone without sending, or
    /// the value was already received.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let Some(inner) = &self.inner else {
            return Err(TryRecvError::Closed);
        };
        let (value, ended, fresh) = inner.mailbox.with(|mailbox| {
            let value = mailbox.take();
            (value, mailbox.has_ended(), mailbox.is_fresh())
        });
        match value {
            Some(value) => {
                self.finish(fresh);
                Ok(value)
            }
            None if ended => {
                self.finish(fresh);
                Err(TryRecvError::Closed)
            }
            None => Err(TryRecvError::Empty),
        }
    }

    /// Lets go of the cell, `fresh` if its mailbox was seen as new:
    /// nothing more comes through it.
    fn finish(&mut self, fresh: bool) {
        if let Some(inner) = self.inner.take() {
            retire(inner, fresh);
        }
    }
}

impl<T> Receiver<T> {
    /// Refuses sends from now on; a value already sent can still be
    /// received.
    pub fn close(&mut self) {
        if let Some(inner) = &self.inner {
            inner.mailbox.with(Mailbox::refuse);
        }
    }
}

impl<T: 'static> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(inner) = &this.inner else {
            return Poll::Ready(Err(RecvError));
        };
        let (poll, displaced, fresh) = inner.mailbox.with(|mailbox| {
            let (poll, displaced) = mailbox.poll_take(cx.waker());
            (poll, displaced, mailbox.is_fresh())
        });
        // The one receiver's own earlier waker: no other task waits here.
        drop(displaced);
        match poll {
            Poll::Ready(value) => {
                this.finish(fresh);
                Poll::Ready(value.ok_or(RecvError))
            }
            Poll::Pending => {
                super::note_receive(this.name);
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let Some(inner) = &self.inner else {
            // Received, or ended: no value is left and no send comes.
            return;
        };
        // The value and the waker are dropped after the lock.
        let left = inner.mailbox.with(|mailbox| {
            mailbox.refuse();
            (mailbox.take(), mailbox.forget_waker())
        });
        drop(left);
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("name", &self.name)
            .field("done", &self.inner.is_none())
            .finish_non_exhaustive()
    }
}
