//! Coordination between tasks and threads, in safe `std`: a bounded
//! channel sized at run time ([`mpsc`]), a [`SharedSemaphore`],
//! [`CancellationHandle`], an owned and clonable cancellation flag, and
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

use std::cell::Cell;

mod cancel;
mod line;
pub mod mpsc;
mod semaphore;
mod shared;

pub use cancel::CancellationHandle;
pub(crate) use line::Growing;
pub use semaphore::{OwnedAcquire, OwnedPermit, SharedAcquire, SharedPermit, SharedSemaphore};
pub use shared::{Shared, SynchronizationError};

/// A poll that left a send or an acquire waiting in line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineWait {
    /// The name of the channel or semaphore.
    pub(crate) name: Option<&'static str>,
    /// That poll put it in line (it was not waiting before).
    pub(crate) joined: bool,
}

std::thread_local! {
    /// What the poll running on this thread left waiting in a line.
    static WAITED_ON: Cell<Option<LineWait>> = const { Cell::new(None) };
}

/// Notes for the executor's telemetry that the poll running on this thread
/// waits in the line of the channel or semaphore named `name`.
fn note_wait(name: Option<&'static str>, joined: bool) {
    let _ = WAITED_ON.try_with(|waited| waited.set(Some(LineWait { name, joined })));
}

/// Takes (and clears) what the polls on this thread left waiting in a line
/// since the last take.
pub(crate) fn take_wait() -> Option<LineWait> {
    WAITED_ON.try_with(Cell::take).ok().flatten()
}
