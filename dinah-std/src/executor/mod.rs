//! [`LocalExecutor`], its handles ([`JoinHandle`], [`LocalSpawner`],
//! [`Spawner`]) and what they report ([`JoinFailure`], [`TrySpawnError`],
//! [`ShutdownReport`]).
#![forbid(unsafe_code)]

mod join;
mod probe;
mod shared;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use dinah_core::TaskOutput;
use dinah_core::TickReport;
use dinah_core::sched::{Life, Step, TickTally, WakeStack};

pub use join::{JoinFailure, JoinHandle};
pub use probe::ExecutorMonitor;
pub use shared::Spawner;

use dinah_core::{TaskId, TraceEventKind};
use join::{Abort, AbortNote, Join, wrap};
use probe::{ExecProbe, TaskProbe};
use shared::{BoxedTask, CancelTarget, Header, RunningHere, Shared};

use crate::CapacityError;
use crate::sync::{current, park};
use crate::telemetry::{Hook, TelemetryConfig};
use crate::unwind::panic_text;

/// The cell index of the future `block_on` drives; task indices stay below.
const MAIN: u32 = u32::MAX - 1;

mod sealed {
    pub trait Sealed {}
}

/// Whether a [`LocalExecutor`] measures itself: [`Unmeasured`] (the default,
/// from [`LocalExecutor::new`] and [`with_config`](LocalExecutor::with_config))
/// or, with the `telemetry` feature, `Measured` (from
/// `LocalExecutor::with_telemetry`).
///
/// Part of the type so that the choice costs nothing when it is "no": an
/// unmeasured executor compiles to the code of a build without the
/// `telemetry` feature. Sealed.
pub trait Measuring: sealed::Sealed + 'static {
    #[doc(hidden)]
    const ON: bool;
}

/// A [`LocalExecutor`] that keeps no telemetry (the default).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Unmeasured;

impl sealed::Sealed for Unmeasured {}

impl Measuring for Unmeasured {
    const ON: bool = false;
}

/// A [`LocalExecutor`] that measures itself as its
/// [`TelemetryConfig`](crate::TelemetryConfig) says, read through its
/// [`ExecutorMonitor`].
#[cfg(feature = "telemetry")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Measured;

#[cfg(feature = "telemetry")]
impl sealed::Sealed for Measured {}

#[cfg(feature = "telemetry")]
impl Measuring for Measured {
    const ON: bool = true;
}

/// How a [`LocalExecutor`] is sized.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ExecutorConfig {
    /// The most tasks alive at once (spawned and not finished), or `None`
    /// for no cap. At the cap, [`LocalExecutor::spawn`] hands the future
    /// back and submissions wait in the ingress.
    pub max_tasks: Option<usize>,
    /// How many submissions from [`Spawner`]s may wait to be taken in.
    pub ingress_capacity: usize,
}

impl Default for ExecutorConfig {
    /// No cap on tasks; room for 1,024 waiting submissions.
    fn default() -> Self {
        Self {
            max_tasks: None,
            ingress_capacity: 1024,
        }
    }
}

/// Why a spawn was refused. The future is handed back, untouched.
pub enum TrySpawnError<F> {
    /// The executor holds its cap of live tasks ([`LocalExecutor::spawn`]),
    /// or the ingress holds its capacity of waiting submissions
    /// ([`Spawner::try_spawn`]).
    Full(F),
    /// The executor has shut down or been dropped.
    Shutdown(F),
}

impl<F> TrySpawnError<F> {
    /// Gives back the future that was not spawned.
    #[must_use]
    pub fn into_inner(self) -> F {
        match self {
            Self::Full(future) | Self::Shutdown(future) => future,
        }
    }
}

impl<F> fmt::Debug for TrySpawnError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::Shutdown(_) => f.write_str("Shutdown(..)"),
        }
    }
}

impl<F> fmt::Display for TrySpawnError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("the executor is full; the future was handed back"),
            Self::Shutdown(_) => {
                f.write_str("the executor has shut down; the future was handed back")
            }
        }
    }
}

impl<F> std::error::Error for TrySpawnError<F> {}

/// What [`LocalExecutor::shutdown`] left behind: every task and submission
/// it dropped unfinished, each of whose handles now says
/// [`Cancelled`](JoinFailure::Cancelled).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct ShutdownReport {
    /// Spawned tasks that had not finished.
    pub cancelled_tasks: usize,
    /// Submissions still waiting in the ingress.
    pub cancelled_submissions: usize,
}

impl ShutdownReport {
    /// Everything dropped unfinished.
    #[must_use]
    pub const fn left(&self) -> usize {
        self.cancelled_tasks + self.cancelled_submissions
    }
}

/// Where a slot's tasks live: a stable place (the slot table may grow while
/// a task is polled in place, since tasks spawn), reused by every task of
/// the slot while its header is.
struct Place<'a> {
    /// The slot's header as a `Waker`, lent to every poll.
    waker: Waker,
    task: RefCell<Option<BoxedTask<'a>>>,
    /// Where a panicking task's resolver leaves its join.
    note: Rc<AbortNote<'a>>,
    /// The slot's telemetry (its header's), when kept.
    probe: Hook<Arc<TaskProbe>>,
}

type TaskPlace<'a> = Rc<Place<'a>>;

struct Slot<'a, M: Measuring> {
    header: Arc<Header<M>>,
    task: TaskPlace<'a>,
}

impl<M: Measuring> Slot<'_, M> {
    fn new(index: u32, shared: &Arc<Shared>) -> Self {
        let header = Header::new(index, shared, true);
        Self {
            task: Rc::new(Place {
                waker: Waker::from(Arc::clone(&header)),
                task: RefCell::new(None),
                note: Rc::new(AbortNote::new()),
                probe: header.probe.clone(),
            }),
            header,
        }
    }
}

struct Inner<'a, M: Measuring> {
    shared: Arc<Shared>,
    main: Arc<Header<M>>,
    main_waker: Waker,
    slots: RefCell<Vec<Slot<'a, M>>>,
    free: RefCell<Vec<u32>>,
    /// Taken off the wake stack or the local list, oldest first; entries
    /// before `next` have been handed out this tick.
    ready: RefCell<Vec<u32>>,
    next: Cell<usize>,
    /// The local ready list while the executor does not run (see
    /// `RunningHere`).
    local: RefCell<Vec<u32>>,
    in_block_on: Cell<bool>,
    main_ready: Cell<bool>,
    live: Cell<usize>,
    max_tasks: usize,
    stale_seen: Cell<u32>,
    /// Inside `tick`, `block_on` or `shutdown`: a task is being polled or
    /// dropped, so entering again would be re-entrant.
    running: Cell<bool>,
    closed: Cell<bool>,
}

/// Clears `running` when a `tick`, `block_on` or `shutdown` ends, even by
/// unwinding.
struct Entered<'r>(&'r Cell<bool>);

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Ends `block_on`'s hold on the main cell when the call returns or
/// unwinds: nothing is marked as polling (a monitor hears that a poll that
/// unwound ended), no main poll is pending, and the main cell is vacant, so
/// later wakes of its wakers are stale. Its `QUEUED` bit is left alone: an
/// entry of it still on a list clears it when taken off.
struct MainGuard<'r, 'a, M: Measuring>(&'r Inner<'a, M>);

impl<M: Measuring> Drop for MainGuard<'_, '_, M> {
    fn drop(&mut self) {
        let inner = self.0;
        if inner.shared.stack.polling() == MAIN + 1
            && let Some(probe) = inner.probe()
        {
            probe.main_poll_ended();
        }
        inner.shared.stack.set_polling(0);
        inner.in_block_on.set(false);
        inner.main_ready.set(false);
        inner.main.cell.set_life(Life::Vacant);
    }
}

impl<'a, M: Measuring> Inner<'a, M> {
    /// The executor's probe, when `M` measures: always `None` for an
    /// unmeasured executor, known when compiling, so that none of its
    /// telemetry code is even tested for.
    #[inline(always)]
    fn probe(&self) -> Option<&ExecProbe> {
        if M::ON {
            self.shared.probe.get().map(|probe| &**probe)
        } else {
            None
        }
    }

    fn new(
        config: ExecutorConfig,
        telemetry: Option<TelemetryConfig>,
    ) -> Result<Self, CapacityError> {
        if config.ingress_capacity == 0 || config.max_tasks == Some(0) {
            return Err(CapacityError::Zero);
        }
        let (_, items) = crate::queue::reserve(config.ingress_capacity)?;
        let probe = Hook::new(telemetry.map(|telemetry| Box::new(ExecProbe::new(telemetry))));
        let shared = Arc::new(Shared::new(
            current(),
            config.ingress_capacity,
            items,
            probe,
        ));
        let main = Header::new(MAIN, &shared, false);
        Ok(Self {
            main_waker: Waker::from(Arc::clone(&main)),
            main,
            shared,
            slots: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
            ready: RefCell::new(Vec::new()),
            next: Cell::new(0),
            local: RefCell::new(Vec::new()),
            in_block_on: Cell::new(false),
            main_ready: Cell::new(false),
            live: Cell::new(0),
            // Slot indices stay below `MAIN`: the cap is never above it.
            max_tasks: config.max_tasks.unwrap_or(usize::MAX).min(MAIN as usize),
            stale_seen: Cell::new(0),
            running: Cell::new(false),
            closed: Cell::new(false),
        })
    }

    fn enter(&self, what: &str) -> Entered<'_> {
        assert!(
            !self.running.replace(true),
            "dinah: LocalExecutor::{what} called from inside a task of the same executor; \
             it would wait for that task while that task waits for it (a deadlock)"
        );
        Entered(&self.running)
    }

    fn spawn<F, V, E>(&self, future: F) -> Result<JoinHandle<V, E>, TrySpawnError<F>>
    where
        F: Future + 'a,
        F::Output: TaskOutput<Value = V, Error = E>,
        V: 'a,
        E: 'a,
    {
        let id = self.shared.next_id();
        let closed = self.closed.get();
        if closed || self.live.get() >= self.max_tasks {
            if let Some(probe) = self.probe() {
                crate::telemetry::run_hooks(|| probe.rejected(id, !closed));
            }
            return Err(if closed {
                TrySpawnError::Shutdown(future)
            } else {
                TrySpawnError::Full(future)
            });
        }
        let mut at = 0;
        if let Some(probe) = self.probe() {
            // A hook's panic reaches the caller before the task is taken.
            crate::telemetry::run_hooks(|| at = probe.submitted(id));
        }
        let (index, header, generation, note) = self.claim_slot(id, at);
        let join = Join::new(id, Some((header as Arc<dyn CancelTarget>, generation)));
        self.install(index, Box::pin(wrap(future, Arc::clone(&join), note)));
        Ok(JoinHandle::new(join))
    }

    /// Takes a free slot (or adds one), starts a new task in its cell (which
    /// queues it) and returns its index, header, generation and abort note.
    fn claim_slot(&self, id: TaskId, at: u64) -> (u32, Arc<Header<M>>, u32, Rc<AbortNote<'a>>) {
        let mut slots = self.slots.borrow_mut();
        let index = match self.free.borrow_mut().pop() {
            Some(index) => index,
            None => {
                let index = slots.len() as u32;
                slots.push(Slot::new(index, &self.shared));
                index
            }
        };
        let slot = &mut slots[index as usize];
        // A header that something else still holds (a cloned waker, a
        // handle's cancel path) beyond the slot and its place's waker stays
        // with its old task; this task gets a new one. A stale wake through
        // the old one finds its task over.
        if Arc::strong_count(&slot.header) > 2 {
            if let (Some(probe), Some(old)) = (self.probe(), slot.header.probe.get()) {
                probe.forget(old);
            }
            *slot = Slot::new(index, &self.shared);
        }
        if let (Some(probe), Some(task)) = (self.probe(), slot.header.probe.get()) {
            probe.installed(task, id, at);
        }
        // Spawning happens on the executor's thread (it is `!Send`).
        let generation = WakeStack::begin(&slot.header.cell);
        shared::queue_started(&self.shared, &slot.header.cell);
        (
            index,
            Arc::clone(&slot.header),
            generation,
            Rc::clone(&slot.task.note),
        )
    }

    fn install(&self, index: u32, task: BoxedTask<'a>) {
        *self.slots.borrow()[index as usize].task.task.borrow_mut() = Some(task);
        self.live.set(self.live.get() + 1);
    }

    /// Takes in waiting submissions, oldest first, while the cap allows.
    fn admit(&self) {
        if !self.shared.has_pending() || self.closed.get() {
            return;
        }
        let room = self.max_tasks - self.live.get();
        for submission in self.shared.take_pending(room) {
            let (index, header, generation, note) =
                self.claim_slot(submission.id(), submission.submitted_at());
            let (future, join) = submission.admit(note);
            join.attach(header, generation);
            self.install(index, future);
        }
    }

    /// Whether anything is ready. Called only while the executor runs (the
    /// local list is installed).
    fn has_work(&self, here: &RunningHere<'_>) -> bool {
        self.next.get() < self.ready.borrow().len()
            || here.has_local()
            || self.main_ready.get()
            || self.shared.stack.has_woken()
            || (self.shared.has_pending() && self.live.get() < self.max_tasks)
    }

    /// Moves every task woken since the last call onto the ready list: the
    /// local ones first (woken during earlier polls on this thread), then
    /// the wake stack's, in wake order.
    fn take_woken(&self, here: &RunningHere<'_>) {
        let mut ready = self.ready.borrow_mut();
        let next = self.next.replace(0);
        if next == ready.len() {
            // The usual case: everything was handed out, so the local list
            // simply becomes the ready list (and the old one, emptied, the
            // local list): no copy.
            ready.clear();
            here.swap_local(&mut ready);
        } else {
            ready.drain(..next);
            let mut local = Vec::new();
            here.swap_local(&mut local);
            ready.append(&mut local);
        }
        if !self.shared.stack.has_woken() {
            return;
        }
        let slots = self.slots.borrow();
        let cell_of = |index: usize| {
            if index == MAIN as usize {
                &self.main.cell
            } else {
                &slots[index].header.cell
            }
        };
        if let Some((first, _)) = self.shared.stack.take(cell_of) {
            let mut entry = first;
            while entry != 0 {
                ready.push(entry - 1);
                entry = cell_of(entry as usize - 1).link();
            }
        }
    }

    /// The next ready task, if any.
    fn pop_ready(&self) -> Option<u32> {
        let next = self.next.get();
        let index = *self.ready.borrow().get(next)?;
        self.next.set(next + 1);
        Some(index)
    }

    /// One tick; the caller has entered the executor (`RunningHere`).
    fn tick(&self, budget: usize, here: &RunningHere<'_>) -> TickReport {
        self.admit();
        let mut tally = TickTally::new();
        self.take_woken(here);
        while tally.polled() < budget {
            // One borrow of the table: the next ready task's word and, if it
            // is to be polled or dropped, its place.
            let (index, step, place) = {
                let Some(index) = self.pop_ready() else {
                    break;
                };
                if index == MAIN {
                    // The main future's entry: cleared here, where it was
                    // taken off (rule 2), and polled only while `block_on`
                    // drives a future.
                    self.main.cell.take_queued();
                    if self.in_block_on.get() {
                        self.main_ready.set(true);
                    }
                    continue;
                }
                let slots = self.slots.borrow();
                let slot = &slots[index as usize];
                let step = tally.step(slot.header.cell.take_for_poll());
                (index, step, Rc::clone(&slot.task))
            };
            match step {
                Step::Release => self.release(index),
                Step::Cancel => {
                    // Dropping the future resolves its handle `Cancelled`,
                    // or `Panicked` if its destructor panics.
                    let task = place.task.borrow_mut().take();
                    let life = drop_task(task, &place.note);
                    if let (Some(probe), Some(slot)) = (self.probe(), place.probe.get()) {
                        probe.cancelled(slot);
                    }
                    self.end(index, life);
                }
                Step::Poll { first, .. } => {
                    let watched = match (self.probe(), place.probe.get()) {
                        (Some(probe), Some(slot)) => {
                            Some((probe, slot, probe.poll_started(slot, first)))
                        }
                        _ => None,
                    };
                    let ended = self.poll_in_place(index, &place);
                    if let Some((probe, slot, start)) = watched {
                        let queued = self.slots.borrow()[index as usize]
                            .header
                            .cell
                            .word()
                            .is_queued();
                        let kind = ended.map(|life| {
                            if life == Life::Completed {
                                TraceEventKind::Completed
                            } else {
                                TraceEventKind::Failed
                            }
                        });
                        probe.poll_ended(slot, start, queued, kind);
                    }
                    if let Some(ended) = ended {
                        tally.ended(ended == Life::Completed);
                        self.end(index, ended);
                    }
                }
            }
        }
        let stale = self.shared.stack.stale_wakes();
        let stale_wakes = stale.wrapping_sub(self.stale_seen.replace(stale));
        let report = tally.report(stale_wakes, self.has_work(here));
        if M::ON {
            // A telemetry hook that panicked during the tick: its panic
            // reaches the caller now that every task is settled.
            crate::telemetry::resume_hook_panic();
        }
        report
    }

    /// Polls the task in `place` (slot `index`) once, where it lies, with no
    /// borrow of the slot table held (so it may spawn), catching a panic.
    /// A task that ends is dropped there and then. Returns how it ended.
    #[inline(always)]
    fn poll_in_place(&self, index: u32, place: &TaskPlace<'a>) -> Option<Life> {
        let mut guard = place.task.borrow_mut();
        let task = guard.as_mut()?;
        self.shared.stack.set_polling(index + 1);
        let poll = catch_unwind(AssertUnwindSafe(|| {
            task.as_mut().poll(&mut Context::from_waker(&place.waker))
        }));
        self.shared.stack.set_polling(0);
        let ended = match poll {
            Ok(Poll::Pending) => return None,
            Ok(Poll::Ready(true)) => Life::Completed,
            Ok(Poll::Ready(false)) => Life::Failed,
            Err(payload) => {
                // The unwind already dropped the future's parts; its
                // resolver left the join in the note.
                let task = guard.take();
                drop(guard);
                drop(task);
                if let Some(join) = place.note.take_orphan() {
                    join.abort(Abort::Panicked(panic_text(&*payload)));
                }
                return Some(Life::Failed);
            }
        };
        // Dropped outside the borrow: a destructor may spawn or wake.
        let task = guard.take();
        drop(guard);
        drop(task);
        Some(ended)
    }

    /// Ends the task in slot `index`; frees the slot unless it is still
    /// queued (then it is freed when taken off).
    fn end(&self, index: u32, life: Life) {
        let word = self.slots.borrow()[index as usize]
            .header
            .cell
            .set_life(life);
        self.live.set(self.live.get() - 1);
        if !word.is_queued() {
            self.free.borrow_mut().push(index);
        }
    }

    /// A finished task's entry came off the stack: free its slot.
    fn release(&self, index: u32) {
        self.free.borrow_mut().push(index);
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        let _entered = self.enter("block_on");
        let here = RunningHere::enter(&self.shared, &self.local);
        let mut future = pin!(future);
        // The future is named by an id of its own, so that a monitor can
        // blame it for holding the thread.
        let id = self.shared.next_id();
        self.main.cell.set_life(Life::Running);
        self.in_block_on.set(true);
        // Polled at once. The main cell's `QUEUED` is cleared only where
        // its entry is taken off a list (in `tick`): an entry an earlier
        // call left still comes, and polls the future once more, which a
        // future allows.
        self.main_ready.set(true);
        let _main = MainGuard(self);
        loop {
            if self.main_ready.replace(false) {
                self.shared.stack.set_polling(MAIN + 1);
                if let Some(probe) = self.probe() {
                    probe.main_poll_started(id);
                }
                let poll = future
                    .as_mut()
                    .poll(&mut Context::from_waker(&self.main_waker));
                if let Some(probe) = self.probe() {
                    probe.main_poll_ended();
                }
                self.shared.stack.set_polling(0);
                if M::ON {
                    crate::telemetry::resume_hook_panic();
                }
                if let Poll::Ready(output) = poll {
                    return output;
                }
            }
            if !self.tick(usize::MAX, &here).work_remaining {
                park();
            }
        }
    }

    fn shutdown(&self) -> ShutdownReport {
        let _entered = self.enter("shutdown");
        self.closed.set(true);
        let submissions = self.shared.close();
        let cancelled_submissions = submissions.len();
        if let Some(probe) = self.probe() {
            for submission in &submissions {
                probe.dropped(submission.id());
            }
        }
        // Each submission drops its future, then resolves its handle
        // (`Panicked` if the future's destructor panics).
        drop(submissions);
        let tasks: Vec<(BoxedTask<'a>, TaskPlace<'a>, Arc<Header<M>>)> = {
            let mut slots = self.slots.borrow_mut();
            slots
                .iter_mut()
                .filter_map(|slot| {
                    let task = slot.task.task.borrow_mut().take()?;
                    slot.header.cell.set_life(Life::Cancelled);
                    if let (Some(probe), Some(slot)) = (self.probe(), slot.task.probe.get()) {
                        probe.cancelled(slot);
                    }
                    Some((task, Rc::clone(&slot.task), Arc::clone(&slot.header)))
                })
                .collect()
        };
        self.live.set(0);
        let cancelled_tasks = tasks.len();
        // Dropped one by one with no borrow held: a destructor may spawn
        // (refused now) or wake (ignored), and one that panics resolves its
        // own handle `Panicked` without stopping the others. Each other
        // future's resolver resolves its handle `Cancelled`.
        for (task, place, header) in tasks {
            if drop_task(Some(task), &place.note) == Life::Failed {
                header.cell.set_life(Life::Failed);
            }
        }
        if M::ON {
            crate::telemetry::resume_hook_panic();
        }
        ShutdownReport {
            cancelled_tasks,
            cancelled_submissions,
        }
    }
}

/// Drops a task's future, which resolves its handle `Cancelled` through its
/// resolver; if the destructor panics, the resolver leaves the join in
/// `note` and it is resolved `Panicked` with the message here. Returns how
/// the task ended.
fn drop_task<'a>(task: Option<BoxedTask<'a>>, note: &AbortNote<'a>) -> Life {
    match catch_unwind(AssertUnwindSafe(move || drop(task))) {
        Ok(()) => Life::Cancelled,
        Err(payload) => {
            if let Some(join) = note.take_orphan() {
                join.abort(Abort::Panicked(panic_text(&*payload)));
            }
            crate::unwind::drop_quietly(payload);
            Life::Failed
        }
    }
}

/// An async executor for futures, `!Send` ones included, on the thread that
/// owns it: heap-allocated tasks, join handles, a [`block_on`] that parks
/// when nothing is ready, and a bounded ingress ([`Spawner`]) for `Send`
/// futures from other threads.
///
/// # Which executor
///
/// The core's [`AsyncExecutor`](dinah_core::AsyncExecutor) keeps tasks in
/// `N` caller-owned slots and never allocates: firmware. This one allocates
/// each task on the heap, hands back its result, and can sleep the thread:
/// a desktop or server program, a test, a tool. Both schedule with the same
/// core ([`dinah_core::sched`]): the same state word per task, the same
/// lock-free wake stack, the same order of polls and the same
/// [`TickReport`]. Only the storage differs.
///
/// # What runs where
///
/// Every task is polled on the executor's thread, inside [`tick`] or
/// [`block_on`], and only there. Wakers can be called from any thread. A
/// wake sets the task's `QUEUED` bit with one compare-and-swap; from another
/// thread it then pushes the task on the lock-free wake stack and unparks
/// the executor's thread; from the executor's own thread while it runs, it
/// puts the task on a local list instead (no push, no unpark: the executor
/// looks there before it parks). A wake never polls and never takes a lock.
///
/// [`block_on`]: Self::block_on
/// [`tick`]: Self::tick
///
/// # Example
///
/// ```
/// use dinah::{JoinFailure, LocalExecutor};
/// use dinah::yield_now;
/// use std::rc::Rc;
///
/// let executor = LocalExecutor::new();
/// let shared = Rc::new(5); // not Send: fine on a local executor
/// let task = {
///     let shared = Rc::clone(&shared);
///     executor.spawn(async move {
///         yield_now().await;
///         Ok::<u32, &str>(*shared * 2)
///     })
/// }
/// .unwrap();
/// let failing = executor.spawn(async { Err::<(), _>("no") }).unwrap();
///
/// let (value, failure) = executor.block_on(async { (task.await, failing.await) });
/// assert_eq!(value, Ok(10));
/// assert_eq!(failure, Err(JoinFailure::Returned("no")));
/// ```
///
/// `'a` bounds what spawned futures may borrow: anything that outlives the
/// executor. `M` says whether it measures itself ([`Measuring`]):
/// [`Unmeasured`], the default, from [`new`](LocalExecutor::new) and
/// [`with_config`](LocalExecutor::with_config), runs no telemetry code at
/// all; `Measured`, from `with_telemetry` (feature `telemetry`), keeps
/// figures that its [`ExecutorMonitor`] reads and diagnoses.
///
/// # Guarantees
///
/// - [`spawn`](Self::spawn) and [`Spawner::try_spawn`] either accept a
///   future or hand it back ([`TrySpawnError`]). An accepted future is
///   polled until it ends, or dropped exactly once (cancelled, or at
///   shutdown) with its handle resolved [`Cancelled`](JoinFailure::Cancelled).
/// - Scheduling is the core's: a task is first polled in the tick after its
///   spawn; ready tasks are polled in the order they were woken; a task
///   woken during a tick waits for the next one, so a task that keeps waking
///   itself cannot starve the others; a wake never polls.
/// - A panic in a task is caught at the poll boundary: the task ends
///   `Failed`, its future is dropped, its handle says
///   [`Panicked`](JoinFailure::Panicked) with the message, and every other
///   task runs on.
///
/// # What it does not do
///
/// No preemption (a poll that never returns stalls it), no timers, no I/O,
/// no work stealing: a task runs on this thread or not at all. It is
/// `!Send`; hand work in from other threads through a [`Spawner`].
///
/// # Dropping it
///
/// Shuts it down as [`shutdown`](Self::shutdown) does, discarding the
/// report.
pub struct LocalExecutor<'a, M: Measuring = Unmeasured> {
    inner: Rc<Inner<'a, M>>,
}

impl<'a> LocalExecutor<'a> {
    /// An executor with no cap on tasks and room for 1,024 waiting
    /// submissions, running on the current thread.
    ///
    /// # Panics
    ///
    /// If the ingress's 1,024 slots cannot be allocated.
    #[must_use]
    pub fn new() -> Self {
        Self::with_config(ExecutorConfig::default())
            .unwrap_or_else(|error| panic!("dinah: LocalExecutor::new: {error}"))
    }

    /// An executor sized by `config`, running on the current thread.
    ///
    /// # Errors
    ///
    /// [`CapacityError::Zero`] when `ingress_capacity` or `max_tasks` is 0,
    /// [`CapacityError::Allocation`] when the ingress cannot be reserved.
    pub fn with_config(config: ExecutorConfig) -> Result<Self, CapacityError> {
        Ok(Self {
            inner: Rc::new(Inner::new(config, None)?),
        })
    }
}

#[cfg(feature = "telemetry")]
impl<'a> LocalExecutor<'a, Measured> {
    /// An executor sized by `config` that measures itself as `telemetry`
    /// says: per-task and executor figures, events to the configured sink,
    /// and a [`monitor`](Self::monitor) that diagnoses stalls from any
    /// thread.
    ///
    /// Whether an executor measures itself is part of its type
    /// ([`Measured`] here, [`Unmeasured`] from every other constructor): an
    /// unmeasured executor reads no clock, keeps no figures, emits nothing,
    /// and runs not one instruction to find that out.
    ///
    /// # Errors
    ///
    /// As [`with_config`](LocalExecutor::with_config).
    pub fn with_telemetry(
        config: ExecutorConfig,
        telemetry: TelemetryConfig,
    ) -> Result<Self, CapacityError> {
        Ok(Self {
            inner: Rc::new(Inner::new(config, Some(telemetry))?),
        })
    }

    /// A `Send + Sync` handle that reads this executor's figures and
    /// diagnoses it from any thread.
    #[must_use]
    pub fn monitor(&self) -> ExecutorMonitor {
        ExecutorMonitor::new(Arc::clone(&self.inner.shared))
    }
}

impl<'a, M: Measuring> LocalExecutor<'a, M> {
    /// Adds a task, first polled in the next tick. `F` may borrow anything
    /// that outlives `'a` and need not be `Send`. Its output is `()` or a
    /// `Result<V, E>`; the handle gives back the value or the failure.
    ///
    /// # Errors
    ///
    /// [`TrySpawnError::Full`] at the live-task cap,
    /// [`TrySpawnError::Shutdown`] after shutdown; the future is handed back.
    pub fn spawn<F, V, E>(&self, future: F) -> Result<JoinHandle<V, E>, TrySpawnError<F>>
    where
        F: Future + 'a,
        F::Output: TaskOutput<Value = V, Error = E>,
        V: 'a,
        E: 'a,
    {
        self.inner.spawn(future)
    }

    /// A handle that spawns onto this executor from inside its own tasks
    /// (the executor itself cannot be borrowed there).
    #[must_use]
    pub fn local_spawner(&self) -> LocalSpawner<'a, M> {
        LocalSpawner {
            inner: Rc::clone(&self.inner),
        }
    }

    /// A `Send + Sync` handle that submits `Send` futures from any thread.
    #[must_use]
    pub fn spawner(&self) -> Spawner {
        Spawner::new(Arc::clone(&self.inner.shared))
    }

    /// Takes in waiting submissions, then polls at most `budget` ready
    /// tasks, oldest wake first, and says what happened. Never parks.
    ///
    /// # Panics
    ///
    /// When called from inside a task of this executor (see
    /// [`block_on`](Self::block_on)).
    pub fn tick(&self, budget: usize) -> TickReport {
        let _entered = self.inner.enter("tick");
        let here = RunningHere::enter(&self.inner.shared, &self.inner.local);
        self.inner.tick(budget, &here)
    }

    /// Drives `future` to completion on this thread, running the spawned
    /// tasks while it waits, and returns its output.
    ///
    /// # What it promises
    ///
    /// - `future` is polled first at once, then whenever its waker fires,
    ///   between ticks; spawned tasks run as in [`tick`](Self::tick).
    /// - When nothing is ready the thread parks: no busy loop. Any waker,
    ///   from any thread, and any [`Spawner`] submission unparks it; a wake
    ///   that comes between the check and the park is not lost (the unpark
    ///   token waits for the park).
    /// - It returns as soon as `future` is ready, even if tasks remain; they
    ///   stay queued for the next `tick` or `block_on`.
    ///
    /// # Panics
    ///
    /// When called from inside a task of this same executor: that would
    /// deadlock (the task waits for `future`, which waits for the executor,
    /// which waits for the task), so it panics with a message that says so.
    /// A panic in `future` itself unwinds to the caller; spawned tasks'
    /// panics are caught as their failures.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.inner.block_on(future)
    }

    /// Shuts the executor down: closes the ingress (later submissions are
    /// handed back as [`TrySpawnError::Shutdown`]), drops every waiting
    /// submission and every unfinished task's future exactly once, on this
    /// thread, resolves each of their handles as
    /// [`Cancelled`](JoinFailure::Cancelled), and reports how many there
    /// were. Later spawns are refused. Calling it again reports zeros.
    ///
    /// # Panics
    ///
    /// When called from inside a task of this executor.
    pub fn shutdown(&self) -> ShutdownReport {
        self.inner.shutdown()
    }

    /// Tasks spawned (or taken in) and not finished.
    #[must_use]
    pub fn live_tasks(&self) -> usize {
        self.inner.live.get()
    }

    /// Wakes that arrived after their task was over, since the executor was
    /// built. Wraps at `u32::MAX`.
    #[must_use]
    pub fn stale_wakes(&self) -> u32 {
        self.inner.shared.stack.stale_wakes()
    }
}

impl Default for LocalExecutor<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: Measuring> Drop for LocalExecutor<'_, M> {
    fn drop(&mut self) {
        if !self.inner.running.get() && !self.inner.closed.get() {
            self.inner.shutdown();
        }
    }
}

impl<M: Measuring> fmt::Debug for LocalExecutor<'_, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalExecutor")
            .field("live_tasks", &self.live_tasks())
            .finish_non_exhaustive()
    }
}

/// Spawns onto a [`LocalExecutor`] from inside its tasks. `!Send`, `Clone`.
///
/// It keeps the executor's state alive but does not keep it running: after
/// the executor is shut down or dropped, spawns are refused with
/// [`TrySpawnError::Shutdown`].
pub struct LocalSpawner<'a, M: Measuring = Unmeasured> {
    inner: Rc<Inner<'a, M>>,
}

impl<'a, M: Measuring> LocalSpawner<'a, M> {
    /// As [`LocalExecutor::spawn`].
    ///
    /// # Errors
    ///
    /// As [`LocalExecutor::spawn`].
    pub fn spawn<F, V, E>(&self, future: F) -> Result<JoinHandle<V, E>, TrySpawnError<F>>
    where
        F: Future + 'a,
        F::Output: TaskOutput<Value = V, Error = E>,
        V: 'a,
        E: 'a,
    {
        self.inner.spawn(future)
    }
}

impl<M: Measuring> Clone for LocalSpawner<'_, M> {
    fn clone(&self) -> Self {
        Self {
            inner: Rc::clone(&self.inner),
        }
    }
}

impl<M: Measuring> fmt::Debug for LocalSpawner<'_, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSpawner").finish_non_exhaustive()
    }
}
