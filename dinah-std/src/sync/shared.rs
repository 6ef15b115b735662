//! [`Shared`]: a value behind a mutex, with poisoning reported as
//! [`SynchronizationError`] rather than guessed away.
#![forbid(unsafe_code)]

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// Why [`Shared::lock`] could not hand out the value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum SynchronizationError {
    /// A thread panicked while holding the lock. The value may be half
    /// updated; `Shared` does not guess whether it is safe to use.
    Poisoned,
}

impl fmt::Display for SynchronizationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Poisoned => {
                f.write_str("shared value poisoned: a thread panicked while holding its lock")
            }
        }
    }
}

impl std::error::Error for SynchronizationError {}

/// An explicitly shared value: a clonable owner of `Arc<Mutex<T>>`.
///
/// Every clone points at the same value; [`lock`](Self::lock) gives
/// exclusive access through a guard.
///
/// # What the lock makes atomic, and what it does not
///
/// Only what is done while one guard is held. Two separate `lock()` calls are
/// two separate critical sections: a read in one and a write in the next can
/// interleave with other threads. Keep critical sections short and never run
/// task callbacks while holding a guard.
///
/// # What it does not promise
///
/// No fairness between waiting threads, no lock-free progress, no recovery
/// from poisoning, and it does not make [`BoundedQueue`](crate::BoundedQueue)
/// or the scheduler concurrently usable.
///
/// ```
/// use dinah::sync::Shared;
///
/// let total = Shared::new(0u32);
/// let clone = total.clone();
/// std::thread::scope(|s| {
///     s.spawn(|| *clone.lock().unwrap() += 2);
/// });
/// assert_eq!(*total.lock()?, 2);
/// # Ok::<(), dinah::sync::SynchronizationError>(())
/// ```
pub struct Shared<T> {
    inner: Arc<Mutex<T>>,
}

impl<T> Shared<T> {
    /// Wraps `value` for sharing.
    pub fn new(value: T) -> Self {
        Self {
            inner: Arc::new(Mutex::new(value)),
        }
    }

    /// Blocks until the value is free, then returns a guard to it.
    ///
    /// # Errors
    ///
    /// Returns [`SynchronizationError::Poisoned`] if a thread panicked while
    /// holding a guard. Every later call returns the same error.
    pub fn lock(&self) -> Result<MutexGuard<'_, T>, SynchronizationError> {
        self.inner
            .lock()
            .map_err(|_| SynchronizationError::Poisoned)
    }

    /// Whether `self` and `other` share one value.
    #[must_use]
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// How many `Shared` handles point at this value, this one included.
    ///
    /// A snapshot: other threads may clone or drop handles right after.
    #[must_use]
    pub fn handle_count(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    /// Takes the value out if this is the last handle; otherwise hands the
    /// handle back.
    ///
    /// # Errors
    ///
    /// `Err(self)` while other handles exist; `Ok(Err(Poisoned))` when the
    /// value was poisoned.
    pub fn try_into_inner(self) -> Result<Result<T, SynchronizationError>, Self> {
        match Arc::try_unwrap(self.inner) {
            Ok(mutex) => Ok(mutex
                .into_inner()
                .map_err(|_| SynchronizationError::Poisoned)),
            Err(inner) => Err(Self { inner }),
        }
    }
}

impl<T> Clone for Shared<T> {
    /// Another handle to the same value; the value is not copied.
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: Default> Default for Shared<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> fmt::Debug for Shared<T> {
    /// Does not lock: shows only how many handles exist.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("handles", &self.handle_count())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{self, AssertUnwindSafe};

    #[test]
    fn clones_see_one_value() {
        let a = Shared::new(vec![1]);
        let b = a.clone();
        b.lock().unwrap().push(2);
        assert_eq!(*a.lock().unwrap(), [1, 2]);
        assert!(a.ptr_eq(&b));
        assert!(!a.ptr_eq(&Shared::new(vec![1, 2])));
        assert_eq!(a.handle_count(), 2);
        drop(b);
        assert_eq!(a.handle_count(), 1);
        assert_eq!(a.try_into_inner().ok().unwrap(), Ok(vec![1, 2]));
    }

    #[test]
    fn try_into_inner_refuses_while_shared() {
        let a = Shared::new(5);
        let b = a.clone();
        let a = a.try_into_inner().unwrap_err();
        drop(b);
        assert_eq!(a.try_into_inner().ok().unwrap(), Ok(5));
    }

    #[test]
    fn a_panic_under_the_lock_is_reported_as_poisoned() {
        let shared = Shared::new(0);
        let clone = shared.clone();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            let mut guard = clone.lock().unwrap();
            *guard = 1;
            panic!("while holding the lock");
        }));
        assert!(outcome.is_err());
        assert_eq!(shared.lock().unwrap_err(), SynchronizationError::Poisoned);
        assert_eq!(shared.lock().unwrap_err(), SynchronizationError::Poisoned);
        drop(clone);
        assert_eq!(
            shared.try_into_inner().ok().unwrap(),
            Err(SynchronizationError::Poisoned)
        );
    }
}
