//! Coordination between threads, in safe `std`: [`CancellationHandle`], an
//! owned and clonable cancellation flag, and [`Shared`], a value behind a
//! mutex whose poisoning is reported as [`SynchronizationError`].
//!
//! The borrowed, heap-free [`CancellationToken`](dinah_core::sync::CancellationToken)
//! is in `dinah_core::sync`; the `dinah` facade's `sync` module holds both.
#![forbid(unsafe_code)]

mod cancel;
mod shared;

pub use cancel::CancellationHandle;
pub use shared::{Shared, SynchronizationError};
