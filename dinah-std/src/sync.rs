//! The one place the crate takes its internal locks from.
//!
//! Under `cfg(loom)` these are loom's model-checked types, so the loom tests
//! in `tests/loom_*.rs` explore every interleaving of the real dispatch,
//! trace, park and ingress code.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread::{Thread, current, park};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread::{Thread, current, park};

/// Locks `mutex`, ignoring poison.
///
/// Only for locks that never run user code while held: a panic there can
/// only come from the allocator, and the data stays consistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
