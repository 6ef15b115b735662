//! [`AsyncExecutor`]: the core executor, its slots and its public API for
//! tasks. Running it (its ticks) is `run.rs`, over the shared
//! [`raw::sched::tick`](crate::raw::sched::tick); its wake state is [`ReadyQueue`].
#![forbid(unsafe_code)]

use core::fmt;
use core::task::{Context, Poll};

use super::error::slot_out_of_range;
use super::{CancelError, QueueClaimed, ReadyQueue, SpawnError, TaskRef};
use crate::id::TaskId;
use crate::raw::KEEPS_POLLED_WAKES;
use crate::task::{TaskFailure, TaskOutput, TaskState};
#[cfg(doc)]
use crate::telemetry::{Counted, Timed};
use crate::telemetry::{Measure, TaskFigures, Unmeasured};

/// An async executor over `N` task slots, with no heap: a firmware's main
/// loop, or a host's test or benchmark driver.
///
/// `O` names the error type every task shares: a task returning `()`, `!`
/// (a task that never ends) or `Result<T, E>` with `E` equal to
/// `O::Error` fits. The default, `()`, takes the tasks that cannot fail
/// (`()`, `!`, `Result<T, Infallible>`); with `O = Result<(), E>` each
/// task's error is kept as its [`TaskFailure`], while its value, whatever its
/// type, is dropped (the executor hands no values back). `M` says how much
/// it measures ([`Measure`]): [`Unmeasured`] (the default, which costs
/// nothing), [`Counted`] (per-task counts, read as [`TaskFigures`] with
/// [`task_figures`](Self::task_figures)), or [`Timed`], which counts and
/// also stamps each wake, so that the observer of
/// [`tick_observed`](Self::tick_observed) learns each poll's wake-to-poll or
/// first-poll delay.
///
/// # Guarantees
///
/// - [`try_spawn`](Self::try_spawn) is O(1) and never panics: a full executor
///   hands the task back in [`SpawnError::Full`].
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
/// priorities, no I/O; timers are a separate store
/// ([`Timers`](crate::time::Timers)) that the run loop's idle drives
/// ([`Tickless`](crate::time::Tickless)). Nothing runs unless `tick`, `run` or
/// `run_until` is called. Spawning from an interrupt handler is not possible
/// (`try_spawn` borrows the executor); waking and cancelling are.
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
pub struct AsyncExecutor<'a, const N: usize, O: TaskOutput = (), M: Measure = Unmeasured> {
    pub(super) queue: &'static ReadyQueue<N, M>,
    tasks: [Option<TaskRef<'a, O>>; N],
    failures: [Option<O::Error>; N],
    pub(super) counters: [M::Local; N],
    /// Vacant slots, linked through the cells (index + 1, 0 for none; at
    /// most `N + 1`, which fits 16 bits: the executor stays small).
    free: u16,
    /// Taken off the wake stack, or queued by the executor itself (woken
    /// while it polled them, see `KEEPS_POLLED_WAKES`), and not yet polled,
    /// oldest first. A tick polls only what the list held when it began.
    pub(super) ready_head: u16,
    pub(super) ready_tail: u16,
    /// The future driven by `run_until` was woken.
    pub(super) main_ready: bool,
    pub(super) stale_seen: u32,
}

impl<'a, const N: usize, O: TaskOutput, M: Measure> AsyncExecutor<'a, N, O, M> {
    /// An executor with every slot free, serving `queue` from now on.
    ///
    /// # Errors
    ///
    /// [`QueueClaimed`] when `queue` already served an executor: one queue
    /// has one consumer, for the life of the program.
    pub fn new(queue: &'static ReadyQueue<N, M>) -> Result<Self, QueueClaimed> {
        if !queue.claim() {
            return Err(QueueClaimed);
        }
        let mut executor = Self {
            queue,
            tasks: [const { None }; N],
            failures: [const { None }; N],
            counters: [const { M::LOCAL }; N],
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
    pub fn queue(&self) -> &'static ReadyQueue<N, M> {
        self.queue
    }

    /// Adds a task, or hands it back: it never waits for a free slot. The
    /// task is first polled in the next tick, in wake order.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Full`] when no slot is free, [`SpawnError::NoFuture`]
    /// when the storage is empty; either way the task is handed back and
    /// nothing changed. (Never `Shutdown` or `NoThread`.)
    pub fn try_spawn(
        &mut self,
        task: TaskRef<'a, O>,
    ) -> Result<TaskId, SpawnError<TaskRef<'a, O>>> {
        self.spawn_as(None, task)
    }

    /// [`try_spawn`](Self::try_spawn), with a name for the task. A
    /// measuring executor ([`Counted`] or [`Timed`]) keeps it with the
    /// slot's counts (no allocation) and gives it back by
    /// [`task_name`](Self::task_name) and [`task_figures`](Self::task_figures)
    /// until the slot is reused; an [`Unmeasured`] one keeps no telemetry
    /// and drops the name.
    ///
    /// ```
    /// use core::pin::pin;
    /// use dinah::executor::{AsyncExecutor, ReadyQueue};
    /// use dinah::telemetry::Counted;
    ///
    /// static QUEUE: ReadyQueue<1, Counted> = ReadyQueue::new();
    /// let mut blink = pin!(Some(async {}));
    /// let mut executor: AsyncExecutor<'_, 1, (), Counted> = AsyncExecutor::new(&QUEUE).unwrap();
    /// let id = executor.try_spawn_named("blink", blink.as_mut()).unwrap();
    /// assert_eq!(executor.task_name(id), Some("blink"));
    /// executor.tick(1);
    /// assert_eq!(executor.task_figures(id).unwrap().name, Some("blink"));
    /// ```
    ///
    /// # Errors
    ///
    /// As [`try_spawn`](Self::try_spawn).
    pub fn try_spawn_named(
        &mut self,
        name: &'static str,
        task: TaskRef<'a, O>,
    ) -> Result<TaskId, SpawnError<TaskRef<'a, O>>> {
        self.spawn_as(Some(name), task)
    }

    /// The name task `id` was spawned with, while its slot is still its
    /// own; `None` for an unnamed task or an id that names no task here.
    #[must_use]
    pub fn task_name(&self, id: TaskId) -> Option<&'static str> {
        let (index, _) = self.queue.slot_of(id)?;
        self.queue.counts(index, self.counters.get(index)?)?.name
    }

    fn spawn_as(
        &mut self,
        name: Option<&'static str>,
        task: TaskRef<'a, O>,
    ) -> Result<TaskId, SpawnError<TaskRef<'a, O>>> {
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
            if let Some(slot) = M::name_slot(local) {
                *slot = name;
            }
        }
        let id = self.queue.start(index);
        // The storage learns its id (a pool's worker: the job it runs).
        if let Some(task) = self.task_slot(index) {
            task.as_mut().turn(Some(id));
        }
        Ok(id)
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
        if word.state() != Some(TaskState::Failed) {
            return None;
        }
        let error = self.failure_slot(index).take()?;
        self.recycle(index);
        Some(TaskFailure::returned(error))
    }

    /// Whether a slot is free for a spawn now.
    pub(super) fn has_vacant_slot(&self) -> bool {
        self.free != 0
    }

    /// How many slots hold a task that is not over yet.
    #[must_use]
    pub fn live_tasks(&self) -> usize {
        (0..N).filter(|&i| self.queue.word(i).is_live()).count()
    }

    /// Polls the task in slot `index` once, in place, with its waker,
    /// marking it as the one being polled while it runs. (If the poll
    /// unwinds, the caller's [`EndOnUnwind`] clears the mark.)
    #[inline(always)]
    pub(super) fn poll_slot(&mut self, index: usize) -> Poll<Result<(), O::Error>> {
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
    pub(super) fn end(&mut self, index: usize, state: TaskState) {
        if KEEPS_POLLED_WAKES {
            // A wake during the task's last poll left it queued on no
            // list: its entry goes on the ready list, to be released in
            // order at the next tick.
            if self.queue.task_cell(index).end_polled(state) {
                self.hold(index);
            }
        } else {
            self.queue.task_cell(index).set_state(state);
        }
        self.recycle(index);
    }

    /// Lets go of slot `index`'s storage, its task being over, unless the
    /// storage asks to run another task in the slot
    /// ([`Task::turn`](crate::task::Task::turn)); then puts the slot on the
    /// free list if no failure waits to be taken and the executor wins its
    /// claim: no waker is left and no entry of it is queued (an entry frees
    /// it when taken; the last waker's drop queues one). Storage kept to
    /// run another task starts it there instead.
    pub(super) fn recycle(&mut self, index: usize) {
        let slot = self.task_slot(index);
        if !slot.as_mut().is_some_and(|task| task.as_mut().turn(None)) {
            *slot = None;
        }
        if self.failure_slot(index).is_none() && self.queue.claim_finished(index) {
            self.release(index);
            if let Some(task) = self.task_slot(index).take() {
                // Kept to run its next task: spawned again, in the slot
                // just freed (the free list gives it back first), so with a
                // new generation: no wake of the task that ended reaches it.
                let name = self.task_name_at(index);
                let _ = self.spawn_as(name, task);
            }
        }
    }

    /// The name slot `index`'s counts keep, if any.
    fn task_name_at(&mut self, index: usize) -> Option<&'static str> {
        let local = self.counters.get_mut(index)?;
        M::name_slot(local).and_then(|name| *name)
    }

    /// The task of slot `index` (always `< N`: it comes from the executor's
    /// own lists). Checked without a formatted panic, so that a firmware
    /// linking the executor does not pull in `core::fmt`.
    pub(super) fn task_slot(&mut self, index: usize) -> &mut Option<TaskRef<'a, O>> {
        match self.tasks.get_mut(index) {
            Some(slot) => slot,
            None => slot_out_of_range(),
        }
    }

    /// The kept failure of slot `index` (see [`task_slot`](Self::task_slot)).
    pub(super) fn failure_slot(&mut self, index: usize) -> &mut Option<O::Error> {
        match self.failures.get_mut(index) {
            Some(slot) => slot,
            None => slot_out_of_range(),
        }
    }

    /// Puts a vacant slot on the free list.
    pub(super) fn release(&mut self, index: usize) {
        self.queue.task_cell(index).set_link(u32::from(self.free));
        self.free = index as u16 + 1;
    }

    /// Appends a chain of entries (already linked, oldest first) behind
    /// the ready list.
    pub(super) fn append_ready(&mut self, first: u32, last: u32) {
        append(
            self.queue,
            (&mut self.ready_head, &mut self.ready_tail),
            first,
            last,
        );
    }

    /// Queues slot `index` for the next tick from the executor's side: its
    /// task was woken while it was being polled (`POLLING`), so no waker
    /// pushed it. Whatever the wake stack holds was woken before that poll
    /// ended and goes ahead of it: a wake that lands during its task's poll
    /// counts as made when the poll ends. Both go behind the ready list,
    /// past the end of the tick under way (`Ticking::end`, in `run.rs`).
    /// For a timed queue, the wait is stamped here.
    #[inline(always)]
    pub(super) fn hold(&mut self, index: usize) {
        let queue = self.queue;
        // A load first: taking the stack is a swap, a locked operation.
        if queue.stack().has_woken()
            && let Some((first, last)) = queue.take_woken()
        {
            self.append_ready(first, last);
        }
        let entry = index as u32 + 1;
        queue.task_cell(index).set_link(0);
        self.append_ready(entry, entry);
        queue.restamp(index);
    }

    pub(super) fn pop_ready(&mut self) -> Option<usize> {
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

/// Appends a chain of entries (already linked through `queue`'s cells,
/// oldest first) behind the list whose head and tail are `list` (`index +
/// 1`, 0 for none).
#[inline(always)]
fn append<const N: usize, M: Measure>(
    queue: &ReadyQueue<N, M>,
    list: (&mut u16, &mut u16),
    first: u32,
    last: u32,
) {
    let (head, tail) = list;
    if *tail == 0 {
        *head = first as u16;
    } else {
        queue.task_cell(usize::from(*tail - 1)).set_link(first);
    }
    *tail = last as u16;
}

impl<'a, const N: usize, O: TaskOutput, M: Measure> AsyncExecutor<'a, N, O, M> {
    /// The counts of task `id`, as [`TaskFigures`] (its polls, wakes,
    /// self-wakes and stale wakes; times are an observer's, see
    /// [`TaskTimes`](crate::telemetry::TaskTimes)), or `None` when `id`
    /// names no task here or the executor counts nothing ([`Unmeasured`]).
    /// They stay readable after the task ends, until its slot is reused.
    #[must_use]
    pub fn task_figures(&self, id: TaskId) -> Option<TaskFigures> {
        let (index, _) = self.queue.slot_of(id)?;
        let counts = self.queue.counts(index, self.counters.get(index)?)?;
        let mut figures = TaskFigures::new(id, M::ticks_per_second());
        figures.name = counts.name;
        figures.polls = u64::from(counts.polls);
        figures.wakes = u64::from(counts.wakes);
        figures.self_wakes = u64::from(counts.self_wakes);
        figures.stale_wakes = u64::from(counts.stale_wakes);
        Some(figures)
    }
}

impl<const N: usize, O: TaskOutput, M: Measure> fmt::Debug for AsyncExecutor<'_, N, O, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncExecutor")
            .field("slots", &N)
            .field("live_tasks", &self.live_tasks())
            .finish_non_exhaustive()
    }
}
