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
//! use dinah::{AsyncExecutor, ReadyQueue, TaskState, yield_now};
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

use crate::sched::{Life, Step, TickTally};
#[cfg(doc)]
use crate::waker::{CountPerTask, Timed};
use crate::waker::{Counting, NoCounters, ReadyQueue, TaskCounters};
use crate::{CancelError, PollObserver, Task, TaskFailure, TaskId, TaskOutput, TaskState};

/// A borrowed, pinned task as the executor stores it: any task whose error
/// type is `O`'s (see [`AsyncExecutor`]).
pub type TaskRef<'a, O> = Pin<&'a mut dyn Task<Error = <O as TaskOutput>::Error>>;

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
    /// Polls caused by a wake made while no task was being polled (from an
    /// interrupt handler or another thread between polls, or from code
    /// outside the executor), or made from another context while one was
    /// (see [`ReadyQueue::with_context`]).
    pub woken_outside: usize,
    /// Polls caused by a wake made, in the executor's own context, while
    /// some other task was being polled.
    pub woken_in_poll: usize,
    /// Polls caused by a task waking itself during its own poll (in the
    /// executor's own context).
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
/// `O` names the error type every task shares: a task returning `()`, `!`
/// (a task that never ends) or `Result<T, E>` with `E` equal to
/// `O::Error` fits. The default, `()`, takes the tasks that cannot fail
/// (`()`, `!`, `Result<T, Infallible>`); with `O = Result<(), E>` each
/// task's error is kept as its [`TaskFailure`], while its value, whatever its
/// type, is dropped (the executor hands no values back). `C` chooses whether
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
/// A panic in a task's code (its poll, or its future's destructor when the
/// task is cancelled) unwinds out of `tick` (or `run`/`run_until`) to the
/// caller. The executor stays consistent: that task is recorded as `Failed`
/// with no error value and never polled again, an observer is told its poll
/// ended, the executor lets go of its storage at the next tick (a future
/// whose poll panicked is dropped by its owner, with the storage), its slot
/// comes back, and every other task is where it was. A panic in the future
/// `run_until` drives unwinds the same way and ends that call; the executor
/// can be used again.
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
        Ok(self.queue.start(index))
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
        self.recycle(index);
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
                // The main future's entry: cleared here, where it was taken
                // off, and only polled while `run_until` drives it.
                queue.task_cell(N).take_queued();
                self.main_ready = queue.main_is_live();
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
                    // A finished task's last waker is gone (or its poll or
                    // drop unwound): let go of its storage and free the
                    // slot, unless a failure waits.
                    *self.task_slot(index) = None;
                    self.recycle(index);
                }
                Step::Cancel => {
                    if let Some(mut task) = self.task_slot(index).take() {
                        // A destructor that panics ends the task `Failed`.
                        let unwinding = EndOnUnwind {
                            queue,
                            index,
                            observer: &(),
                        };
                        task.as_mut().drop_future();
                        core::mem::forget(unwinding);
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
                    // Worked out only for an observer that looks.
                    let id = if observer.observes() {
                        queue.id_of(index, word)
                    } else {
                        TaskId::MIN
                    };
                    // From here to the poll's end, a panic (in the poll, or
                    // in the observer or tick source around it) ends this
                    // task `Failed` on its way to the caller.
                    let unwinding = EndOnUnwind {
                        queue,
                        index,
                        observer,
                    };
                    if let Some(stamp) = stamp {
                        observer.poll_waited(id, first, C::since(stamp));
                    }
                    observer.poll_started(id);
                    let poll = self.poll_slot(index);
                    observer.poll_ended(id);
                    core::mem::forget(unwinding);
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
    /// lets `idle` sleep until a wake (see [`Idle`]).
    ///
    /// # No lost wakeups
    ///
    /// `idle` sleeps only after it has checked that no task is ready, and
    /// each kind of [`Idle`] makes that check and the sleep safe against a
    /// wake landing between them. A closure is called inside a critical
    /// section, after the check made inside it: on a single-core
    /// microcontroller that section masks interrupts, so no interrupt
    /// handler can wake a task between the check and the sleep; `WFI`
    /// (`cortex_m::asm::wfi`) still returns when an interrupt becomes
    /// pending, the section ends, the handler runs and wakes its task, and
    /// the next tick polls it. A wake from another core or thread is not
    /// held off by the section: for those, and on a host (where a critical
    /// section is one lock for the whole process, which a sleeping thread
    /// must not hold), install a pender ([`ReadyQueue::with_pender`]) and
    /// sleep with [`Pended`], which checks and sleeps holding no lock and
    /// relies on the pender to end the sleep.
    pub fn run(&mut self, budget: usize, idle: impl Idle) -> ! {
        self.run_observed(budget, idle, &())
    }

    /// [`run`](Self::run), telling `observer` about each poll (see
    /// [`tick_observed`](Self::tick_observed)).
    pub fn run_observed<W: PollObserver + ?Sized>(
        &mut self,
        budget: usize,
        mut idle: impl Idle,
        observer: &W,
    ) -> ! {
        loop {
            self.tick_observed(budget, observer);
            self.idle_if_nothing_ready(&mut idle);
        }
    }

    /// Drives `future` to completion on this thread, ticking the spawned
    /// tasks while it waits, and returns its output. `future` is polled at
    /// once, then whenever its waker fires, like a task; `idle` sleeps as in
    /// [`run`](Self::run) when nothing at all is ready.
    ///
    /// Each call starts afresh: whatever an earlier call's future left
    /// behind (a wake that landed during its last poll, a panic) is not
    /// carried into this one. Tasks keep running across calls.
    pub fn run_until<F: Future>(&mut self, future: F, budget: usize, idle: impl Idle) -> F::Output {
        self.run_until_observed(future, budget, idle, &())
    }

    /// [`run_until`](Self::run_until), telling `observer` about each poll of
    /// a task (see [`tick_observed`](Self::tick_observed)) and of `future`
    /// itself, which it names as slot `N`'s task: the id whose
    /// [`slot`](TaskId::slot) is `N`.
    pub fn run_until_observed<F: Future, W: PollObserver + ?Sized>(
        &mut self,
        future: F,
        budget: usize,
        mut idle: impl Idle,
        observer: &W,
    ) -> F::Output {
        let queue = self.queue;
        let mut future = pin!(future);
        queue.set_main_live(true);
        let mut main = MainGuard {
            queue,
            observer,
            id: queue.id_of(N, queue.word(N)),
            polling: false,
        };
        // Polled at once. The main cell's `QUEUED` is cleared only where
        // its entry is taken off the stack (in `tick_observed`): an entry
        // left by an earlier call still comes, and polls the future once
        // more, which a future allows.
        self.main_ready = true;
        loop {
            if self.main_ready {
                self.main_ready = false;
                queue.stack().set_polling(N as u32 + 1);
                observer.poll_started(main.id);
                main.polling = true;
                let poll = queue.with_waker(N, |waker| {
                    future.as_mut().poll(&mut Context::from_waker(waker))
                });
                main.polling = false;
                queue.stack().set_polling(0);
                observer.poll_ended(main.id);
                if let Poll::Ready(output) = poll {
                    return output;
                }
            }
            self.tick_observed(budget, observer);
            self.idle_if_nothing_ready(&mut idle);
        }
    }

    fn idle_if_nothing_ready(&self, idle: &mut impl Idle) {
        idle.idle(|| self.has_work());
    }

    fn has_work(&self) -> bool {
        self.ready_head != 0
            || (self.main_ready && self.queue.main_is_live())
            || self.queue.stack().has_woken()
    }

    /// Polls the task in slot `index` once, in place, with its waker,
    /// marking it as the one being polled while it runs. (If the poll
    /// unwinds, the caller's [`EndOnUnwind`] clears the mark.)
    #[inline(always)]
    fn poll_slot(&mut self, index: usize) -> Poll<Result<(), O::Error>> {
        let queue = self.queue;
        let Some(task) = self.task_slot(index).as_mut() else {
            return Poll::Pending;
        };
        queue.stack().set_polling(index as u32 + 1);
        let poll = queue.with_waker(index, |waker| {
            task.as_mut().poll_task(&mut Context::from_waker(waker))
        });
        queue.stack().set_polling(0);
        poll
    }

    /// Ends the task in `index`, and frees the slot now if nothing still
    /// refers to it. Its final state stays readable by id until the slot is
    /// reused.
    fn end(&mut self, index: usize, life: Life) {
        *self.task_slot(index) = None;
        self.queue.task_cell(index).set_life(life);
        self.recycle(index);
    }

    /// Puts a finished slot on the free list if no failure waits to be
    /// taken and the executor wins its claim: no waker is left and no entry
    /// of it is queued (an entry frees it when taken; the last waker's drop
    /// queues one).
    fn recycle(&mut self, index: usize) {
        if self.failure_slot(index).is_none() && self.queue.claim_finished(index) {
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

/// Ends a slot as `Failed` if its poll, or the drop of its future, unwinds
/// (dropped only then: the normal path forgets it), telling the observer of
/// a poll that it ended.
struct EndOnUnwind<'o, const N: usize, C: Counting, W: PollObserver + ?Sized> {
    queue: &'static ReadyQueue<N, C>,
    index: usize,
    /// Who watches the poll.
    observer: &'o W,
}

impl<const N: usize, C: Counting, W: PollObserver + ?Sized> Drop for EndOnUnwind<'_, N, C, W> {
    fn drop(&mut self) {
        let (queue, index) = (self.queue, self.index);
        // The task's poll itself unwound (not the observer around it): the
        // observer is to hear that it ended.
        if queue.stack().polling() == index as u32 + 1 {
            queue.stack().set_polling(0);
            self.observer
                .poll_ended(queue.id_of(index, queue.word(index)));
        }
        queue.task_cell(index).set_life(Life::Failed);
        queue.requeue(index);
    }
}

/// Ends `run_until`'s hold on the main cell when the call returns or
/// unwinds: nothing is marked as polling, an observer hears that a poll
/// that unwound ended, and the main cell is vacant (later wakes of its
/// wakers are stale).
struct MainGuard<'o, const N: usize, C: Counting, W: PollObserver + ?Sized> {
    queue: &'static ReadyQueue<N, C>,
    observer: &'o W,
    id: TaskId,
    polling: bool,
}

impl<const N: usize, C: Counting, W: PollObserver + ?Sized> Drop for MainGuard<'_, N, C, W> {
    fn drop(&mut self) {
        self.queue.stack().set_polling(0);
        if self.polling {
            self.observer.poll_ended(self.id);
        }
        self.queue.set_main_live(false);
    }
}

/// How a run loop ([`AsyncExecutor::run`], [`AsyncExecutor::run_until`])
/// waits when no task is ready: it checks for work and sleeps until a wake,
/// without losing a wake that lands between the two.
///
/// Two ways are provided:
///
/// - a closure (`FnMut()`): the firmware way. The check and the call run
///   inside one critical section; on a single core that masks interrupts,
///   so the closure can sleep with `WFI`, which returns when an interrupt is
///   pending. Do not block in it on a host: there a critical section is one
///   lock for the whole process (`critical-section/std`), held while it
///   sleeps.
/// - [`Pended`]: the host (or multi-core) way. The check runs with no lock
///   held and the closure sleeps only if it found nothing; the queue's
///   pender ([`ReadyQueue::with_pender`]) must end the sleep, and a pend that
///   comes between the check and the sleep must end it at once (what
///   `thread::park` and `unpark` do, and `WFE` and `SEV`).
pub trait Idle {
    /// Sleeps until a wake, unless `ready()` says a task is ready now.
    fn idle(&mut self, ready: impl Fn() -> bool);
}

impl<F: FnMut()> Idle for F {
    /// Calls `self` inside a critical section, if `ready()`, checked inside
    /// the same section, is false.
    fn idle(&mut self, ready: impl Fn() -> bool) {
        critical_section::with(|_| {
            if !ready() {
                self();
            }
        });
    }
}

/// An [`Idle`] that checks for work and sleeps with its closure holding no
/// lock: for a host thread that parks, or a core that waits for an event,
/// until the queue's pender wakes it.
///
/// ```
/// use std::sync::OnceLock;
/// use std::thread::{self, Thread};
/// use dinah::{AsyncExecutor, Pended, ReadyQueue};
///
/// static EXECUTOR_THREAD: OnceLock<Thread> = OnceLock::new();
/// fn pend() {
///     if let Some(thread) = EXECUTOR_THREAD.get() {
///         thread.unpark();
///     }
/// }
/// static QUEUE: ReadyQueue<4> = ReadyQueue::with_pender(pend);
///
/// EXECUTOR_THREAD.set(thread::current()).unwrap();
/// let mut executor: AsyncExecutor<'_, 4> = AsyncExecutor::new(&QUEUE).unwrap();
/// let (tx, rx) = std::sync::mpsc::channel();
/// let waker_thread = thread::spawn(move || {
///     let waker: std::task::Waker = rx.recv().unwrap();
///     waker.wake();
/// });
/// let mut sent = Some(tx);
/// executor.run_until(
///     std::future::poll_fn(|cx| match sent.take() {
///         Some(tx) => {
///             tx.send(cx.waker().clone()).unwrap();
///             std::task::Poll::Pending
///         }
///         None => std::task::Poll::Ready(()),
///     }),
///     8,
///     Pended(thread::park),
/// );
/// waker_thread.join().unwrap();
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Pended<F>(pub F);

impl<F: FnMut()> Idle for Pended<F> {
    /// Calls the closure, holding no lock, if `ready()` is false.
    fn idle(&mut self, ready: impl Fn() -> bool) {
        if !ready() {
            (self.0)();
        }
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
