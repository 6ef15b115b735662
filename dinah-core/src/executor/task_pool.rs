//! [`TaskPool`]: spawning from tasks and interrupt handlers into `P`
//! workers whose storage is reused job after job, each job a task of its
//! own, with no heap and no macro.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::Waker;

use critical_section::Mutex;
use heapless::Deque;

use super::SpawnError;
use super::pool_worker::Worker;
use crate::id::TaskId;
use crate::raw::wait::{Turn, WaitEntry, WaitKey, WaitList};

struct State<I, const Q: usize, const P: usize> {
    /// Jobs spawned and not yet taken by a worker, oldest first, with
    /// their numbers.
    jobs: Deque<(u32, I), Q>,
    /// Workers with nothing to do, first to go idle first.
    idle: WaitList<[WaitEntry; P]>,
    /// What each worker runs: the job's number and the task it runs as.
    running: [Option<(u32, TaskId)>; P],
    /// The number the next spawned job gets.
    next_job: u32,
    workers: u32,
    spawned: u64,
    refused: u64,
    finished: u64,
}

/// What a [`TaskPool`] did and holds, read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskPoolFigures {
    /// The name it was given, if any.
    pub name: Option<&'static str>,
    /// Workers made.
    pub workers: u32,
    /// Workers running a job now.
    pub running: u32,
    /// Jobs spawned and waiting for a worker.
    pub queued: usize,
    /// Jobs accepted, over the pool's life.
    pub spawned: u64,
    /// Spawns refused because `Q` jobs were already waiting.
    pub refused: u64,
    /// Jobs that ended: ran to their end, or were cancelled, withdrawn or
    /// dropped with their worker.
    pub finished: u64,
}

/// Why [`TaskPool::worker`] made no worker.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TooManyWorkers;

impl fmt::Display for TooManyWorkers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the task pool already has its P workers")
    }
}

impl core::error::Error for TooManyWorkers {}

/// A job spawned into a [`TaskPool`]: its number in that pool (they wrap
/// after `u32::MAX` jobs).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct JobId(u32);

impl JobId {
    /// The job's number in its pool.
    #[must_use]
    pub const fn get(self) -> u32 {
        self.0
    }
}

/// Where a job stands, as [`TaskPool::job_state`] reads it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum JobState {
    /// Waiting for a worker; [`TaskPool::withdraw`] takes it back.
    Queued,
    /// Running as the task of this id: its executor's queue cancels it
    /// alone ([`ReadyQueue::cancel`](super::ReadyQueue::cancel)), and its
    /// figures are that task's.
    Running(TaskId),
}

/// A pool of `P` workers that run jobs of input `I`, spawned from any task
/// or interrupt handler with [`try_spawn`](Self::try_spawn); at most `Q`
/// spawned jobs wait for a worker. No heap, a `const` constructor, no
/// macro: the firmware's counterpart of embassy's
/// `#[task(pool_size = N)]`.
///
/// A worker ([`worker`](Self::worker)) is task storage, spawned on an
/// executor once, that runs one job after another in storage the binary
/// pins where it stays (on `main`'s stack): the number of jobs running at
/// once is bounded by `P`, and their memory is fixed at compile time.
/// **Each job is a task of its own**: when a job ends, the executor starts
/// the worker again in the same slot as a new task, with a new
/// [`TaskId`], and that task takes the next job.
///
/// ```
/// use core::pin::pin;
/// use core::sync::atomic::{AtomicU32, Ordering};
/// use dinah::executor::{AsyncExecutor, JobState, ReadyQueue, TaskPool};
///
/// static QUEUE: ReadyQueue<2> = ReadyQueue::new();
/// static BLINKS: TaskPool<u32, 4, 2> = TaskPool::named("blink");
/// static LIT: AtomicU32 = AtomicU32::new(0);
///
/// async fn blink(led: u32) {
///     LIT.fetch_add(led, Ordering::Relaxed);
///     dinah::task::yield_now().await;
/// }
///
/// // Each worker's job storage, pinned where it stays.
/// let (mut one, mut two) = (pin!(None), pin!(None));
/// let mut first = pin!(BLINKS.worker(blink, one.as_mut()).unwrap());
/// let mut second = pin!(BLINKS.worker(blink, two.as_mut()).unwrap());
/// let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
/// executor.try_spawn_named("blink", first.as_mut()).unwrap();
/// executor.try_spawn_named("blink", second.as_mut()).unwrap();
/// // From a task, or from an interrupt handler:
/// let jobs = [1, 2, 3, 4].map(|led| BLINKS.try_spawn(led).unwrap());
/// executor.tick(8);
/// // The first two run, each as a task of its own.
/// let (Some(JobState::Running(a)), Some(JobState::Running(b))) =
///     (BLINKS.job_state(jobs[0]), BLINKS.job_state(jobs[1]))
/// else {
///     panic!("two workers run two jobs");
/// };
/// assert_ne!(a, b);
/// assert_eq!(BLINKS.job_state(jobs[2]), Some(JobState::Queued));
/// // Cancelled alone, from anywhere: the next job takes its worker.
/// QUEUE.cancel(a).unwrap();
/// for _ in 0..4 {
///     executor.tick(8);
/// }
/// assert_eq!(LIT.load(Ordering::Relaxed), 1 + 2 + 3 + 4);
/// assert_eq!(BLINKS.figures().finished, 4);
/// ```
///
/// # Guarantees
///
/// - An accepted job is never lost: it waits in the pool until a worker
///   takes it, first spawned first taken, or until
///   [`withdraw`](Self::withdraw) hands it back; then it runs as a task
///   until it ends or its task is cancelled. A refused job is handed back
///   in [`SpawnError::Full`].
/// - Each job runs as its own task: its own [`TaskId`]
///   ([`job_state`](Self::job_state)), its own figures and trace events
///   under the name the worker was spawned with, cancelled alone through
///   its executor's queue, from a task or an interrupt. A wake meant for a
///   job that ended never polls the next: the next job's task starts in
///   the slot only once no waker of the ended one is left, with a new
///   generation.
/// - An idle worker waits without spinning: a spawn wakes one idle worker,
///   first idle first.
///
/// # What it does not do
///
/// A job that keeps a waker of its task beyond its end (in a `static`)
/// keeps its worker from starting the next job until that waker is
/// dropped. A job whose poll panics ends its task `Failed`, as any task's
/// panic does; its worker drops what is left of it and starts again with
/// the next job once the executor lets go of the failed task.
pub struct TaskPool<I, const Q: usize, const P: usize> {
    name: Option<&'static str>,
    state: Mutex<RefCell<State<I, Q, P>>>,
}

impl<I, const Q: usize, const P: usize> TaskPool<I, Q, P> {
    const SIZES: () = assert!(
        Q > 0 && P > 0 && P < u32::MAX as usize,
        "a task pool needs room for a job and a worker"
    );

    /// An empty pool, with no name.
    #[must_use]
    pub const fn new() -> Self {
        Self::with_name(None)
    }

    /// An empty pool named `name` in its figures.
    #[must_use]
    pub const fn named(name: &'static str) -> Self {
        Self::with_name(Some(name))
    }

    const fn with_name(name: Option<&'static str>) -> Self {
        let () = Self::SIZES;
        Self {
            name,
            state: Mutex::new(RefCell::new(State {
                jobs: Deque::new(),
                idle: WaitList::new([const { WaitEntry::VACANT }; P]),
                running: [None; P],
                next_job: 0,
                workers: 0,
                spawned: 0,
                refused: 0,
                finished: 0,
            })),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut State<I, Q, P>) -> R) -> R {
        crate::raw::wait::critical(&self.state, f)
    }

    /// Spawns a job of `input`: queued for the first idle worker (woken
    /// now), or for the first worker to finish its job. From a task or an
    /// interrupt handler.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Full`] with `input` when `Q` jobs already wait.
    pub fn try_spawn(&self, input: I) -> Result<JobId, SpawnError<I>> {
        let (job, woken) = self.with(|state| {
            let job = state.next_job;
            match state.jobs.push_back((job, input)) {
                Ok(()) => {
                    state.next_job = job.wrapping_add(1);
                    state.spawned += 1;
                    Ok((JobId(job), state.idle.settle_head(true)))
                }
                Err((_, input)) => {
                    state.refused += 1;
                    Err(SpawnError::Full(input))
                }
            }
        })?;
        if let Some(worker) = woken {
            worker.wake();
        }
        Ok(job)
    }

    /// A worker: task storage (spawn it on an executor, once) that runs
    /// `job(input)` for each spawned input, one at a time, each as a task
    /// of its own, in `storage` (pinned where it stays; `pin!(None)`).
    ///
    /// # Errors
    ///
    /// [`TooManyWorkers`] when `P` workers were made already.
    pub fn worker<'p, 's, F, J>(
        &'p self,
        job: F,
        storage: Pin<&'s mut Option<J>>,
    ) -> Result<Worker<'p, 's, I, Q, P, F, J>, TooManyWorkers>
    where
        F: FnMut(I) -> J,
        J: Future<Output = ()>,
    {
        let index = self.count_worker()?;
        Ok(Worker::new(self, index, job, storage))
    }

    /// Counts one more worker and gives its number, unless `P` were made
    /// already. Out of line: each worker's job is its own type, and this
    /// part is the same for all of them.
    #[inline(never)]
    fn count_worker(&self) -> Result<usize, TooManyWorkers> {
        self.with(|state| {
            let index = state.workers as usize;
            if index >= P {
                return Err(TooManyWorkers);
            }
            state.workers += 1;
            Ok(index)
        })
    }

    /// Where job `job` stands: `None` once it ended (or for a number this
    /// pool never gave, or gave `u32::MAX` jobs ago).
    #[must_use]
    pub fn job_state(&self, job: JobId) -> Option<JobState> {
        self.with(|state| {
            if state.jobs.iter().any(|(queued, _)| *queued == job.0) {
                return Some(JobState::Queued);
            }
            state
                .running
                .iter()
                .flatten()
                .find(|(running, _)| *running == job.0)
                .map(|&(_, task)| JobState::Running(task))
        })
    }

    /// Takes back job `job` if no worker took it yet, handing back its
    /// input; `None` if it runs already (cancel its task instead), ended,
    /// or was never spawned here.
    pub fn withdraw(&self, job: JobId) -> Option<I> {
        self.with(|state| {
            let at = state.jobs.iter().position(|(queued, _)| *queued == job.0)?;
            // Rotated to the front, taken, and the rest put back in order.
            for _ in 0..at {
                let front = state.jobs.pop_front()?;
                let _ = state.jobs.push_back(front);
            }
            let (_, input) = state.jobs.pop_front()?;
            for _ in at..state.jobs.len() {
                let front = state.jobs.pop_front()?;
                let _ = state.jobs.push_back(front);
            }
            state.finished += 1;
            Some(input)
        })
    }

    /// The next job for worker `index`, running as task `task`: taken at
    /// once if one waits (the worker leaves the idle line if it was in it),
    /// else `None`, with the worker in the idle line (`key`) until a spawn
    /// wakes it with `waker`.
    pub(super) fn take_job(
        &self,
        index: usize,
        task: TaskId,
        key: &mut Option<WaitKey>,
        waker: &Waker,
    ) -> Option<I> {
        self.with(|state| {
            if let Some(held) = key.take()
                && state.idle.poll(held, waker) == Turn::Waiting
            {
                *key = Some(held);
                return None;
            }
            if let Some((job, input)) = state.jobs.pop_front() {
                if let Some(place) = state.running.get_mut(index) {
                    *place = Some((job, task));
                }
                return Some(input);
            }
            // A job this worker was woken for went to another that took it
            // first: back in line (there is room: one place per worker).
            *key = state.idle.push(waker, 1, 0);
            None
        })
    }

    /// Worker `index`'s job ended (or was dropped); `key`, its place in
    /// the idle line if it has one, is given up, and a wake it was granted
    /// goes on to the next idle worker.
    pub(super) fn job_ended(&self, index: usize, key: Option<WaitKey>) {
        let next: Option<Waker> = self.with(|state| {
            if let Some(place) = state.running.get_mut(index)
                && place.take().is_some()
            {
                state.finished += 1;
            }
            let key = key?;
            let granted = state.idle.cancel(key) > 0;
            if granted && !state.jobs.is_empty() {
                state.idle.settle_head(true)
            } else {
                None
            }
        });
        if let Some(next) = next {
            next.wake();
        }
    }

    /// What it did and holds, now.
    #[must_use]
    pub fn figures(&self) -> TaskPoolFigures {
        self.with(|state| TaskPoolFigures {
            name: self.name,
            workers: state.workers,
            running: state.running.iter().flatten().count() as u32,
            queued: state.jobs.len(),
            spawned: state.spawned,
            refused: state.refused,
            finished: state.finished,
        })
    }
}

impl<I, const Q: usize, const P: usize> Default for TaskPool<I, Q, P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<I, const Q: usize, const P: usize> fmt::Debug for TaskPool<I, Q, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskPool")
            .field("figures", &self.figures())
            .finish()
    }
}
