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
//! 3. Submitters waiting for room wait in `room`, first in, first out. Room
//!    that frees while someone waits is reserved for the first in line
//!    (`reserved`) before the lock is released, so no later submission
//!    takes it; a reservation is used by its submitter's next poll or handed
//!    to the next in line when that submitter gives up. Shutdown turns the
//!    whole line away.
//! 4. No lost wakeup: a thread decides to wait only while holding the lock
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
//! 5. A thread leaves only under the lock, when the queue is empty and the
//!    lifecycle is not `Running` (shutdown), or when its keep-alive ran out
//!    with the queue empty. `threads` counts the threads that have not left.
//! 6. No user code runs under the lock: entries run, and handed-back or
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
use std::time::Duration;

use std::task::Waker;

use dinah_core::config::LifecycleState;
use dinah_core::executor::SpawnError;
use dinah_core::raw::wait::{WaitKey, WaitList};
use dinah_core::{TaskId, WorkerId};

use super::job::Entry;
use super::probe::{PoolProbe, Seen};
use super::spin::Spin;
use super::worker_cell::WorkerCell;
use super::{AdmissionBound, PoolStats};
use crate::primitives::{
    AtomicBool, AtomicU64, AtomicUsize, Builder, Condvar, JoinHandle as ThreadHandle, Mutex,
    Ordering, lock, wait, wait_timeout,
};
use crate::sync::Growing;
use crate::task::JoinHandle;
use crate::telemetry::hook::Hook;
use crate::telemetry::{TelemetryConfig, Thresholds, Verdict};

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
pub(super) struct Tally {
    pub(super) completed: u64,
    pub(super) panicked: u64,
    pub(super) cancelled: u64,
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

pub(super) struct State {
    pub(super) queue: VecDeque<Entry>,
    /// Submitters waiting for room.
    pub(super) room: WaitList<Growing>,
    /// Room reserved for submitters served from `room`, not yet used.
    pub(super) reserved: usize,
    /// `Entry::Task`s in `queue`.
    pub(super) queued_tasks: usize,
    /// Tasks a thread has taken and not finished.
    pub(super) running_tasks: usize,
    pub(super) lifecycle: LifecycleState,
    pub(super) accepted: u64,
    pub(super) rejected: u64,
    /// Tasks cancelled by a shutdown or handed back by a batch.
    pub(super) cancelled: u64,
    /// The threads, and where each is in its loop.
    pub(super) crew: Crew,
    /// The counters of threads that left on keep-alive, and of batch tasks
    /// run by a thread that is not one of the pool's.
    pub(super) folded: Tally,
}

/// The engine's threads: how many there are, where each is in its loop
/// (running, idle, spinning, starting, notified), their cells and handles.
pub(super) struct Crew {
    pub(super) threads: usize,
    /// Threads running an entry.
    pub(super) busy: usize,
    /// Threads waiting on `work`.
    pub(super) idle: usize,
    /// Threads looking for entries without the lock; each re-checks the
    /// queue under the lock before it waits.
    pub(super) spinning: usize,
    /// Threads spawned that have not yet taken the lock.
    pub(super) starting: usize,
    /// Notifications sent to idle threads and not yet consumed.
    pub(super) notified: usize,
    pub(super) next_worker: u64,
    pub(super) workers: Vec<Arc<WorkerCell>>,
    pub(super) handles: Vec<(WorkerId, ThreadHandle<()>)>,
    /// Threads that left their loop and can be joined without waiting.
    pub(super) gone: Vec<WorkerId>,
}

pub(crate) struct Engine {
    pub(super) state: Mutex<State>,
    /// Idle threads wait here for entries or shutdown.
    pub(super) work: Condvar,
    /// Shutdown waits here for the last thread to leave.
    pub(super) exited: Condvar,
    /// `queue.len()`, for spinning threads to read without the lock.
    pub(super) pending: AtomicUsize,
    pub(super) stopping: AtomicBool,
    pub(super) next_task: AtomicU64,
    pub(super) config: EngineConfig,
    pub(super) probe: Hook<PoolProbe>,
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
                accepted: 0,
                rejected: 0,
                cancelled: 0,
                crew: Crew {
                    threads: 0,
                    busy: 0,
                    idle: 0,
                    spinning: 0,
                    starting: 0,
                    notified: 0,
                    next_worker: 1,
                    workers: Vec::new(),
                    handles: Vec::new(),
                    gone: Vec::new(),
                },
                folded: Tally::default(),
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
    pub(super) fn refused(&self, full: bool) {
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
                    .crew
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
                    let handles = std::mem::take(&mut state.crew.handles);
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

    pub(super) fn spawn_thread(
        self: &Arc<Self>,
        state: &mut State,
    ) -> Result<(), (WorkerId, io::Error)> {
        let id = WorkerId::new(state.crew.next_worker).unwrap_or(WorkerId::MAX);
        state.crew.next_worker = state.crew.next_worker.saturating_add(1);
        let cell = Arc::new(WorkerCell::new(id));
        let engine = Arc::clone(self);
        let thread_cell = Arc::clone(&cell);
        let spawned = Builder::new()
            .name(format!("{}-{}", self.config.name, id.get()))
            .spawn(move || engine.work_loop(&thread_cell));
        match spawned {
            Ok(handle) => {
                state.crew.threads += 1;
                state.crew.starting += 1;
                state.crew.workers.push(cell);
                state.crew.handles.push((id, handle));
                Ok(())
            }
            Err(error) => Err((id, error)),
        }
    }

    /// Joins the threads that left on keep-alive. Called without the lock.
    pub(super) fn reap(&self) {
        let mut state = lock(&self.state);
        if state.crew.gone.is_empty() {
            return;
        }
        let gone = std::mem::take(&mut state.crew.gone);
        let mut finished = Vec::with_capacity(gone.len());
        let mut index = 0;
        while index < state.crew.handles.len() {
            if gone.contains(&state.crew.handles[index].0) {
                finished.push(state.crew.handles.swap_remove(index).1);
            } else {
                index += 1;
            }
        }
        drop(state);
        for handle in finished {
            let _ = handle.join();
        }
    }

    pub(super) fn next_id(&self) -> TaskId {
        let n = self.next_task.fetch_add(1, Ordering::Relaxed);
        TaskId::new(n).unwrap_or(TaskId::MAX)
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
    pub(super) fn dispatch(self: &Arc<Self>, state: &mut State) -> usize {
        let mut notify = 0;
        while state.queue.len() > state.crew.spinning + state.crew.notified + state.crew.starting {
            if state.crew.idle > state.crew.notified {
                state.crew.notified += 1;
                notify += 1;
            } else if !(self.config.on_demand
                && state.crew.threads < self.config.max_threads
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
    pub(super) fn wake_idle(&self, count: usize) {
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
        if let Some(watch) = self.probe().and_then(PoolProbe::cpu_watch) {
            let _ = cell.cpu.set(watch);
        }
        let mut state = lock(&self.state);
        state.crew.starting -= 1;
        loop {
            if let Some(entry) = state.queue.pop_front() {
                let is_task = matches!(entry, Entry::Task(_));
                let mut granted = None;
                if is_task {
                    state.queued_tasks -= 1;
                    state.running_tasks += 1;
                    granted = self.grant_room(&mut state);
                }
                state.crew.busy += 1;
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
                state.crew.busy -= 1;
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
                state.crew.spinning += 1;
                drop(state);
                self.spin_for_work();
                state = lock(&self.state);
                state.crew.spinning -= 1;
                if !state.queue.is_empty() || state.lifecycle != LifecycleState::Running {
                    continue;
                }
            }
            let timed_out = match self.config.keep_alive {
                Some(keep_alive) if keep_alive.is_zero() => true,
                keep_alive => {
                    state.crew.idle += 1;
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
                    state.crew.idle -= 1;
                    state.crew.notified = state.crew.notified.saturating_sub(1);
                    timed_out
                }
            };
            if timed_out && state.queue.is_empty() && state.lifecycle == LifecycleState::Running {
                // Keep-alive ran out: leave, and fold this thread's counters
                // into the folded total.
                if let Some(at) = state.crew.workers.iter().position(|w| w.id == cell.id) {
                    let folded = state.crew.workers.swap_remove(at).report();
                    state.folded.completed += folded.completed;
                    state.folded.panicked += folded.panicked;
                    state.folded.cancelled += folded.cancelled;
                }
                break;
            }
        }
        state.crew.threads -= 1;
        state.crew.gone.push(cell.id);
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
            active: state.crew.busy,
            idle: state.crew.threads - state.crew.busy,
            threads: state.crew.threads,
            accepted: state.accepted,
            rejected: state.rejected,
            completed: state.folded.completed,
            panicked: state.folded.panicked,
            cancelled: state.folded.cancelled + state.cancelled,
        };
        for worker in &state.crew.workers {
            let report = worker.report();
            stats.completed += report.completed;
            stats.panicked += report.panicked;
            stats.cancelled += report.cancelled;
        }
        stats
    }
}
