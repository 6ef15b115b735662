//! The engine's shutdown: it closes admission, applies the policy to what is
//! queued, waits for the threads (within a deadline, if given) and reports
//! each one.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use dinah_core::config::LifecycleState;
use dinah_core::raw::wait::WakeBatch;

use super::engine::{Engine, is_worker_of};
use super::job::Entry;
use super::{PoolReport, ShutdownPolicy, Unfinished, Unstarted, WorkerReport};
use crate::primitives::{Ordering, lock, wait, wait_timeout};
use crate::unwind::drop_quietly;

impl Engine {
    /// Closes the engine, applies `policy`, waits for every thread (until
    /// `deadline`, if given) and reports.
    pub(crate) fn shutdown(
        self: &Arc<Self>,
        policy: ShutdownPolicy,
        deadline: Option<Duration>,
    ) -> PoolReport {
        let until = deadline.map(|d| Instant::now() + d);
        let mut state = lock(&self.state);
        if state.lifecycle == LifecycleState::Running {
            let _ = state.lifecycle.transition_to(LifecycleState::Stopping);
        }
        self.stopping.store(true, Ordering::Release);
        // Submitters waiting for room are turned away (they hand their
        // tasks back as `Shutdown`), woken outside the lock.
        let mut turned_away = Vec::new();
        loop {
            let mut batch = WakeBatch::new();
            state.room.close_into(&mut batch);
            let full = batch.is_full();
            turned_away.push(batch);
            if !full {
                break;
            }
        }
        // Under the same lock as the change to `Stopping`: a thread that
        // sees the pool shut down (or finishes a task meanwhile) cannot
        // start a queued task the policy cancels.
        let mut taken = Vec::new();
        if policy == ShutdownPolicy::CancelPending {
            let queue = std::mem::take(&mut state.queue);
            for entry in queue {
                match entry {
                    Entry::Task(job) => taken.push(job),
                    // A finished batch's spare entry: nothing to run.
                    entry @ Entry::Batch(_) => state.queue.push_back(entry),
                }
            }
            state.queued_tasks = 0;
            self.pending.store(state.queue.len(), Ordering::Release);
        }
        drop(state);
        turned_away.into_iter().for_each(WakeBatch::wake);
        let mut state = lock(&self.state);
        self.work.notify_all();
        // Shut down from one of its own threads (the last owner dropped in
        // a task): that thread cannot wait for itself; it leaves when its
        // task returns.
        let own = usize::from(is_worker_of(self));
        let mut timed_out = false;
        while state.crew.threads > own {
            match until {
                None => state = wait(&self.exited, state),
                Some(until) => {
                    let now = Instant::now();
                    if now >= until {
                        timed_out = true;
                        break;
                    }
                    state = wait_timeout(&self.exited, state, until - now).0;
                }
            }
        }
        let unfinished = timed_out.then(|| Unfinished {
            running: state
                .crew
                .workers
                .iter()
                .filter_map(|w| w.running.read().map(|(task, _)| (w.id, task)))
                .collect(),
            queued: state.queued_tasks,
        });
        if !timed_out {
            let _ = state.lifecycle.transition_to(LifecycleState::Stopped);
        }
        let gone = std::mem::take(&mut state.crew.gone);
        let handles = std::mem::take(&mut state.crew.handles);
        drop(state);
        for (id, handle) in handles {
            if gone.contains(&id) {
                let _ = handle.join();
            }
            // Otherwise the deadline passed with this thread still working:
            // it is detached and finishes on its own.
        }
        if let Some(probe) = self.probe.get() {
            for job in &taken {
                probe.dropped(job.id());
            }
        }
        let hook_panic = crate::telemetry::take_hook_panic();
        // Tasks whose handles cancelled them are counted, not handed back.
        let mut handed_back = Vec::with_capacity(taken.len());
        let mut discarded = 0u64;
        for job in taken {
            if job.is_cancelled() {
                discarded += 1;
                drop_quietly(job);
            } else {
                handed_back.push(Unstarted::new(job));
            }
        }
        let mut state = lock(&self.state);
        state.cancelled += discarded + handed_back.len() as u64;
        let workers: Vec<WorkerReport> = state.crew.workers.iter().map(|w| w.report()).collect();
        drop(state);
        let stats = self.stats();
        if let Some(payload) = hook_panic {
            // Everything is settled: a hook's panic reaches the caller.
            drop(handed_back);
            std::panic::resume_unwind(payload);
        }
        PoolReport {
            policy,
            completed: stats.completed,
            panicked: stats.panicked,
            cancelled: stats.cancelled,
            handed_back,
            workers,
            unfinished,
        }
    }
}
