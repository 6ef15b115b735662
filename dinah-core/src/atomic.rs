//! The one place the crate takes its atomics from.
//!
//! Normally `portable-atomic`'s, so the same code runs on targets without
//! compare-and-swap (the binary picks the back end). Under `cfg(loom)` they
//! are loom's model-checked types, so `tests/loom_*.rs` explore every
//! interleaving of the real wake protocol.
#![forbid(unsafe_code)]

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};

/// Only where the target has 64-bit atomics of its own: the crate never
/// asks `portable-atomic` for a 64-bit fallback.
#[cfg(all(not(loom), target_has_atomic = "64"))]
pub(crate) use portable_atomic::AtomicU64;
#[cfg(not(loom))]
pub(crate) use portable_atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicUsize, Ordering, fence,
};

/// One turn of a wait for another thread or interrupt: a spin-loop hint,
/// or, in a loom model, a yield to the other threads (a model's spin must
/// let them run).
#[inline(always)]
pub(crate) fn spin() {
    #[cfg(loom)]
    loom::hint::spin_loop();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}
