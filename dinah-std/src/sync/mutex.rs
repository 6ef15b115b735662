//! [`SharedMutex`]: a value that one task at a time holds across awaits,
//! on any thread, with its [`SharedMutexGuard`] and [`SharedLocking`]
//! future.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use dinah_core::raw::wait::Lent;
use dinah_core::sync::{Refusal, SemaphoreFigures};

use super::line::Slot;
use super::{SharedAcquire, SharedPermit, SharedSemaphore};

/// A value that one task at a time holds, across awaits, on any thread;
/// share it in an `Arc` (its guards borrow it), as tokio's `Mutex`.
///
/// The same logic as the core's static [`Mutex`](dinah_core::sync::Mutex):
/// a semaphore of one permit (a [`SharedSemaphore`], so its waits are
/// named in the executor's telemetry) beside a cell the value is lent out
/// of (one [`Lent`](dinah_core::raw::wait::Lent)).
///
/// ```
/// use std::sync::Arc;
/// use dinah::LocalExecutor;
/// use dinah::sync::SharedMutex;
///
/// let executor = LocalExecutor::new();
/// let sessions = Arc::new(SharedMutex::named("sessions", Vec::new()));
/// let mut handles = Vec::new();
/// for user in ["ada", "grace"] {
///     let sessions = Arc::clone(&sessions);
///     handles.push(executor
///         .try_spawn(async move {
///             let mut list = sessions.lock().await; // held across awaits
///             dinah::task::yield_now().await;
///             list.push(user);
///             Ok::<(), ()>(())
///         })
///         .unwrap());
/// }
/// let names = executor.block_on(async {
///     for handle in handles {
///         handle.await.unwrap().unwrap();
///     }
///     sessions.lock().await.clone()
/// });
/// assert_eq!(names, ["ada", "grace"], "first come, first served");
/// ```
///
/// # Guarantees
///
/// Those of the core mutex: one guard at a time, given strictly first in,
/// first out (`try_lock` never jumps the line); a lock dropped after it was
/// granted passes it on; the guard owns the value while it lives, so it is
/// `Send` when `T` is. Any number may wait.
///
/// # What it does not do
///
/// No poisoning (a guard dropped while its task unwinds puts the value back
/// as it is); the value moves into each guard and back, so its address is
/// not stable between guards (box a large value). A leaked guard keeps the
/// lock for good.
pub struct SharedMutex<T> {
    permit: SharedSemaphore,
    value: Slot<T>,
}

impl<T> SharedMutex<T> {
    /// `value`, unlocked.
    pub fn new(value: T) -> Self {
        Self {
            permit: SharedSemaphore::new(1),
            value: Slot::new(Some(value)),
        }
    }

    /// `value`, unlocked, named `name` in telemetry: a task waiting for it
    /// is reported as waiting in line for `name`.
    pub fn named(name: &'static str, value: T) -> Self {
        Self {
            permit: SharedSemaphore::named(name, 1),
            value: Slot::new(Some(value)),
        }
    }

    /// Waits in line for the value.
    pub fn lock(&self) -> SharedLocking<'_, T> {
        SharedLocking {
            acquire: self.permit.acquire(),
            value: &self.value,
        }
    }

    /// Takes the value if nobody holds it and nobody waits.
    ///
    /// # Errors
    ///
    /// [`Refusal::WouldWait`] (counted in its figures).
    pub fn try_lock(&self) -> Result<SharedMutexGuard<'_, T>, Refusal> {
        let permit = self.permit.try_acquire()?;
        Ok(SharedMutexGuard {
            lent: Lent::take(&self.value, permit),
        })
    }

    /// Whether a guard holds the value now.
    #[must_use]
    pub fn is_locked(&self) -> bool {
        self.permit.available() == 0
    }

    /// Who waits, for how long, and the refused tries (its semaphore's
    /// figures: one permit, free or not).
    #[must_use]
    pub fn figures(&self) -> SemaphoreFigures {
        self.permit.figures()
    }

    /// The value, out of the mutex. `None` only if a guard was leaked.
    pub fn into_inner(self) -> Option<T> {
        self.value.into_inner()
    }
}

impl<T: Default> Default for SharedMutex<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> fmt::Debug for SharedMutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedMutex")
            .field("figures", &self.figures())
            .finish_non_exhaustive()
    }
}

/// The value of a [`SharedMutex`], held; dropping it unlocks the mutex (the
/// value goes back first, then the lock passes to the next in line).
#[must_use = "dropping a guard unlocks the mutex at once"]
pub struct SharedMutexGuard<'a, T> {
    lent: Lent<&'a Slot<T>, SharedPermit<'a>>,
}

impl<T> Deref for SharedMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.lent
    }
}

impl<T> DerefMut for SharedMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.lent
    }
}

impl<T: fmt::Debug> fmt::Debug for SharedMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The future of [`SharedMutex::lock`]. Dropping it gives up its place in
/// line; a lock it had been granted goes to the next.
#[must_use = "a lock does nothing unless awaited"]
pub struct SharedLocking<'a, T> {
    acquire: SharedAcquire<'a>,
    value: &'a Slot<T>,
}

impl<'a, T> Future for SharedLocking<'a, T> {
    type Output = SharedMutexGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let value = this.value;
        Pin::new(&mut this.acquire).poll(cx).map(|taken| {
            // Its semaphore is never closed and its line grows: nothing
            // refuses a lock.
            let permit = taken.unwrap_or_else(|_| unreachable!("a mutex's lock was refused"));
            SharedMutexGuard {
                lent: Lent::take(value, permit),
            }
        })
    }
}

impl<T> fmt::Debug for SharedLocking<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedLocking").finish_non_exhaustive()
    }
}
