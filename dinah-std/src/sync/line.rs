//! The storage and lock the std channels and semaphores put around the
//! core's wait logic: a line that grows, a short-held lock, and a
//! microsecond clock for how long waiters have waited.
#![forbid(unsafe_code)]

use std::collections::VecDeque;

use dinah_core::raw::wait::{Lock, Settle, Slots, Vault, WaitEntry, WaitStore};
use dinah_core::telemetry::Clock;

use crate::telemetry::StdClock;

#[cfg(loom)]
use crate::primitives::{Mutex, lock};

/// The lock around a channel's or semaphore's state: a spin lock whose
/// unlock is a plain store and that has no poison to check (its holds are
/// short and run no user code but a waker's clone or drop), or loom's
/// mutex in the loom models.
#[cfg(not(loom))]
type StateLock<S> = crate::primitives::SpinLock<S>;
#[cfg(loom)]
type StateLock<S> = Mutex<S>;

/// A line of waiters with no fixed bound.
#[derive(Debug, Default)]
pub(crate) struct Growing(Vec<WaitEntry>);

impl WaitStore for Growing {
    fn entries(&self) -> &[WaitEntry] {
        &self.0
    }
    fn entries_mut(&mut self) -> &mut [WaitEntry] {
        &mut self.0
    }
    fn grow(&mut self) -> bool {
        self.0.push(WaitEntry::VACANT);
        true
    }
}

/// A buffer of at most `capacity` values, allocated as it fills.
#[derive(Debug)]
pub(crate) struct Bounded<T> {
    values: VecDeque<T>,
    capacity: usize,
}

impl<T> Bounded<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            values: VecDeque::new(),
            capacity,
        }
    }
}

impl<T> Slots for Bounded<T> {
    type Item = T;
    fn push(&mut self, value: T) -> Result<(), T> {
        if self.values.len() < self.capacity {
            self.values.push_back(value);
            Ok(())
        } else {
            Err(value)
        }
    }
    fn pop(&mut self) -> Option<T> {
        self.values.pop_front()
    }
    fn len(&self) -> usize {
        self.values.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
}

/// A state behind a lock, with a name, read in microseconds of the
/// process's [`StdClock`]: a waiter joining a line reads it, so it must be
/// a few instructions, not a system call. The clock is found at the first
/// reading, not when the state is made: a process that never waits never
/// calibrates it.
#[derive(Debug)]
pub(crate) struct Locked<S> {
    pub(crate) name: Option<&'static str>,
    state: StateLock<S>,
}

impl<S> Locked<S> {
    pub(crate) fn new(name: Option<&'static str>, state: S) -> Self {
        Self {
            name,
            state: StateLock::new(state),
        }
    }

    fn micros(&self) -> u64 {
        StdClock::new().now() / 1_000
    }

    /// The state, out of its lock.
    pub(crate) fn into_inner(self) -> S {
        #[cfg(not(loom))]
        let state = self.state.into_inner();
        #[cfg(loom)]
        let state = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        state
    }

    /// How long ago `since` (a reading of [`Lock::now`]) was, in µs.
    pub(crate) fn waited(&self, since: Option<u64>) -> Option<u64> {
        since.map(|since| self.micros().saturating_sub(since))
    }
}

impl<S: Settle> Lock for Locked<S> {
    type State = S;

    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        #[cfg(not(loom))]
        let mut state = self.state.lock();
        #[cfg(loom)]
        let mut state = lock(&self.state);
        f(&mut state)
    }

    fn now(&self) -> u64 {
        self.micros()
    }
}

/// A state behind the same short-held lock, with no clock or name: a
/// mutex's value ([`Slot`]) or a oneshot's mailbox.
#[derive(Debug)]
pub(crate) struct Guarded<S>(StateLock<S>);

/// The cell a mutex lends its value out of (see [`Vault`]).
pub(crate) type Slot<T> = Guarded<Option<T>>;

impl<S> Guarded<S> {
    pub(crate) fn new(state: S) -> Self {
        Self(StateLock::new(state))
    }

    /// Runs `f` on the state, locked. `f` runs no user code.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        #[cfg(not(loom))]
        let mut state = self.0.lock();
        #[cfg(loom)]
        let mut state = lock(&self.0);
        f(&mut state)
    }

    /// The state, out of its lock.
    pub(crate) fn into_inner(self) -> S {
        #[cfg(not(loom))]
        let state = self.0.into_inner();
        #[cfg(loom)]
        let state = self.0.into_inner().unwrap_or_else(|e| e.into_inner());
        state
    }
}

impl<T> Vault for Guarded<Option<T>> {
    type Value = T;
    fn take(&self) -> Option<T> {
        self.with(Option::take)
    }
    fn put(&self, value: T) {
        self.with(|slot| *slot = Some(value));
    }
}
