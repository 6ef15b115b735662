//! The engine both pools run on: one bounded FIFO of entries under one lock,
//! the threads that take from it, and the shutdown that empties it.
//!
//! # Invariants
//!
//! All of these hold under the `state` lock:
//! 1. An accepted task is in exactly one place: the queue, a thread that
//!    took it, or the list a `CancelPending` shutdown hands back. A thread
//!    takes an entry only by `pop_front`, so each runs at most once.
//! 2. Admission is decided under the lock: `queued_tasks` (plus
//!    `running_tasks` under [`AdmissionBound::InFlight`]) stays within the
//!    capacity, and once the lifecycle leaves `Running` nothing is admitted.
//! 3. No lost wakeup: a thread decides to wait only while holding the lock
//!    and seeing an empty queue, and counts itself in `idle` before waiting.
//!    A spinning thread counts itself in `spinning` and re-checks the queue
//!    under the lock before it waits. Every push is followed, under the same
//!    lock, by `dispatch`, which notifies idle threads (or starts new ones)
//!    until the threads headed for the queue (spinning, notified, starting)
//!    are at least as many as its entries, or none is left to call.
//! 4. A thread leaves only under the lock, when the queue is empty and the
//!    lifecycle is not `Running` (shutdown), or when its keep-alive ran out
//!    with the queue empty. `threads` counts the threads that have not left.
//! 5. No user code runs under the lock: entries run, and handed-back or
//!    discarded closures drop, after the guard is released. With telemetry,
//!    the configured clock and sink are called under it (so a task's
//!    `Submitted` event precedes its `Started`); their contracts forbid
//!    calling back into the pool.
//!
//! No deadlock: a thread holds this lock only briefly and never while
//! waiting on anything but this lock's own condition variables.

use std::collections::VecDeque;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dinah_core::{LifecycleState, PollStamp, TaskId, WorkerId};

use super::handle::{JoinError, Slot, TaskHandle};
use super::probe::{PoolProbe, Seen};
use super::{
    AdmissionBound, PoolReport, PoolStats, ShutdownPolicy, SubmitError, Unfinished, Unstarted,
    WorkerReport,
};
use crate::sync::{
    AtomicBool, AtomicU64, AtomicUsize, Builder, Condvar, JoinHandle, Mutex, Ordering, lock, wait,
    wait_timeout, yield_now,
};
use crate::telemetry::{Hook, TelemetryConfig, Thresholds, Verdict};
use crate::unwind::{drop_quietly, panic_text};

/// How long a thread with nothing to do looks for work before it sleeps:
/// first `busy` checks with a CPU spin hint between them, then `yields`
/// checks with a yield to the scheduler between them.
#[derive(Clone, Copy)]
pub(crate) struct Spin {
    pub(crate) busy: u32,
    pub(crate) yields: u32,
}

/// About 20 µs of busy checks and then some tens of microseconds of yields
/// on the machines measured: long enough to bridge the gap between
/// back-to-back batches and bursts, short enough that an idle pool goes quiet
/// at once. None under loom, whose models would only grow.
#[cfg(not(any(loom, miri)))]
pub(crate) const SPIN: Spin = Spin {
    busy: 2_000,
    yields: 64,
};
/// Under Miri a short spin, which keeps the spinning path checked: every
/// interpreted spin costs real seconds there, and the tests wait for idle
/// threads many times.
#[cfg(all(miri, not(loom)))]
pub(crate) const SPIN: Spin = Spin {
    busy: 20,
    yields: 2,
};
#[cfg(loom)]
pub(crate) const SPIN: Spin = Spin { busy: 0, yields: 0 };

impl Spin {
    /// Checks `ready` until it is true (returns `true`) or the spin is over
    /// (returns `false`).
    pub(crate) fn until(self, mut ready: impl FnMut() -> bool) -> bool {
        for _ in 0..self.busy {
            if ready() {
                return true;
            }
            std::hint::spin_loop();
        }
        for _ in 0..self.yields {
            if ready() {
                return true;
            }
            yield_now();
        }
        ready()
    }

    fn is_off(self) -> bool {
        self.busy == 0 && self.yields == 0
    }
}

/// How one entry ended, for the counters.
pub(crate) enum Ran {
    Completed,
    Panicked,
    /// Cancelled through its handle before it started; not run.
    Skipped,
}

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

/// A task closure with its result slot. Dropping it unrun resolves the
/// handle as cancelled, after the closure is dropped.
struct Task<F, R> {
    id: TaskId,
    queued_at: u64,
    f: Option<F>,
    /// What `run` produced, for `resolve`.
    outcome: Option<Result<R, JoinError>>,
    slot: Arc<Slot<R>>,
}

/// The panic a telemetry hook raised on this thread, as a task's failure.
fn hook_failure() -> Option<JoinError> {
    let payload = crate::telemetry::take_hook_panic()?;
    let text = panic_text(&*payload);
    drop_quietly(payload);
    Some(JoinError::Panicked(text))
}

impl<F, R> Job for Task<F, R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    fn id(&self) -> TaskId {
        self.id
    }

    fn queued_at(&self) -> u64 {
        self.queued_at
    }

    fn is_cancelled(&self) -> bool {
        self.slot.is_cancelled()
    }

    fn run(&mut self, worker: Option<&WorkerCell>, probe: Option<&PoolProbe>) -> Ran {
        let Some(f) = self.f.take() else {
            return Ran::Skipped;
        };
        if !self.slot.start() {
            drop_quietly(f);
            if let Some(probe) = probe {
                probe.dropped(self.id);
                // The task is settled (cancelled through its handle), and
                // no caller is on this stack: a hook's panic is discarded.
                drop(hook_failure());
            }
            return Ran::Skipped;
        }
        let start = probe.map(|probe| probe.started(self.id, self.queued_at));
        if let Some(worker) = worker {
            worker.running.start(self.id, start.unwrap_or(0));
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
            probe.ended(self.id, start, &ran);
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
            self.slot.finish(outcome);
        }
        // The last reference to the slot may hold a result nobody reads.
        drop_quietly(self);
    }
}

impl<F, R> Drop for Task<F, R> {
    fn drop(&mut self) {
        if let Some(f) = self.f.take() {
            drop_quietly(f);
            self.slot.cancel();
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

/// One thread's counters. Written only by that thread; read by anyone.
pub(crate) struct WorkerCell {
    pub(crate) id: WorkerId,
    completed: AtomicU64,
    panicked: AtomicU64,
    cancelled: AtomicU64,
    /// The task it is running and when that task started (with telemetry;
    /// 0 without), published together.
    running: PollStamp,
}

impl WorkerCell {
    fn new(id: WorkerId) -> Self {
        Self {
            id,
            completed: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            running: PollStamp::new(),
        }
    }

    /// Adds to this thread's counters (only its own thread calls this).
    pub(crate) fn count(&self, completed: u64, panicked: u64) {
        bump(&self.completed, completed);
        bump(&self.panicked, panicked);
    }

    /// Counts how a task it ran ended (only its own thread calls this).
    fn count_ran(&self, ran: &Ran) {
        match ran {
            Ran::Completed => bump(&self.completed, 1),
            Ran::Panicked => bump(&self.panicked, 1),
            Ran::Skipped => bump(&self.cancelled, 1),
        }
    }

    fn report(&self) -> WorkerReport {
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

/// How an engine starts and keeps its threads.
#[derive(Clone, Copy)]
pub(crate) struct EngineConfig {
    pub(crate) name: &'static str,
    pub(crate) max_threads: usize,
    pub(crate) capacity: usize,
    pub(crate) bound: AdmissionBound,
    /// `None`: threads live until shutdown. `Some(d)`: a thread idle for
    /// `d` leaves (at once for zero).
    pub(crate) keep_alive: Option<Duration>,
    /// Threads start on the first submissions that find none idle, rather
    /// than all at construction.
    pub(crate) on_demand: bool,
    /// How long a thread with nothing to do looks for work before it waits.
    pub(crate) spin: Spin,
}

/// Task outcomes counted outside any live thread's cell.
#[derive(Clone, Copy, Default)]
struct Tally {
    completed: u64,
    panicked: u64,
    cancelled: u64,
}

struct State {
    queue: VecDeque<Entry>,
    /// `Entry::Task`s in `queue`.
    queued_tasks: usize,
    /// Tasks a thread has taken and not finished.
    running_tasks: usize,
    lifecycle: LifecycleState,
    threads: usize,
    /// Threads running an entry.
    busy: usize,
    /// Threads waiting on `work`.
    idle: usize,
    /// Threads looking for entries without the lock; each re-checks the
    /// queue under the lock before it waits.
    spinning: usize,
    /// Threads spawned that have not yet taken the lock.
    starting: usize,
    /// Notifications sent to idle threads and not yet consumed.
    notified: usize,
    accepted: u64,
    rejected: u64,
    /// Tasks cancelled by a shutdown or handed back by a batch.
    cancelled: u64,
    next_worker: u64,
    workers: Vec<Arc<WorkerCell>>,
    /// The counters of threads that left on keep-alive, and of batch tasks
    /// run by a thread that is not one of the pool's.
    folded: Tally,
    handles: Vec<(WorkerId, JoinHandle<()>)>,
    /// Threads that left their loop and can be joined without waiting.
    gone: Vec<WorkerId>,
}

pub(crate) struct Engine {
    state: Mutex<State>,
    /// Idle threads wait here for entries or shutdown.
    work: Condvar,
    /// Shutdown waits here for the last thread to leave.
    exited: Condvar,
    /// `queue.len()`, for spinning threads to read without the lock.
    pending: AtomicUsize,
    stopping: AtomicBool,
    next_task: AtomicU64,
    config: EngineConfig,
    probe: Hook<PoolProbe>,
}

impl Engine {
    pub(crate) fn new(config: EngineConfig, telemetry: Option<TelemetryConfig>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                queue: VecDeque::with_capacity(config.capacity.min(1 << 12)),
                queued_tasks: 0,
                running_tasks: 0,
                lifecycle: LifecycleState::Created,
                threads: 0,
                busy: 0,
                idle: 0,
                spinning: 0,
                starting: 0,
                notified: 0,
                accepted: 0,
                rejected: 0,
                cancelled: 0,
                next_worker: 1,
                workers: Vec::new(),
                folded: Tally::default(),
                handles: Vec::new(),
                gone: Vec::new(),
            }),
            work: Condvar::new(),
            exited: Condvar::new(),
            pending: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            next_task: AtomicU64::new(1),
            config,
            probe: Hook::new(telemetry.map(PoolProbe::new)),
        })
    }

    /// The pool's telemetry, if it keeps any.
    pub(crate) fn probe(&self) -> Option<&PoolProbe> {
        self.probe.get()
    }

    /// Counts a refusal in the telemetry, if kept. Called without the
    /// lock; a hook's panic reaches the submitter.
    fn refused(&self, full: bool) {
        if let Some(probe) = self.probe.get() {
            crate::telemetry::run_hooks(|| probe.rejected(self.next_id(), full));
        }
    }

    /// The diagnosis (see `PoolMonitor::diagnose`).
    pub(crate) fn diagnose(&self, thresholds: &Thresholds) -> Vec<Verdict> {
        let Some(probe) = self.probe.get() else {
            return Vec::new();
        };
        let seen = {
            let state = lock(&self.state);
            let in_flight = match self.config.bound {
                AdmissionBound::Queued => state.queued_tasks,
                AdmissionBound::InFlight => state.queued_tasks + state.running_tasks,
            };
            Seen {
                blocking: self.config.on_demand,
                queued: state.queued_tasks,
                in_flight,
                running_tasks: state.running_tasks,
                capacity: self.config.capacity,
                bound: self.config.bound,
                oldest_queued: state.queue.iter().find_map(|entry| match entry {
                    Entry::Task(job) => Some(job.queued_at()),
                    Entry::Batch(_) => None,
                }),
                running: state
                    .workers
                    .iter()
                    .filter_map(|w| {
                        let (task, start) = w.running.read()?;
                        Some((w.id, task, start))
                    })
                    .collect(),
            }
        };
        let mut verdicts = Vec::new();
        crate::telemetry::run_hooks(|| verdicts = probe.diagnose(thresholds, &seen));
        verdicts
    }

    /// Starts `config.max_threads` threads (or none when on demand) and
    /// opens for submissions. On a refused thread, the ones started are
    /// stopped and joined and the refusal is returned with the id it was for.
    pub(crate) fn start(self: &Arc<Self>) -> Result<(), (WorkerId, io::Error)> {
        let mut state = lock(&self.state);
        if !self.config.on_demand {
            for _ in 0..self.config.max_threads {
                if let Err(refused) = self.spawn_thread(&mut state) {
                    let _ = state.lifecycle.transition_to(LifecycleState::Stopped);
                    self.stopping.store(true, Ordering::Release);
                    self.work.notify_all();
                    let handles = std::mem::take(&mut state.handles);
                    drop(state);
                    for (_, handle) in handles {
                        let _ = handle.join();
                    }
                    return Err(refused);
                }
            }
        }
        let _ = state.lifecycle.transition_to(LifecycleState::Running);
        Ok(())
    }

    fn spawn_thread(self: &Arc<Self>, state: &mut State) -> Result<(), (WorkerId, io::Error)> {
        let id = WorkerId::new(state.next_worker).unwrap_or(WorkerId::MAX);
        state.next_worker = state.next_worker.saturating_add(1);
        let cell = Arc::new(WorkerCell::new(id));
        let engine = Arc::clone(self);
        let thread_cell = Arc::clone(&cell);
        let spawned = Builder::new()
            .name(format!("{}-{}", self.config.name, id.get()))
            .spawn(move || engine.work_loop(&thread_cell));
        match spawned {
            Ok(handle) => {
                state.threads += 1;
                state.starting += 1;
                state.workers.push(cell);
                state.handles.push((id, handle));
                Ok(())
            }
            Err(error) => Err((id, error)),
        }
    }

    /// Joins the threads that left on keep-alive. Called without the lock.
    fn reap(&self) {
        let mut state = lock(&self.state);
        if state.gone.is_empty() {
            return;
        }
        let gone = std::mem::take(&mut state.gone);
        let mut finished = Vec::with_capacity(gone.len());
        let mut index = 0;
        while index < state.handles.len() {
            if gone.contains(&state.handles[index].0) {
                finished.push(state.handles.swap_remove(index).1);
            } else {
                index += 1;
            }
        }
        drop(state);
        for handle in finished {
            let _ = handle.join();
        }
    }

    fn next_id(&self) -> TaskId {
        let n = self.next_task.fetch_add(1, Ordering::Relaxed);
        TaskId::new(n).unwrap_or(TaskId::MAX)
    }

    /// Admits `f` or hands it back.
    pub(crate) fn try_submit<F, R>(self: &Arc<Self>, f: F) -> Result<TaskHandle<R>, SubmitError<F>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let mut state = lock(&self.state);
        if state.lifecycle != LifecycleState::Running {
            state.rejected += 1;
            drop(state);
            self.refused(false);
            return Err(SubmitError::ShuttingDown(f));
        }
        let in_flight = match self.config.bound {
            AdmissionBound::Queued => state.queued_tasks,
            AdmissionBound::InFlight => state.queued_tasks + state.running_tasks,
        };
        if in_flight >= self.config.capacity {
            state.rejected += 1;
            drop(state);
            self.refused(true);
            return Err(SubmitError::Full(f));
        }
        // A pool with no thread must start one for this task, or refuse it.
        if self.config.on_demand
            && state.threads == 0
            && let Err((_, error)) = self.spawn_thread(&mut state)
        {
            state.rejected += 1;
            drop(state);
            self.refused(false);
            return Err(SubmitError::ThreadRefused(f, error));
        }
        let id = self.next_id();
        let slot = Slot::new();
        let mut queued_at = 0;
        if let Some(probe) = self.probe.get() {
            // A hook's panic reaches the submitter before the task is
            // queued (the lock ignores the poison).
            let queued = state.queued_tasks + 1;
            crate::telemetry::run_hooks(|| queued_at = probe.submitted(id, queued));
        }
        let job: Box<dyn Job> = Box::new(Task {
            id,
            queued_at,
            f: Some(f),
            outcome: None,
            slot: Arc::clone(&slot),
        });
        state.queue.push_back(Entry::Task(job));
        state.queued_tasks += 1;
        state.accepted += 1;
        self.pending.store(state.queue.len(), Ordering::Release);
        self.dispatch(&mut state);
        let reap = !state.gone.is_empty();
        drop(state);
        if reap {
            self.reap();
        }
        Ok(TaskHandle::new(id, slot))
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
        let awake = state.queue.len() <= state.spinning + state.notified + state.starting;
        self.dispatch(&mut state);
        Some(awake)
    }

    /// Makes sure a thread is headed for every queued entry, as far as the
    /// thread limit allows: threads spinning, notified or starting count as
    /// headed; beyond them an idle thread is notified, or (on demand) a new
    /// one started. If the operating system refuses a thread, the entries
    /// wait for the threads already alive (there is at least one).
    fn dispatch(self: &Arc<Self>, state: &mut State) {
        while state.queue.len() > state.spinning + state.notified + state.starting {
            if state.idle > state.notified {
                state.notified += 1;
                self.work.notify_one();
            } else if !(self.config.on_demand
                && state.threads < self.config.max_threads
                && self.spawn_thread(state).is_ok())
            {
                break;
            }
        }
    }

    /// Counts batch tasks run by a thread that is not one of the pool's.
    pub(crate) fn count_elsewhere(&self, completed: u64, panicked: u64) {
        let mut state = lock(&self.state);
        state.folded.completed += completed;
        state.folded.panicked += panicked;
    }

    /// Counts tasks a batch handed back unrun.
    pub(crate) fn count_handed_back(&self, tasks: usize) {
        lock(&self.state).cancelled += tasks as u64;
    }

    /// Looks for entries without the lock for a while. `true` when there may
    /// be one (or shutdown began).
    fn spin_for_work(&self) -> bool {
        self.config.spin.until(|| {
            self.pending.load(Ordering::Acquire) > 0 || self.stopping.load(Ordering::Acquire)
        })
    }

    fn work_loop(self: &Arc<Self>, cell: &WorkerCell) {
        super::enter_worker(self);
        let mut state = lock(&self.state);
        state.starting -= 1;
        loop {
            if let Some(entry) = state.queue.pop_front() {
                let is_task = matches!(entry, Entry::Task(_));
                if is_task {
                    state.queued_tasks -= 1;
                    state.running_tasks += 1;
                }
                state.busy += 1;
                self.pending.store(state.queue.len(), Ordering::Release);
                drop(state);
                let finished = match entry {
                    Entry::Task(mut job) => {
                        let ran = job.run(Some(cell), self.probe.get());
                        cell.count_ran(&ran);
                        Some(job)
                    }
                    Entry::Batch(batch) => {
                        batch.participate(cell);
                        None
                    }
                };
                state = lock(&self.state);
                state.busy -= 1;
                if is_task {
                    state.running_tasks -= 1;
                }
                if let Some(job) = finished {
                    // The handle resolves last, once every count and the
                    // task's place are settled: whoever it wakes sees the
                    // pool with room for the next one.
                    drop(state);
                    job.resolve();
                    state = lock(&self.state);
                }
                continue;
            }
            if state.lifecycle != LifecycleState::Running {
                break;
            }
            if !self.config.spin.is_off() {
                state.spinning += 1;
                drop(state);
                self.spin_for_work();
                state = lock(&self.state);
                state.spinning -= 1;
                if !state.queue.is_empty() || state.lifecycle != LifecycleState::Running {
                    continue;
                }
            }
            let timed_out = match self.config.keep_alive {
                Some(keep_alive) if keep_alive.is_zero() => true,
                keep_alive => {
                    state.idle += 1;
                    let timed_out = match keep_alive {
                        None => {
                            state = wait(&self.work, state);
                            false
                        }
                        Some(keep_alive) => {
                            let (guard, timed_out) = wait_timeout(&self.work, state, keep_alive);
                            state = guard;
                            timed_out
                        }
                    };
                    state.idle -= 1;
                    state.notified = state.notified.saturating_sub(1);
                    timed_out
                }
            };
            if timed_out && state.queue.is_empty() && state.lifecycle == LifecycleState::Running {
                // Keep-alive ran out: leave, and fold this thread's counters
                // into the folded total.
                if let Some(at) = state.workers.iter().position(|w| w.id == cell.id) {
                    let folded = state.workers.swap_remove(at).report();
                    state.folded.completed += folded.completed;
                    state.folded.panicked += folded.panicked;
                    state.folded.cancelled += folded.cancelled;
                }
                break;
            }
        }
        state.threads -= 1;
        state.gone.push(cell.id);
        // Every exit, not only the last: a shutdown from one of the pool's
        // own threads waits for all threads but itself.
        self.exited.notify_all();
    }

    /// Whether submissions are refused for good.
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.state).lifecycle != LifecycleState::Running
    }

    /// What the pool has done so far.
    pub(crate) fn stats(&self) -> PoolStats {
        let state = lock(&self.state);
        let mut stats = PoolStats {
            queued: state.queued_tasks,
            active: state.busy,
            idle: state.threads - state.busy,
            threads: state.threads,
            accepted: state.accepted,
            rejected: state.rejected,
            completed: state.folded.completed,
            panicked: state.folded.panicked,
            cancelled: state.folded.cancelled + state.cancelled,
        };
        for worker in &state.workers {
            let report = worker.report();
            stats.completed += report.completed;
            stats.panicked += report.panicked;
            stats.cancelled += report.cancelled;
        }
        stats
    }

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
        self.work.notify_all();
        // Shut down from one of its own threads (the last owner dropped in
        // a task): that thread cannot wait for itself; it leaves when its
        // task returns.
        let own = usize::from(super::is_worker_of(self));
        let mut timed_out = false;
        while state.threads > own {
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
                .workers
                .iter()
                .filter_map(|w| w.running.read().map(|(task, _)| (w.id, task)))
                .collect(),
            queued: state.queued_tasks,
        });
        if !timed_out {
            let _ = state.lifecycle.transition_to(LifecycleState::Stopped);
        }
        let gone = std::mem::take(&mut state.gone);
        let handles = std::mem::take(&mut state.handles);
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
        let workers: Vec<WorkerReport> = state.workers.iter().map(|w| w.report()).collect();
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
