//! The hosted async executor: [`LocalExecutor`], for futures (`!Send` ones
//! included) on the thread that owns it, with [`LocalSpawner`] and
//! [`Spawner`] to add tasks, [`ExecutorConfig`] to size it,
//! [`ShutdownReport`] for what a shutdown left, and, with telemetry, its
//! [`ExecutorMonitor`].
//!
//! The heap-free, fixed-slot [`AsyncExecutor`](dinah_core::executor::AsyncExecutor)
//! is in `dinah_core::executor`; the `dinah` facade's `executor` module
//! holds both, and what they share: [`SpawnError`], [`TickReport`].
//!
//! | file | holds |
//! | --- | --- |
//! | `mod.rs` | the public API: [`LocalExecutor`], [`LocalSpawner`] |
//! | `config.rs`, `report.rs` | [`ExecutorConfig`], [`ShutdownReport`] |
//! | `run.rs` | the run loop: spawning, the tick, `block_on`, shutdown, and the guards that hold when user code unwinds |
//! | `slots.rs` | its storage: each slot's place, the slot table, a drain's state, how a task leaves its slot |
//! | `ticking.rs` | one tick's view of that storage, for the shared tick loop |
//! | `hub.rs` | what other threads reach: wake stack, thread, ingress, ids |
//! | `header.rs` | a task slot's header, which is its waker |
//! | `ingress.rs` | the bounded ingress of submissions |
//! | `resolver.rs` | how a task's future resolves its join handle |
//! | `spawner.rs` | [`Spawner`] |
//! | `probe.rs`, `task_probe.rs`, `histograms.rs` | telemetry: the executor's figures, each slot's, the poll histograms |
//! | `diagnosis.rs`, `monitor.rs` | the diagnosis, and [`ExecutorMonitor`] |
#![forbid(unsafe_code)]

mod config;
mod diagnosis;
mod header;
mod histograms;
mod hub;
mod ingress;
mod monitor;
mod probe;
mod report;
mod resolver;
mod run;
mod slots;
mod spawner;
mod task_probe;
mod ticking;

use std::fmt;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use dinah_core::executor::{SpawnError, TickReport};
use dinah_core::task::TaskOutput;
use dinah_core::telemetry::{Measure, Unmeasured};

#[cfg(not(loom))]
pub use crate::multi::{MultiConfig, MultiExecutor, MultiFigures, MultiHandle, WorkerFigures};
pub use crate::runtime::context::thread_context;
pub use config::ExecutorConfig;
pub use monitor::ExecutorMonitor;
pub use report::ShutdownReport;
pub use spawner::Spawner;

use crate::runtime::context::RunningHere;
use run::Inner;

use crate::queue::CapacityError;
use crate::task::JoinHandle;
#[cfg(feature = "telemetry")]
use crate::telemetry::TelemetryConfig;

/// An async executor for futures, `!Send` ones included, on the thread that
/// owns it: heap-allocated tasks, join handles, a [`block_on`] that parks
/// when nothing is ready, and a bounded ingress ([`Spawner`]) for `Send`
/// futures from other threads.
///
/// # Which executor
///
/// The core's [`AsyncExecutor`](dinah_core::executor::AsyncExecutor) keeps tasks in
/// `N` caller-owned slots and never allocates: firmware. This one allocates
/// each task on the heap, hands back its result, and can sleep the thread:
/// a desktop or server program, a test, a tool. Both schedule with the same
/// core ([`dinah_core::raw`]): the same state word per task, the same
/// lock-free wake stack, the same tick loop, the same order of polls and
/// the same [`TickReport`]. Only the storage differs.
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
/// use dinah::executor::LocalExecutor;
/// use dinah::task::{JoinError, yield_now};
/// use std::rc::Rc;
///
/// let executor = LocalExecutor::new();
/// let shared = Rc::new(5); // not Send: fine on a local executor
/// let task = {
///     let shared = Rc::clone(&shared);
///     executor.try_spawn(async move {
///         yield_now().await;
///         Ok::<u32, &str>(*shared * 2)
///     })
/// }
/// .unwrap();
/// let failing = executor.try_spawn(async { Err::<(), _>("no") }).unwrap();
/// let cancelled = executor.try_spawn(std::future::pending::<()>()).unwrap();
/// assert!(cancelled.cancel());
///
/// let (value, failure, gone) =
///     executor.block_on(async { (task.await, failing.await, cancelled.await) });
/// assert_eq!(value, Ok(Ok(10)));
/// assert_eq!(failure, Ok(Err("no"))); // an error is the task's value
/// assert_eq!(gone, Err(JoinError::Cancelled));
/// ```
///
/// `'a` bounds what spawned futures may borrow: anything that outlives the
/// executor. `M` says how much it measures itself, in the core's one
/// switch ([`Measure`]): [`Unmeasured`], the default, from
/// [`new`](LocalExecutor::new) and [`with_config`](LocalExecutor::with_config),
/// runs no telemetry code at all;
/// [`Measured`](crate::telemetry::Measured), from `with_telemetry` (feature
/// `telemetry`), keeps figures that its [`ExecutorMonitor`] reads and
/// diagnoses, and tells the configured poll observer about every poll.
///
/// # Guarantees
///
/// - [`try_spawn`](Self::try_spawn) and [`Spawner::try_spawn`] either
///   accept a future or hand it back ([`SpawnError`]). An accepted future is
///   polled until it ends, or dropped exactly once (cancelled, or at
///   shutdown) with its handle resolved [`Cancelled`](crate::task::JoinError::Cancelled).
/// - Scheduling is the core's: a task is first polled in the tick after its
///   spawn; ready tasks are polled in the order they were woken; a task
///   woken during a tick waits for the next one, so a task that keeps waking
///   itself cannot starve the others; a wake never polls.
/// - A panic in a task is caught at the poll boundary: the task ends
///   `Failed`, its future is dropped, its handle says
///   [`Panicked`](crate::task::JoinError::Panicked) with the message, and every other
///   task runs on. A task whose output is an `Err` ends `Failed` too (the
///   tick counts it), and its handle gives the `Err` as its value.
///
/// # What it does not do
///
/// No preemption (a poll that never returns stalls it), no I/O, no work
/// stealing: a task runs on this thread or not at all. It is
/// `!Send`; hand work in from other threads through a [`Spawner`].
///
/// # Dropping it
///
/// Shuts it down as [`shutdown`](Self::shutdown) does, discarding the
/// report.
pub struct LocalExecutor<'a, M: Measure = Unmeasured> {
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
impl<'a> LocalExecutor<'a, crate::telemetry::Measured> {
    /// An executor sized by `config` that measures itself as `telemetry`
    /// says: per-task and executor figures, events to the configured sink,
    /// and a [`monitor`](Self::monitor) that diagnoses stalls from any
    /// thread.
    ///
    /// Whether an executor measures itself is part of its type
    /// ([`Measured`](crate::telemetry::Measured) here, [`Unmeasured`] from
    /// every other constructor): an
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
        ExecutorMonitor::new(Arc::clone(&self.inner.hub))
    }
}

impl<'a, M: Measure> LocalExecutor<'a, M> {
    /// Adds a task, first polled in the next tick. `F` may borrow anything
    /// that outlives `'a` and need not be `Send`. Its output is `()`, `!`
    /// or a `Result`; the handle gives it back whole.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Full`] at the live-task cap,
    /// [`SpawnError::Shutdown`] after shutdown; the future is handed back.
    pub fn try_spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + 'a,
        F::Output: TaskOutput + 'a,
    {
        self.inner.try_spawn(future, None)
    }

    /// [`try_spawn`](Self::try_spawn), with a name the executor's
    /// telemetry shows for the task: in
    /// [`diagnose`](ExecutorMonitor::diagnose)'s verdicts,
    /// [`tasks`](ExecutorMonitor::tasks) (`TaskFigures::name`), the
    /// timeline (its slices are named after it) and `tracing` spans (a
    /// `name` field). A `'static` string: nothing is allocated for it.
    ///
    /// ```
    /// use dinah::LocalExecutor;
    /// use dinah::executor::ExecutorConfig;
    /// use dinah::telemetry::TelemetryConfig;
    ///
    /// let executor =
    ///     LocalExecutor::with_telemetry(ExecutorConfig::default(), TelemetryConfig::new()).unwrap();
    /// let relay = executor.try_spawn_named("relay", std::future::pending::<()>()).unwrap();
    /// executor.tick(8);
    /// let tasks = executor.monitor().tasks();
    /// assert_eq!((tasks[0].task, tasks[0].name), (relay.id(), Some("relay")));
    /// ```
    ///
    /// # Errors
    ///
    /// As [`try_spawn`](Self::try_spawn).
    pub fn try_spawn_named<F>(
        &self,
        name: &'static str,
        future: F,
    ) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + 'a,
        F::Output: TaskOutput + 'a,
    {
        self.inner.try_spawn(future, Some(name))
    }

    /// A [`TaskGroup`](crate::task::TaskGroup) whose children are spawned
    /// on this executor.
    #[must_use]
    pub fn group<T>(&self) -> crate::task::TaskGroup<'a, T, LocalSpawner<'a, M>> {
        crate::task::TaskGroup::new(self.local_spawner())
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
        Spawner::new(Arc::clone(&self.inner.hub))
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
        crate::runtime::context::enter(&self.inner.hub.driver);
        let here = RunningHere::enter(self.inner.hub.address(), &self.inner.local);
        // The caller may do anything before its next tick.
        let _unchain = run::UnchainOnExit(&self.inner);
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
    /// handed back as [`SpawnError::Shutdown`]), drops every waiting
    /// submission and every unfinished task's future exactly once, on this
    /// thread, resolves each of their handles as
    /// [`Cancelled`](crate::task::JoinError::Cancelled), and reports how many there
    /// were. Later spawns are refused. Calling it again reports zeros.
    ///
    /// # Panics
    ///
    /// When called from inside a task of this executor.
    pub fn shutdown(&self) -> ShutdownReport {
        self.inner.shutdown()
    }

    /// Shuts the executor down under one of the pools' policies:
    ///
    /// - [`ShutdownPolicy::Drain`](crate::pool::ShutdownPolicy::Drain): spawns and submissions are refused from
    ///   now on ([`SpawnError::Shutdown`]); the tasks already accepted
    ///   (and the submissions waiting in the ingress) run, as in
    ///   [`block_on`](Self::block_on), until none is left or `deadline`
    ///   passes on the executor's clock; whatever is left then is dropped
    ///   as [`shutdown`](Self::shutdown) drops it. `deadline` always bounds
    ///   the call: a paused clock moves only while the executor idles, so
    ///   there the drain also ends once `deadline` has passed in real time
    ///   (a task that keeps waking itself never lets the executor idle).
    /// - [`ShutdownPolicy::CancelPending`](crate::pool::ShutdownPolicy::CancelPending): [`shutdown`](Self::shutdown) at
    ///   once (`deadline` is not used).
    ///
    /// The report names each task alive when the shutdown began and how
    /// it ended. No accepted task is lost: each ran to its end or was
    /// dropped with its handle resolved `Cancelled`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use dinah::LocalExecutor;
    /// use dinah::executor::ExecutorConfig;
    /// use dinah::pool::ShutdownPolicy;
    /// use dinah::task::ChildEnd;
    ///
    /// // A paused clock: the deadline passes only when the executor idles.
    /// let executor = LocalExecutor::with_config(ExecutorConfig {
    ///     start_paused: true,
    ///     ..ExecutorConfig::default()
    /// })
    /// .unwrap();
    /// let saved = executor.try_spawn_named("save", async { dinah::yield_now().await }).unwrap();
    /// let idle = executor.try_spawn_named("idle", std::future::pending::<()>()).unwrap();
    /// // Natively and under Miri alike, the drain ends when only `idle` is left:
    /// // the executor idles, and the paused clock jumps to the deadline.
    /// let report = executor.shutdown_with(ShutdownPolicy::Drain, Duration::from_secs(5));
    /// let ends: Vec<_> = report.tasks.iter().map(|task| (task.name, task.end)).collect();
    /// assert_eq!(ends, [(Some("save"), ChildEnd::Completed), (Some("idle"), ChildEnd::Cancelled)]);
    /// # drop((saved, idle));
    /// ```
    ///
    /// # Panics
    ///
    /// When called from inside a task of this executor.
    pub fn shutdown_with(
        &self,
        policy: crate::pool::ShutdownPolicy,
        deadline: Duration,
    ) -> ShutdownReport {
        self.inner.shutdown_with(policy, deadline)
    }

    /// A handle to this executor's timers: makes sleeps, timeouts and
    /// intervals anywhere (the free functions of [`time`](crate::time) use
    /// the timers of the executor running on their thread), moves a paused
    /// clock, reads the timers' figures.
    #[must_use]
    pub fn timer(&self) -> crate::time::TimerHandle {
        crate::time::TimerHandle::new(Arc::clone(&self.inner.hub.driver))
    }

    /// The figures of this executor's reactor: sockets registered,
    /// readiness events, stale events discarded, `WouldBlock`s, readiness
    /// to poll. All zero until the executor's first socket (the reactor is
    /// made then).
    #[must_use]
    pub fn io_figures(&self) -> crate::io::IoFigures {
        self.monitor_io()
    }

    fn monitor_io(&self) -> crate::io::IoFigures {
        self.inner
            .hub
            .driver
            .reactor()
            .map(|reactor| reactor.figures())
            .unwrap_or_default()
    }

    /// Tasks spawned (or taken in) and not finished.
    #[must_use]
    pub fn live_tasks(&self) -> usize {
        self.inner.table.live.get()
    }

    /// Wakes that arrived after their task was over, since the executor was
    /// built. Wraps at `u32::MAX`.
    #[must_use]
    pub fn stale_wakes(&self) -> u32 {
        self.inner.hub.stack.stale_wakes()
    }
}

impl Default for LocalExecutor<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: Measure> Drop for LocalExecutor<'_, M> {
    fn drop(&mut self) {
        crate::runtime::context::leave(&self.inner.hub.driver);
        if !self.inner.running.get() && !self.inner.closed.get() {
            self.inner.shutdown();
        }
        self.inner.hub.driver.timers().stop_keeping_wakers();
    }
}

impl<M: Measure> fmt::Debug for LocalExecutor<'_, M> {
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
/// [`SpawnError::Shutdown`].
pub struct LocalSpawner<'a, M: Measure = Unmeasured> {
    inner: Rc<Inner<'a, M>>,
}

impl<'a, M: Measure> LocalSpawner<'a, M> {
    /// As [`LocalExecutor::try_spawn`].
    ///
    /// # Errors
    ///
    /// As [`LocalExecutor::try_spawn`].
    pub fn try_spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + 'a,
        F::Output: TaskOutput + 'a,
    {
        self.inner.try_spawn(future, None)
    }

    /// The executor's timers, as [`LocalExecutor::timer`].
    #[must_use]
    pub fn timer(&self) -> crate::time::TimerHandle {
        crate::time::TimerHandle::new(Arc::clone(&self.inner.hub.driver))
    }

    /// A [`TaskGroup`](crate::task::TaskGroup) whose children are spawned
    /// here.
    #[must_use]
    pub fn group<T>(&self) -> crate::task::TaskGroup<'a, T, LocalSpawner<'a, M>> {
        crate::task::TaskGroup::new(self.clone())
    }

    /// As [`LocalExecutor::try_spawn_named`].
    ///
    /// # Errors
    ///
    /// As [`LocalExecutor::try_spawn`].
    pub fn try_spawn_named<F>(
        &self,
        name: &'static str,
        future: F,
    ) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + 'a,
        F::Output: TaskOutput + 'a,
    {
        self.inner.try_spawn(future, Some(name))
    }
}

impl<M: Measure> Clone for LocalSpawner<'_, M> {
    fn clone(&self) -> Self {
        Self {
            inner: Rc::clone(&self.inner),
        }
    }
}

impl<M: Measure> fmt::Debug for LocalSpawner<'_, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSpawner").finish_non_exhaustive()
    }
}
