//! The stall diagnosis: [`Thresholds`] in, one [`Verdict`] with its evidence
//! out for each task or pool that is not progressing.

use std::fmt;
use std::time::Duration;

use dinah_core::{TaskId, WorkerId};

/// How long is too long, for [`Verdict`]s.
///
/// The defaults suit a service whose tasks are woken at least once a second
/// and whose polls return within milliseconds. A task that legitimately
/// waits longer than `no_wake` (an idle connection) is reported as
/// [`Cause::NoWake`]: raise the threshold above the longest quiet period the
/// application expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Thresholds {
    /// A pending task with no wake for longer than this: [`Cause::NoWake`].
    pub no_wake: Duration,
    /// A ready task not polled for longer than this: [`Cause::ReadyButDelayed`].
    pub ready_delay: Duration,
    /// A poll or pool job running longer than this: [`Cause::WorkerBlocked`].
    pub blocked: Duration,
    /// A blocking job queued longer than this: [`Cause::BlockingSaturated`].
    pub blocking_wait: Duration,
    /// A refused submission within this window: [`Cause::AdmissionFull`].
    pub admission_window: Duration,
}

impl Default for Thresholds {
    /// No wake for 1 s, ready for 10 ms, a poll or job running for 100 ms,
    /// a blocking job queued for 100 ms, a refusal within the last second.
    fn default() -> Self {
        Self {
            no_wake: Duration::from_secs(1),
            ready_delay: Duration::from_millis(10),
            blocked: Duration::from_millis(100),
            blocking_wait: Duration::from_millis(100),
            admission_window: Duration::from_secs(1),
        }
    }
}

impl Thresholds {
    pub(crate) fn nanos(duration: Duration) -> u64 {
        u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The causes a stall can have, without their evidence: six of the
/// service's, and the host's CPU starvation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Cause {
    /// A task waits for a wake that does not come (a lost wake).
    NoWake,
    /// Tasks are ready but the executor does not get to them.
    ReadyButDelayed,
    /// A poll or job holds its thread.
    WorkerBlocked,
    /// The blocking pool is full, or its queue is slow.
    BlockingSaturated,
    /// A bounded queue the application owns refuses submissions.
    AdmissionFull,
    /// Tasks wait long in the line of a channel or semaphore the
    /// application owns.
    Backpressure,
    /// A runtime's thread was runnable but the operating system gave its
    /// CPU to others: the host's capacity, not the service's fault.
    HostStarved,
}

/// A multi-thread executor's capacity while some of its workers are
/// blocked: `left` of its `of` workers are not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorkersLeft {
    /// Workers not blocked.
    pub left: usize,
    /// All its workers.
    pub of: usize,
}

/// One thing that is not progressing, why, and the figures that show it.
///
/// Durations are measured with the runtime's configured clock.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// A task is pending, not being polled and not ready, and nothing has
    /// woken it for longer than [`Thresholds::no_wake`].
    NoWake {
        /// The task.
        task: TaskId,
        /// Its name, if it was spawned with one.
        name: Option<&'static str>,
        /// How long since its last poll returned `Pending`.
        waiting: Duration,
        /// How often it was polled.
        polls: u64,
        /// The socket and the way its last poll waited on, if it did: no
        /// readiness came that way for all of `waiting`.
        waits_on: Option<crate::io::IoWait>,
        /// The name of what its last poll waited to receive from, if it
        /// was named: an `mpsc` channel, a `oneshot` reply, a `watch`, a
        /// `broadcast` or a `SharedNotify`. Nothing came from it for all
        /// of `waiting`.
        waits_for: Option<&'static str>,
    },
    /// A task has been ready (woken, or new) for longer than
    /// [`Thresholds::ready_delay`] and no poll is holding the executor:
    /// the executor's thread is not running its ticks, or has too much to do.
    ReadyButDelayed {
        /// The task that has waited longest.
        task: TaskId,
        /// Its name, if it was spawned with one.
        name: Option<&'static str>,
        /// How long it has been ready.
        ready_for: Duration,
        /// How many tasks are ready beyond the threshold.
        ready_tasks: usize,
    },
    /// A poll (or a pool's job) has been running longer than
    /// [`Thresholds::blocked`], seen from another thread through its start
    /// stamp. Tasks ready behind a blocked executor are counted here, not
    /// reported on their own.
    WorkerBlocked {
        /// The task being polled or run.
        task: TaskId,
        /// Its name, if it was spawned with one.
        name: Option<&'static str>,
        /// The pool thread running it; `None` for an executor's poll.
        worker: Option<WorkerId>,
        /// How long it has been running.
        running_for: Duration,
        /// Tasks ready and waiting behind it (executors only; on a
        /// multi-thread executor, those in its worker's own queue, which
        /// the other workers may steal).
        ready_behind: usize,
        /// On a multi-thread executor: how many of its workers are not
        /// blocked, of how many. `None` elsewhere.
        left: Option<WorkersLeft>,
    },
    /// Work waits on a blocking pool: its oldest queued job has waited
    /// longer than [`Thresholds::blocking_wait`], or it refused a job for
    /// lack of room within [`Thresholds::admission_window`]. (A pool at its
    /// limit that admits and finishes its jobs is busy, not saturated.) Its
    /// long-running jobs are the evidence here, not separate verdicts.
    BlockingSaturated {
        /// Jobs queued.
        queued: usize,
        /// The pool's admission limit (of queued jobs, or of queued and
        /// running jobs together, as its bound says).
        capacity: usize,
        /// Jobs running, one per busy thread.
        running: usize,
        /// How long the oldest queued job has waited.
        oldest_wait: Duration,
        /// Submissions refused because it was full.
        rejected_full: u64,
    },
    /// A bounded queue the application owns (a worker pool's, or an
    /// executor's spawner ingress) refused a submission within
    /// [`Thresholds::admission_window`]: deliberate backpressure.
    AdmissionFull {
        /// Submissions refused because it was full, in all.
        rejected_full: u64,
        /// How long ago the latest refusal was.
        since_last: Duration,
        /// Submissions queued now.
        queued: usize,
        /// The queue's capacity.
        capacity: usize,
    },
    /// Tasks have waited longer than [`Thresholds::no_wake`] in the line of
    /// a channel (for a slot) or a semaphore (for permits): the
    /// application's own bound at work, and its wake path is known (the
    /// receiver, or whoever holds the permits). Not a runtime fault, and
    /// never reported as `NoWake`. One verdict per line, by name.
    Backpressure {
        /// The name of the channel or semaphore (`None`: not named).
        on: Option<&'static str>,
        /// Tasks waiting in its line longer than the threshold.
        waiting: usize,
        /// How long the first of them has waited.
        longest: Duration,
    },
    /// A task's poll (or a pool's job) has run longer than
    /// [`Thresholds::blocked`], or a task has been ready longer than
    /// [`Thresholds::ready_delay`], and its thread was starved of CPU: it is
    /// runnable (not asleep in a system call, not parked), waited for a CPU
    /// at least half of that time, and that time less the wait is within
    /// the threshold (the task's own time would not have crossed it). The
    /// host's CPUs are oversubscribed and the task is not to blame. Given in place of the
    /// [`WorkerBlocked`](Self::WorkerBlocked) or
    /// [`ReadyButDelayed`](Self::ReadyButDelayed) the wall time alone would
    /// say; a poll that burns its CPU or sleeps in a system call keeps
    /// those.
    ///
    /// Only where the scheduler's account of a thread can be read (Linux's
    /// `/proc/self/task/<tid>/schedstat`) and the runtime reads the host's
    /// clock (not a `ManualClock`). The window runs to now from the
    /// diagnosis's earliest look at the thread within the delay (or its
    /// latest before the delay, or the thread's start): a diagnosis called
    /// seldom sets waits from before the delay against it, which
    /// [`CpuShare`] shows.
    HostStarved {
        /// The task delayed.
        task: TaskId,
        /// Its name, if it was spawned with one.
        name: Option<&'static str>,
        /// The pool thread running it; `None` for an executor's thread.
        worker: Option<WorkerId>,
        /// How long it has run (`WorkerBlocked`'s figure) or been ready
        /// (`ReadyButDelayed`'s).
        delayed: Duration,
        /// How its thread fared with the scheduler.
        cpu: CpuShare,
    },
}

/// The rest of a [`Verdict::HostStarved`]: how the thread fared with the
/// operating system's scheduler over the window the diagnosis judged.
///
/// The figures are the scheduler's account, read from `/proc`; they are
/// not exact to the nanosecond against the runtime's clock, and a wait
/// still under way is counted only where the thread did not sleep in the
/// window (the kernel adds a wait to its account when the wait ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CpuShare {
    /// The window: from the diagnosis's earliest look at the thread within
    /// the delay (or its latest before it, or the thread's start) to now.
    pub window: Duration,
    /// How long, of it, the thread waited for a CPU while runnable.
    pub waited: Duration,
    /// How long, of it, the thread ran.
    pub ran: Duration,
}

impl CpuShare {
    /// A share with these figures, for code that builds verdicts of its
    /// own (a test of an alert's wording, say). It checks nothing: a wait
    /// or run longer than the window is kept as given.
    #[must_use]
    pub const fn new(window: Duration, waited: Duration, ran: Duration) -> Self {
        Self {
            window,
            waited,
            ran,
        }
    }
}

impl Verdict {
    /// The cause, without its evidence.
    #[must_use]
    pub const fn cause(&self) -> Cause {
        match self {
            Self::NoWake { .. } => Cause::NoWake,
            Self::ReadyButDelayed { .. } => Cause::ReadyButDelayed,
            Self::WorkerBlocked { .. } => Cause::WorkerBlocked,
            Self::BlockingSaturated { .. } => Cause::BlockingSaturated,
            Self::AdmissionFull { .. } => Cause::AdmissionFull,
            Self::Backpressure { .. } => Cause::Backpressure,
            Self::HostStarved { .. } => Cause::HostStarved,
        }
    }
}

/// A task's number, and its name in parentheses when it has one.
struct Named(TaskId, Option<&'static str>);

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.get())?;
        if let Some(name) = self.1 {
            write!(f, " ({name})")?;
        }
        Ok(())
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoWake {
                task,
                name,
                waiting,
                polls,
                waits_on,
                waits_for,
            } => {
                write!(
                    f,
                    "NoWake: task {} pending for {waiting:?} with no wake, after {polls} polls",
                    Named(*task, *name)
                )?;
                match (waits_on, waits_for) {
                    (Some(wait), _) => write!(f, "; no readiness to {wait}"),
                    (None, Some(from)) => write!(f, "; nothing came from {from}"),
                    (None, None) => Ok(()),
                }
            }
            Self::ReadyButDelayed {
                task,
                name,
                ready_for,
                ready_tasks,
            } => write!(
                f,
                "ReadyButDelayed: task {} ready for {ready_for:?} and not polled; {ready_tasks} tasks ready too long, and no poll is holding the executor",
                Named(*task, *name)
            ),
            Self::WorkerBlocked {
                task,
                name,
                worker,
                running_for,
                ready_behind,
                left,
            } => {
                write!(
                    f,
                    "WorkerBlocked: task {} running for {running_for:?}",
                    Named(*task, *name)
                )?;
                if let Some(worker) = worker {
                    write!(f, " on worker {}", worker.get())?;
                }
                if let Some(WorkersLeft { left, of }) = left {
                    write!(f, "; {left} of {of} workers left")?;
                }
                write!(f, "; {ready_behind} tasks ready behind it")
            }
            Self::BlockingSaturated {
                queued,
                capacity,
                running,
                oldest_wait,
                rejected_full,
            } => write!(
                f,
                "BlockingSaturated: {queued} queued and {running} running (admission limit {capacity}), oldest waiting {oldest_wait:?}, {rejected_full} refused as full"
            ),
            Self::AdmissionFull {
                rejected_full,
                since_last,
                queued,
                capacity,
            } => write!(
                f,
                "AdmissionFull: {rejected_full} refused as full, the latest {since_last:?} ago; {queued}/{capacity} queued"
            ),
            Self::HostStarved {
                task,
                name,
                worker,
                delayed,
                cpu,
            } => {
                write!(
                    f,
                    "HostStarved: task {} delayed {delayed:?}",
                    Named(*task, *name)
                )?;
                if let Some(worker) = worker {
                    write!(f, " on worker {}", worker.get())?;
                }
                write!(
                    f,
                    ", not by its own code: its thread waited {:?} of the last {:?} for a CPU (ran {:?}); the host's CPUs are oversubscribed",
                    cpu.waited, cpu.window, cpu.ran
                )
            }
            Self::Backpressure {
                on,
                waiting,
                longest,
            } => write!(
                f,
                "Backpressure: {waiting} tasks waiting on {}, the first for {longest:?}",
                on.unwrap_or("an unnamed channel or semaphore")
            ),
        }
    }
}
