//! [`JoinHandle`]: a spawned task's result, read by awaiting, polling or
//! taking; and [`JoinFailure`]: why a task gave no value.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use dinah_core::{TaskFailureKind, TaskId, TaskOutput};

use super::shared::CancelTarget;
use crate::sync::{AtomicBool, Mutex, Ordering, lock};
use crate::unwind::drop_quietly;

/// Why a task's [`JoinHandle`] holds no value.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum JoinFailure<E> {
    /// The task returned `Err(error)`; here is the error, unchanged.
    Returned(E),
    /// The task panicked while being polled. The panic was caught at the
    /// poll boundary; this is its message (`"<non-string panic payload>"`
    /// when the payload was neither a `&str` nor a `String`).
    Panicked(String),
    /// The task was cancelled, or its executor shut down, before it
    /// finished: its future was dropped without completing.
    Cancelled,
}

impl<E> JoinFailure<E> {
    /// The failure's category, as the core names it.
    #[must_use]
    pub const fn kind(&self) -> TaskFailureKind {
        match self {
            Self::Returned(_) => TaskFailureKind::ReturnedError,
            Self::Panicked(_) => TaskFailureKind::Panicked,
            Self::Cancelled => TaskFailureKind::Cancelled,
        }
    }
}

impl<E: fmt::Debug> fmt::Debug for JoinFailure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Returned(error) => f.debug_tuple("Returned").field(error).finish(),
            Self::Panicked(message) => f.debug_tuple("Panicked").field(message).finish(),
            Self::Cancelled => f.write_str("Cancelled"),
        }
    }
}

impl<E: fmt::Display> fmt::Display for JoinFailure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Returned(error) => write!(f, "task returned an error: {error}"),
            Self::Panicked(message) => write!(f, "task panicked: {message}"),
            Self::Cancelled => f.write_str("task was cancelled before it finished"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for JoinFailure<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Returned(error) => Some(error),
            _ => None,
        }
    }
}

/// How the executor ends a task that did not return.
pub(crate) enum Abort {
    Panicked(String),
    Cancelled,
}

/// Where a task's resolver leaves its join when the task's future is
/// dropped by a panic unwinding out of its poll: the executor, which caught
/// the panic and holds its message, resolves it `Panicked`. One per slot,
/// reused by its tasks.
pub(crate) struct AbortNote<'a>(RefCell<Option<Arc<dyn Resolve + 'a>>>);

impl<'a> AbortNote<'a> {
    pub(crate) fn new() -> Self {
        Self(RefCell::new(None))
    }

    /// The join of the task whose poll just panicked, if its resolver left
    /// it here.
    pub(crate) fn take_orphan(&self) -> Option<Arc<dyn Resolve + 'a>> {
        self.0.borrow_mut().take()
    }
}

/// Lives inside a task's future and resolves its join when that future is
/// dropped before finishing: `Cancelled` (cancelled, or shut down), or, when
/// a panic unwinds out of the task's poll, through the [`AbortNote`] to the
/// executor. Until the first poll it also holds the task's future, so that
/// even a task dropped before it ever ran drops its future, then resolves.
struct Resolver<'a, F, V: 'a, E: 'a> {
    future: Option<F>,
    join: Option<Arc<Join<V, E>>>,
    note: Rc<AbortNote<'a>>,
}

impl<'a, F, V: 'a, E: 'a> Drop for Resolver<'a, F, V, E> {
    fn drop(&mut self) {
        // The future first (if it was never polled, it is still here). Its
        // destructor is the task's code: if it panics, the join is left in
        // the note and the panic goes on, so that the executor, which
        // catches it, resolves the handle `Panicked`.
        let future = self.future.take();
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(future)));
        if let Some(join) = self.join.take() {
            if dropped.is_err() || std::thread::panicking() {
                *self.note.0.borrow_mut() = Some(join);
            } else {
                join.abort(Abort::Cancelled);
            }
        }
        if let Err(payload) = dropped {
            std::panic::resume_unwind(payload);
        }
    }
}

/// The future a task runs: the task's future, then its result handed to the
/// join; or, if dropped first, the join resolved by the [`Resolver`]. Its
/// output says whether the task succeeded.
pub(crate) fn wrap<'a, F, V: 'a, E: 'a>(
    future: F,
    join: Arc<Join<V, E>>,
    note: Rc<AbortNote<'a>>,
) -> impl Future<Output = bool> + 'a
where
    F: Future + 'a,
    F::Output: TaskOutput<Value = V, Error = E>,
{
    let resolver = Resolver {
        future: Some(future),
        join: Some(join),
        note,
    };
    async move {
        // Moved into the body at the first poll: from here on the resolver
        // is declared before the awaited future, so it is dropped after it.
        let mut resolver = resolver;
        let Some(future) = resolver.future.take() else {
            return false;
        };
        let result = future.await.into_result();
        let ok = result.is_ok();
        if let Some(join) = resolver.join.take() {
            join.finish(result.map_err(JoinFailure::Returned));
        }
        ok
    }
}

/// The executor's side of a join: end the task without a value.
pub(crate) trait Resolve {
    /// Resolves the handle without a value (the first outcome wins).
    fn abort(&self, why: Abort);
    /// Tells the join where its task now lives (a task that came through
    /// the ingress); carries out a cancellation requested before that.
    fn attach(&self, header: Arc<dyn CancelTarget>, generation: u32);
}

enum Outcome<V, E> {
    Running,
    /// `cancel` returned `true`: whatever the task does now, the handle
    /// resolves `Cancelled`.
    CancelRequested,
    Done(Result<V, JoinFailure<E>>),
    Taken,
}

impl<V, E> Outcome<V, E> {
    /// Not resolved yet: the handle would wait.
    fn is_pending(&self) -> bool {
        matches!(self, Self::Running | Self::CancelRequested)
    }
}

struct State<V, E> {
    outcome: Outcome<V, E>,
    /// The task awaiting the handle.
    waker: Option<Waker>,
    /// The task's cell and generation, once it is in the executor.
    target: Option<(Arc<dyn CancelTarget>, u32)>,
    /// `cancel` was called before the task reached the executor.
    cancel_requested: bool,
}

/// What a task and its handle share.
pub(crate) struct Join<V, E> {
    id: TaskId,
    state: Mutex<State<V, E>>,
    /// The handle was dropped: nobody will read the outcome.
    detached: AtomicBool,
}

impl<V, E> Join<V, E> {
    pub(crate) fn new(id: TaskId, target: Option<(Arc<dyn CancelTarget>, u32)>) -> Arc<Self> {
        Arc::new(Self {
            id,
            state: Mutex::new(State {
                outcome: Outcome::Running,
                waker: None,
                target,
                cancel_requested: false,
            }),
            detached: AtomicBool::new(false),
        })
    }

    /// Records the outcome (the first one wins; after a cancellation
    /// request, `Cancelled` wins over a value or a returned error, not over
    /// a panic) and wakes the awaiting task. A result
    /// nobody will read is dropped here, and a panic from its destructor is
    /// caught and discarded: the task's outcome is already settled.
    pub(crate) fn finish(&self, result: Result<V, JoinFailure<E>>) {
        if self.detached.load(Ordering::Acquire) {
            // No handle: the value is dropped now, without taking the lock.
            drop_quietly(result);
            return;
        }
        let (unread, waker) = {
            let mut state = lock(&self.state);
            let unread = match state.outcome {
                Outcome::Running => {
                    state.outcome = Outcome::Done(result);
                    None
                }
                Outcome::CancelRequested => match result {
                    // A panic in the task's own code still says so.
                    Err(JoinFailure::Panicked(message)) => {
                        state.outcome = Outcome::Done(Err(JoinFailure::Panicked(message)));
                        None
                    }
                    other => {
                        state.outcome = Outcome::Done(Err(JoinFailure::Cancelled));
                        Some(other)
                    }
                },
                Outcome::Done(_) | Outcome::Taken => Some(result),
            };
            (unread, state.waker.take())
        };
        drop_quietly(unread);
        if let Some(waker) = waker {
            // The awaiting task's waker is its executor's code, whose owner
            // is not on this stack: a panic from it is caught and discarded.
            if let Err(payload) =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| waker.wake()))
            {
                drop_quietly(payload);
            }
        }
    }
}

impl<V, E> Resolve for Join<V, E> {
    fn abort(&self, why: Abort) {
        self.finish(Err(match why {
            Abort::Panicked(message) => JoinFailure::Panicked(message),
            Abort::Cancelled => JoinFailure::Cancelled,
        }));
    }

    fn attach(&self, header: Arc<dyn CancelTarget>, generation: u32) {
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

/// A spawned task's result: a [`Future`] of `Result<V, JoinFailure<E>>`,
/// where `V` and `E` are what the task's `Result<V, E>` (or `()`) holds.
///
/// # Guarantees
///
/// - It resolves exactly once: to the task's value, to
///   [`JoinFailure::Returned`] with its error, to [`JoinFailure::Panicked`]
///   when its poll panicked, or to [`JoinFailure::Cancelled`] when it was
///   cancelled or its executor shut down first.
/// - The task's future has been dropped by the time the handle resolves.
/// - It is `Send` when `V` and `E` are, so it can be awaited or joined on
///   any thread.
///
/// # Dropping it
///
/// Detaches the task: it keeps running and its result is dropped when it
/// ends. Cancel first ([`cancel`](Self::cancel)) to stop it.
///
/// # Panics
///
/// Polling the handle again after it returned `Ready` (or after
/// [`try_take`](Self::try_take) took the result) panics: the result was
/// handed out once.
pub struct JoinHandle<V, E> {
    join: Arc<Join<V, E>>,
}

impl<V, E> JoinHandle<V, E> {
    pub(crate) fn new(join: Arc<Join<V, E>>) -> Self {
        Self { join }
    }

    /// The task's id: unique within its executor, counting from 1 in
    /// spawn order (refused spawns use ids too). Telemetry names tasks by it.
    #[must_use]
    pub fn id(&self) -> TaskId {
        self.join.id
    }

    /// Requests cancellation, and says whether the handle will give no
    /// value.
    ///
    /// `true`: the handle resolves [`JoinFailure::Cancelled`], whatever the
    /// task returns from now on, unless the task's own code panics on its
    /// way out (its poll, or its future's destructor), which the handle
    /// reports as [`JoinFailure::Panicked`]. A task that has not finished is
    /// never polled again: its executor drops its future at its next
    /// scheduling point (never in the middle of a poll), and the handle
    /// resolves once the future is dropped. A task whose last poll, running
    /// on the executor's thread right now, returns a value or an error
    /// anyway has it dropped. A task still waiting in a
    /// [`Spawner`](crate::Spawner)'s ingress is dropped as soon as the
    /// executor takes it in.
    ///
    /// `false`: the task had already finished (its outcome is settled, and
    /// nothing changed). Calling it again after `true` returns `true`.
    pub fn cancel(&self) -> bool {
        let target = {
            let mut state = lock(&self.join.state);
            match state.outcome {
                Outcome::Running => state.outcome = Outcome::CancelRequested,
                Outcome::CancelRequested => return true,
                Outcome::Done(_) | Outcome::Taken => return false,
            }
            state.cancel_requested = true;
            state.target.clone()
        };
        if let Some((header, generation)) = target {
            header.cancel(generation);
        }
        true
    }

    /// Whether the task has finished (returned, failed, panicked or been
    /// cancelled), so that awaiting the handle would not wait.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        !lock(&self.join.state).outcome.is_pending()
    }

    /// Takes the result if the task has finished, without waiting. `None`
    /// while it runs, and after the result was taken.
    pub fn try_take(&mut self) -> Option<Result<V, JoinFailure<E>>> {
        let mut state = lock(&self.join.state);
        match std::mem::replace(&mut state.outcome, Outcome::Taken) {
            Outcome::Done(result) => Some(result),
            pending @ (Outcome::Running | Outcome::CancelRequested) => {
                state.outcome = pending;
                None
            }
            Outcome::Taken => None,
        }
    }
}

impl<V, E> Drop for JoinHandle<V, E> {
    /// Detaches the task: its outcome will be dropped when it ends.
    fn drop(&mut self) {
        self.join.detached.store(true, Ordering::Release);
    }
}

impl<V, E> Future for JoinHandle<V, E> {
    type Output = Result<V, JoinFailure<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = lock(&self.join.state);
        match std::mem::replace(&mut state.outcome, Outcome::Taken) {
            Outcome::Done(result) => Poll::Ready(result),
            pending @ (Outcome::Running | Outcome::CancelRequested) => {
                state.outcome = pending;
                match &mut state.waker {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    slot => *slot = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            Outcome::Taken => panic!("dinah: JoinHandle polled after its result was handed out"),
        }
    }
}

impl<V, E> fmt::Debug for JoinHandle<V, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}
