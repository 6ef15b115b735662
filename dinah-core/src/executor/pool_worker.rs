//! [`Worker`]: a [`TaskPool`]'s task storage, which runs one job after
//! another, each as a task of its own.
#![forbid(unsafe_code)]

use core::convert::Infallible;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use super::TaskPool;
use crate::id::TaskId;
use crate::raw::wait::WaitKey;
use crate::task::Task;

/// A [`TaskPool`]'s worker: task storage that runs `job(input)` for each
/// input spawned into its pool, one at a time, in job storage the binary
/// pinned (see [`TaskPool::worker`]).
///
/// Spawned on an executor once, it is a task that waits for a job, runs
/// it, and ends with it; the executor then starts it again in the same
/// slot as a new task (see [`Task::turn`]), which waits for the next job.
/// Cancelling its task cancels the job it runs (or its wait for one); it
/// starts again all the same.
pub struct Worker<'p, 's, I, const Q: usize, const P: usize, F, J> {
    pool: &'p TaskPool<I, Q, P>,
    /// Its number in the pool.
    index: usize,
    job: F,
    /// The job running, if any.
    storage: Pin<&'s mut Option<J>>,
    /// The task it runs as now.
    task: TaskId,
    /// Its place in the pool's idle line, while it waits for a job.
    key: Option<WaitKey>,
}

impl<'p, 's, I, const Q: usize, const P: usize, F, J> Worker<'p, 's, I, Q, P, F, J> {
    pub(super) fn new(
        pool: &'p TaskPool<I, Q, P>,
        index: usize,
        job: F,
        storage: Pin<&'s mut Option<J>>,
    ) -> Self {
        Self {
            pool,
            index,
            job,
            storage,
            task: TaskId::MIN,
            key: None,
        }
    }
}

impl<I, const Q: usize, const P: usize, F, J> Worker<'_, '_, I, Q, P, F, J> {
    /// Drops the job it runs, if any, and leaves the idle line: its task
    /// is over.
    fn end_job(&mut self) {
        self.storage.set(None);
        self.pool.job_ended(self.index, self.key.take());
    }
}

impl<I, const Q: usize, const P: usize, F, J> Task for Worker<'_, '_, I, Q, P, F, J>
where
    F: FnMut(I) -> J + Unpin,
    J: Future<Output = ()>,
{
    type Error = Infallible;

    fn poll_task(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        let this = self.get_mut();
        if this.storage.is_none() {
            let Some(input) = this
                .pool
                .take_job(this.index, this.task, &mut this.key, cx.waker())
            else {
                return Poll::Pending;
            };
            this.storage.set(Some((this.job)(input)));
        }
        let Some(job) = this.storage.as_mut().as_pin_mut() else {
            return Poll::Pending;
        };
        if job.poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.end_job();
        Poll::Ready(Ok(()))
    }

    fn drop_future(self: Pin<&mut Self>) {
        self.get_mut().end_job();
    }

    /// Always: it can take another job.
    fn has_future(&self) -> bool {
        true
    }

    fn turn(self: Pin<&mut Self>, started: Option<TaskId>) -> bool {
        let this = self.get_mut();
        match started {
            Some(task) => this.task = task,
            // Its task ended: whatever is left of a job (one whose poll
            // unwound) goes, and it asks to run the next job as a new task.
            None => this.end_job(),
        }
        true
    }
}

impl<I, const Q: usize, const P: usize, F, J> fmt::Debug for Worker<'_, '_, I, Q, P, F, J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("index", &self.index)
            .field("task", &self.task)
            .field("running", &self.storage.is_some())
            .finish_non_exhaustive()
    }
}
