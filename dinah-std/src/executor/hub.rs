//! [`Hub`]: the part of an executor that other threads reach (its wake
//! stack, its thread, its ingress, its task ids and its telemetry), shared
//! by every task header, [`Spawner`](super::Spawner) and
//! [`ExecutorMonitor`](super::ExecutorMonitor).
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;

use dinah_core::TaskId;
use dinah_core::executor::SpawnError;
use dinah_core::raw::sched::WakeStack;
use dinah_core::task::TaskOutput;

use super::ingress::{Ingress, Refused, Remote, Submission};
use super::probe::ExecProbe;
use crate::runtime::Driver;
use crate::runtime::context as here;
use crate::task::{Join, JoinHandle};
use crate::telemetry::hook::Hook;
use crate::telemetry::run_hooks;

/// The executor's state that wakers and spawners on other threads reach.
pub(super) struct Hub {
    pub(super) stack: WakeStack,
    /// The executor's timers and reactor, and where its thread waits:
    /// parked, or in its reactor (it cannot move: it is `!Send`).
    pub(crate) driver: Arc<Driver>,
    /// That thread's id, for the join handles of its tasks.
    pub(super) home: std::thread::ThreadId,
    pub(super) ingress: Ingress,
    /// The next task id (a statistic's counter, outside loom's models).
    next_task: std::sync::atomic::AtomicU64,
    /// The executor's telemetry, if it keeps any.
    pub(super) probe: Hook<Box<ExecProbe>>,
}

impl Hub {
    /// `items` has room reserved for `capacity` submissions.
    pub(super) fn new(
        driver: Arc<Driver>,
        capacity: usize,
        items: VecDeque<Box<dyn Submission>>,
        probe: Hook<Box<ExecProbe>>,
    ) -> Self {
        Self {
            stack: WakeStack::new(),
            driver,
            home: std::thread::current().id(),
            ingress: Ingress::new(capacity, items),
            next_task: std::sync::atomic::AtomicU64::new(1),
            probe,
        }
    }

    /// A new task id.
    pub(super) fn next_id(&self) -> TaskId {
        let n = self
            .next_task
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        TaskId::new(n).unwrap_or(TaskId::MAX)
    }

    /// What identifies this executor in this thread's [`here`] state.
    #[inline]
    pub(super) fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Makes sure the executor's thread sees new work: unparks it, unless
    /// this is that thread running that executor right now (then it is not
    /// parked, and it checks for work before it parks, later on this same
    /// thread, so the push cannot be missed).
    #[inline]
    pub(super) fn notify(&self) {
        if !here::is_running_here(self.address()) {
            self.driver.unpark();
        }
    }

    /// Queues a newly started task from the executor's own thread: on the
    /// local list while the executor runs here (with the wakes made in the
    /// same run, in order); otherwise on the wake stack, in order with the
    /// wakes made between runs. No unpark: the executor is not parked, this
    /// is its thread.
    #[inline]
    pub(super) fn queue_started(
        &self,
        cell: &dinah_core::raw::sched::TaskCell<dinah_core::raw::sched::Link32>,
    ) {
        if here::queue_here(self.address(), cell.index()).is_err() {
            self.stack.push(cell);
        }
    }

    /// Submits `future` through the ingress (see
    /// [`Spawner::try_spawn`](super::Spawner::try_spawn)).
    pub(super) fn submit<F>(
        &self,
        future: F,
        name: Option<&'static str>,
    ) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput + Send + 'static,
    {
        let id = self.next_id();
        let mut future = Some(future);
        let mut accepted = None;
        let pushed = self.ingress.push(|| {
            let mut submitted_at = 0;
            if let Some(probe) = self.probe.get() {
                // A hook's panic reaches the caller before the future is
                // taken (and poisons nothing: the ingress lock ignores it).
                run_hooks(|| submitted_at = probe.submitted(id, name));
            }
            let join = Join::running(id, None, self.home);
            accepted = Some(Arc::clone(&join));
            Box::new(Remote {
                future: future.take(),
                join,
                submitted_at,
                name,
            })
        });
        let refused = |future: Option<F>, full: bool| {
            if let Some(probe) = self.probe.get() {
                run_hooks(|| probe.rejected(id, full));
            }
            let future = future.expect("a refused submission keeps its future");
            if full {
                SpawnError::Full(future)
            } else {
                SpawnError::Shutdown(future)
            }
        };
        match (pushed, accepted) {
            (Ok(()), Some(join)) => {
                self.notify();
                Ok(JoinHandle::new(join))
            }
            (Err(Refused::Full), _) => Err(refused(future, true)),
            (_, _) => Err(refused(future, false)),
        }
    }
}
