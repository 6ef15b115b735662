//! [`SharedRwLock`]: a value that many tasks read at once or one task
//! writes, handed out first come, first served, with its guards.
#![forbid(unsafe_code)]

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use dinah_core::raw::wait::Lent;
use dinah_core::sync::{Refusal, SemaphoreFigures};

use super::line::Slot;
use super::{SharedPermit, SharedSemaphore};

/// How many read guards may live at once; a writer takes them all.
pub const MAX_READERS: u32 = u32::MAX >> 3;

/// A value that many tasks read at once, or one task writes, across
/// awaits, on any thread; share it in an `Arc`, as tokio's `RwLock`.
///
/// A semaphore of [`MAX_READERS`] permits (a [`SharedSemaphore`], so waits
/// are named in telemetry): a read takes one, a write takes them all.
///
/// ```
/// use std::sync::Arc;
/// use dinah::LocalExecutor;
/// use dinah::sync::SharedRwLock;
///
/// let executor = LocalExecutor::new();
/// let routes = Arc::new(SharedRwLock::named("routes", vec!["/"]));
/// executor.block_on(async {
///     let (a, b) = (routes.read().await, routes.read().await); // at once
///     assert_eq!(a.len() + b.len(), 2);
///     drop((a, b));
///     routes.write().await.push("/health");
///     assert_eq!(*routes.read().await, ["/", "/health"]);
/// });
/// ```
///
/// # Guarantees
///
/// - Strictly first in, first out: a writer waiting in line is not passed
///   by readers that come after it, so writers do not starve (and neither
///   do readers behind a writer). `try_read` and `try_write` never jump the
///   line.
/// - A read or write dropped after it was granted passes its turn on.
/// - Guards are `Send` when `T` is `Send + Sync` and may be held across
///   awaits.
///
/// # What it does not do
///
/// No poisoning, and no upgrade from read to write. The value is kept in
/// an `Arc` that each read guard clones (one atomic add and subtract per
/// read); a write reaches it in place, as no read guard lives then. A
/// leaked guard keeps its permits for good.
pub struct SharedRwLock<T> {
    permits: SharedSemaphore,
    value: Slot<Arc<T>>,
}

impl<T> SharedRwLock<T> {
    /// `value`, unlocked.
    pub fn new(value: T) -> Self {
        Self::with(SharedSemaphore::new(MAX_READERS), value)
    }

    /// `value`, unlocked, named `name` in telemetry.
    pub fn named(name: &'static str, value: T) -> Self {
        Self::with(SharedSemaphore::named(name, MAX_READERS), value)
    }

    fn with(permits: SharedSemaphore, value: T) -> Self {
        Self {
            permits,
            value: Slot::new(Some(Arc::new(value))),
        }
    }

    /// Waits in line to read.
    pub async fn read(&self) -> SharedReadGuard<'_, T> {
        let permit = granted(self.permits.acquire().await);
        self.reader(permit)
    }

    /// Reads if no writer holds or waits for the value.
    ///
    /// # Errors
    ///
    /// [`Refusal::WouldWait`].
    pub fn try_read(&self) -> Result<SharedReadGuard<'_, T>, Refusal> {
        Ok(self.reader(self.permits.try_acquire()?))
    }

    fn reader<'a>(&'a self, permit: SharedPermit<'a>) -> SharedReadGuard<'a, T> {
        let value = self.value.with(|value| value.clone());
        let Some(value) = value else {
            unreachable!("a reader found the value lent to a writer")
        };
        SharedReadGuard {
            value,
            _permit: permit,
        }
    }

    /// Waits in line to write.
    pub async fn write(&self) -> SharedWriteGuard<'_, T> {
        let permit = granted(self.permits.acquire_many(MAX_READERS).await);
        SharedWriteGuard {
            lent: Lent::take(&self.value, permit),
        }
    }

    /// Writes if nobody holds or waits for the value.
    ///
    /// # Errors
    ///
    /// [`Refusal::WouldWait`].
    pub fn try_write(&self) -> Result<SharedWriteGuard<'_, T>, Refusal> {
        let permit = self.permits.try_acquire_many(MAX_READERS)?;
        Ok(SharedWriteGuard {
            lent: Lent::take(&self.value, permit),
        })
    }

    /// Who waits, for how long, and the refused tries (its semaphore's
    /// figures, in permits: a reader holds one, a writer all).
    #[must_use]
    pub fn figures(&self) -> SemaphoreFigures {
        self.permits.figures()
    }

    /// The value, out of the lock. `None` only if a guard was leaked.
    pub fn into_inner(self) -> Option<T> {
        self.value
            .into_inner()
            .and_then(|value| Arc::into_inner(value))
    }
}

/// Its semaphore is never closed and its line grows: nothing refuses it.
fn granted<P>(taken: Result<P, Refusal>) -> P {
    taken.unwrap_or_else(|_| unreachable!("a lock's turn was refused"))
}

impl<T: Default> Default for SharedRwLock<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> fmt::Debug for SharedRwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedRwLock")
            .field("figures", &self.figures())
            .finish_non_exhaustive()
    }
}

/// A read of a [`SharedRwLock`]; dropping it ends the read.
#[must_use = "dropping a guard ends the read at once"]
pub struct SharedReadGuard<'a, T> {
    // Dropped first: no reference is left when its permit goes back.
    value: Arc<T>,
    _permit: SharedPermit<'a>,
}

impl<T> Deref for SharedReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for SharedReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The write of a [`SharedRwLock`]; dropping it ends the write (the value
/// goes back first, then the turn passes on).
#[must_use = "dropping a guard ends the write at once"]
pub struct SharedWriteGuard<'a, T> {
    lent: Lent<&'a Slot<Arc<T>>, SharedPermit<'a>>,
}

impl<T> Deref for SharedWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.lent
    }
}

impl<T> DerefMut for SharedWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // A writer holds every permit, and a reader drops its reference
        // before its permit: no other reference to the value lives.
        Arc::get_mut(&mut self.lent)
            .unwrap_or_else(|| unreachable!("a read guard outlived its permit"))
    }
}

impl<T: fmt::Debug> fmt::Debug for SharedWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
