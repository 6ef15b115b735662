//! [`Park`]: where a [`LocalExecutor`](crate::executor::LocalExecutor)'s
//! thread waits when no task is ready, and how other threads cut that wait
//! short.
//!
//! Until the executor's first socket, it parks its thread; from then on it
//! waits in its reactor (a [`Blocker`]), which also hands out socket
//! readiness. Either way one word says where it is:
//!
//! | state | meaning | an unpark |
//! | --- | --- | --- |
//! | `EMPTY` | running, or about to wait | leaves `NOTIFIED` |
//! | `PARKED_THREAD` | parked on its thread | leaves `NOTIFIED`, unparks the thread |
//! | `PARKED_BLOCKER` | waiting in the reactor | leaves `NOTIFIED`, wakes the reactor |
//! | `NOTIFIED` | an unpark came since the last wait | leaves `NOTIFIED` |
//!
//! # Invariants
//!
//! 1. Only the executor's thread waits, and it enters a wait only by moving
//!    the word from `EMPTY` to a `PARKED_*` state; when the word says
//!    `NOTIFIED` it takes that back to `EMPTY` and does not wait.
//! 2. An unpark swaps the word to `NOTIFIED` and, if it took a `PARKED_*`
//!    state, wakes that very wait (the thread's token, or the reactor's own
//!    waker, both of which stay set until the wait consumes them).
//! 3. Whoever unparks made its work visible before the swap (the wake
//!    stack's push is a release store that precedes it), and the executor
//!    looks for work after each wait returns; so a wait that returns for
//!    any reason, spurious or not, may set the word back to `EMPTY` without
//!    losing a wake, provided it does so with a swap: a read-modify-write
//!    reads the last unpark's `NOTIFIED` and so sees that unpark's work (a
//!    plain store would not).
//! 4. An unpark costs one swap when the executor is running; a reactor's
//!    wake (a system call) is paid only when the executor waits in it.
//!
//! # Short waits are spun
//!
//! A wait for a timer due within [`SPIN`] (100 µs), on an executor with no
//! reactor, is not parked: the thread spins on the word until the deadline
//! or an unpark, whichever comes first, and the word stays `EMPTY`, so an
//! unpark meanwhile costs its swap alone. A park and its wake-up take the
//! kernel tens of microseconds and end late by about as much, so a wait this
//! short is spent better on the CPU: timers due close together each end
//! within a few microseconds of their deadline, with no system call between
//! them, at the price of the CPU those few microseconds take. With a
//! reactor, the wait stays in the reactor (which must hand out socket
//! readiness meanwhile, and measures its timeouts in milliseconds).
#![forbid(unsafe_code)]
// Public only for the loom models (`loom_support`).
#![cfg_attr(not(loom), allow(unreachable_pub))]

use std::sync::{Arc, OnceLock};
use std::time::Duration;
#[cfg(not(any(loom, miri)))]
use std::time::Instant;

use crate::primitives::{AtomicUsize, Ordering, Thread, park};

const EMPTY: usize = 0;
const PARKED_THREAD: usize = 1;
const PARKED_BLOCKER: usize = 2;
const NOTIFIED: usize = 3;

/// The longest wait for a timer that is spun rather than parked (see
/// "Short waits are spun"). Not under loom and Miri, where every wait parks.
#[cfg(not(any(loom, miri)))]
pub(crate) const SPIN: Duration = Duration::from_micros(100);

/// Something the executor's thread can wait in, that another thread can
/// wake: the reactor.
pub trait Blocker: Send + Sync {
    /// Waits until [`unblock`](Self::unblock) or `timeout` (`None`: no
    /// limit; zero: only looks), handling whatever it saw on the way.
    /// May return early.
    fn block(&self, timeout: Option<Duration>);
    /// Makes the current or next [`block`](Self::block) return.
    fn unblock(&self);
}

/// Where the executor waits (see the module docs).
pub struct Park<B> {
    state: AtomicUsize,
    thread: Thread,
    blocker: OnceLock<Arc<B>>,
    /// Whether the executor measures itself (its blocker may then time
    /// what it hands out).
    measured: bool,
}

impl<B: Blocker> Park<B> {
    /// The park of the executor that runs on `thread`, parking it until a
    /// blocker is [installed](Self::install).
    pub fn new(thread: Thread) -> Self {
        Self {
            state: AtomicUsize::new(EMPTY),
            thread,
            blocker: OnceLock::new(),
            measured: false,
        }
    }

    /// The same, for an executor that measures itself (`measured`).
    #[must_use]
    pub fn measuring(mut self, measured: bool) -> Self {
        self.measured = measured;
        self
    }

    /// Whether the executor measures itself.
    pub fn is_measured(&self) -> bool {
        self.measured
    }

    /// The blocker, once installed.
    pub fn blocker(&self) -> Option<&Arc<B>> {
        self.blocker.get()
    }

    /// Installs `make()`'s blocker unless one is there; returns the one in
    /// place. From then on the executor waits in it.
    ///
    /// # Errors
    ///
    /// `make`'s.
    pub fn install<E>(&self, make: impl FnOnce() -> Result<B, E>) -> Result<&Arc<B>, E> {
        if let Some(blocker) = self.blocker.get() {
            return Ok(blocker);
        }
        let made = Arc::new(make()?);
        // A second installer loses the race and its blocker is dropped.
        let _ = self.blocker.set(made);
        Ok(self
            .blocker
            .get()
            .unwrap_or_else(|| unreachable!("set above")))
    }

    /// Waits for an [`unpark`](Self::unpark) or `timeout` (`None`: none).
    /// Only the executor's thread calls it. May return early: the caller
    /// looks for work and calls again.
    pub fn park(&self, timeout: Option<Duration>) {
        if timeout == Some(Duration::ZERO) {
            self.poll_now();
            return;
        }
        let blocker = self.blocker.get();
        // Under loom and Miri every wait parks: their clocks are not the
        // machine's.
        #[cfg(not(any(loom, miri)))]
        if let Some(limit) = timeout
            && limit <= SPIN
            && blocker.is_none()
        {
            self.spin(limit);
            return;
        }
        let parked = if blocker.is_some() {
            PARKED_BLOCKER
        } else {
            PARKED_THREAD
        };
        if let Err(seen) =
            self.state
                .compare_exchange(EMPTY, parked, Ordering::SeqCst, Ordering::SeqCst)
        {
            // Invariant 1: only `NOTIFIED` can be there; take it and go.
            // A swap, not a store: it reads the last unpark's `NOTIFIED`
            // (a later one than `seen`, perhaps), so that unpark's work is
            // visible when the caller looks next (loom found the store's
            // lost wake).
            debug_assert_eq!(seen, NOTIFIED);
            self.state.swap(EMPTY, Ordering::SeqCst);
            self.poll_now();
            return;
        }
        match (blocker, timeout) {
            (Some(blocker), timeout) => blocker.block(timeout),
            (None, None) => park(),
            (None, Some(limit)) => super::slack::park_fine(limit),
        }
        // Invariant 3.
        self.state.swap(EMPTY, Ordering::SeqCst);
    }

    /// Spins for at most `limit` or until an unpark (see "Short waits are
    /// spun"), with the word left `EMPTY` (invariant 1: no wait is entered).
    #[cfg(not(any(loom, miri)))]
    fn spin(&self, limit: Duration) {
        let until = Instant::now() + limit;
        loop {
            if self.state.load(Ordering::Relaxed) == NOTIFIED {
                // Invariant 3: a swap, which reads the unpark's work.
                self.state.swap(EMPTY, Ordering::SeqCst);
                return;
            }
            if Instant::now() >= until {
                return;
            }
            std::hint::spin_loop();
        }
    }

    /// Lets the blocker hand out what is ready now, without waiting.
    pub fn poll_now(&self) {
        if let Some(blocker) = self.blocker.get() {
            blocker.block(Some(Duration::ZERO));
        }
    }

    /// Makes the executor's current or next wait return (invariant 2).
    #[inline]
    pub fn unpark(&self) {
        match self.state.swap(NOTIFIED, Ordering::SeqCst) {
            PARKED_THREAD => self.thread.unpark(),
            PARKED_BLOCKER => {
                if let Some(blocker) = self.blocker.get() {
                    blocker.unblock();
                }
            }
            _ => {}
        }
    }
}

impl<B> std::fmt::Debug for Park<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Park")
            .field("reactor", &self.blocker.get().is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::*;

    /// A reactor that is never installed: these parks wait on the thread.
    struct NoReactor;

    impl Blocker for NoReactor {
        fn block(&self, _: Option<Duration>) {}
        fn unblock(&self) {}
    }

    #[test]
    fn a_short_wait_takes_an_unpark_that_came_before_it() {
        let park = Park::<NoReactor>::new(std::thread::current());
        park.unpark();
        assert_eq!(park.state.load(Ordering::SeqCst), NOTIFIED);
        park.park(Some(SPIN));
        assert_eq!(park.state.load(Ordering::SeqCst), EMPTY);
    }

    #[test]
    fn a_short_wait_with_nothing_to_take_leaves_the_word_empty() {
        let park = Park::<NoReactor>::new(std::thread::current());
        park.park(Some(SPIN / 4));
        assert_eq!(park.state.load(Ordering::SeqCst), EMPTY);
        // An unpark after it is kept for the next wait, which it ends.
        park.unpark();
        park.park(None);
        assert_eq!(park.state.load(Ordering::SeqCst), EMPTY);
    }
}
