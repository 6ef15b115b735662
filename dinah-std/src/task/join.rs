//! [`JoinHandle`], the one handle every hosted runtime returns for a task,
//! and [`JoinError`], why it holds no value; with the meeting point, `Join`,
//! that a task and its handle share.
//!
//! # Invariants
//!
//! Under the one lock of a `Join`:
//! 1. The outcome is settled once: `Done` is written by the first of the
//!    task's end, its cancellation, or its drop, and every later outcome is
//!    dropped (outside the lock).
//! 2. `Done` is read once (`Taken`).
//! 3. No user code runs under the lock: a replaced waker, an unread result
//!    and the waker to wake are all dropped or woken after the guard is
//!    released, and a panic from them is caught there.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use dinah_core::TaskId;
use dinah_core::task::TaskFailureKind;

use crate::primitives::{AtomicBool, Mutex, Ordering, Thread, current, lock, park};
use crate::unwind::drop_quietly;

/// Why a [`JoinHandle`] holds no value.
///
/// A task that returned an error is not a `JoinError`: its handle gives its
/// `Err`, as a value, inside `Ok`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum JoinError {
    /// The task's code panicked (its poll or closure, its future's
    /// destructor, or a telemetry hook run for it). The panic was caught at
    /// the task boundary and the runtime carried on; this is its message
    /// (`"<non-string panic payload>"` when the payload was neither a `&str`
    /// nor a `String`).
    Panicked(String),
    /// The task was cancelled, through its handle or by its runtime's
    /// shutdown, before it finished: its future or closure was dropped
    /// without completing.
    Cancelled,
}

impl JoinError {
    /// The failure's category, as the core names it.
    #[must_use]
    pub const fn kind(&self) -> TaskFailureKind {
        match self {
            Self::Panicked(_) => TaskFailureKind::Panicked,
            Self::Cancelled => TaskFailureKind::Cancelled,
        }
    }

    /// Whether the task was cancelled.
    #[must_use]
    pub const fn is_cancelled(&self) -> bool {
        matches!(self, Self::Cancelled)
    }

    /// Whether the task panicked.
    #[must_use]
    pub const fn is_panic(&self) -> bool {
        matches!(self, Self::Panicked(_))
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Panicked(message) => write!(f, "task panicked: {message}"),
            Self::Cancelled => f.write_str("task was cancelled before it finished"),
        }
    }
}

impl std::error::Error for JoinError {}

/// Where a handle sends a cancellation of a running task: an executor task's
/// header, whatever its executor's measuring.
pub(crate) trait CancelTarget: Send + Sync {
    /// Requests cancellation of generation `generation` of this cell; a
    /// task already over (or a cell reused since) is left alone.
    fn cancel(&self, generation: u32);
}

enum Outcome<T> {
    /// Accepted by a pool and not started: a cancellation settles it at
    /// once, and the task never runs.
    Queued,
    /// Started (a pool task a thread took), or alive (an executor task).
    Running,
    /// `cancel` returned `true` while an executor task was alive: whatever
    /// the task does now, the handle resolves `Cancelled`.
    CancelRequested,
    Done(Result<T, JoinError>),
    Taken,
}

impl<T> Outcome<T> {
    /// Not settled yet: the handle would wait.
    fn is_pending(&self) -> bool {
        matches!(self, Self::Queued | Self::Running | Self::CancelRequested)
    }
}

struct State<T> {
    outcome: Outcome<T>,
    /// The task awaiting the handle (or the thread joining it).
    waker: Option<Waker>,
    /// An executor task's cell and generation, once it is in the executor.
    target: Option<(Arc<dyn CancelTarget>, u32)>,
    /// `cancel` was called before the task reached its executor.
    cancel_requested: bool,
}

/// What a task and its handle share.
pub(crate) struct Join<T> {
    id: TaskId,
    state: Mutex<State<T>>,
    /// The handle was dropped: nobody will read the outcome.
    detached: AtomicBool,
    /// A running task can be cancelled (an executor's: it is dropped at its
    /// next scheduling point); a pool task that started cannot.
    interruptible: bool,
    /// The thread whose executor runs the task, if it is an executor's:
    /// joining it there would wait forever. (Loom's threads share one OS
    /// thread, so its models do not check it.)
    #[cfg_attr(loom, allow(dead_code))]
    home: Option<std::thread::ThreadId>,
}

impl<T> Join<T> {
    /// A pool task's join: queued, not cancellable once started.
    pub(crate) fn queued(id: TaskId) -> Arc<Self> {
        Self::new(id, Outcome::Queued, None, false, None)
    }

    /// An executor task's join: alive until it ends, cancellable until then
    /// through `target` (or, for a task still in an ingress, once it is
    /// [`attach`](Self::attach)ed).
    pub(crate) fn running(
        id: TaskId,
        target: Option<(Arc<dyn CancelTarget>, u32)>,
        home: std::thread::ThreadId,
    ) -> Arc<Self> {
        Self::new(id, Outcome::Running, target, true, Some(home))
    }

    fn new(
        id: TaskId,
        outcome: Outcome<T>,
        target: Option<(Arc<dyn CancelTarget>, u32)>,
        interruptible: bool,
        home: Option<std::thread::ThreadId>,
    ) -> Arc<Self> {
        Arc::new(Self {
            id,
            state: Mutex::new(State {
                outcome,
                waker: None,
                target,
                cancel_requested: false,
            }),
            detached: AtomicBool::new(false),
            interruptible,
            home,
        })
    }

    /// The task's id.
    pub(crate) fn id(&self) -> TaskId {
        self.id
    }

    /// A pool thread starts the task: `Queued → Running`. `false` when it
    /// was cancelled first: then it must not run.
    pub(crate) fn start(&self) -> bool {
        let mut state = lock(&self.state);
        if matches!(state.outcome, Outcome::Queued) {
            state.outcome = Outcome::Running;
            true
        } else {
            false
        }
    }

    /// Whether the task was cancelled before it started.
    pub(crate) fn is_cancelled(&self) -> bool {
        matches!(
            lock(&self.state).outcome,
            Outcome::Done(Err(JoinError::Cancelled))
        )
    }

    /// Records the outcome (the first one wins; after a cancellation
    /// request, `Cancelled` wins over a value, not over a panic) and wakes
    /// whoever waits. A result nobody will read is dropped here, and a
    /// panic from its destructor is caught and discarded: the task's
    /// outcome is already settled.
    pub(crate) fn finish(&self, result: Result<T, JoinError>) {
        if self.detached.load(Ordering::Acquire) {
            // No handle: the value is dropped now, without taking the lock.
            drop_quietly(result);
            return;
        }
        let (unread, waker) = {
            let mut state = lock(&self.state);
            let unread = match state.outcome {
                Outcome::Queued | Outcome::Running => {
                    state.outcome = Outcome::Done(result);
                    None
                }
                Outcome::CancelRequested => match result {
                    // A panic in the task's own code still says so.
                    Err(JoinError::Panicked(message)) => {
                        state.outcome = Outcome::Done(Err(JoinError::Panicked(message)));
                        None
                    }
                    other => {
                        state.outcome = Outcome::Done(Err(JoinError::Cancelled));
                        Some(other)
                    }
                },
                Outcome::Done(_) | Outcome::Taken => Some(result),
            };
            (unread, state.waker.take())
        };
        drop_quietly(unread);
        wake_quietly(waker);
    }

    /// Ends the task without a value: `Cancelled`, or `Panicked` with the
    /// message of a panic in its code.
    pub(crate) fn abort(&self, why: JoinError) {
        self.finish(Err(why));
    }

    /// Tells the join where its task now lives (a task that came through an
    /// ingress); carries out a cancellation requested before that.
    pub(crate) fn attach(&self, header: Arc<dyn CancelTarget>, generation: u32) {
        let cancel = {
            let mut state = lock(&self.state);
            state.target = Some((Arc::clone(&header), generation));
            state.cancel_requested
        };
        if cancel {
            header.cancel(generation);
        }
    }
}

/// Wakes `waker`, if any. A waker is foreign code whose owner is not on this
/// stack: its panic is caught and discarded.
fn wake_quietly(waker: Option<Waker>) {
    if let Some(waker) = waker
        && let Err(payload) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| waker.wake()))
    {
        drop_quietly(payload);
    }
}

/// Unparks a thread blocked in [`park_on`].
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// The result of one task, from any hosted runtime: a
/// [`LocalExecutor`](crate::executor::LocalExecutor) or its
/// [`Spawner`](crate::executor::Spawner), a
/// [`WorkerPool`](crate::pool::WorkerPool) or a
/// [`BlockingPool`](crate::pool::BlockingPool).
///
/// Read it by awaiting it, with [`join`](Self::join) (blocks the calling
/// thread) or with [`try_take`](Self::try_take) (never waits). Each gives
/// `Ok` with what the task returned (for a task returning `Result<V, E>`,
/// that `Result`, its error included), or a [`JoinError`]: the task
/// panicked, or was cancelled before it finished.
///
/// # Guarantees
///
/// - It resolves exactly once, and only after the task's future or closure
///   has been dropped or has returned, except for a pool task cancelled
///   before it started, whose closure is dropped later, unrun, when a
///   thread reaches its place in the queue (or at shutdown).
/// - It is `Send` when `T` is, so it can be awaited or joined on any thread.
///
/// # Cancelling
///
/// [`cancel`](Self::cancel) returns `true` when the handle will hold no
/// value. An executor task can be cancelled until it finishes: it is never
/// polled again and is dropped at its executor's next scheduling point. A
/// pool task can be cancelled until a thread starts it: it never runs;
/// once started it runs to its end (no preemption) and `cancel` returns
/// `false`.
///
/// # Dropping it
///
/// Detaches the task: it keeps running (or queued) and its result is dropped
/// when it ends. Cancel first to stop it.
///
/// # Panics
///
/// Polling the handle again after it returned `Ready` (or after
/// [`try_take`](Self::try_take) took the result) panics: the result was
/// handed out once. [`join`](Self::join) panics on the thread of the
/// executor that runs the task.
#[must_use = "dropping a JoinHandle detaches the task and loses its result"]
pub struct JoinHandle<T> {
    inner: Inner<T>,
}

/// Where a handle's result comes from.
enum Inner<T> {
    /// A meeting point beside the task (a `LocalExecutor`'s, a pool's).
    Join(Arc<Join<T>>),
    /// The task's own cell (a `MultiExecutor`'s).
    Cell(super::cell::CellHandle<T>),
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(join: Arc<Join<T>>) -> Self {
        Self {
            inner: Inner::Join(join),
        }
    }

    /// The handle of a task whose result lives in its own cell.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn of_cell(cell: super::cell::CellHandle<T>) -> Self {
        Self {
            inner: Inner::Cell(cell),
        }
    }

    /// The task's id: unique within its runtime, counting from 1 in
    /// submission order (refused submissions use ids too). Telemetry names
    /// tasks by it.
    #[must_use]
    pub fn id(&self) -> TaskId {
        match &self.inner {
            Inner::Join(join) => join.id,
            Inner::Cell(cell) => cell.id(),
        }
    }

    /// Requests cancellation, and says whether the handle will hold no
    /// value.
    ///
    /// `true`: the handle resolves [`JoinError::Cancelled`], whatever the
    /// task returns from now on, unless the task's own code panics on its
    /// way out (its poll, or its future's destructor), which the handle
    /// reports as [`JoinError::Panicked`]. An executor task that has not
    /// finished is never polled again: its executor drops its future at its
    /// next scheduling point (never in the middle of a poll), and the
    /// handle resolves once the future is dropped; a task still waiting in
    /// a [`Spawner`](crate::executor::Spawner)'s ingress is dropped as soon
    /// as the executor takes it in. A pool task that had not started never
    /// runs, and the handle resolves at once.
    ///
    /// `false`: the task had already finished, or (a pool task) had already
    /// started; nothing changed. Calling it again after `true` returns
    /// `true`.
    pub fn cancel(&self) -> bool {
        let join = match &self.inner {
            Inner::Join(join) => join,
            Inner::Cell(cell) => return cell.cancel(),
        };
        let (target, waker) = {
            let mut state = lock(&join.state);
            match state.outcome {
                Outcome::Queued => {
                    state.outcome = Outcome::Done(Err(JoinError::Cancelled));
                    (None, state.waker.take())
                }
                Outcome::Running if join.interruptible => {
                    state.outcome = Outcome::CancelRequested;
                    state.cancel_requested = true;
                    (state.target.clone(), None)
                }
                Outcome::CancelRequested => return true,
                Outcome::Running | Outcome::Done(_) | Outcome::Taken => return false,
            }
        };
        wake_quietly(waker);
        if let Some((header, generation)) = target {
            header.cancel(generation);
        }
        true
    }

    /// Whether the task has finished (returned, panicked or been
    /// cancelled), so that awaiting the handle would not wait.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        match &self.inner {
            Inner::Join(join) => !lock(&join.state).outcome.is_pending(),
            Inner::Cell(cell) => cell.is_finished(),
        }
    }

    /// Takes the result if the task has finished, without waiting. `None`
    /// while it runs, and after the result was taken.
    pub fn try_take(&mut self) -> Option<Result<T, JoinError>> {
        let join = match &mut self.inner {
            Inner::Join(join) => join,
            Inner::Cell(cell) => return cell.try_take(),
        };
        let mut state = lock(&join.state);
        match std::mem::replace(&mut state.outcome, Outcome::Taken) {
            Outcome::Done(result) => Some(result),
            Outcome::Taken => None,
            pending => {
                state.outcome = pending;
                None
            }
        }
    }

    /// Blocks the calling thread until the task's result is ready, and
    /// returns it.
    ///
    /// # Panics
    ///
    /// If the handle already gave its result, or when called on the thread
    /// of the [`LocalExecutor`](crate::executor::LocalExecutor) that runs
    /// the task (which cannot run it while this thread waits: await the
    /// handle inside [`block_on`](crate::executor::LocalExecutor::block_on)
    /// instead).
    pub fn join(mut self) -> Result<T, JoinError> {
        #[cfg(not(loom))]
        if let Inner::Join(join) = &self.inner
            && let Some(home) = join.home
        {
            assert!(
                home != std::thread::current().id(),
                "dinah: JoinHandle::join called on the thread of the executor that runs the \
                 task; it would wait forever (await the handle in block_on instead)"
            );
        }
        park_on(&mut self)
    }
}

/// Polls `future` on this thread, parked between polls, until it is ready:
/// the one blocking wait of the hosted layer (`JoinHandle::join`, a pool's
/// `blocking_spawn`).
pub(crate) fn park_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        park();
    }
}

impl<T> Drop for JoinHandle<T> {
    /// Detaches the task: its outcome will be dropped when it ends, where
    /// it ends (a pool catches a panic of that drop). If it has already
    /// ended, its outcome is dropped here, on the dropping thread.
    fn drop(&mut self) {
        match &mut self.inner {
            Inner::Join(join) => join.detached.store(true, Ordering::Release),
            Inner::Cell(cell) => cell.detach(),
        }
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let join = match &mut self.get_mut().inner {
            Inner::Join(join) => join,
            Inner::Cell(cell) => return cell.poll_output(cx),
        };
        let mut state = lock(&join.state);
        match std::mem::replace(&mut state.outcome, Outcome::Taken) {
            Outcome::Done(result) => Poll::Ready(result),
            Outcome::Taken => panic!("dinah: JoinHandle polled after its result was handed out"),
            pending => {
                state.outcome = pending;
                let replaced = match &mut state.waker {
                    Some(waker) if waker.will_wake(cx.waker()) => None,
                    slot => slot.replace(cx.waker().clone()),
                };
                drop(state);
                drop(replaced);
                Poll::Pending
            }
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id())
            .field("finished", &self.is_finished())
            .finish()
    }
}
