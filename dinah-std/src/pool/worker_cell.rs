//! Each pool thread's counters: [`WorkerCell`], written by its thread and
//! read by anyone, with how one entry ended ([`Ran`]) and the
//! [`WorkerReport`] a shutdown gives of it.
#![forbid(unsafe_code)]

use dinah_core::WorkerId;
use dinah_core::telemetry::PollStamp;

use crate::primitives::{AtomicU64, Ordering};

/// How one entry ended, for the counters.
pub(crate) enum Ran {
    Completed,
    Panicked,
    /// Cancelled through its handle before it started; not run.
    Skipped,
}

/// One thread's share of the work.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub struct WorkerReport {
    /// The thread's id (its name is `dinah-worker-<id>` or
    /// `dinah-blocking-<id>`).
    pub id: WorkerId,
    /// Tasks it ran to their end.
    pub completed: u64,
    /// Tasks of its that panicked.
    pub panicked: u64,
    /// Cancelled tasks it reached and dropped unrun.
    pub cancelled: u64,
}

/// One thread's counters. Written only by that thread; read by anyone.
pub(crate) struct WorkerCell {
    pub(crate) id: WorkerId,
    completed: AtomicU64,
    panicked: AtomicU64,
    cancelled: AtomicU64,
    /// The task it is running and when that task started (with telemetry;
    /// 0 without), published together.
    pub(crate) running: PollStamp,
    /// Its thread's account with the scheduler, set by the thread when it
    /// starts in a pool that measures with the host's clock.
    pub(crate) cpu: std::sync::OnceLock<crate::telemetry::cpu::CpuWatch>,
}

impl WorkerCell {
    pub(crate) fn new(id: WorkerId) -> Self {
        Self {
            id,
            completed: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            running: PollStamp::new(),
            cpu: std::sync::OnceLock::new(),
        }
    }

    /// Adds to this thread's counters (only its own thread calls this).
    pub(crate) fn count(&self, completed: u64, panicked: u64) {
        bump(&self.completed, completed);
        bump(&self.panicked, panicked);
    }

    /// Counts how a task it ran ended (only its own thread calls this).
    pub(crate) fn count_ran(&self, ran: &Ran) {
        match ran {
            Ran::Completed => bump(&self.completed, 1),
            Ran::Panicked => bump(&self.panicked, 1),
            Ran::Skipped => bump(&self.cancelled, 1),
        }
    }

    pub(crate) fn report(&self) -> WorkerReport {
        WorkerReport {
            id: self.id,
            completed: self.completed.load(Ordering::Relaxed),
            panicked: self.panicked.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
        }
    }
}

/// A single-writer counter increment: no read-modify-write needed.
fn bump(counter: &AtomicU64, by: u64) {
    if by != 0 {
        counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
    }
}
