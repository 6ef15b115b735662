//! A value that any number of receivers follow, each told when it changes:
//! configuration, a mode, a shutdown state. [`channel`] (or [`named`])
//! makes a [`Sender`] and a first [`Receiver`], as tokio's `watch`.
//!
//! The same logic as the core's static [`Watch`](dinah_core::sync::Watch)
//! (one [`Watched`]), behind a short-held lock, with a line that grows;
//! the value is kept in an `Arc`, so a [`Ref`] to it outlives the lock and
//! a send never waits for readers.
//!
//! ```
//! use dinah::LocalExecutor;
//! use dinah::sync::watch;
//!
//! let executor = LocalExecutor::new();
//! let (config, mut follower) = watch::named("config", 1u32);
//! let reload = executor
//!     .try_spawn(async move {
//!         follower.changed().await.unwrap();
//!         Ok::<u32, ()>(*follower.borrow_and_update())
//!     })
//!     .unwrap();
//! executor.tick(usize::MAX); // the follower waits
//! config.send(2).unwrap();
//! assert_eq!(executor.block_on(reload).unwrap(), Ok(2));
//! ```
//!
//! # Guarantees
//!
//! - A receiver sees the latest value: [`Receiver::changed`] completes at
//!   once when a value was sent since the receiver last marked one seen,
//!   otherwise at the next send.
//! - Each send wakes every receiver waiting at the time, once.
//! - Once the sender is gone, `changed` says [`RecvError`] after the last
//!   value is seen; the value stays readable.
//!
//! # What it does not do
//!
//! It keeps no history: values sent while a receiver was not looking are
//! merged into the latest.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use dinah_core::raw;
use dinah_core::raw::wait::{Lock, WaitKey, Watched};

use super::line::{Growing, Locked};
use crate::primitives::{AtomicUsize, Ordering};

/// What the sender and the receivers share.
struct Shared<T> {
    state: Locked<Watched<Arc<T>, Growing>>,
    receivers: AtomicUsize,
}

/// A watch starting at `value`, with no name.
pub fn channel<T>(value: T) -> (Sender<T>, Receiver<T>) {
    build(None, value)
}

/// A watch starting at `value`, named `name` in telemetry: a task waiting
/// in `changed` is reported as waiting in line for `name`.
pub fn named<T>(name: &'static str, value: T) -> (Sender<T>, Receiver<T>) {
    build(Some(name), value)
}

fn build<T>(name: Option<&'static str>, value: T) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Locked::new(name, Watched::new(Arc::new(value), Growing::default())),
        receivers: AtomicUsize::new(1),
    });
    (
        Sender {
            shared: Arc::clone(&shared),
        },
        Receiver { shared, seen: 0 },
    )
}

/// The value, read: it stays as it was when read, whatever is sent after.
pub struct Ref<T>(Arc<T>);

impl<T> Deref for Ref<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for Ref<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// Every receiver is gone: the value, handed back.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SendError<T>(pub T);

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("every receiver of the watch is gone")
    }
}

impl<T: fmt::Debug> std::error::Error for SendError<T> {}

/// The sender is gone and the last value was seen.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RecvError;

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the watch's sender is gone")
    }
}

impl std::error::Error for RecvError {}

/// The end that sends; dropping it closes the watch.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Sender<T> {
    /// Replaces the value and wakes every receiver waiting.
    ///
    /// # Errors
    ///
    /// [`SendError`] with the value, not stored, when every receiver is
    /// gone (as tokio's; [`send_replace`](Self::send_replace) stores it
    /// anyway).
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        if self.receiver_count() == 0 {
            return Err(SendError(value));
        }
        self.send_replace(value);
        Ok(())
    }

    /// Replaces the value, wakes every receiver waiting, and returns the
    /// value it replaced (or drops it, if another `Ref` still reads it).
    pub fn send_replace(&self, value: T) -> Option<T> {
        let old = raw::wait::with_batch(&self.shared.state, |state, batch| {
            state.send(Arc::new(value), batch)
        });
        Arc::into_inner(old)
    }

    /// The value now.
    #[must_use]
    pub fn borrow(&self) -> Ref<T> {
        Ref(self.shared.state.with(|state| Arc::clone(state.value())))
    }

    /// A new receiver that has seen the value now.
    pub fn subscribe(&self) -> Receiver<T> {
        self.shared.receivers.fetch_add(1, Ordering::Relaxed);
        let seen = self.shared.state.with(|state| state.version());
        Receiver {
            shared: Arc::clone(&self.shared),
            seen,
        }
    }

    /// Receivers alive now.
    #[must_use]
    pub fn receiver_count(&self) -> usize {
        self.shared.receivers.load(Ordering::Acquire)
    }

    /// Whether every receiver is gone.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.receiver_count() == 0
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        raw::wait::with_batch(&self.shared.state, Watched::close);
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

/// One follower: it remembers the version it saw last. A clone starts
/// from the same version.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    seen: u64,
}

impl<T> Receiver<T> {
    /// The value now, without marking it seen.
    #[must_use]
    pub fn borrow(&self) -> Ref<T> {
        Ref(self.shared.state.with(|state| Arc::clone(state.value())))
    }

    /// The value now, marked seen.
    pub fn borrow_and_update(&mut self) -> Ref<T> {
        let (value, version) = self
            .shared
            .state
            .with(|state| (Arc::clone(state.value()), state.version()));
        self.seen = version;
        Ref(value)
    }

    /// Whether a value was sent since this receiver last marked one seen.
    ///
    /// # Errors
    ///
    /// [`RecvError`] once the sender is gone (whether or not the last
    /// value was seen; `changed` still gives an unseen one).
    pub fn has_changed(&self) -> Result<bool, RecvError> {
        let (version, closed) = self
            .shared
            .state
            .with(|state| (state.version(), state.is_closed()));
        if closed {
            return Err(RecvError);
        }
        Ok(version != self.seen)
    }

    /// Waits for a value newer than the one this receiver last marked seen,
    /// and marks it seen (read it with [`borrow`](Self::borrow)).
    ///
    /// # Errors
    ///
    /// [`RecvError`] when the sender is gone and the last value was seen.
    pub fn changed(&mut self) -> Changed<'_, T> {
        Changed {
            receiver: self,
            waiting: None,
        }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.shared.receivers.fetch_add(1, Ordering::Relaxed);
        Self {
            shared: Arc::clone(&self.shared),
            seen: self.seen,
        }
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
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

/// The future of [`Receiver::changed`]. Dropping it gives up its place in
/// line; nothing is lost (the next `changed` sees the change).
#[must_use = "a wait does nothing unless awaited"]
pub struct Changed<'a, T> {
    receiver: &'a mut Receiver<T>,
    waiting: Option<WaitKey>,
}

impl<T> Future for Changed<'_, T> {
    type Output = Result<(), RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let receiver = &mut *this.receiver;
        let state = &receiver.shared.state;
        let now = || state.now();
        let poll = state.with(|watched| {
            watched.poll_changed(&mut receiver.seen, &mut this.waiting, cx.waker(), now)
        });
        match poll {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            // A growing line refuses no one: only a close ends it.
            Poll::Ready(Err(_)) => Poll::Ready(Err(RecvError)),
            Poll::Pending => {
                super::note_receive(state.name);
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for Changed<'_, T> {
    fn drop(&mut self) {
        if let Some(key) = self.waiting.take() {
            self.receiver.shared.state.with(|state| state.cancel(key));
        }
    }
}

impl<T> fmt::Debug for Changed<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Changed")
            .field("waiting", &self.waiting.is_some())
            .finish_non_exhaustive()
    }
}
