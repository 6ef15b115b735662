//! [`TaskPool`]: spawning from tasks and interrupt handlers into `P` worker
//! tasks whose storage is reused job after job, with no heap and no macro.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use critical_section::Mutex;
use heapless::Deque;

use super::SpawnError;
use crate::raw::wait::{Turn, WaitEntry, WaitKey, WaitList};
use crate::task::Never;

struct State<I, const Q: usize, const P: usize> {
    /// Jobs spawned and not yet taken by a worker, oldest first.
    jobs: Deque<I, Q>,
    /// Workers with nothing to do, first to go idle first.
    idle: WaitList<[WaitEntry; P]>,
    workers: u32,
    running: u32,
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
    /// Jobs that ran to their end (or were dropped with their worker).
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

/// A pool of `P` worker tasks that run jobs of input `I`, spawned from any
/// task or interrupt handler with [`try_spawn`](Self::try_spawn); at most
/// `Q` spawned jobs wait for a worker. No heap, a `const` constructor, no
/// macro: the firmware's counterpart of embassy's
/// `#[task(pool_size = N)]`.
///
/// Each worker ([`worker`](Self::worker)) is an ordinary executor task,
/// spawned once, whose storage (on `main`'s stack, pinned) holds the job it
/// runs: when a job ends, the same storage takes the next. So the number of
/// jobs running at once is bounded by `P`, their memory is fixed at
/// compile time, and the executor's slots are not churned.
///
/// ```
/// use core::pin::pin;
/// use core::sync::atomic::{AtomicU32, Ordering};
/// use dinah::executor::{AsyncExecutor, ReadyQueue, TaskPool};
///
/// static QUEUE: ReadyQueue<3> = ReadyQueue::new();
/// static BLINKS: TaskPool<u32, 4, 2> = TaskPool::named("blink");
/// static LIT: AtomicU32 = AtomicU32::new(0);
///
/// async fn blink(led: u32) {
///     LIT.fetch_add(led, Ordering::Relaxed);
/// }
///
/// let mut one = pin!(Some(BLINKS.worker(blink).unwrap()));
/// let mut two = pin!(Some(BLINKS.worker(blink).unwrap()));
/// let mut executor: AsyncExecutor<'_, 3> = AsyncExecutor::new(&QUEUE).unwrap();
/// executor.try_spawn(one.as_mut()).unwrap();
/// executor.try_spawn(two.as_mut()).unwrap();
/// // From a task, or from an interrupt handler:
/// for led in 1..=4 {
///     BLINKS.try_spawn(led).unwrap();
/// }
/// executor.tick(8);
/// executor.tick(8);
/// assert_eq!(LIT.load(Ordering::Relaxed), 10);
/// assert_eq!(BLINKS.figures().finished, 4);
/// ```
///
/// # Guarantees
///
/// - An accepted job is never lost: it waits in the pool until a worker
///   takes it, first spawned first taken, and runs to its end unless its
///   worker task is cancelled. A refused job is handed back in
///   [`SpawnError::Full`].
/// - An idle worker waits without spinning: a spawn wakes one idle worker,
///   first idle first.
///
/// # What it does not do
///
/// A job is not an executor task of its own: it has no `TaskId` and cannot
/// be cancelled alone; it runs inside its worker task, which the executor
/// sees (and names, if spawned with `try_spawn_named`). A waker a finished
/// job left behind (with a timer, a channel) still wakes its worker: the
/// next job is then polled once for nothing, which every future tolerates;
/// nothing is ever polled after it ended, and no storage is reused while a
/// job still lives in it.
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
                workers: 0,
                running: 0,
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
    pub fn try_spawn(&self, input: I) -> Result<(), SpawnError<I>> {
        let woken = self.with(|state| match state.jobs.push_back(input) {
            Ok(()) => {
                state.spawned += 1;
                Ok(state.idle.settle_head(true))
            }
            Err(input) => {
                state.refused += 1;
                Err(SpawnError::Full(input))
            }
        })?;
        if let Some(worker) = woken {
            worker.wake();
        }
        Ok(())
    }

    /// A worker: a task (spawn it on the executor, once) that runs the job
    /// `job(input)` for each spawned input, one at a time, forever. Its
    /// storage holds the job running, and is reused for the next.
    ///
    /// # Errors
    ///
    /// [`TooManyWorkers`] when `P` workers were made already.
    pub fn worker<'p, F, J>(
        &'p self,
        mut job: F,
    ) -> Result<impl Future<Output = Never> + 'p, TooManyWorkers>
    where
        F: FnMut(I) -> J + 'p,
        J: Future<Output = ()> + 'p,
    {
        self.count_worker()?;
        Ok(async move {
            loop {
                let input = self.next().await;
                let running = Running(self);
                job(input).await;
                drop(running);
            }
        })
    }

    /// Counts one more worker, unless `P` were made already. Out of line:
    /// each worker's job is its own type, and this part is the same for
    /// all of them.
    #[inline(never)]
    fn count_worker(&self) -> Result<(), TooManyWorkers> {
        self.with(|state| {
            if state.workers as usize >= P {
                return Err(TooManyWorkers);
            }
            state.workers += 1;
            Ok(())
        })
    }

    /// The next job's input: taken at once if one waits, else in the idle
    /// line until a spawn wakes this worker.
    fn next(&self) -> NextJob<'_, I, Q, P> {
        NextJob {
            pool: self,
            key: None,
        }
    }

    /// What it did and holds, now.
    #[must_use]
    pub fn figures(&self) -> TaskPoolFigures {
        self.with(|state| TaskPoolFigures {
            name: self.name,
            workers: state.workers,
            running: state.running,
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

/// A job running: counted while it lives, and as finished once it is over
/// (or dropped with its worker).
struct Running<'p, I, const Q: usize, const P: usize>(&'p TaskPool<I, Q, P>);

impl<I, const Q: usize, const P: usize> Drop for Running<'_, I, Q, P> {
    fn drop(&mut self) {
        self.0.with(|state| {
            state.running -= 1;
            state.finished += 1;
        });
    }
}

/// A worker waiting for its next job; dropped while in the idle line, it
/// gives up its place, and a wake it was granted goes on to the next idle
/// worker.
struct NextJob<'p, I, const Q: usize, const P: usize> {
    pool: &'p TaskPool<I, Q, P>,
    key: Option<WaitKey>,
}

impl<I, const Q: usize, const P: usize> Future for NextJob<'_, I, Q, P> {
    type Output = I;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<I> {
        let this = self.get_mut();
        this.pool.with(|state| {
            if let Some(key) = this.key.take()
                && state.idle.poll(key, cx.waker()) == Turn::Waiting
            {
                this.key = Some(key);
                return Poll::Pending;
            }
            if let Some(input) = state.jobs.pop_front() {
                state.running += 1;
                return Poll::Ready(input);
            }
            // A job this worker was woken for went to another that finished
            // first: back in line (there is room: one place per worker).
            this.key = state.idle.push(cx.waker(), 1, 0);
            Poll::Pending
        })
    }
}

impl<I, const Q: usize, const P: usize> Drop for NextJob<'_, I, Q, P> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let next: Option<Waker> = self.pool.with(|state| {
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
}
