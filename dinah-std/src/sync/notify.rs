//! [`SharedNotify`]: a notification that tasks on any thread wait for, with
//! its [`SharedNotified`] future.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use dinah_core::raw;
use dinah_core::raw::wait::{Lock, Notice, NoticeLock, Notified};

use super::line::{Growing, Locked};

type Inner = Locked<Notice<Growing>>;

impl NoticeLock for Inner {
    type Store = Growing;
}

/// Wakes tasks that wait for something to happen, on any thread; share it
/// in an `Arc` (its futures borrow it), as tokio's `Notify`.
///
/// The same logic as the core's static [`Notify`](dinah_core::sync::Notify)
/// (one [`Notice`](dinah_core::raw::wait::Notice)), behind a lock, with a
/// line that grows.
///
/// ```
/// use std::sync::Arc;
/// use dinah::LocalExecutor;
/// use dinah::sync::SharedNotify;
///
/// let executor = LocalExecutor::new();
/// let config_changed = Arc::new(SharedNotify::new());
/// let watcher = executor
///     .try_spawn({
///         let config_changed = Arc::clone(&config_changed);
///         async move {
///             config_changed.notified().await;
///             Ok::<&str, ()>("reloaded")
///         }
///     })
///     .unwrap();
/// executor.tick(usize::MAX); // the watcher waits
/// config_changed.notify_waiters();
/// assert_eq!(executor.block_on(watcher).unwrap(), Ok("reloaded"));
/// ```
///
/// # Guarantees
///
/// Those of the core's `Notify`: [`notify_one`](Self::notify_one) wakes the
/// task that has waited longest or keeps one notification for the next
/// wait; [`notify_waiters`](Self::notify_waiters) wakes every task waiting
/// at the time and keeps nothing; a wait dropped after a `notify_one`
/// reached it passes it on; a wait joins the line at its first poll. Any
/// number may wait.
///
/// # What it does not do
///
/// It carries no value (a [`mpsc`](super::mpsc) channel does). While a
/// `notify_waiters` with more than four waiters is being handed out, a task
/// that joins the line may be woken by it too.
pub struct SharedNotify {
    inner: Inner,
}

impl SharedNotify {
    /// Nothing kept and nobody waiting.
    #[must_use]
    pub fn new() -> Self {
        Self {
            inner: Locked::new(None, Notice::new(Growing::default())),
        }
    }

    /// Nothing kept and nobody waiting, named `name` in telemetry: a task
    /// waiting for it long is reported as `NoWake` waiting for `name`.
    #[must_use]
    pub fn named(name: &'static str) -> Self {
        Self {
            inner: Locked::new(Some(name), Notice::new(Growing::default())),
        }
    }

    /// Wakes the task that has waited longest, or keeps the notification
    /// for the next wait.
    pub fn notify_one(&self) {
        raw::wait::notify_one(&self.inner);
    }

    /// Wakes every task waiting now; keeps nothing.
    pub fn notify_waiters(&self) {
        raw::wait::notify_waiters(&self.inner);
    }

    /// Waits for a notification (one kept for it completes it at once).
    pub fn notified(&self) -> SharedNotified<'_> {
        SharedNotified {
            inner: Notified::new(&self.inner),
            name: self.inner.name,
        }
    }

    /// Tasks waiting now.
    #[must_use]
    pub fn waiting(&self) -> u32 {
        self.inner.with(|state| state.waiting())
    }
}

impl Default for SharedNotify {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SharedNotify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (waiting, kept) = self.inner.with(|state| (state.waiting(), state.is_kept()));
        f.debug_struct("SharedNotify")
            .field("waiting", &waiting)
            .field("kept", &kept)
            .finish()
    }
}

/// The future of [`SharedNotify::notified`]. Dropping it gives up its
/// place; a `notify_one` it had been given and not seen goes to the next
/// waiter.
#[must_use = "a wait does nothing unless awaited"]
pub struct SharedNotified<'a> {
    inner: Notified<&'a Inner>,
    name: Option<&'static str>,
}

impl Future for SharedNotified<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // A growing line refuses no one, and nothing closes a notify.
        let poll = Pin::new(&mut self.inner).poll(cx).map(drop);
        if poll.is_pending() {
            super::note_receive(self.name);
        }
        poll
    }
}

impl fmt::Debug for SharedNotified<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedNotified")
            .field("waiting", &self.inner.is_waiting())
            .finish()
    }
}
