//! [`SharedMutex`]: a value that one task at a time holds across awaits,
//! on any thread, with its [`SharedMutexGuard`] and [`SharedLocking`]
//! future.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use dinah_core::raw::wait::{Held, HeldLock, HeldValue, Lock, Locking};
use dinah_core::sync::{Refusal, SemaphoreFigures};

use super::line::{Growing, Locked};

type Inner<T> = Locked<Held<T, Growing>>;

impl<T> HeldLock for Inner<T> {
    type Value = T;
    type Store = Growing;
}

/// A value that one task at a time holds, across awaits, on any thread;
/// share it in an `Arc` (its guards borrow it), as tokio's `Mutex`.
///
/// The same logic as the core's static [`Mutex`](dinah_core::sync::Mutex)
/// (one [`Held`](dinah_core::raw::wait::Held): the value and its one
/// permit under one short-held lock), with a line that grows; its waits are
/// named in the executor's telemetry.
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
/// `Send` when `T` is; a lock and an unlock with nobody waiting take one
/// pass of the lock each. Any number may wait.
///
/// # What it does not do
///
/// No poisoning (a guard dropped while its task unwinds puts the value back
/// as it is); the value moves into each guard and back, so its address is
/// not stable between guards (box a large value). A leaked guard keeps the
/// lock for good.
pub struct SharedMutex<T> {
    inner: Inner<T>,
}

impl<T> SharedMutex<T> {
    /// `value`, unlocked.
    pub fn new(value: T) -> Self {
        Self {
            inner: Locked::new(None, Held::new(value, Growing::default())),
        }
    }

    /// `value`, unlocked, named `name` in telemetry: a task waiting for it
    /// is reported as waiting in line for `name`.
    pub fn named(name: &'static str, value: T) -> Self {
        Self {
            inner: Locked::new(Some(name), Held::new(value, Growing::default())),
        }
    }

    /// Waits in line for the value.
    pub fn lock(&self) -> SharedLocking<'_, T> {
        SharedLocking {
            inner: Locking::new(&self.inner),
        }
    }

    /// Takes the value if nobody holds it and nobody waits.
    ///
    /// # Errors
    ///
    /// [`Refusal::WouldWait`] (counted in its figures).
    pub fn try_lock(&self) -> Result<SharedMutexGuard<'_, T>, Refusal> {
        HeldValue::try_new(&self.inner).map(|held| SharedMutexGuard { held })
    }

    /// Whether a guard holds the value now.
    #[must_use]
    pub fn is_locked(&self) -> bool {
        self.inner.with(|state| state.is_locked())
    }

    /// Who waits, for how long, and the refused tries (one permit's
    /// figures, free or not).
    #[must_use]
    pub fn figures(&self) -> SemaphoreFigures {
        let (mut figures, since) = self.inner.with(|state| {
            let figures = state.figures(self.inner.name);
            (figures, state.oldest_since())
        });
        figures.longest_wait_micros = self.inner.waited(since);
        figures
    }

    /// The value, out of the mutex. `None` only if a guard was leaked.
    pub fn into_inner(self) -> Option<T> {
        self.inner.into_inner().into_value()
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
    held: HeldValue<&'a Inner<T>>,
}

impl<T> Deref for SharedMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.held
    }
}

impl<T> DerefMut for SharedMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.held
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
    inner: Locking<&'a Inner<T>>,
}

impl<'a, T> Future for SharedLocking<'a, T> {
    type Output = SharedMutexGuard<'a, T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let joined = !self.inner.is_waiting();
        let name = self.name();
        match Pin::new(&mut self.inner).poll(cx) {
            Poll::Pending => {
                super::note_wait(name, joined);
                Poll::Pending
            }
            // Nothing closes a mutex and its line grows: a lock is never
            // refused.
            Poll::Ready(taken) => Poll::Ready(SharedMutexGuard {
                held: taken.unwrap_or_else(|_| unreachable!("a mutex's lock was refused")),
            }),
        }
    }
}

impl<T> SharedLocking<'_, T> {
    fn name(&self) -> Option<&'static str> {
        self.inner.mutex().and_then(|mutex| mutex.name)
    }
}

impl<T> fmt::Debug for SharedLocking<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedLocking").finish_non_exhaustive()
    }
}
