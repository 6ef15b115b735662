//! [`Shared`]: what every worker of a multi-thread runtime and every handle
//! reach: the global queue, the other workers' queues to steal from, who
//! sleeps, the driver, the live tasks; and [`Shared::schedule`], where
//! every wake of a task lands.
//!
//! # Invariants
//!
//! 1. A woken task goes to exactly one queue: the waking worker's own
//!    (its next-task slot or its deque) when a worker of this runtime
//!    wakes it, the global queue otherwise. `async-task` calls the
//!    schedule function once per wake that finds the task idle, so a task
//!    is never in two queues.
//! 2. Work pushed where no awake worker will look (the global queue, or a
//!    busy worker's deque) is followed by [`Shared::wake_one`], which wakes
//!    a sleeper unless somebody searches (see `runtime/idle.rs`).
//! 3. A task is polled only by a worker, never by the thread that wakes
//!    it, and never after the runtime closed except to drop its future
//!    (the task sees the cancel word's `ALL` bit and ends `Cancelled`).
//! 4. A handle's cancellation is never lost to a poll that was about to
//!    begin: the worker reads the cancel word, then the task's flag, before
//!    the poll; the handle sets the flag, then moves the word, then wakes
//!    the task. A wake that finds the task already queued does not queue it
//!    again, but the poll that follows it begins after that wake and so
//!    sees the word moved; the poll then yields without polling the user's
//!    future, and its next turn reads the flag (see `CancelWord`).
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_task::ScheduleInfo;
use crossbeam_deque::Stealer;
use dinah_core::TaskId;
use dinah_core::telemetry::{Clock, TraceEventKind};

use super::figures::Counters;
use super::global::GlobalQueue;
use super::registry::Registry;
use super::trace::Tracer;
use super::worker::WorkerHere;
use crate::pool::PoolSpawner;
use crate::primitives::{Thread, lock};
use crate::runtime::Driver;
use crate::runtime::idle::Idle;
use crate::runtime::parker::Parker;
use crate::task::cell::Owner;
use crate::telemetry::StdClock;

/// A task ready to be polled: its cell, as `async-task` hands it out.
pub(super) type Runnable = async_task::Runnable<crate::task::cell::CellMeta>;

/// How many ids a thread reserves at once (see [`Shared::next_id`]).
const ID_BLOCK: u64 = 64;

/// Runtimes made so far in this process: each takes the next number, so
/// that a thread's block of ids names the runtime it was reserved from
/// (an address could be reused by a later runtime).
static RUNTIMES: AtomicU64 = AtomicU64::new(0);

/// A thread's reserved ids: those from `next` to `end` of runtime number
/// `runtime` (0: none).
#[derive(Clone, Copy)]
struct IdBlock {
    runtime: u64,
    next: u64,
    end: u64,
}

thread_local! {
    static IDS: std::cell::Cell<IdBlock> = const {
        std::cell::Cell::new(IdBlock { runtime: 0, next: 0, end: 0 })
    };
}

/// The runtime's state shared by its workers and handles.
///
/// The fields that every spawn, search or spill writes (the next id, the
/// idle workers' word, the global queue) sit on cache lines of their own,
/// and so, since that makes the whole struct 128-aligned, do the counts of
/// the `Arc` that holds it, which each task's cell moves: a write there no
/// longer takes from the other cores the fields that every poll and spawn
/// reads (the cancel word, the flags, the pointers to the queues). On the
/// ping-pong shape this took about 4 % off dinah's time.
pub(super) struct Shared {
    /// Tasks woken or spawned away from the workers, what a worker's full
    /// deque spills, and what a worker hands back as it stops.
    pub(super) global: Apart<GlobalQueue>,
    /// Each worker's deque, to steal from.
    pub(super) stealers: Box<[Stealer<Runnable>]>,
    /// Each worker's sleep.
    pub(super) parkers: Box<[Parker]>,
    pub(super) idle: Apart<Idle>,
    /// Timers and the reactor, shared by all workers.
    pub(super) driver: Arc<Driver>,
    /// Which worker sleeps in the driver: it is taken with a swap, and
    /// only the taker waits in it or runs its timers.
    pub(super) driver_taken: AtomicBool,
    /// The live tasks, which it counts.
    pub(super) registry: Registry,
    next_id: Apart<AtomicU64>,
    /// This runtime's number in the process, from 1 (see [`RUNTIMES`]).
    serial: u64,
    /// Spawns are refused (a shutdown began).
    closed: AtomicBool,
    /// Whether every task still alive is to end `Cancelled` at its next
    /// poll, and how many cancellations handles made (invariant 4).
    cancel: CancelWord,
    /// Workers are to stop.
    stopping: AtomicBool,
    /// `block_on` futures being polled right now: while one is, a paused
    /// clock does not move (it may be spawning tasks or arming timers).
    polling_blockers: AtomicUsize,
    /// A thread waiting for the live tasks to end (a draining shutdown).
    drain_waiter: Mutex<Option<Thread>>,
    /// Whether there is one: a task's end looks here, and takes the
    /// waiter's lock only when it is set.
    draining: AtomicBool,
    /// Whether the clock is paused: then it moves only when every worker
    /// sleeps.
    pub(super) paused: bool,
    /// The executor's blocking pool.
    pub(super) blocking: PoolSpawner,
    /// Each worker's counters.
    pub(super) counters: Box<[Counters]>,
    /// The clock the counters read, when the executor measures itself.
    pub(super) clock: Option<StdClock>,
    /// Where its task events go, if it was given a sink.
    pub(super) tracer: Option<Tracer>,
}

/// Every cell's schedule function, where each wake of a task lands
/// (invariant 1): a worker of the task's runtime queues it itself, any
/// other thread through the runtime the cell names.
pub(super) fn schedule(runnable: Runnable, info: ScheduleInfo) {
    let yielded = info.woken_while_running;
    if let Err(runnable) = WorkerHere::schedule_woken(runnable, yielded) {
        let owner = Arc::clone(&runnable.metadata().owner);
        owner.schedule_away(runnable, yielded);
    }
}

impl Owner for Shared {
    fn schedule_away(&self, runnable: Runnable, yielded: bool) {
        self.note_wake(&runnable, yielded);
        self.stamp_ready(&runnable);
        self.global.push(runnable);
        self.wake_one();
    }

    fn cancelled_one(&self) {
        self.cancel.0.fetch_add(CancelWord::ONE, Ordering::AcqRel);
    }
}

/// The runtime's cancel word: its low bit says that every task is to end
/// `Cancelled` (a shutdown's), the rest counts the cancellations handles
/// made. A poll compares it with the value its worker read before the
/// task's flag: a word that moved in between may be a cancellation of
/// this task that the flag's read missed (invariant 4). A task's own flag
/// cannot be read from inside its future, which is why the word stands in
/// for it there; it moves only when a handle cancels, so a busy runtime
/// reads it from its cache.
#[derive(Default)]
pub(super) struct CancelWord(AtomicU64);

impl CancelWord {
    /// The bit of the runtime-wide cancellation.
    pub(super) const ALL: u64 = 1;
    /// One handle's cancellation.
    const ONE: u64 = 2;
}

impl Shared {
    pub(super) fn new(
        stealers: Box<[Stealer<Runnable>]>,
        driver: Arc<Driver>,
        paused: bool,
        blocking: PoolSpawner,
        measure: bool,
        tracer: Option<Tracer>,
    ) -> Self {
        let workers = stealers.len();
        Self {
            global: Apart::new(GlobalQueue::new()),
            parkers: (0..workers).map(|_| Parker::new()).collect(),
            idle: Apart::new(Idle::new(workers)),
            stealers,
            driver,
            driver_taken: AtomicBool::new(false),
            registry: Registry::new(workers),
            next_id: Apart::new(AtomicU64::new(1)),
            serial: RUNTIMES.fetch_add(1, Ordering::Relaxed) + 1,
            closed: AtomicBool::new(false),
            cancel: CancelWord::default(),
            stopping: AtomicBool::new(false),
            polling_blockers: AtomicUsize::new(0),
            drain_waiter: Mutex::new(None),
            draining: AtomicBool::new(false),
            paused,
            blocking,
            counters: (0..workers).map(|_| Counters::default()).collect(),
            clock: measure.then(StdClock::new),
            tracer,
        }
    }

    /// The number of workers.
    pub(super) fn workers(&self) -> usize {
        self.stealers.len()
    }

    /// The next task's id: unique in this runtime, from 1. A thread takes
    /// ids from a block of [`ID_BLOCK`] it reserved for this runtime, so
    /// that spawns on different workers do not all write one counter; ids
    /// then follow spawn order on each thread, not across threads. A
    /// thread that spawns into several runtimes in turn reserves a new
    /// block at each change, and the rest of the old one goes unused.
    pub(super) fn next_id(&self) -> TaskId {
        let n = IDS.with(|ids| {
            let mut block = ids.get();
            if block.runtime != self.serial || block.next == block.end {
                let next = self.next_id.fetch_add(ID_BLOCK, Ordering::Relaxed);
                block = IdBlock {
                    runtime: self.serial,
                    next,
                    end: next.saturating_add(ID_BLOCK),
                };
            }
            ids.set(IdBlock {
                next: block.next.saturating_add(1),
                ..block
            });
            block.next
        });
        TaskId::new(n).unwrap_or(TaskId::MAX)
    }

    /// The figures of the runtime's reactor.
    pub(super) fn io_figures(&self) -> crate::io::IoFigures {
        self.driver
            .reactor()
            .map(|reactor| reactor.figures())
            .unwrap_or_default()
    }

    /// Traces a wake, if the runtime traces.
    #[inline]
    pub(super) fn note_wake(&self, runnable: &Runnable, yielded: bool) {
        if let Some(tracer) = &self.tracer {
            let kind = if yielded {
                TraceEventKind::SelfWoken
            } else {
                TraceEventKind::Woken
            };
            tracer.emit(runnable.metadata().id, kind);
        }
    }

    /// Stamps when a task became ready, if the runtime measures itself.
    #[inline]
    pub(super) fn stamp_ready(&self, runnable: &Runnable) {
        if let (Some(clock), Some(ready)) = (&self.clock, &runnable.metadata().ready) {
            // Never 0, which means "not ready".
            ready.store(clock.now().max(1), Ordering::Relaxed);
        }
    }

    /// Queues a new task (invariant 1).
    pub(super) fn schedule_new(self: &Arc<Self>, runnable: Runnable) {
        self.stamp_ready(&runnable);
        let runnable = match WorkerHere::schedule_new(runnable) {
            Ok(()) => return,
            Err(runnable) => runnable,
        };
        self.global.push(runnable);
        self.wake_one();
    }

    /// Wakes a sleeping worker for new work, unless one searches already or
    /// none sleeps (invariant 2).
    pub(super) fn wake_one(&self) {
        if let Some(worker) = self.idle.sleeper_to_wake() {
            self.parkers[worker].wake(|| self.driver.unpark());
        }
    }

    /// A `block_on` future's poll begins.
    pub(super) fn blocker_polls(&self) {
        self.polling_blockers.fetch_add(1, Ordering::SeqCst);
    }

    /// A `block_on` future's poll ended: the last one lets the worker in
    /// the driver look at a paused clock again.
    pub(super) fn blocker_polled(&self) {
        if self.polling_blockers.fetch_sub(1, Ordering::SeqCst) == 1 && self.paused {
            self.driver.unpark();
        }
    }

    /// Whether a paused clock may jump to the next timer: every worker
    /// sleeps, no task is queued, no `block_on` future is being polled.
    pub(super) fn is_all_idle(&self) -> bool {
        self.idle.awake() == 0
            && self.polling_blockers.load(Ordering::SeqCst) == 0
            && !self.has_queued_work()
    }

    /// Whether any queue but the workers' next-task slots holds work.
    pub(super) fn has_queued_work(&self) -> bool {
        !self.global.is_empty() || self.stealers.iter().any(|stealer| !stealer.is_empty())
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Refuses spawns from now on.
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.registry.close();
    }

    /// The cancel word now (invariant 4).
    #[inline]
    pub(super) fn cancel_word(&self) -> u64 {
        self.cancel.0.load(Ordering::Acquire)
    }

    /// Every task still alive ends `Cancelled` at its next poll.
    pub(super) fn cancel_all(&self) {
        self.cancel.0.fetch_or(CancelWord::ALL, Ordering::AcqRel);
    }

    pub(super) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Tells every worker to stop, and wakes them all.
    pub(super) fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.idle.take_all();
        for parker in &*self.parkers {
            parker.wake(|| self.driver.unpark());
        }
    }

    /// Sets (or clears) the thread a draining shutdown parks. Set before
    /// the drain first counts the live tasks: a task that ends after that
    /// count then sees it (the count reads each shard under the lock the
    /// end takes).
    pub(super) fn set_drain_waiter(&self, thread: Option<Thread>) {
        let set = thread.is_some();
        *lock(&self.drain_waiter) = thread;
        self.draining.store(set, Ordering::SeqCst);
    }

    /// A task ended (it has left the registry): a draining shutdown's
    /// waiter is woken to count again.
    pub(super) fn ended(&self) {
        if self.draining.load(Ordering::SeqCst)
            && let Some(thread) = lock(&self.drain_waiter).as_ref()
        {
            thread.unpark();
        }
    }
}

/// A value on cache lines of its own: 128 bytes, two lines, since x86
/// cores fetch lines in adjacent pairs. For data that one core writes
/// often beside data that others read often.
#[repr(align(128))]
pub(super) struct Apart<T>(T);

impl<T> Apart<T> {
    pub(super) const fn new(value: T) -> Self {
        Self(value)
    }
}

impl<T> std::ops::Deref for Apart<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
