//! The one place the crate takes its threads, atomics and locks from.
//!
//! Under `cfg(loom)` these are loom's model-checked types, so the loom tests
//! in `tests/loom_*.rs` explore every interleaving of the real dispatch,
//! trace, park, ingress and pool code.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread::{Builder, JoinHandle, Thread, current, park, yield_now};

/// Loom has no timed park; its models have no timers, so a yield stands in.
#[cfg(loom)]
pub(crate) fn park_timeout(_: std::time::Duration) {
    loom::thread::yield_now();
}

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread::{Builder, JoinHandle, Thread, current, park, park_timeout, yield_now};

/// A lock for short, hot holds that never run user code (the timer
/// store): a spin lock whose unlock is a plain store, where `std`'s mutex
/// unlocks with an atomic swap (it must learn whether a thread sleeps on
/// it). A thread that finds it held yields its time slice rather than
/// sleeps. Not a loom type: nothing the loom models check takes it.
pub(crate) type SpinLock<T> = spin::mutex::SpinMutex<T, spin::relax::Yield>;

/// Locks `mutex`, ignoring poison.
///
/// Only for locks that never run user code while held: a panic there can
/// only come from the allocator, and the data stays consistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits on `condvar`, ignoring poison (see [`lock`]).
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar
        .wait(guard)
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits on `condvar` for at most `timeout`, ignoring poison (see [`lock`]).
/// Returns the guard and whether the wait timed out.
pub(crate) fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: std::time::Duration,
) -> (MutexGuard<'a, T>, bool) {
    let (guard, result) = condvar
        .wait_timeout(guard, timeout)
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    (guard, result.timed_out())
}

/// Locks a plain `std` mutex, ignoring poison: for telemetry's locks, which
/// guard statistics rather than any protocol loom checks, and never run
/// user code while held.
pub(crate) fn lock_std<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
