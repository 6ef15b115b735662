//! Coordination between tasks and threads, in safe `std`: a bounded
//! channel sized at run time ([`mpsc`]), a [`SharedSemaphore`],
//! [`CancellationHandle`], an owned and clonable cancellation flag that
//! tasks can await and that reaches its children, and
//! a channel for one value ([`oneshot`]), a value receivers follow
//! ([`watch`]), values every receiver reads ([`broadcast`]), [`SharedNotify`], async [`SharedMutex`] and [`SharedRwLock`] (first in,
//! first out, so no writer starves), [`SharedOnceCell`], and
//! [`Shared`], a value behind a mutex whose poisoning is reported as
//! [`SynchronizationError`].
//!
//! The static, heap-free [`Channel`](dinah_core::sync::Channel),
//! [`Semaphore`](dinah_core::sync::Semaphore) and
//! [`CancellationToken`](dinah_core::sync::CancellationToken) are in
//! `dinah_core::sync`; the `dinah` facade's `sync` module holds both. The
//! channels and semaphores of both crates run one logic and pass one
//! contract suite.
#![forbid(unsafe_code)]

pub mod broadcast;
mod cancel;
mod line;
pub mod mpsc;
mod mutex;
mod notify;
mod once_cell;
pub mod oneshot;
mod rwlock;
mod semaphore;
mod shared;
#[cfg(not(loom))]
mod spare;
pub mod watch;

pub use cancel::{CancellationHandle, Cancelled};
pub(crate) use line::Growing;
pub use mutex::{SharedLocking, SharedMutex, SharedMutexGuard};
pub use notify::{SharedNotified, SharedNotify};
pub use once_cell::SharedOnceCell;
pub use rwlock::{MAX_READERS, SharedReadGuard, SharedRwLock, SharedWriteGuard};
pub use semaphore::{OwnedAcquire, OwnedPermit, SharedAcquire, SharedPermit, SharedSemaphore};
pub use shared::{Shared, SynchronizationError};

/// Notes for the executor's telemetry that the poll running on this thread
/// waits in the line of the channel or semaphore named `name`.
fn note_wait(name: Option<&'static str>, joined: bool) {
    crate::runtime::context::note_line_wait(name, joined, false);
}

/// Notes for the executor's telemetry that the poll running on this thread
/// waits to receive a value from what is named `name` (a channel, a reply,
/// a watch, a broadcast, a notify): a long wait there is `NoWake` naming
/// it, not `Backpressure`.
fn note_receive(name: Option<&'static str>) {
    crate::runtime::context::note_line_wait(name, false, true);
}
