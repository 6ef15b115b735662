//! [`AsyncExecutor`]: runs futures in a fixed number of task slots, with no
//! heap, on a microcontroller or a host.
//!
//! Not to be confused with [`Executor`](crate::Executor), which calls one
//! closure now. This one keeps up to `N` tasks, polls the ready ones in the
//! order they were woken, and leaves the rest alone until a
//! [`Waker`](core::task::Waker) says otherwise.
//!
//! # Where futures live
//!
//! The caller owns every future: it pins `Some(future)` where it wants it,
//! usually on `main`'s stack with [`core::pin::pin!`], and lends it to the
//! executor for `'a` (the design lilos uses). That needs no macro, no
//! per-type `static` pool and no allocation, and a future of any type, even
//! an unnameable `async` block, fits any slot. The slot itself is two words
//! (the borrowed `dyn Task`). When a task ends, the executor drops the future
//! in place through [`Task::drop_future`], so its destructor runs exactly
//! once, at that moment.
//!
//! # Example
//!
//! ```
//! use core::pin::pin;
//! use core::sync::atomic::{AtomicU32, Ordering};
//! use dinah_core::{AsyncExecutor, ReadyQueue, TaskState, yield_now};
//!
//! static QUEUE: ReadyQueue<2> = ReadyQueue::new();
//! static LOG: AtomicU32 = AtomicU32::new(0);
//!
//! let mut a = pin!(Some(async {
//!     LOG.fetch_add(1, Ordering::Relaxed);
//!     yield_now().await;
//!     LOG.fetch_add(1, Ordering::Relaxed);
//! }));
//! let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
//! let id = executor.spawn(a.as_mut()).unwrap();
//!
//! let first = executor.tick(8);
//! assert_eq!((first.polled, first.completed, first.work_remaining), (1, 0, true));
//! let second = executor.tick(8);
//! assert_eq!((second.polled, second.completed), (1, 1));
//! assert_eq!(executor.task_state(id), Some(TaskState::Completed));
//! assert_eq!(LOG.load(Ordering::Relaxed), 2);
//! ```
#![forbid(unsafe_code)]

use core::fmt;
use core::future::Future;
use core::pin::{Pin, pin};
use core::task::{Context, Poll};

use crate::sched::{Life, Step, TickTally, Word};
#[cfg(doc)]
use crate::waker::{CountPerTask, Timed};
use crate::waker::{Counting, NoCounters, ReadyQueue, TaskCounters};
use crate::{CancelError, PollObserver, Task, TaskFailure, TaskId, TaskOutput, TaskState};

/// A borrowed, pinned task as the executor stores it.
pub type TaskRef<'a, O> = Pin<&'a mut dyn Task<Output = O>>;

/// Why [`AsyncExecutor::spawn`] refused a task. The task is handed back.
pub enum SpawnError<T> {
    /// Every slot holds a task (or a finished task whose wakers or failure
    /// are still outstanding).
    Full(T),
    /// The storage held no future (`None`, or a future that already ran).
    NoFuture(T),
}

impl<T> SpawnError<T> {
    /// Gives back the task that was not spawned.
    #[must_use]
    pub fn into_inner(self) -> T {
        match self {
            Self::Full(task) | Self::NoFuture(task) => task,
        }
    }
}

impl<T> fmt::Debug for SpawnError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::NoFuture(_) => f.write_str("NoFuture(..)"),
        }
    }
}

impl<T> fmt::Display for SpawnError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("every task slot is taken; the task was handed back"),
            Self::NoFuture(_) => f.write_str("the task storage holds no future"),
        }
    }
}

impl<T> core::error::Error for SpawnError<T> {}

/// The [`ReadyQueue`] already belongs to another executor.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct QueueClaimed;

impl fmt::Display for QueueClaimed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("this ReadyQueue already serves an executor")
    }
}

impl core::error::Error for QueueClaimed {}

/// What one [`AsyncExecutor::tick`] did.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct TickReport {
    /// Tasks polled.
    pub polled: usize,
    /// Tasks that returned `Ok` (or `()`).
    pub completed: usize,
    /// Tasks that returned an error, kept as their failure.
    pub failed: usize,
    /// Tasks whose future was dropped because cancellation was requested.
    pub cancelled: usize,
    /// Polls caused by a wake made while no task was being polled: from an
    /// interrupt handler or another thread between polls, or from code
    /// outside the executor.
    pub woken_outside: usize,
    /// Polls caused by a wake made while some other task was being polled
    /// (on one core, this includes interrupts that fired during a poll).
    pub woken_in_poll: usize,
    /// Polls caused by a task waking itself during its own poll.
    pub self_woken: usize,
    /// Wakes that arrived for tasks already over, since the previous tick.
    pub stale_wakes: u32,
    /// Whether a task is still ready (left over by the budget, or woken
    /// during this tick).
    pub work_remaining: bool,
}

/// An async executor over `N` task slots, with no heap: a firmware's main
/// loop, or a host's test or benchmark driver.
///
/// `O` is what every task returns: `()` (the default) or `Result<(), E>`,
/// whose errors are kept per task as [`TaskFailure`]s. `C` chooses whether
/// per-task [`TaskCounters`] are kept: [`NoCounters`] (the default, which
/// costs nothing) or [`CountPerTask`], read with
/// [`task_counters`](Self::task_counters); or [`Timed`], which keeps the
/// counters and also stamps each wake, so that the observer of
/// [`tick_observed`](Self::tick_observed) learns each poll's wake-to-poll or
/// first-poll delay.
///
/// # Guarantees
///
/// - [`spawn`](Self::spawn) is O(1) and never panics: a full executor hands
///   the task back in [`SpawnError::Full`].
/// - Wakes enqueue the task's identity and return; only [`tick`](Self::tick)
///   polls. Ready tasks are polled in the order they were woken. A task woken
///   during a tick is polled in the next tick, so a task that always wakes
///   itself cannot starve the others.
/// - A task is `Pending` until its first poll, `Running` from then on, and
///   ends `Completed`, `Failed` or `Cancelled`; its state by id is O(1).
/// - [`cancel`](Self::cancel) drops the future at the next scheduling point,
///   never during its poll; its destructor runs once.
/// - A task's returned error is kept and read back by id with
///   [`take_failure`](Self::take_failure); the slot is not reused until then.
///
/// # What it does not do
///
/// No preemption: a poll that never returns stalls the executor. No
/// priorities, no timers, no I/O. Nothing runs unless `tick`, `run` or
/// `run_until` is called. Spawning from an interrupt handler is not possible
/// (spawn borrows the executor); waking and cancelling are.
///
/// # Panics
///
/// A task that panics unwinds out of `tick` (or `run`/`run_until`) to the
/// caller. The executor stays consistent: that task is recorded as `Failed`
/// with no error value and never polled again, the executor lets go of its
/// storage at the next tick (the future itself is dropped by its owner, with
/// the storage), and every other task is where it was.
///
/// # Dropping it
///
/// Unfinished tasks are not polled again; their futures stay in their
/// owners' storage and are dropped with it. Wakes for them are ignored. The
/// [`ReadyQueue`] cannot serve another executor.
pub struct AsyncExecutor<'a, const N: usize, O: TaskOutput = (), C: Counting = NoCounters> {
    queue: &'static ReadyQueue<N, C>,
    tasks: [Option<TaskRef<'a, O>>; N],
    failures: [Option<O::Error>; N],
    counters: [C::Local; N],
    /// Vacant slots, linked through the cells (index + 1, 0 for none; at
    /// most `N + 1`, which fits 16 bits: the executor stays small).
    free: u16,
    /// Taken off the wake stack and not yet polled, oldest first.
    ready_head: u16,
    ready_tail: u16,
    /// The future driven by `run_until` was woken.
    main_ready: bool,
    stale_seen: u32,
}

impl<'a, const N: usize, O: TaskOutput, C: Counting> AsyncExecutor<'a, N, O, C> {
    /// An executor with every slot free, serving `queue` from now on.
    ///
    /// # Errors
    ///
    /// [`QueueClaimed`] when `queue` already served an executor: one queue
    /// has one consumer, for the life of the program.
    pub fn new(queue: &'static ReadyQueue<N, C>) -> Result<Self, QueueClaimed> {
        if !queue.claim() {
            return Err(QueueClaimed);
        }
        let mut executor = Self {
            queue,
            tasks: [const { None }; N],
            failures: [const { None }; N],
            counters: [const { C::LOCAL }; N],
            free: 0,
            ready_head: 0,
            ready_tail: 0,
            main_ready: false,
            stale_seen: queue.stale_wakes(),
        };
        for index in (0..N).rev() {
            executor.release(index);
        }
        Ok(executor)
    }

    /// The queue this executor consumes; wakers and [`ReadyQueue::cancel`]
    /// reach the executor through it.
    #[must_use]
    pub fn queue(&self) -> &'static ReadyQueue<N, C> {
        self.queue
    }

    /// Adds a task. It is first polled in the next tick, in wake order.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Full`] when no slot is free, [`SpawnError::NoFuture`]
    /// when the storage is empty; either way the task is handed back and
    /// nothing changed.
    pub fn spawn(&mut self, task: TaskRef<'a, O>) -> Result<TaskId, SpawnError<TaskRef<'a, O>>> {
        if !task.has_future() {
            return Err(SpawnError::NoFuture(task));
        }
        if self.free == 0 {
            return Err(SpawnError::Full(task));
        }
        let index = usize::from(self.free - 1);
        self.free = self.queue.task_cell(index).link() as u16;
        *self.task_slot(index) = Some(task);
        if let Some(local) = self.counters.get_mut(index) {
            self.queue.reset_counters(index, local);
        }
        let generation = self.queue.reuse(index);
        Ok(ReadyQueue::<N, C>::id_of(index, generation))
    }

    /// The state of task `id`, or `None` when `id` names no task here (never
    /// spawned, or its slot was reused).
    #[must_use]
    pub fn task_state(&self, id: TaskId) -> Option<TaskState> {
        self.queue.task_state(id)
    }

    /// Requests cancellation of task `id`; see [`ReadyQueue::cancel`], which
    /// interrupt handlers and other threads call instead.
    ///
    /// # Errors
    ///
    /// As [`ReadyQueue::cancel`].
    pub fn cancel(&self, id: TaskId) -> Result<(), CancelError> {
        self.queue.cancel(id)
    }

    /// Takes the error that task `id` returned, if it failed and it has not
    /// been taken yet. Its slot becomes reusable once taken (and once its
    /// last waker is gone).
    pub fn take_failure(&mut self, id: TaskId) -> Option<TaskFailure<O::Error>> {
        let (index, word) = self.queue.slot_of(id)?;
        if word.life() != Life::Failed {
            return None;
        }
        let error = self.failure_slot(index).take()?;
        self.release_if_reusable(index, word);
        Some(TaskFailure::returned(error))
    }

    /// How many slots hold a task that is not over yet.
    #[must_use]
    pub fn live_tasks(&self) -> usize {
        (0..N).filter(|&i| self.queue.word(i).is_live()).count()
    }

    /// Polls at most `budget` ready tasks, oldest wake first, and says what
    /// happened. Tasks woken during this tick wait for the next one.
    /// Cancellations and the recycling of finished slots do not count
    /// against the budget.
    pub fn tick(&mut self, budget: usize) -> TickReport {
        self.tick_observed(budget, &())
    }

    /// [`tick`](Self::tick), telling `observer` when each poll begins and
    /// ends (a [`PollWatch`](crate::PollWatch) for a stall watchdog).
    /// Cancellations and recycling are not polls and are not reported.
    #[inline(always)]
    pub fn tick_observed<W: PollObserver + ?Sized>(
        &mut self,
        budget: usize,
        observer: &W,
    ) -> TickReport {
        let queue = self.queue;
        let mut tally = TickTally::new();
        if let Some((first, last)) = queue.take_woken() {
            self.append_ready(first, last);
        }
        while tally.polled() < budget {
            let Some(index) = self.pop_ready() else {
                break;
            };
            if index == N {
                self.main_ready = true;
                continue;
            }
            // `take_queued` then a separate start on a first poll (rare):
            // on targets without compare-and-swap, a fetch-and is cheaper
            // than `take_for_poll`'s loop on every poll.
            // The stamp is read while the slot is still queued: a wake
            // after `take_queued` queues it anew with a stamp of its own.
            let stamp = queue.stamp(index);
            let word = queue.task_cell(index).take_queued();
            match tally.step(word) {
                Step::Release => {
                    // A finished task's last waker is gone (or its poll
                    // unwound): let go of its storage and free the slot,
                    // unless a failure waits.
                    *self.task_slot(index) = None;
                    self.release_if_reusable(index, queue.word(index));
                }
                Step::Cancel => {
                    if let Some(mut task) = self.task_slot(index).take() {
                        task.as_mut().drop_future();
                    }
                    self.end(index, Life::Cancelled);
                }
                Step::Poll { first, self_woken } => {
                    if first {
                        queue.task_cell(index).set_life(Life::Running);
                    }
                    if let Some(local) = self.counters.get_mut(index) {
                        C::polled(local, !first, self_woken);
                    }
                    let id = ReadyQueue::<N, C>::id_of(index, word.generation());
                    if let Some(stamp) = stamp {
                        observer.poll_waited(id, first, C::since(stamp));
                    }
                    observer.poll_started(id);
                    let poll = self.poll_slot(index);
                    observer.poll_ended(id);
                    match poll {
                        Poll::Pending => {}
                        Poll::Ready(Ok(())) => {
                            tally.ended(true);
                            self.end(index, Life::Completed);
                        }
                        Poll::Ready(Err(error)) => {
                            tally.ended(false);
                            *self.failure_slot(index) = Some(error);
                            self.end(index, Life::Failed);
                        }
                    }
                }
            }
        }
        let stale = queue.stale_wakes();
        let stale_wakes = stale.wrapping_sub(self.stale_seen);
        self.stale_seen = stale;
        tally.report(stale_wakes, self.has_work())
    }

    /// Runs forever: ticks with `budget`, and whenever nothing is ready,
    /// calls `idle` inside a critical section.
    ///
    /// # No lost wakeups
    ///
    /// `idle` runs only after the executor has checked, inside the same
    /// critical section, that no task is ready. On a single-core
    /// microcontroller that section masks interrupts, so no interrupt
    /// handler can wake a task between that check and the sleep; `WFI`
    /// (`cortex_m::asm::wfi`) still returns when an interrupt becomes
    /// pending, the section ends, the handler runs and wakes its task, and
    /// the next tick polls it. A wake from another core or thread is not held
    /// off by the section: for those, install a pender
    /// ([`ReadyQueue::with_pender`]) that makes `idle` return (for example
    /// `SEV` with `WFE`, or an event the idle hook waits on).
    pub fn run(&mut self, budget: usize, idle: impl FnMut()) -> ! {
        self.run_observed(budget, idle, &())
    }

    /// [`run`](Self::run), telling `observer` about each poll (see
    /// [`tick_observed`](Self::tick_observed)).
    pub fn run_observed<W: PollObserver + ?Sized>(
        &mut self,
        budget: usize,
        mut idle: impl FnMut(),
        observer: &W,
    ) -> ! {
        loop {
            self.tick_observed(budget, observer);
            self.idle_if_nothing_ready(&mut idle);
        }
    }

    /// Drives `future` to completion on this thread, ticking the spawned
    /// tasks while it waits, and returns its output. `future` is polled when
    /// its waker fires, like a task; `idle` is called as in
    /// [`run`](Self::run) when nothing at all is ready.
    pub fn run_until<F: Future>(
        &mut self,
        future: F,
        budget: usize,
        idle: impl FnMut(),
    ) -> F::Output {
        self.run_until_observed(future, budget, idle, &())
    }

    /// [`run_until`](Self::run_until), telling `observer` about each poll of
    /// a task (see [`tick_observed`](Self::tick_observed)); the polls of
    /// `future` itself are not reported.
    pub fn run_until_observed<F: Future, W: PollObserver + ?Sized>(
        &mut self,
        future: F,
        budget: usize,
        mut idle: impl FnMut(),
        observer: &W,
    ) -> F::Output {
        let queue = self.queue;
        let mut future = pin!(future);
        queue.set_main_live(true);
        self.main_ready = true;
        loop {
            if self.main_ready {
                self.main_ready = false;
                let _ = queue.task_cell(N).take_queued();
                queue.stack().set_polling(N as u32 + 1);
                let poll = queue.with_waker(N, |waker| {
                    future.as_mut().poll(&mut Context::from_waker(waker))
                });
                queue.stack().set_polling(0);
                if let Poll::Ready(output) = poll {
                    queue.set_main_live(false);
                    return output;
                }
            }
            self.tick_observed(budget, observer);
            self.idle_if_nothing_ready(&mut idle);
        }
    }

    fn idle_if_nothing_ready(&self, idle: &mut impl FnMut()) {
        critical_section::with(|_| {
            if !self.has_work() {
                idle();
            }
        });
    }

    fn has_work(&self) -> bool {
        self.ready_head != 0 || self.main_ready || self.queue.stack().has_woken()
    }

    /// Polls the task in slot `index` once, with its waker, and turns a
    /// `Ready` output into a `Result`.
    fn poll_slot(&mut self, index: usize) -> Poll<Result<(), O::Error>> {
        let queue = self.queue;
        // Polled in place. If the poll unwinds, the slot ends as Failed and
        // is queued, so that a later tick lets go of it and recycles it.
        let Some(task) = self.task_slot(index).as_mut() else {
            return Poll::Pending;
        };
        let unwinding = UnwindGuard { queue, index };
        queue.stack().set_polling(index as u32 + 1);
        let poll = queue.with_waker(index, |waker| {
            task.as_mut().poll_task(&mut Context::from_waker(waker))
        });
        queue.stack().set_polling(0);
        core::mem::forget(unwinding);
        poll.map(|output| output.into_result().map(drop))
    }

    /// Ends the task in `index`, and frees the slot now if nothing still
    /// refers to it. Its final state stays readable by id until the slot is
    /// reused.
    fn end(&mut self, index: usize, life: Life) {
        *self.task_slot(index) = None;
        let word = self.queue.task_cell(index).set_life(life);
        self.release_if_reusable(index, word);
    }

    /// Puts a finished slot on the free list once no waker refers to it, it
    /// is not queued (a queued entry frees it when taken) and no failure
    /// waits to be taken.
    fn release_if_reusable(&mut self, index: usize, word: Word) {
        if ReadyQueue::<N, C>::reusable(word) && self.failure_slot(index).is_none() {
            self.release(index);
        }
    }

    /// The task of slot `index` (always `< N`: it comes from the executor's
    /// own lists). Checked without a formatted panic, so that a firmware
    /// linking the executor does not pull in `core::fmt`.
    fn task_slot(&mut self, index: usize) -> &mut Option<TaskRef<'a, O>> {
        match self.tasks.get_mut(index) {
            Some(slot) => slot,
            None => slot_out_of_range(),
        }
    }

    /// The kept failure of slot `index` (see [`task_slot`](Self::task_slot)).
    fn failure_slot(&mut self, index: usize) -> &mut Option<O::Error> {
        match self.failures.get_mut(index) {
            Some(slot) => slot,
            None => slot_out_of_range(),
        }
    }

    /// Puts a vacant slot on the free list.
    fn release(&mut self, index: usize) {
        self.queue.task_cell(index).set_link(u32::from(self.free));
        self.free = index as u16 + 1;
    }

    /// Appends a chain of entries (already linked, oldest first) behind
    /// the ready list.
    fn append_ready(&mut self, first: u32, last: u32) {
        if self.ready_tail == 0 {
            self.ready_head = first as u16;
        } else {
            self.queue
                .task_cell(usize::from(self.ready_tail - 1))
                .set_link(first);
        }
        self.ready_tail = last as u16;
    }

    fn pop_ready(&mut self) -> Option<usize> {
        if self.ready_head == 0 {
            return None;
        }
        let index = usize::from(self.ready_head - 1);
        self.ready_head = self.queue.task_cell(index).link() as u16;
        if self.ready_head == 0 {
            self.ready_tail = 0;
        }
        Some(index)
    }
}

/// An internal slot index was out of range: a broken invariant, reported
/// with a fixed message.
#[cold]
fn slot_out_of_range() -> ! {
    panic!("dinah: internal slot index out of range")
}

/// Ends a slot as `Failed` if its poll unwinds (dropped only then: the
/// normal path forgets it).
struct UnwindGuard<const N: usize, C: Counting> {
    queue: &'static ReadyQueue<N, C>,
    index: usize,
}

impl<const N: usize, C: Counting> Drop for UnwindGuard<N, C> {
    fn drop(&mut self) {
        self.queue.stack().set_polling(0);
        self.queue.task_cell(self.index).set_life(Life::Failed);
        self.queue.requeue(self.index);
    }
}

impl<'a, const N: usize, O: TaskOutput, C: Counting<Local = TaskCounters>>
    AsyncExecutor<'a, N, O, C>
{
    /// The counters of task `id`, or `None` when `id` names no task here.
    /// They stay readable after the task ends, until its slot is reused.
    #[must_use]
    pub fn task_counters(&self, id: TaskId) -> Option<TaskCounters> {
        let (index, _) = self.queue.slot_of(id)?;
        let mut counters = *self.counters.get(index)?;
        counters.stale_wakes = self.queue.stale_of(index);
        Some(counters)
    }
}

impl<const N: usize, O: TaskOutput, C: Counting> fmt::Debug for AsyncExecutor<'_, N, O, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncExecutor")
            .field("slots", &N)
            .field("live_tasks", &self.live_tasks())
            .finish_non_exhaustive()
    }
}
