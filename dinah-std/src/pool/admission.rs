//! Admission to the engine: a submission is queued, put in line for room,
//! or handed back (invariants 1 to 3 of `engine.rs`), and a batch's
//! entries are pushed together.
#![forbid(unsafe_code)]

use std::io;
use std::sync::Arc;
use std::task::Waker;

use dinah_core::config::LifecycleState;
use dinah_core::executor::SpawnError;
use dinah_core::raw::wait::WaitKey;

use super::AdmissionBound;
use super::engine::{Admitted, Ask, Engine, State};
use super::job::{BatchJob, ClosureJob, Entry, Job};
use crate::primitives::{Ordering, lock};
use crate::task::{Join, JoinHandle};

impl Engine {
    /// Admits `f` or hands it back.
    pub(crate) fn try_spawn<F, R>(
        self: &Arc<Self>,
        f: F,
    ) -> Result<JoinHandle<R>, SpawnError<F, io::Error>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        match self.admit(f, Ask::Now) {
            Admitted::Spawned(handle) => Ok(handle),
            Admitted::Refused(refused) => Err(refused),
            Admitted::Waiting(f, _) => Err(SpawnError::Full(f)),
        }
    }

    /// Tasks counted against the capacity, reservations included.
    pub(super) fn in_flight(&self, state: &State) -> usize {
        state.reserved
            + match self.config.bound {
                AdmissionBound::Queued => state.queued_tasks,
                AdmissionBound::InFlight => state.queued_tasks + state.running_tasks,
            }
    }

    /// Reserves freed room for the first submitter in line, if there is
    /// room and someone waits; returns its waker, to wake after the lock.
    pub(super) fn grant_room(&self, state: &mut State) -> Option<Waker> {
        if state.room.waiting() == 0 || self.in_flight(state) >= self.config.capacity {
            return None;
        }
        state.reserved += 1;
        state.room.settle_head(true)
    }

    /// A waiting submitter gives up its place (its future dropped); room
    /// reserved for it goes to the next in line.
    pub(crate) fn leave_line(&self, key: WaitKey) {
        let mut state = lock(&self.state);
        if state.room.cancel(key) > 0 {
            state.reserved -= 1;
        }
        let next = self.grant_room(&mut state);
        drop(state);
        if let Some(next) = next {
            next.wake();
        }
    }

    /// Looks at a waiting submitter's turn.
    pub(crate) fn turn(&self, key: WaitKey, waker: &Waker) -> dinah_core::raw::wait::Turn {
        lock(&self.state).room.poll(key, waker)
    }

    /// Admits `f`, hands it back, or (asked to) puts it in line for room.
    pub(crate) fn admit<F, R>(self: &Arc<Self>, f: F, ask: Ask<'_>) -> Admitted<F, R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let mut state = lock(&self.state);
        if let Ask::Reserved = ask {
            state.reserved -= 1;
        }
        if state.lifecycle != LifecycleState::Running {
            state.rejected += 1;
            drop(state);
            self.refused(false);
            return Admitted::Refused(SpawnError::Shutdown(f));
        }
        let jumps_line = !matches!(ask, Ask::Reserved) && state.room.waiting() > 0;
        if jumps_line || self.in_flight(&state) >= self.config.capacity {
            if let Ask::OrWait(waker) = ask {
                let key = state.room.push(waker, 1, 0);
                if let Some(key) = key {
                    return Admitted::Waiting(f, key);
                }
            }
            state.rejected += 1;
            drop(state);
            self.refused(true);
            return Admitted::Refused(SpawnError::Full(f));
        }
        // A pool with no thread must start one for this task, or refuse it.
        if self.config.on_demand
            && state.crew.threads == 0
            && let Err((_, error)) = self.spawn_thread(&mut state)
        {
            state.rejected += 1;
            drop(state);
            self.refused(false);
            return Admitted::Refused(SpawnError::NoThread(f, error));
        }
        let id = self.next_id();
        let join = Join::queued(id);
        let mut queued_at = 0;
        if let Some(probe) = self.probe.get() {
            // A hook's panic reaches the submitter before the task is
            // queued (the lock ignores the poison).
            let queued = state.queued_tasks + 1;
            crate::telemetry::run_hooks(|| queued_at = probe.submitted(id, queued));
        }
        let job: Box<dyn Job> = Box::new(ClosureJob {
            queued_at,
            f: Some(f),
            outcome: None,
            join: Arc::clone(&join),
        });
        state.queue.push_back(Entry::Task(job));
        state.queued_tasks += 1;
        state.accepted += 1;
        self.pending.store(state.queue.len(), Ordering::Release);
        let notify = self.dispatch(&mut state);
        let reap = !state.crew.gone.is_empty();
        drop(state);
        self.wake_idle(notify);
        if reap {
            self.reap();
        }
        Admitted::Spawned(JoinHandle::new(join))
    }

    /// Queues `participants` entries of one batch, bypassing the capacity
    /// (the caller waits for the batch, which bounds it), and wakes as many
    /// threads. `accepted` counts the batch's tasks.
    ///
    /// Returns `None` (and queues nothing) when the engine is not running,
    /// else whether every entry found a thread already awake for it (none
    /// had to be woken from sleep).
    pub(crate) fn push_batch(
        self: &Arc<Self>,
        batch: &Arc<dyn BatchJob>,
        participants: usize,
        tasks: usize,
    ) -> Option<bool> {
        let mut state = lock(&self.state);
        if state.lifecycle != LifecycleState::Running {
            return None;
        }
        for _ in 0..participants {
            state.queue.push_back(Entry::Batch(Arc::clone(batch)));
        }
        state.accepted += tasks as u64;
        self.pending.store(state.queue.len(), Ordering::Release);
        let awake =
            state.queue.len() <= state.crew.spinning + state.crew.notified + state.crew.starting;
        let notify = self.dispatch(&mut state);
        drop(state);
        self.wake_idle(notify);
        Some(awake)
    }
}
