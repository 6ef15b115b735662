//! Why the core executor refused something: [`SpawnError`] (shared with
//! the hosted executor and the pools), [`QueueClaimed`] and [`CancelError`];
//! and the executor's two panics, kept together here (one file name in a
//! firmware's read-only data, not two).
#![forbid(unsafe_code)]

use core::convert::Infallible;
use core::fmt;

use crate::id::TaskId;

/// Why a spawn was refused: the one refusal of every executor and pool.
/// The task is handed back, untouched, in every case.
///
/// `E` is what a refusal to start a thread carries (`std::io::Error` for
/// `dinah-std`'s blocking pool); executors, which start no threads, leave
/// it `Infallible`. Which variants a runtime can return is in its
/// `try_spawn`'s docs.
#[non_exhaustive]
pub enum SpawnError<T, E = Infallible> {
    /// No room: every slot of the core executor, the hosted executor's
    /// live-task cap or ingress, or a pool's admission limit is taken.
    Full(T),
    /// The executor or pool has shut down, or is shutting down.
    Shutdown(T),
    /// The storage held no future (`None`, or a future that already ran):
    /// the core executor only.
    NoFuture(T),
    /// A pool had no thread for the task and the operating system refused
    /// to start one: `dinah-std`'s blocking pool only.
    NoThread(T, E),
}

impl<T, E> SpawnError<T, E> {
    /// Gives back the task that was not spawned.
    #[must_use]
    pub fn into_inner(self) -> T {
        match self {
            Self::Full(task)
            | Self::Shutdown(task)
            | Self::NoFuture(task)
            | Self::NoThread(task, _) => task,
        }
    }
}

impl<T, E: fmt::Debug> fmt::Debug for SpawnError<T, E> {
    /// Does not require `T: Debug`, so closures and futures can be handed
    /// back and unwrapped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::Shutdown(_) => f.write_str("Shutdown(..)"),
            Self::NoFuture(_) => f.write_str("NoFuture(..)"),
            Self::NoThread(_, error) => write!(f, "NoThread(.., {error:?})"),
        }
    }
}

impl<T, E: fmt::Display> fmt::Display for SpawnError<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("no room for the task; it was handed back"),
            Self::Shutdown(_) => f.write_str("shut down; the task was handed back"),
            Self::NoFuture(_) => f.write_str("the task storage holds no future"),
            Self::NoThread(_, error) => write!(
                f,
                "no thread could be started for the task ({error}); it was handed back"
            ),
        }
    }
}

impl<T, E: fmt::Debug + fmt::Display> core::error::Error for SpawnError<T, E> {}

/// The [`ReadyQueue`](super::ReadyQueue) already belongs to another executor.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct QueueClaimed;

impl fmt::Display for QueueClaimed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("this ReadyQueue already serves an executor")
    }
}

impl core::error::Error for QueueClaimed {}

/// Why [`ReadyQueue::cancel`](super::ReadyQueue::cancel) did nothing.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum CancelError {
    /// The id names no task of this queue: it was never spawned here, or its
    /// slot has since been reused.
    UnknownTask(TaskId),
    /// The task already completed, failed or was cancelled.
    AlreadyFinished(TaskId),
}

impl fmt::Display for CancelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTask(_) => f.write_str("no such task in this executor"),
            Self::AlreadyFinished(_) => f.write_str("the task has already finished"),
        }
    }
}

impl core::error::Error for CancelError {}

/// An internal slot index was out of range: a broken invariant, reported
/// with a fixed message.
#[cold]
pub(super) fn slot_out_of_range() -> ! {
    crate::fmt::fail!("dinah: internal slot index out of range")
}

/// A task has 32,768 cloned wakers alive: its count cannot go higher and
/// stay exact.
#[cold]
pub(super) fn too_many_wakers() -> ! {
    crate::fmt::fail!("dinah: a task has 32,768 cloned wakers alive")
}
