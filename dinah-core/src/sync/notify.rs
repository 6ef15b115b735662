//! [`Notify`]: a notification in static storage that tasks wait for, with
//! its [`Wait`] future.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use critical_section::Mutex;

use super::Refusal;
use crate::raw;
use crate::raw::wait::{Lock, Notice, NoticeLock, Notified, WaitEntry};

/// Wakes tasks that wait for something to happen, where at most `W` tasks
/// can wait at once: no heap, a `const` constructor, safe from interrupt
/// handlers (an interrupt can `notify_one` a task).
///
/// ```
/// use dinah::executor::{AsyncExecutor, ReadyQueue};
/// use dinah::sync::Notify;
///
/// static DATA_READY: Notify = Notify::new();
/// static QUEUE: ReadyQueue<1> = ReadyQueue::new();
///
/// // An interrupt handler (or another task) says the data is there before
/// // anyone waits: the notification is kept for the next wait.
/// DATA_READY.notify_one();
/// let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
/// let seen = executor.run_until(async { DATA_READY.notified().await }, 8, || {});
/// assert_eq!(seen, Ok(()));
/// ```
///
/// # Guarantees
///
/// - [`notify_one`](Self::notify_one) wakes the task that has waited
///   longest; with nobody waiting it keeps one notification for the next
///   wait (several kept notifications are one).
/// - [`notify_waiters`](Self::notify_waiters) wakes every task waiting at
///   the time, and keeps nothing.
/// - A wait dropped after a `notify_one` reached it, before it saw it,
///   passes the notification on to the next waiter (or keeps it).
/// - A wait joins the line at its first poll: a notification before that
///   is kept only if it was a `notify_one`.
///
/// # What it does not do
///
/// It carries no value (a [`Channel`](super::Channel) does). `W` bounds the
/// line: a wait that finds `W` tasks waiting is refused with
/// [`Refusal::LineFull`]. While a `notify_waiters` with more than four
/// waiters is being handed out, a task that joins the line may be woken by
/// it too.
pub struct Notify<const W: usize = 4> {
    state: Mutex<RefCell<Notice<[WaitEntry; W]>>>,
}

impl<const W: usize> Notify<W> {
    const FITS: () = assert!(W < u32::MAX as usize, "too many waiters");

    /// Nothing kept and nobody waiting.
    #[must_use]
    pub const fn new() -> Self {
        let () = Self::FITS;
        Self {
            state: Mutex::new(RefCell::new(Notice::new([const { WaitEntry::VACANT }; W]))),
        }
    }

    /// Wakes the task that has waited longest, or keeps the notification
    /// for the next wait.
    pub fn notify_one(&self) {
        raw::wait::notify_one(self);
    }

    /// Wakes every task waiting now; keeps nothing.
    pub fn notify_waiters(&self) {
        raw::wait::notify_waiters(self);
    }

    /// Waits for a notification (one kept for it completes it at once).
    ///
    /// # Errors
    ///
    /// [`Refusal::LineFull`] when `W` tasks already wait.
    pub fn notified(&self) -> Wait<'_, W> {
        Wait {
            inner: Notified::new(self),
        }
    }

    /// Tasks waiting now.
    #[must_use]
    pub fn waiting(&self) -> u32 {
        self.with(|state| state.waiting())
    }
}

impl<const W: usize> Default for Notify<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: usize> Lock for Notify<W> {
    type State = Notice<[WaitEntry; W]>;

    fn with<R>(&self, f: impl FnOnce(&mut Self::State) -> R) -> R {
        raw::wait::critical(&self.state, f)
    }
}

impl<const W: usize> NoticeLock for Notify<W> {
    type Store = [WaitEntry; W];
}

impl<const W: usize> fmt::Debug for Notify<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (waiting, kept) = self.with(|state| (state.waiting(), state.is_kept()));
        f.debug_struct("Notify")
            .field("waiting", &waiting)
            .field("kept", &kept)
            .finish()
    }
}

/// The future of [`Notify::notified`]. Dropping it gives up its place; a
/// `notify_one` it had been given and not seen goes to the next waiter.
#[must_use = "a wait does nothing unless awaited"]
pub struct Wait<'a, const W: usize = 4> {
    inner: Notified<&'a Notify<W>>,
}

impl<const W: usize> Future for Wait<'_, W> {
    type Output = Result<(), Refusal>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.inner).poll(cx)
    }
}

impl<const W: usize> fmt::Debug for Wait<'_, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait")
            .field("waiting", &self.inner.is_waiting())
            .finish()
    }
}
