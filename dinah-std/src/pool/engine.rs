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
//!    `running_tasks` under [`AdmissionBound::InFlight`]) plus `reserved`
//!    stays within the capacity, and once the lifecycle leaves `Running`
//!    nothing is admitted.
//! 6. Submitters waiting for room wait in `room`, first in, first out. Room
//!    that frees while someone waits is reserved for the first in line
//!    (`reserved`) before the lock is released, so no later submission
//!    takes it; a reservation is used by its submitter's next poll or handed
//!    to the next in line when that submitter gives up. Shutdown turns the
//!    whole line away.
//! 3. No lost wakeup: a thread decides to wait only while holding the lock
//!    and seeing an empty queue, and counts itself in `idle` before waiting.
//!    A spinning thread counts itself in `spinning` and re-checks the queue
//!    under the lock before it waits. Every push is followed, under the same
//!    lock, by `dispatch`, which counts idle threads as notified (or starts
//!    new ones) until the threads headed for the queue (spinning, notified,
//!    starting) are at least as many as its entries, or none is left to
//!    call; the notifications it counted are sent right after the lock is
//!    let go. An idle thread waits on `work` from the moment it counts
//!    itself (the count and the wait are one step under the lock), so a
//!    notification sent after the release still reaches it.
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
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::task::Waker;

use dinah_core::config::LifecycleState;
use dinah_core::executor::SpawnError;
use dinah_core::raw::{WaitKey, WaitList, WakeBatch};
use dinah_core::{TaskId, WorkerId};

use super::job::{BatchJob, ClosureJob, Entry, Job};
use super::probe::{PoolProbe, Seen};
use super::spin::Spin;
use super::worker_cell::WorkerCell;
use super::{
    AdmissionBound, PoolReport, PoolStats, ShutdownPolicy, Unfinished, Unstarted, WorkerReport,
};
use crate::primitives::{
    AtomicBool, AtomicU64, AtomicUsize, Builder, Condvar, JoinHandle as ThreadHandle, Mutex,
    Ordering, lock, wait, wait_timeout,
};
use crate::sync::Growing;
use crate::task::{Join, JoinHandle};
use crate::telemetry::hook::Hook;
use crate::telemetry::{TelemetryConfig, Thresholds, Verdict};
use crate::unwind::drop_quietly;

pub(super) fn enter_worker(engine: &Arc<Engine>) {
    crate::runtime::context::enter_pool(Arc::as_ptr(engine) as usize);
}

/// Whether the calling thread is one of `engine`'s threads (never while its
/// thread-locals are being destroyed: a pool thread's loop has ended then).
pub(super) fn is_worker_of(engine: &Arc<Engine>) -> bool {
    crate::runtime::context::is_pool_thread(Arc::as_ptr(engine) as usize)
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

/// What one admission attempt did.
pub(crate) enum Admitted<F, R> {
    /// Queued: its handle.
    Spawned(JoinHandle<R>),
    /// Refused, handed back.
    Refused(SpawnError<F, io::Error>),
    /// In line for room, handed back to its waiting submitter.
    Waiting(F, WaitKey),
}

/// How a submission asks for room.
#[derive(Clone, Copy)]
pub(crate) enum Ask<'a> {
    /// Now or never.
    Now,
    /// Now, or in line, woken by this waker when room is reserved.
    OrWait(&'a Waker),
    /// With the room reserved for it in line.
    Reserved,
}

struct State {
    queue: VecDeque<Entry>,
    /// Submitters waiting for room.
    room: WaitList<Growing>,
    /// Room reserved for submitters served from `room`, not yet used.
    reserved: usize,
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
    handles: Vec<(WorkerId, ThreadHandle<()>)>,
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
                room: WaitList::new(Growing::default()),
                reserved: 0,
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
        let now = probe.now();
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
                        // Every worker's account is looked at on each call,
                        // so its window is the time since the last one.
                        let look = w.cpu.get().and_then(|cpu| Some((cpu, cpu.look(now)?)));
                        let (task, start) = w.running.read()?;
                        let running_for = Duration::from_nanos(now.saturating_sub(start));
                        let fared = look.and_then(|(cpu, look)| cpu.fared(look, running_for));
                        Some((w.id, task, start, fared))
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
    fn in_flight(&self, state: &State) -> usize {
        state.reserved
            + match self.config.bound {
                AdmissionBound::Queued => state.queued_tasks,
                AdmissionBound::InFlight => state.queued_tasks + state.running_tasks,
            }
    }

    /// Reserves freed room for the first submitter in line, if there is
    /// room and someone waits; returns its waker, to wake after the lock.
    fn grant_room(&self, state: &mut State) -> Option<Waker> {
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
    pub(crate) fn turn(&self, key: WaitKey, waker: &Waker) -> dinah_core::raw::Turn {
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
            && state.threads == 0
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
        let reap = !state.gone.is_empty();
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
        let awake = state.queue.len() <= state.spinning + state.notified + state.starting;
        let notify = self.dispatch(&mut state);
        drop(state);
        self.wake_idle(notify);
        Some(awake)
    }

    /// Makes sure a thread is headed for every queued entry, as far as the
    /// thread limit allows: threads spinning, notified or starting count as
    /// headed; beyond them an idle thread is notified, or (on demand) a new
    /// one started. If the operating system refuses a thread, the entries
    /// wait for the threads already alive (there is at least one).
    ///
    /// Returns how many idle threads it counted as notified: the caller
    /// sends those notifications ([`wake_idle`](Self::wake_idle)) once it has
    /// let go of the lock, so that a woken thread does not at once wait
    /// again for the lock its waker still holds.
    #[must_use = "the notifications are the caller's to send, after the lock"]
    fn dispatch(self: &Arc<Self>, state: &mut State) -> usize {
        let mut notify = 0;
        while state.queue.len() > state.spinning + state.notified + state.starting {
            if state.idle > state.notified {
                state.notified += 1;
                notify += 1;
            } else if !(self.config.on_demand
                && state.threads < self.config.max_threads
                && self.spawn_thread(state).is_ok())
            {
                break;
            }
        }
        notify
    }

    /// Sends the notifications [`dispatch`](Self::dispatch) counted, with
    /// the lock let go. None is lost: each thread counted idle is already
    /// waiting on `work` (it counts itself and waits in one step under the
    /// lock), so a notification sent after the lock is released reaches it
    /// or, if it woke on its own meanwhile, another idle thread, which finds
    /// nothing and waits again.
    fn wake_idle(&self, count: usize) {
        for _ in 0..count {
            self.work.notify_one();
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
        enter_worker(self);
        if let Some(probe) = self.probe()
            && probe.watches_cpu()
        {
            let _ = cell
                .cpu
                .set(crate::telemetry::cpu::CpuWatch::this_thread(probe.now()));
        }
        let mut state = lock(&self.state);
        state.starting -= 1;
        loop {
            if let Some(entry) = state.queue.pop_front() {
                let is_task = matches!(entry, Entry::Task(_));
                let mut granted = None;
                if is_task {
                    state.queued_tasks -= 1;
                    state.running_tasks += 1;
                    granted = self.grant_room(&mut state);
                }
                state.busy += 1;
                self.pending.store(state.queue.len(), Ordering::Release);
                drop(state);
                if let Some(granted) = granted {
                    granted.wake();
                }
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
                let mut granted = None;
                if is_task {
                    state.running_tasks -= 1;
                    granted = self.grant_room(&mut state);
                }
                if finished.is_some() || granted.is_some() {
                    // The handle resolves last, once every count and the
                    // task's place are settled: whoever it wakes sees the
                    // pool with room for the next one.
                    drop(state);
                    if let Some(granted) = granted {
                        granted.wake();
                    }
                    if let Some(job) = finished {
                        job.resolve();
                    }
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
