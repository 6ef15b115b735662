//! The one place the crate takes its atomics from.
//!
//! Normally `portable-atomic`'s, so the same code runs on targets without
//! compare-and-swap (the binary picks the back end). Under `cfg(loom)` they
//! are loom's model-checked types, so `tests/loom_*.rs` explore every
//! interleaving of the real wake protocol.
#![forbid(unsafe_code)]

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicU16, AtomicU32, AtomicUsize, Ordering, fence,
};

#[cfg(not(loom))]
pub(crate) use portable_atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicUsize, Ordering, fence};
