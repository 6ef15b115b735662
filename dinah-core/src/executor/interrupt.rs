//! [`InterruptExecutor`]: tasks run by an interrupt handler, at that
//! interrupt's priority, beside the thread-mode executor; and
//! [`InterruptTasks`], the set of tasks it runs.
#![forbid(unsafe_code)]

use core::fmt;
use core::pin::Pin;

use super::fenced::handoff::{Handoff, Serve};
use super::{AsyncExecutor, QueueClaimed, ReadyQueue, SpawnError};
use crate::atomic::{AtomicU32, Ordering};
use crate::id::TaskId;
use crate::task::{Task, TaskOutput, TaskState};
use crate::telemetry::{Measure, PollObserver, Unmeasured};

/// A task that may run in another context than the one that spawned it:
/// what [`InterruptTasks`] takes.
pub type SendTaskRef<'a, O> = Pin<&'a mut (dyn Task<Error = <O as TaskOutput>::Error> + Send)>;

/// The tasks an [`InterruptExecutor`] runs: an [`AsyncExecutor`] whose
/// tasks are all `Send`, since its handler polls them in another context
/// than the code that spawned them.
///
/// Spawn into it before [`InterruptExecutor::serve`] lends it to the
/// handler; while served, it spawns through a
/// [`TaskPool`](super::TaskPool) whose workers it runs (from any task or
/// interrupt handler, at any priority).
pub struct InterruptTasks<'a, const N: usize, O: TaskOutput = (), M: Measure = Unmeasured> {
    executor: AsyncExecutor<'a, N, O, M>,
}

impl<'a, const N: usize, O: TaskOutput, M: Measure> InterruptTasks<'a, N, O, M> {
    /// No tasks yet, serving `queue` from now on. Build the queue with
    /// [`ReadyQueue::with_pender`] and a pender that makes the handler's
    /// interrupt pending (on a Cortex-M, `SCB::set_pendsv` or
    /// `NVIC::pend`), so that a wake from anywhere runs the handler.
    ///
    /// # Errors
    ///
    /// [`QueueClaimed`] when `queue` already served an executor.
    pub fn new(queue: &'static ReadyQueue<N, M>) -> Result<Self, QueueClaimed> {
        Ok(Self {
            executor: AsyncExecutor::new(queue)?,
        })
    }

    /// Adds a `Send` task, or hands it back, as
    /// [`AsyncExecutor::try_spawn`] does.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Full`] when no slot is free, [`SpawnError::NoFuture`]
    /// when the storage is empty; the task is handed back.
    pub fn try_spawn(
        &mut self,
        task: SendTaskRef<'a, O>,
    ) -> Result<TaskId, SpawnError<SendTaskRef<'a, O>>> {
        self.spawn_as(None, task)
    }

    /// [`try_spawn`](Self::try_spawn), with a name for a measuring
    /// executor's figures (see [`AsyncExecutor::try_spawn_named`]).
    ///
    /// # Errors
    ///
    /// As [`try_spawn`](Self::try_spawn).
    pub fn try_spawn_named(
        &mut self,
        name: &'static str,
        task: SendTaskRef<'a, O>,
    ) -> Result<TaskId, SpawnError<SendTaskRef<'a, O>>> {
        self.spawn_as(Some(name), task)
    }

    fn spawn_as(
        &mut self,
        name: Option<&'static str>,
        task: SendTaskRef<'a, O>,
    ) -> Result<TaskId, SpawnError<SendTaskRef<'a, O>>> {
        // Checked here, so that the executor's spawn cannot refuse and hand
        // back the task without its `Send`.
        if !task.has_future() {
            return Err(SpawnError::NoFuture(task));
        }
        if !self.executor.has_vacant_slot() {
            return Err(SpawnError::Full(task));
        }
        let spawned = match name {
            Some(name) => self.executor.try_spawn_named(name, task),
            None => self.executor.try_spawn(task),
        };
        match spawned {
            Ok(id) => Ok(id),
            Err(_) => crate::fmt::fail!("dinah: a checked spawn was refused"),
        }
    }

    /// The state of task `id` (see [`AsyncExecutor::task_state`]).
    #[must_use]
    pub fn task_state(&self, id: TaskId) -> Option<TaskState> {
        self.executor.task_state(id)
    }

    /// The name task `id` was spawned with (see [`AsyncExecutor::task_name`]).
    #[must_use]
    pub fn task_name(&self, id: TaskId) -> Option<&'static str> {
        self.executor.task_name(id)
    }

    /// How many slots hold a task that is not over yet.
    #[must_use]
    pub fn live_tasks(&self) -> usize {
        self.executor.live_tasks()
    }

    /// The queue its wakers reach; [`ReadyQueue::cancel`] on it cancels a
    /// task from any context, while the tasks are served.
    #[must_use]
    pub fn queue(&self) -> &'static ReadyQueue<N, M> {
        self.executor.queue()
    }
}

impl<const N: usize, O: TaskOutput, M: Measure> fmt::Debug for InterruptTasks<'_, N, O, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterruptTasks")
            .field("live_tasks", &self.live_tasks())
            .finish_non_exhaustive()
    }
}

/// Why [`InterruptExecutor::serve`] did not run its scope.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The executor serves other tasks now: one set at a time.
    Busy,
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the interrupt executor already serves a set of tasks")
    }
}

impl core::error::Error for ServeError {}

/// What an [`InterruptExecutor`] is and did, read at one moment.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct InterruptFigures {
    /// The name the binary gave it.
    pub name: &'static str,
    /// The priority the binary gave its interrupt, as the binary numbers
    /// it (on a Cortex-M, the NVIC's: lower is more urgent). The executor
    /// does not set or read the hardware's priority.
    pub priority: u8,
    /// Whether it serves a set of tasks now.
    pub serving: bool,
    /// Handler runs that polled its tasks (wrapping).
    pub runs: u32,
    /// Polls of its tasks (wrapping).
    pub polls: u32,
}

impl fmt::Display for InterruptFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "executor {} at priority {}: {} runs, {} polls{}",
            self.name,
            self.priority,
            self.runs,
            self.polls,
            if self.serving { "" } else { " (not serving)" }
        )
    }
}

/// An executor run by an interrupt handler: its tasks are polled at that
/// interrupt's priority, so they preempt the thread-mode executor (and
/// every lower priority) in the middle of a poll, and a higher priority
/// preempts them. A `static` with a `const` constructor; no macro: the
/// binary names the interrupt, as it chooses its critical-section
/// implementation.
///
/// The binary
/// 1. makes the tasks' [`ReadyQueue`] with a pender that pends the
///    interrupt ([`ReadyQueue::with_pender`]), so a wake from any context
///    makes the handler run;
/// 2. calls [`on_interrupt`](Self::on_interrupt) from that interrupt's
///    handler;
/// 3. spawns `Send` tasks into an [`InterruptTasks`], and lends them with
///    [`serve`](Self::serve) for a scope: usually the rest of `main`, the
///    thread-mode executor's `run`.
///
/// Here, on a host, the pender runs the handler at once, as an interrupt
/// of higher priority would preempt the code that woke it:
///
/// ```
/// use core::pin::pin;
/// use dinah::executor::{AsyncExecutor, InterruptExecutor, InterruptTasks, ReadyQueue};
/// use dinah::io::Event;
///
/// static HIGH: InterruptExecutor = InterruptExecutor::new("urgent", 1);
/// static HIGH_QUEUE: ReadyQueue<1> = ReadyQueue::with_pender(pend_high);
/// static LOW_QUEUE: ReadyQueue<1> = ReadyQueue::new();
/// static DATA_READY: Event = Event::new();
///
/// // Firmware: `SCB::set_pendsv()`, with `HIGH.on_interrupt()` in `PendSV`.
/// fn pend_high() {
///     HIGH.on_interrupt();
/// }
///
/// let mut urgent = pin!(Some(async {
///     let mut seen = 0;
///     while let Ok(raises) = DATA_READY.wait_from(seen).await {
///         seen = seen.wrapping_add(raises);
///     }
///     assert_eq!(seen, 3);
/// }));
/// let mut high: InterruptTasks<'_, 1> = InterruptTasks::new(&HIGH_QUEUE).unwrap();
/// let urgent = high.try_spawn(urgent.as_mut()).unwrap();
///
/// let mut slow = pin!(Some(async {
///     for _ in 0..3 {
///         // In the middle of this poll, the urgent task runs.
///         DATA_READY.raise();
///     }
///     DATA_READY.close();
/// }));
/// let mut low: AsyncExecutor<'_, 1> = AsyncExecutor::new(&LOW_QUEUE).unwrap();
/// low.try_spawn(slow.as_mut()).unwrap();
///
/// // `serve` pends the interrupt once: the urgent task's first poll.
/// HIGH.serve(&mut high, || low.tick(4)).unwrap();
/// assert_eq!(high.task_state(urgent), Some(dinah::task::TaskState::Completed));
/// assert_eq!(HIGH.figures().priority, 1);
/// ```
///
/// # Guarantees
///
/// - While [`serve`](Self::serve) runs its scope, each
///   [`on_interrupt`](Self::on_interrupt) polls the served tasks until none
///   is ready; before it and after it, `on_interrupt` does nothing. When
///   `serve` returns (or unwinds), no handler is polling the tasks or will
///   poll them, so their storage may go.
/// - The handler never runs twice at once: an `on_interrupt` that finds
///   another one polling (another thread on a host, or itself, called from
///   a task) leaves it to that one, which runs once more before it ends.
///   No wake is lost either way.
/// - Wakes, cancellations ([`ReadyQueue::cancel`]) and
///   [`TaskPool`](super::TaskPool) spawns reach it from any priority; the
///   stale-wake guarantee of [`ReadyQueue`] holds as for any executor.
///
/// # What it does not do
///
/// It does not set the interrupt's priority, enable it, or know which it
/// is: the binary does (on a Cortex-M, `PendSV` or any interrupt the
/// application leaves unused, with `NVIC`'s priority set as it wants).
/// Its tasks run until none is ready, so one that keeps waking itself
/// keeps every lower priority waiting, as any interrupt does. `serve` must
/// be called from a priority below the interrupt's (thread mode, usually):
/// from above it, its end would wait forever for a handler it preempted.
pub struct InterruptExecutor {
    name: &'static str,
    priority: u8,
    handoff: Handoff,
    runs: AtomicU32,
    polls: AtomicU32,
}

impl InterruptExecutor {
    crate::raw::const_unless_loom! {
        /// An executor named `name`, for an interrupt of `priority` (as the
        /// binary numbers it: both are for telemetry), serving nothing yet.
        #[must_use]
        pub fn new(name: &'static str, priority: u8) -> Self {
            Self {
                name,
                priority,
                handoff: Handoff::new(),
                runs: AtomicU32::new(0),
                polls: AtomicU32::new(0),
            }
        }
    }

    /// Lends `tasks` to [`on_interrupt`](Self::on_interrupt) while `scope`
    /// runs, and returns what it returns, once no handler polls them. At
    /// the scope's start it calls the queue's pender once, so that tasks
    /// spawned before (or woken while nothing was served) are polled.
    ///
    /// # Errors
    ///
    /// [`ServeError::Busy`] when it serves another set already; `scope`
    /// does not run.
    pub fn serve<const N: usize, O, M, R>(
        &self,
        tasks: &mut InterruptTasks<'_, N, O, M>,
        scope: impl FnOnce() -> R,
    ) -> Result<R, ServeError>
    where
        O: TaskOutput,
        O::Error: Send,
        M: Measure,
        M::Local: Send,
    {
        self.serve_observed(tasks, &(), scope)
    }

    /// [`serve`](Self::serve), telling `observer` about each poll of the
    /// tasks (a [`PollWatch`](crate::telemetry::PollWatch) of their own,
    /// for a watchdog at this priority).
    ///
    /// # Errors
    ///
    /// As [`serve`](Self::serve).
    pub fn serve_observed<const N: usize, O, M, W, R>(
        &self,
        tasks: &mut InterruptTasks<'_, N, O, M>,
        observer: &W,
        scope: impl FnOnce() -> R,
    ) -> Result<R, ServeError>
    where
        O: TaskOutput,
        O::Error: Send,
        M: Measure,
        M::Local: Send,
        W: PollObserver + Sync + ?Sized,
    {
        let queue = tasks.executor.queue();
        let mut served = Served {
            tasks,
            observer,
            runs: &self.runs,
            polls: &self.polls,
        };
        self.handoff
            .scope(&mut served, || {
                // Tasks spawned before the scope, or woken while nothing
                // was served, get their poll: the interrupt is pended once.
                queue.pend();
                scope()
            })
            .map_err(|_| ServeError::Busy)
    }

    /// The handler's work: polls the served tasks until none is ready, or
    /// does nothing when none are served. Returns whether it polled them
    /// (`false` too when another `on_interrupt` is polling them, which runs
    /// once more for this one).
    pub fn on_interrupt(&self) -> bool {
        self.handoff.run()
    }

    /// Its name, priority and counts, now.
    #[must_use]
    pub fn figures(&self) -> InterruptFigures {
        InterruptFigures {
            name: self.name,
            priority: self.priority,
            serving: self.handoff.is_serving(),
            runs: self.runs.load(Ordering::Relaxed),
            polls: self.polls.load(Ordering::Relaxed),
        }
    }
}

impl fmt::Debug for InterruptExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterruptExecutor")
            .field("figures", &self.figures())
            .finish()
    }
}

/// What a handler runs: the tasks, their observer and the counts.
struct Served<'s, 'a, const N: usize, O: TaskOutput, M: Measure, W: ?Sized> {
    tasks: &'s mut InterruptTasks<'a, N, O, M>,
    observer: &'s W,
    runs: &'s AtomicU32,
    polls: &'s AtomicU32,
}

impl<const N: usize, O, M, W> Serve for Served<'_, '_, N, O, M, W>
where
    O: TaskOutput,
    M: Measure,
    W: PollObserver + ?Sized,
{
    fn serve(&mut self) {
        add(self.runs, 1);
        loop {
            let report = self.tasks.executor.tick_observed(N, self.observer);
            add(self.polls, report.polled);
            if !report.work_remaining {
                return;
            }
        }
    }
}

/// Adds to a wrapping count with a load and a store: one context (the
/// handler, under the hand-off's `RUNNING`) writes it, so no
/// read-modify-write is needed (none exists on a core without
/// compare-and-swap).
fn add(count: &AtomicU32, more: usize) {
    let more = more as u32;
    count.store(
        count.load(Ordering::Relaxed).wrapping_add(more),
        Ordering::Relaxed,
    );
}
