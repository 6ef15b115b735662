//! [`Parker`]: where one worker sleeps, on its thread or in the runtime's
//! driver, and how another thread wakes it.
//!
//! | state | meaning | a wake |
//! | --- | --- | --- |
//! | `EMPTY` | awake, or about to sleep | leaves `NOTIFIED` |
//! | `ON_THREAD` | asleep on its thread | leaves `NOTIFIED`, unparks the thread |
//! | `IN_DRIVER` | asleep in the driver (timers and sockets) | leaves `NOTIFIED`, wakes the driver |
//! | `NOTIFIED` | a wake came since the last sleep | leaves `NOTIFIED` |
//!
//! # Invariants
//!
//! 1. Only the worker sleeps, and it does so only by moving the word from
//!    `EMPTY` to `ON_THREAD` or `IN_DRIVER`; finding `NOTIFIED` it takes it
//!    back to `EMPTY` and does not sleep.
//! 2. A wake swaps in `NOTIFIED` and wakes the very sleep it found (the
//!    thread's unpark token and the driver's park word both wait for a
//!    sleep that has not begun).
//! 3. The worker leaves a sleep with a swap to `EMPTY`, for any reason,
//!    and then looks for work: whoever woke it made its work visible
//!    before its swap, which this swap reads.
#![forbid(unsafe_code)]
// Public only for the loom models (`loom_support`).
#![cfg_attr(not(loom), allow(unreachable_pub))]

use crate::primitives::{AtomicUsize, Mutex, Ordering, Thread, lock};

const EMPTY: usize = 0;
const ON_THREAD: usize = 1;
const IN_DRIVER: usize = 2;
const NOTIFIED: usize = 3;

/// One worker's sleep (see the module docs).
pub struct Parker {
    state: AtomicUsize,
    /// The worker's thread, set when it starts.
    thread: Mutex<Option<Thread>>,
}

impl Parker {
    /// A worker's sleep, awake.
    #[must_use]
    pub fn new() -> Self {
        Self {
            state: AtomicUsize::new(EMPTY),
            thread: Mutex::new(None),
        }
    }

    /// Called by the worker's thread as it starts.
    pub fn bind(&self) {
        *lock(&self.thread) = Some(crate::primitives::current());
    }

    /// Sleeps until [`wake`](Self::wake), in the driver when `driver` is
    /// given (this worker holds it) with `wait` the driver's sleep, or on
    /// the thread. May return early.
    pub fn sleep(&self, driver: Option<&dyn Fn()>) {
        let asleep = if driver.is_some() {
            IN_DRIVER
        } else {
            ON_THREAD
        };
        if self
            .state
            .compare_exchange(EMPTY, asleep, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            // Invariant 1: a wake came first.
            self.state.swap(EMPTY, Ordering::SeqCst);
            return;
        }
        match driver {
            Some(wait) => wait(),
            None => crate::primitives::park(),
        }
        // Invariant 3.
        self.state.swap(EMPTY, Ordering::SeqCst);
    }

    /// Wakes the worker's current or next sleep; `wake_driver` cuts the
    /// driver's wait short when the worker sleeps there.
    pub fn wake(&self, wake_driver: impl FnOnce()) {
        match self.state.swap(NOTIFIED, Ordering::SeqCst) {
            ON_THREAD => {
                if let Some(thread) = lock(&self.thread).as_ref() {
                    thread.unpark();
                }
            }
            IN_DRIVER => wake_driver(),
            _ => {}
        }
    }
}

impl Default for Parker {
    fn default() -> Self {
        Self::new()
    }
}
