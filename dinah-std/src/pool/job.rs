//! What a pool's queue holds: one accepted task type-erased as a [`Job`]
//! (a [`ClosureJob`] with its join), or a share of a batch
//! ([`BatchJob`]); and [`Unstarted`], a job a shutdown handed back.
#![forbid(unsafe_code)]

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use dinah_core::TaskId;

use super::probe::PoolProbe;
use super::worker_cell::{Ran, WorkerCell};
use crate::task::{Join, JoinError};
use crate::unwind::{drop_quietly, panic_text};

/// One accepted task, type-erased.
pub(crate) trait Job: Send {
    fn id(&self) -> TaskId;
    /// When it was queued, in the telemetry clock's nanoseconds (0 without
    /// telemetry).
    fn queued_at(&self) -> u64;
    /// Whether the handle cancelled it before it started.
    fn is_cancelled(&self) -> bool;
    /// Runs the task (unless cancelled) and keeps its outcome, telling
    /// `worker` (which task it runs) and `probe`. A panic in the task, or in
    /// a telemetry hook around it, is the task's failure. Never unwinds and
    /// resolves nothing: the caller settles its own counts first, then
    /// calls [`resolve`](Self::resolve).
    fn run(&mut self, worker: Option<&WorkerCell>, probe: Option<&PoolProbe>) -> Ran;
    /// Gives the handle the outcome [`run`](Self::run) kept, then lets go
    /// of the task; a destructor that panics on the way (a result nobody
    /// reads) is caught and discarded. Never unwinds.
    fn resolve(self: Box<Self>);
}

/// A task closure with its join. Dropping it unrun resolves the
/// handle as cancelled, after the closure is dropped.
pub(crate) struct ClosureJob<F, R> {
    pub(crate) queued_at: u64,
    pub(crate) f: Option<F>,
    /// What `run` produced, for `resolve`.
    pub(crate) outcome: Option<Result<R, JoinError>>,
    pub(crate) join: Arc<Join<R>>,
}

/// The panic a telemetry hook raised on this thread, as a task's failure.
fn hook_failure() -> Option<JoinError> {
    let payload = crate::telemetry::take_hook_panic()?;
    let text = panic_text(&*payload);
    drop_quietly(payload);
    Some(JoinError::Panicked(text))
}

impl<F, R> Job for ClosureJob<F, R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    fn id(&self) -> TaskId {
        self.join.id()
    }

    fn queued_at(&self) -> u64 {
        self.queued_at
    }

    fn is_cancelled(&self) -> bool {
        self.join.is_cancelled()
    }

    fn run(&mut self, worker: Option<&WorkerCell>, probe: Option<&PoolProbe>) -> Ran {
        let Some(f) = self.f.take() else {
            return Ran::Skipped;
        };
        if !self.join.start() {
            drop_quietly(f);
            if let Some(probe) = probe {
                probe.dropped(self.join.id());
                // The task is settled (cancelled through its handle), and
                // no caller is on this stack: a hook's panic is discarded.
                drop(hook_failure());
            }
            return Ran::Skipped;
        }
        let start = probe.map(|probe| probe.started(self.join.id(), self.queued_at));
        if let Some(worker) = worker {
            worker.running.start(self.join.id(), start.unwrap_or(0));
        }
        let (mut result, mut ran) = match probe.and_then(|_| hook_failure()) {
            // The start's hook panicked: the task fails before it runs.
            Some(failure) => {
                drop_quietly(f);
                (Err(failure), Ran::Panicked)
            }
            None => match catch_unwind(AssertUnwindSafe(f)) {
                Ok(value) => (Ok(value), Ran::Completed),
                Err(payload) => {
                    let text = panic_text(&*payload);
                    drop_quietly(payload);
                    (Err(JoinError::Panicked(text)), Ran::Panicked)
                }
            },
        };
        if let (Some(probe), Some(start)) = (probe, start) {
            probe.ended(self.join.id(), start, matches!(ran, Ran::Completed));
            if let Some(failure) = hook_failure() {
                // The end's hook panicked: that is the task's failure.
                drop_quietly(std::mem::replace(&mut result, Err(failure)));
                ran = Ran::Panicked;
            }
        }
        if let Some(worker) = worker {
            worker.running.end();
        }
        self.outcome = Some(result);
        ran
    }

    fn resolve(mut self: Box<Self>) {
        if let Some(outcome) = self.outcome.take() {
            self.join.finish(outcome);
        }
        // The last reference to the join may hold a result nobody reads.
        drop_quietly(self);
    }
}

impl<F, R> Drop for ClosureJob<F, R> {
    fn drop(&mut self) {
        if let Some(f) = self.f.take() {
            drop_quietly(f);
            self.join.abort(JoinError::Cancelled);
        }
    }
}

/// A batch that several threads work on together (see `WorkerPool::run`).
pub(crate) trait BatchJob: Send + Sync {
    /// Claims and runs the batch's tasks until none are left. Never unwinds.
    fn participate(&self, worker: &WorkerCell);
}

pub(crate) enum Entry {
    Task(Box<dyn Job>),
    Batch(Arc<dyn BatchJob>),
}

/// An accepted task that a shutdown handed back without running it.
///
/// Its handle stays pending until this is run or dropped: [`run`](Self::run)
/// runs it on the calling thread and gives its handle the result; dropping it
/// drops the closure unrun and resolves the handle as
/// [`JoinError::Cancelled`](crate::task::JoinError::Cancelled).
#[must_use = "dropping an Unstarted task cancels it"]
pub struct Unstarted {
    job: Box<dyn Job>,
}

impl Unstarted {
    pub(super) fn new(job: Box<dyn Job>) -> Self {
        Self { job }
    }

    /// The task's id.
    #[must_use]
    pub fn id(&self) -> TaskId {
        self.job.id()
    }

    /// Runs the task on the calling thread. A panic is caught and given to
    /// its handle as [`JoinError::Panicked`](crate::task::JoinError::Panicked), as on a pool thread. Returns
    /// whether it ran (`false` if its handle cancelled it meanwhile). The
    /// report that handed it back already counted it as cancelled; running
    /// it changes no pool count.
    pub fn run(mut self) -> bool {
        let ran = self.job.run(None, None);
        self.job.resolve();
        !matches!(ran, Ran::Skipped)
    }
}

impl fmt::Debug for Unstarted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unstarted").field("id", &self.id()).finish()
    }
}
