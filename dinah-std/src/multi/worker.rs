//! One worker of a multi-thread runtime: [`WorkerHere`], its own queues as
//! its thread sees them, and its loop: take a task, poll it, and when none
//! is left, steal, then sleep (in the driver if nobody else does).
//!
//! # Where a worker looks, in order
//!
//! 1. Every [`GLOBAL_INTERVAL`]th turn, the global queue first, so that
//!    tasks spawned from outside are never starved by a worker whose own
//!    tasks keep waking each other.
//! 2. Its next-task slot: the task it woke last, polled next while its
//!    data is still in this core's cache (a message sent to a task that
//!    answers at once, a child just spawned). At most [`MAX_NEXT_IN_A_ROW`]
//!    times in a row; then the slot's task goes to the back of its deque,
//!    so two tasks that wake each other cannot hold the worker.
//!
//! A deque holds at most [`LOCAL_CAPACITY`] tasks: a push into a full one
//! moves its older half to the global queue first.
//! 3. Its deque, oldest first.
//! 4. The global queue, taking its share (at most [`GLOBAL_BATCH`]) into
//!    its deque.
//! 5. Searching, if fewer than half the workers search: half of another
//!    worker's deque (victims in a random order), then the global queue.
//! 6. Sleep.
//!
//! The next-task slot cannot be stolen. A stealable slot lets an idle
//! worker take a task away from the cache it was woken in, and it costs a
//! synchronised operation per wake; the cost of not stealing it is that a
//! task in the slot waits for the poll running on its worker. That poll
//! is short in a cooperative runtime, and a worker that polls for long is
//! one that telemetry names as blocked. tokio's history on the same choice
//! (a slot first unstealable, made stealable and reverted for its cost)
//! led to the same answer.
//!
//! Every [`MAINTENANCE_INTERVAL`]th turn a worker also fires due timers and
//! takes in socket readiness without waiting, when nobody holds the driver:
//! a runtime whose workers never sleep still serves its timers and sockets.
#![forbid(unsafe_code)]

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crossbeam_deque::{Steal, Worker};
use dinah_core::telemetry::{Clock, TraceEventKind};

use super::shared::{Runnable, Shared};
use crate::runtime::context;

/// How often (in turns of its loop) a worker looks at the global queue
/// before its own.
pub(super) const GLOBAL_INTERVAL: u32 = 61;
/// The tasks a worker's deque holds; a push into a full one spills its
/// older half to the global queue, as tokio's local queue of 256 does.
/// Unbounded, a deque that took a burst of spawns grows with it, and
/// crossbeam's deque reallocates as it grows and again as it shrinks back:
/// more than one allocation per spawned task. Bounded, a burst still takes
/// the buffer from crossbeam's first 64 to 256 and back, a few allocations
/// per burst rather than per task. A bound of 64 would avoid those, but
/// spilled to the global queue four times as often: spawn_many on one
/// worker measured 0.877 of tokio's time against 0.425 with 256 (seven
/// interleaved runs each).
pub(super) const LOCAL_CAPACITY: usize = 256;
/// The most tasks a worker takes from the global queue at once, besides
/// the one it polls: no more than fit in crossbeam's smallest deque, so
/// that a refill never makes an emptied deque grow again.
pub(super) const GLOBAL_BATCH: usize = 31;
/// How many times in a row a worker polls the task of its next-task slot.
pub(super) const MAX_NEXT_IN_A_ROW: u32 = 3;
/// How often (in turns) a busy worker fires due timers and takes in
/// socket readiness.
pub(super) const MAINTENANCE_INTERVAL: u32 = 61;

/// A worker's own state, on its thread (kept in the runtime context, so
/// that a wake made on this thread reaches its queues).
pub(crate) struct WorkerHere {
    shared: Arc<Shared>,
    index: usize,
    local: Worker<Runnable>,
    /// The next-task slot.
    next: Cell<Option<Runnable>>,
    /// A xorshift state for choosing victims.
    seed: Cell<u32>,
    /// When the last poll ended, while the worker has gone straight from
    /// it to the next poll (measuring executors only): that poll begins
    /// then, and the clock is read once between two polls, not twice.
    last_end: Cell<Option<u64>>,
}

impl WorkerHere {
    /// A task woken on this worker: a yield goes to the back of the deque,
    /// any other wake to the next-task slot, whose previous task goes to
    /// the back of the deque. Every push into the deque may call a
    /// sleeper to steal it (`wake_one` costs a fence and a load when
    /// nobody is to be woken, as tokio's and rayon's pushes do). Calling
    /// only when the deque was empty lost a wake: a thief could empty the
    /// deque between the owner's look at its length and its push, then
    /// search, find nothing and go to sleep before the push showed, while
    /// the owner, having seen work in the deque, called nobody.
    fn push(&self, runnable: Runnable, yielded: bool) {
        let runnable = if yielded {
            runnable
        } else {
            match self.next.replace(Some(runnable)) {
                Some(previous) => previous,
                None => return,
            }
        };
        if !self.push_local(runnable) {
            self.shared.wake_one();
        }
    }

    /// Puts a task at the back of the deque; a full deque first spills its
    /// older half, with this task after it, to the global queue, and calls
    /// a sleeper for them (see [`LOCAL_CAPACITY`]). Whether it spilled
    /// (and so called a sleeper already).
    fn push_local(&self, runnable: Runnable) -> bool {
        if self.local.len() < LOCAL_CAPACITY {
            self.local.push(runnable);
            return false;
        }
        let older = std::iter::from_fn(|| self.local.pop()).take(LOCAL_CAPACITY / 2);
        self.shared
            .global
            .push_batch(older.chain(std::iter::once(runnable)));
        self.shared.wake_one();
        true
    }

    /// Runs `queue` with this thread's worker if it is one of `runnable`'s
    /// runtime's workers; hands the task back (`Err`) if it is not.
    #[inline]
    fn on_own_worker(
        runnable: Runnable,
        queue: impl FnOnce(&Self, Runnable),
    ) -> Result<(), Runnable> {
        context::with_worker(|worker| match worker {
            Some(here) if here.owns(&runnable) => {
                queue(here, runnable);
                Ok(())
            }
            _ => Err(runnable),
        })
    }

    /// Queues a task just spawned, if this thread is a worker of its
    /// runtime: `Err` hands it back if not.
    pub(super) fn schedule_new(runnable: Runnable) -> Result<(), Runnable> {
        Self::on_own_worker(runnable, |here, runnable| here.push(runnable, false))
    }

    /// Where a wake of a task made on this thread goes, if this thread is
    /// a worker of the task's runtime: `Err` hands the task back if not.
    #[inline]
    pub(super) fn schedule_woken(runnable: Runnable, yielded: bool) -> Result<(), Runnable> {
        Self::on_own_worker(runnable, |here, runnable| {
            here.shared.note_wake(&runnable, yielded);
            here.shared.stamp_ready(&runnable);
            here.push(runnable, yielded);
        })
    }

    /// Whether `runnable`'s task is of this worker's runtime.
    #[inline]
    fn owns(&self, runnable: &Runnable) -> bool {
        std::ptr::addr_eq(
            Arc::as_ptr(&runnable.metadata().owner),
            Arc::as_ptr(&self.shared),
        )
    }

    /// Whether this worker is one of `shared`'s.
    pub(super) fn serves(&self, shared: &Arc<Shared>) -> bool {
        Arc::ptr_eq(&self.shared, shared)
    }

    fn has_local_work(&self) -> bool {
        let next = self.next.take();
        let has = next.is_some();
        self.next.set(next);
        has || !self.local.is_empty()
    }

    fn random(&self) -> usize {
        let mut x = self.seed.get();
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.seed.set(x);
        x as usize
    }

    /// Takes a task from the global queue, and a batch after it into the
    /// deque, which is empty: this worker's share of the queue, at most
    /// [`GLOBAL_BATCH`].
    fn take_global(&self) -> Option<Runnable> {
        let shared = &self.shared;
        let share = shared.global.len() / shared.workers();
        shared
            .global
            .pop_batch(share.min(GLOBAL_BATCH), &self.local)
    }

    /// Steps 1 to 4 of the module docs.
    fn next_task(&self, turn: u32, next_in_a_row: &mut u32) -> Option<Runnable> {
        if turn.is_multiple_of(GLOBAL_INTERVAL)
            && let Some(runnable) = self.shared.global.pop()
        {
            return Some(runnable);
        }
        if let Some(runnable) = self.next.take() {
            if *next_in_a_row < MAX_NEXT_IN_A_ROW {
                *next_in_a_row += 1;
                return Some(runnable);
            }
            self.push_local(runnable);
        }
        *next_in_a_row = 0;
        self.local.pop().or_else(|| self.take_global())
    }

    /// Step 5: steals, if this worker may search.
    fn search(&self, searching: &mut bool) -> Option<Runnable> {
        if !*searching {
            if !self.shared.idle.start_searching() {
                return None;
            }
            *searching = true;
        }
        let workers = self.shared.workers();
        let start = self.random() % workers;
        for offset in 0..workers {
            let victim = (start + offset) % workers;
            if victim == self.index {
                continue;
            }
            let before = self.local.len();
            loop {
                match self.shared.stealers[victim].steal_batch_and_pop(&self.local) {
                    Steal::Success(runnable) => {
                        if self.shared.clock.is_some() {
                            let moved = self.local.len().saturating_sub(before) + 1;
                            self.shared.counters[self.index].stole(moved);
                        }
                        if let Some(tracer) = &self.shared.tracer {
                            tracer.emit(runnable.metadata().id, TraceEventKind::Stolen);
                        }
                        return Some(runnable);
                    }
                    Steal::Empty => break,
                    Steal::Retry => {}
                }
            }
        }
        self.take_global()
    }

    /// Fires due timers and takes in socket readiness, if nobody holds the
    /// driver.
    fn maintain(&self) {
        let shared = &self.shared;
        if !shared.driver_taken.swap(true, Ordering::Acquire) {
            shared.driver.poll_now();
            shared.driver.timers().expire_due();
            shared.driver_taken.store(false, Ordering::Release);
        }
    }

    /// Step 6: sleeps until woken for work, or until its own timers or
    /// sockets give it some. Returns whether it wakes searching.
    fn sleep(&self, searching: bool) -> bool {
        let shared = &self.shared;
        self.maintain();
        if self.has_local_work() {
            return searching;
        }
        if shared.clock.is_some() {
            shared.counters[self.index].slept();
        }
        let last_awake = shared.idle.sleep(self.index, searching);
        // Work that came while nobody could be woken for it is not left
        // for a held worker to reach (`runtime/idle.rs`, invariant 4).
        if shared.has_queued_work() {
            shared.wake_one();
        }
        if last_awake && shared.paused {
            // Lets the worker sleeping in the driver move the paused clock.
            shared.driver.unpark();
        }
        let parker = &shared.parkers[self.index];
        loop {
            if shared.is_stopping() {
                return false;
            }
            if shared.driver_taken.swap(true, Ordering::Acquire) {
                parker.sleep(None);
            } else {
                parker.sleep(Some(&|| shared.driver.park_shared(shared.is_all_idle())));
                shared.driver.timers().expire_due();
                shared.driver_taken.store(false, Ordering::Release);
            }
            if !shared.idle.is_asleep(self.index) {
                // A wake took it off the list: it counts as searching.
                return true;
            }
            if self.has_local_work() {
                return !shared.idle.wake_self(self.index);
            }
        }
    }

    /// The loop, until the runtime stops.
    fn run(&self) {
        let mut turn: u32 = 0;
        let mut next_in_a_row = 0;
        let mut searching = false;
        while !self.shared.is_stopping() {
            turn = turn.wrapping_add(1);
            if turn.is_multiple_of(MAINTENANCE_INTERVAL) {
                self.maintain();
                self.last_end.set(None);
            }
            let found = self.next_task(turn, &mut next_in_a_row).or_else(|| {
                self.last_end.set(None);
                self.search(&mut searching)
            });
            match found {
                Some(runnable) => {
                    if searching {
                        searching = false;
                        // The last searcher found work: there may be more.
                        if self.shared.idle.stop_searching() {
                            self.shared.wake_one();
                        }
                    }
                    self.poll(runnable);
                }
                None => searching = self.sleep(searching),
            }
        }
    }

    /// Polls a task, counted when the executor measures itself. A poll
    /// that follows another at once begins when that one ended: the few
    /// nanoseconds of taking it from a queue count as its own.
    #[inline]
    fn poll(&self, runnable: Runnable) {
        match &self.shared.clock {
            None => run(&self.shared, runnable),
            Some(clock) => {
                let counters = &self.shared.counters[self.index];
                let meta = runnable.metadata();
                let ready_since = meta
                    .ready
                    .as_ref()
                    .map_or(0, |ready| ready.swap(0, Ordering::Relaxed));
                let id = meta.id;
                let started = self.last_end.take().unwrap_or_else(|| clock.now());
                counters.poll_begins(started, id, ready_since);
                match &self.shared.tracer {
                    None => run(&self.shared, runnable),
                    Some(tracer) => {
                        tracer.emit(id, TraceEventKind::PollStarted);
                        run(&self.shared, runnable);
                        tracer.emit(id, TraceEventKind::PollEnded);
                    }
                }
                let ended = clock.now();
                counters.poll_ended(ended, started);
                self.last_end.set(Some(ended));
            }
        }
    }

    /// Hands what is left in this worker's queues to the global queue, for
    /// the shutdown to end.
    fn hand_back(&self) {
        let next = self.next.take();
        let local = std::iter::from_fn(|| self.local.pop());
        self.shared.global.push_batch(next.into_iter().chain(local));
    }
}

/// Socket operations one poll may complete before it must yield: a task
/// whose sockets are always ready cannot hold its worker (as tokio's
/// budget of 128 does).
pub(super) const COOP_BUDGET: u32 = 128;

/// Polls a task of `shared`'s, with a fresh cooperative budget; one its
/// handle cancelled is told so, and its poll drops it instead. The cancel
/// word is read before the flag (`shared.rs`, invariant 4).
#[inline]
pub(super) fn run(shared: &Shared, runnable: Runnable) {
    context::set_budget(COOP_BUDGET);
    let word = shared.cancel_word();
    if runnable.metadata().is_cancelled() {
        context::set_polled_cancel(context::POLLED_CANCELLED);
    } else {
        context::set_polled_cancel(word);
    }
    runnable.run();
}

/// The body of worker `index`'s thread.
pub(super) fn work(shared: Arc<Shared>, index: usize, local: Worker<Runnable>) {
    shared.parkers[index].bind();
    context::enter(&shared.driver);
    let seed = u32::try_from(index).unwrap_or(0).wrapping_mul(0x9E37_79B9) | 1;
    let here = Rc::new(WorkerHere {
        shared,
        index,
        local,
        next: Cell::new(None),
        seed: Cell::new(seed),
        last_end: Cell::new(None),
    });
    context::enter_worker(Rc::clone(&here));
    here.run();
    here.hand_back();
    let driver = Arc::clone(&here.shared.driver);
    context::leave_worker();
    drop(here);
    context::leave(&driver);
}
