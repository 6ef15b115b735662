//! [`Watch`]: the latest value in static storage, that any number of
//! receivers follow, with its [`WatchReceiver`] and [`Changed`] future.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use critical_section::Mutex;

use super::Refusal;
use crate::raw;
use crate::raw::wait::{Lock, WaitEntry, WaitKey, Watched};

/// The latest value (a configuration, a mode, a measurement) that tasks
/// follow, each told when it changes, as embassy-sync's `Watch` and tokio's
/// `watch`: no heap, a `const` constructor, at most `W` receivers waiting
/// at once, sent to from anywhere (an interrupt handler too).
///
/// ```
/// use dinah::executor::{AsyncExecutor, ReadyQueue};
/// use dinah::sync::Watch;
///
/// #[derive(Clone, Copy, PartialEq, Debug)]
/// enum Mode { Idle, Sampling }
///
/// static MODE: Watch<Mode> = Watch::new(Mode::Idle);
/// static QUEUE: ReadyQueue<1> = ReadyQueue::new();
///
/// let mut follower = MODE.receiver();
/// MODE.send(Mode::Sampling); // say, from a button's interrupt
/// let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
/// let seen = executor.run_until(async move { follower.changed().await }, 8, || {});
/// assert_eq!(seen, Ok(Mode::Sampling));
/// ```
///
/// # Guarantees
///
/// - A receiver sees the latest value: a [`changed`](WatchReceiver::changed)
///   completes at once when a value was sent since the receiver last looked,
///   otherwise at the next send, with the value then.
/// - Each send wakes every receiver waiting at the time, once.
///
/// # What it does not do
///
/// It keeps no history: values sent while a receiver was not looking are
/// merged into the latest. Reading clones the value (`T: Clone`). A wait
/// that finds `W` receivers waiting is refused with [`Refusal::LineFull`].
/// Nothing closes a static watch.
pub struct Watch<T, const W: usize = 4> {
    state: Mutex<RefCell<Watched<T, [WaitEntry; W]>>>,
}

impl<T, const W: usize> Watch<T, W> {
    const FITS: () = assert!(W < u32::MAX as usize, "too many waiters");

    /// `value`, nobody waiting.
    #[must_use]
    pub const fn new(value: T) -> Self {
        let () = Self::FITS;
        Self {
            state: Mutex::new(RefCell::new(Watched::new(
                value,
                [const { WaitEntry::VACANT }; W],
            ))),
        }
    }

    /// Replaces the value and wakes every receiver waiting; the value it
    /// replaces is dropped after the critical section.
    pub fn send(&self, value: T) {
        let old = raw::wait::with_batch(self, |state, batch| state.send(value, batch));
        drop(old);
    }

    /// A receiver that has seen the value now (its first `changed` waits
    /// for the next send).
    pub fn receiver(&self) -> WatchReceiver<'_, T, W> {
        WatchReceiver {
            watch: self,
            seen: self.with(|state| state.version()),
        }
    }

    /// How many values were sent.
    #[must_use]
    pub fn version(&self) -> u64 {
        self.with(|state| state.version())
    }

    /// Receivers waiting now.
    #[must_use]
    pub fn waiting(&self) -> u32 {
        self.with(|state| state.waiting())
    }
}

impl<T: Clone, const W: usize> Watch<T, W> {
    /// A copy of the value now.
    #[must_use]
    pub fn get(&self) -> T {
        self.with(|state| state.value().clone())
    }
}

impl<T, const W: usize> Lock for Watch<T, W> {
    type State = Watched<T, [WaitEntry; W]>;

    fn with<R>(&self, f: impl FnOnce(&mut Self::State) -> R) -> R {
        raw::wait::critical(&self.state, f)
    }
}

impl<T, const W: usize> fmt::Debug for Watch<T, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (version, waiting) = self.with(|state| (state.version(), state.waiting()));
        f.debug_struct("Watch")
            .field("version", &version)
            .field("waiting", &waiting)
            .finish_non_exhaustive()
    }
}

/// One follower of a [`Watch`]: it remembers the version it saw last.
/// Clones start from the same version.
#[derive(Clone)]
pub struct WatchReceiver<'a, T, const W: usize = 4> {
    watch: &'a Watch<T, W>,
    seen: u64,
}

impl<'a, T: Clone, const W: usize> WatchReceiver<'a, T, W> {
    /// Waits for a value newer than the one this receiver saw last, and
    /// returns a copy of the value then.
    ///
    /// # Errors
    ///
    /// [`Refusal::LineFull`] when `W` receivers already wait.
    pub fn changed(&mut self) -> Changed<'_, 'a, T, W> {
        Changed {
            receiver: self,
            waiting: None,
        }
    }

    /// A copy of the value now; it counts as seen.
    pub fn get(&mut self) -> T {
        self.watch.with(|state| {
            self.seen = state.version();
            state.value().clone()
        })
    }
}

impl<T, const W: usize> WatchReceiver<'_, T, W> {
    /// Whether a value was sent since this receiver last looked.
    #[must_use]
    pub fn has_changed(&self) -> bool {
        self.watch.version() != self.seen
    }
}

impl<T, const W: usize> fmt::Debug for WatchReceiver<'_, T, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchReceiver")
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

/// The future of [`WatchReceiver::changed`]. Dropping it gives up its
/// place in line; nothing is lost (the next `changed` sees the change).
#[must_use = "a wait does nothing unless awaited"]
pub struct Changed<'r, 'a, T, const W: usize = 4> {
    receiver: &'r mut WatchReceiver<'a, T, W>,
    waiting: Option<WaitKey>,
}

impl<T: Clone, const W: usize> Future for Changed<'_, '_, T, W> {
    type Output = Result<T, Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let receiver = &mut *this.receiver;
        let watch = receiver.watch;
        let waiting = &mut this.waiting;
        watch.with(|state| {
            state
                .poll_changed(&mut receiver.seen, waiting, cx.waker(), || 0)
                .map(|changed| changed.map(|()| state.value().clone()))
        })
    }
}

impl<T, const W: usize> Drop for Changed<'_, '_, T, W> {
    fn drop(&mut self) {
        if let Some(key) = self.waiting.take() {
            self.receiver.watch.with(|state| state.cancel(key));
        }
    }
}

impl<T, const W: usize> fmt::Debug for Changed<'_, '_, T, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Changed")
            .field("waiting", &self.waiting.is_some())
            .finish_non_exhaustive()
    }
}
