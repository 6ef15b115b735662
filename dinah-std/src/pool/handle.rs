//! A submitted task's result: [`TaskHandle`], and [`JoinError`] for why it
//! has none.

use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use dinah_core::{TaskFailureKind, TaskId};

use crate::sync::{Mutex, Thread, current, lock, park};
use crate::unwind::drop_quietly;

/// Why a pool task's [`TaskHandle`] holds no value.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum JoinError {
    /// The task panicked. The panic was caught at the task boundary and the
    /// worker carried on; this is its message (`"<non-string panic
    /// payload>"` when the payload was neither a `&str` nor a `String`).
    Panicked(String),
    /// The task never ran: it was cancelled through its handle, or shut down
    /// with [`ShutdownPolicy::CancelPending`](super::ShutdownPolicy) and its
    /// [`Unstarted`](super::Unstarted) was dropped. The closure was dropped
    /// without being called.
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
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Panicked(message) => write!(f, "task panicked: {message}"),
            Self::Cancelled => f.write_str("task was cancelled before it started"),
        }
    }
}

impl std::error::Error for JoinError {}

/// Where a task is, as its handle sees it.
enum Phase<R> {
    /// Accepted, not started; a worker will start it unless it is cancelled.
    Queued,
    /// A worker called the closure.
    Running,
    /// Finished, cancelled or panicked; the result waits to be taken.
    Done(Result<R, JoinError>),
    /// The result was taken.
    Taken,
}

struct SlotState<R> {
    phase: Phase<R>,
    waker: Option<Waker>,
    joiner: Option<Thread>,
}

/// The meeting point of a task and its handle.
///
/// Invariants, under the one lock:
/// 1. `Queued` leaves exactly once: to `Running` when a worker starts the
///    task, or to `Done(Err(Cancelled))` when the handle or the pool
///    cancels it. Whichever comes first wins; the other sees it.
/// 2. `Done` is written once and read once (`Taken`).
/// 3. No user code runs under the lock: a replaced or taken waker is dropped
///    or woken after the guard is released.
pub(crate) struct Slot<R> {
    state: Mutex<SlotState<R>>,
}

impl<R> Slot<R> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(SlotState {
                phase: Phase::Queued,
                waker: None,
                joiner: None,
            }),
        })
    }

    /// Moves `Queued → Running`. `false` when the task was cancelled first:
    /// then it must not run.
    pub(crate) fn start(&self) -> bool {
        let mut state = lock(&self.state);
        if matches!(state.phase, Phase::Queued) {
            state.phase = Phase::Running;
            true
        } else {
            false
        }
    }

    /// Whether the task was cancelled before it started.
    pub(crate) fn is_cancelled(&self) -> bool {
        matches!(
            lock(&self.state).phase,
            Phase::Done(Err(JoinError::Cancelled))
        )
    }

    /// Moves `Queued → Done(Cancelled)`. `false` when the task had started
    /// (or was already cancelled).
    pub(crate) fn cancel(&self) -> bool {
        let mut state = lock(&self.state);
        if !matches!(state.phase, Phase::Queued) {
            return false;
        }
        state.phase = Phase::Done(Err(JoinError::Cancelled));
        let (waker, joiner) = (state.waker.take(), state.joiner.take());
        drop(state);
        notify(waker, joiner);
        true
    }

    /// Stores the outcome of a task that started.
    pub(crate) fn finish(&self, result: Result<R, JoinError>) {
        let mut state = lock(&self.state);
        state.phase = Phase::Done(result);
        let (waker, joiner) = (state.waker.take(), state.joiner.take());
        drop(state);
        notify(waker, joiner);
    }

    fn is_done(&self) -> bool {
        matches!(lock(&self.state).phase, Phase::Done(_))
    }

    /// Takes the result if it is there; otherwise registers `waiter`.
    fn take_or_register(&self, waiter: Waiter<'_>) -> Option<Result<R, JoinError>> {
        let mut state = lock(&self.state);
        match std::mem::replace(&mut state.phase, Phase::Taken) {
            Phase::Done(result) => return Some(result),
            Phase::Taken => panic!("the task's result was already taken"),
            other => state.phase = other,
        }
        let mut replaced = None;
        match waiter {
            Waiter::Task(waker) => {
                if !state.waker.as_ref().is_some_and(|old| old.will_wake(waker)) {
                    replaced = state.waker.replace(waker.clone());
                }
            }
            Waiter::Thread => state.joiner = Some(current()),
        }
        drop(state);
        drop(replaced);
        None
    }
}

/// Wakes whoever waits. A waker is foreign code: its panic is caught and
/// dropped here, so it never unwinds into a pool thread.
fn notify(waker: Option<Waker>, joiner: Option<Thread>) {
    if let Some(waker) = waker
        && let Err(payload) = catch_unwind(AssertUnwindSafe(|| waker.wake()))
    {
        drop_quietly(payload);
    }
    if let Some(joiner) = joiner {
        joiner.unpark();
    }
}

enum Waiter<'w> {
    Task(&'w Waker),
    Thread,
}

/// The result of one task submitted to a [`WorkerPool`](super::WorkerPool)
/// or a [`BlockingPool`](super::BlockingPool).
///
/// Read it with [`join`](Self::join) (blocks the calling thread) or by
/// awaiting the handle (the pool thread that finishes the task wakes the
/// awaiting task). Either gives `Ok(value)`, or a [`JoinError`]: the task
/// panicked, or it never ran.
///
/// Dropping the handle detaches the task: it still runs (or is cancelled by
/// a shutdown) and its result is dropped. Polling the handle again after it
/// gave its result panics, as joining after that does.
#[must_use = "dropping a TaskHandle detaches the task and loses its result"]
pub struct TaskHandle<R> {
    id: TaskId,
    slot: Arc<Slot<R>>,
}

impl<R> TaskHandle<R> {
    pub(crate) fn new(id: TaskId, slot: Arc<Slot<R>>) -> Self {
        Self { id, slot }
    }

    /// The task's id, unique within its pool.
    #[must_use]
    pub fn id(&self) -> TaskId {
        self.id
    }

    /// Cancels the task if it has not started.
    ///
    /// Returns `true` when it had not: it will never run, its closure is
    /// dropped when a worker reaches its queue place (or at shutdown), and
    /// the handle gives [`JoinError::Cancelled`]. Returns `false` when it had
    /// already started (it runs to its end; there is no preemption) or had
    /// already been cancelled. The cancelled task keeps its queue place until
    /// then, so it still counts in [`PoolStats::queued`](super::PoolStats).
    pub fn cancel(&self) -> bool {
        self.slot.cancel()
    }

    /// Whether the result is ready: the task finished, panicked or was
    /// cancelled.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.slot.is_done()
    }

    /// Blocks the calling thread until the task's result is ready, and
    /// returns it.
    ///
    /// # Panics
    ///
    /// If the handle already gave its result by being polled.
    pub fn join(self) -> Result<R, JoinError> {
        loop {
            if let Some(result) = self.slot.take_or_register(Waiter::Thread) {
                return result;
            }
            park();
        }
    }
}

impl<R> Future for TaskHandle<R> {
    type Output = Result<R, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.slot.take_or_register(Waiter::Task(cx.waker())) {
            Some(result) => Poll::Ready(result),
            None => Poll::Pending,
        }
    }
}

impl<R> fmt::Debug for TaskHandle<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}
