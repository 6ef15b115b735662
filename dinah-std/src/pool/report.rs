//! What a pool tells back: its counters ([`PoolStats`]) and what a shutdown
//! reports ([`PoolReport`], [`Unfinished`]).
#![forbid(unsafe_code)]

use dinah_core::{TaskId, WorkerId};

use super::{ShutdownPolicy, Unstarted, WorkerReport};

/// A pool's counters, read at one moment under the pool's lock.
///
/// `completed`, `panicked` and `cancelled` count tasks whose outcome is
/// settled; tasks queued or running are in none of them. After a shutdown
/// without a deadline, `accepted == completed + panicked + cancelled`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[non_exhaustive]
pub struct PoolStats {
    /// Tasks waiting in the queue, including cancelled ones not yet reached.
    pub queued: usize,
    /// Threads running a task (or a share of a batch).
    pub active: usize,
    /// Threads with nothing to run.
    pub idle: usize,
    /// Threads alive (`active + idle`).
    pub threads: usize,
    /// Tasks admitted (a [`WorkerPool::run`](super::WorkerPool::run) batch counts each of its tasks).
    pub accepted: u64,
    /// Submissions refused (full, shutting down, or no thread).
    pub rejected: u64,
    /// Tasks that ran to their end.
    pub completed: u64,
    /// Tasks that panicked.
    pub panicked: u64,
    /// Tasks that never ran: cancelled through their handle, handed back by
    /// a shutdown, or handed back to the queue by a batch that panicked.
    pub cancelled: u64,
}

/// Tasks still in the pool when a shutdown's deadline passed.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct Unfinished {
    /// The tasks running at the deadline, with the worker running each.
    pub running: Vec<(WorkerId, TaskId)>,
    /// Tasks still queued at the deadline. Under
    /// [`ShutdownPolicy::Drain`] the detached workers still run them.
    pub queued: usize,
}

/// What a shutdown did.
#[derive(Debug)]
#[non_exhaustive]
pub struct PoolReport {
    /// The policy applied.
    pub policy: ShutdownPolicy,
    /// Tasks that ran to their end, over the pool's life.
    pub completed: u64,
    /// Tasks that panicked, over the pool's life.
    pub panicked: u64,
    /// Tasks that never ran, over the pool's life (including
    /// `handed_back`).
    pub cancelled: u64,
    /// Under [`ShutdownPolicy::CancelPending`], the accepted tasks that had
    /// not started, oldest first. Run them with [`Unstarted::run`]; dropping
    /// one resolves its handle as [`JoinError::Cancelled`](crate::task::JoinError::Cancelled).
    pub handed_back: Vec<Unstarted>,
    /// Per-thread counts for the threads alive at shutdown (a
    /// [`BlockingPool`](super::BlockingPool) thread that left on keep-alive is only in the
    /// totals).
    pub workers: Vec<WorkerReport>,
    /// `Some` when the deadline passed before every thread finished: what
    /// was still running or queued. Those threads are detached, not joined.
    pub unfinished: Option<Unfinished>,
}
