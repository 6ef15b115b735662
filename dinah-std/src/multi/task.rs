//! A task of the multi-thread runtime: [`spawn`] makes its cell (one
//! `async-task` allocation: the future below and its schedule function),
//! enters it in the registry and queues it; the future
//! ([`run`]) polls the user's future, catches its panics, drops it on
//! cancellation, and resolves the join handle after the user's future is
//! gone.
//!
//! # Invariants
//!
//! 1. The user's future is polled only inside [`run`], on a worker, and
//!    never after a cancellation was requested of it or of the runtime:
//!    the next poll drops it instead.
//! 2. It is dropped exactly once: by `run` (ended, cancelled, panicked),
//!    or, if the cell is dropped before `run` finished, by the [`Guard`]
//!    it lives in (before its first poll) or by the cell (after).
//! 3. The join handle resolves after that drop, once ([`Join`]'s own
//!    invariants), and only then does the task leave the registry and the
//!    live count.
#![forbid(unsafe_code)]

use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use async_task::{Builder, ScheduleInfo, WithInfo};
use dinah_core::executor::SpawnError;
use dinah_core::task::TaskOutput;

use super::registry::Key;
use super::shared::Shared;
use crate::task::{ChildEnd, Join, JoinError, JoinHandle};
use crate::unwind::{drop_quietly, panic_text};

/// The task's side of its join, and its place in the runtime: resolves
/// both once, when the task ends or is dropped.
struct Guard<F: Future> {
    /// The user's future until the first poll moves it into [`run`].
    future: Option<F>,
    join: Arc<Join<F::Output>>,
    shared: Arc<Shared>,
    /// Where the task is in the registry.
    key: Key,
    resolved: bool,
}

impl<F: Future> Guard<F>
where
    F::Output: TaskOutput,
{
    /// Resolves the handle with `result`, then takes the task out of the
    /// runtime (invariant 3).
    fn resolve(&mut self, result: Result<F::Output, JoinError>) {
        let end = match &result {
            Ok(output) if output.is_failure() => ChildEnd::Failed,
            Ok(_) => ChildEnd::Completed,
            Err(JoinError::Cancelled) => ChildEnd::Cancelled,
            Err(_) => ChildEnd::Failed,
        };
        self.resolved = true;
        self.join.finish(result);
        self.shared.registry.leave(self.key, end);
        self.shared.ended();
    }
}

impl<F: Future> Drop for Guard<F> {
    fn drop(&mut self) {
        if self.resolved {
            return;
        }
        // Never polled, or dropped between polls: the future first.
        let future = self.future.take();
        let dropped = catch_unwind(AssertUnwindSafe(move || drop(future)));
        let why = match dropped {
            Err(payload) => {
                let message = panic_text(&*payload);
                drop_quietly(payload);
                JoinError::Panicked(message)
            }
            Ok(()) if std::thread::panicking() => {
                JoinError::Panicked("the task's future panicked while it was dropped".into())
            }
            Ok(()) => JoinError::Cancelled,
        };
        let end = if why.is_cancelled() {
            ChildEnd::Cancelled
        } else {
            ChildEnd::Failed
        };
        self.resolved = true;
        self.join.abort(why);
        self.shared.registry.leave(self.key, end);
        self.shared.ended();
    }
}

/// How one poll of the user's future came out, once it is over.
enum Outcome<T> {
    Done(T),
    Cancelled,
    Panicked(String),
}

/// One poll of the user's future, unless a cancellation came first
/// (invariant 1).
fn poll_user<F: Future>(
    slot: Pin<&mut Option<F>>,
    join: &Join<F::Output>,
    shared: &Shared,
    cx: &mut Context<'_>,
) -> Poll<Outcome<F::Output>> {
    if join.is_cancel_requested() || shared.is_cancelling() {
        return Poll::Ready(Outcome::Cancelled);
    }
    let Some(future) = slot.as_pin_mut() else {
        return Poll::Ready(Outcome::Cancelled);
    };
    match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
        Ok(Poll::Ready(output)) => Poll::Ready(Outcome::Done(output)),
        Ok(Poll::Pending) => Poll::Pending,
        Err(payload) => {
            let message = panic_text(&*payload);
            drop_quietly(payload);
            Poll::Ready(Outcome::Panicked(message))
        }
    }
}

/// The future a task's cell runs (see the module docs).
async fn run<F>(mut guard: Guard<F>)
where
    F: Future,
    F::Output: TaskOutput,
{
    // Declared after the guard: if the cell is dropped between polls, the
    // user's future goes first, then the guard resolves the handle.
    let mut slot = pin!(guard.future.take());
    let outcome = poll_fn(|cx| poll_user(slot.as_mut(), &guard.join, &guard.shared, cx)).await;
    let dropped = catch_unwind(AssertUnwindSafe(|| slot.set(None)));
    let result = match (outcome, dropped) {
        (Outcome::Panicked(message), dropped) => {
            if let Err(payload) = dropped {
                drop_quietly(payload);
            }
            Err(JoinError::Panicked(message))
        }
        (outcome, Err(payload)) => {
            let message = panic_text(&*payload);
            drop_quietly(payload);
            drop_quietly(outcome);
            Err(JoinError::Panicked(message))
        }
        (Outcome::Cancelled, Ok(())) => Err(JoinError::Cancelled),
        (Outcome::Done(output), Ok(())) => Ok(output),
    };
    guard.resolve(result);
}

/// Spawns `future` on the runtime whose state is `shared`.
pub(super) fn spawn<F>(
    shared: &Arc<Shared>,
    future: F,
    name: Option<&'static str>,
) -> Result<JoinHandle<F::Output>, SpawnError<F>>
where
    F: Future + Send + 'static,
    F::Output: TaskOutput + Send + 'static,
{
    if shared.is_closed() {
        return Err(SpawnError::Shutdown(future));
    }
    let id = shared.next_id();
    let join = Join::running_anywhere(id);
    let mut future = Some(future);
    shared.live.fetch_add(1, Ordering::AcqRel);
    let made = shared.registry.enter(id, name, |key| {
        let guard = Guard {
            future: future.take(),
            join: Arc::clone(&join),
            shared: Arc::clone(shared),
            key,
            resolved: false,
        };
        let to = Arc::clone(shared);
        let schedule = move |runnable, info: ScheduleInfo| {
            to.schedule(runnable, info.woken_while_running);
        };
        let (runnable, task) = Builder::new().spawn(move |()| run(guard), WithInfo(schedule));
        // The join handle carries the output; the cell's own handle is
        // not needed.
        task.detach();
        let waker = runnable.waker();
        (runnable, waker)
    });
    let Some(runnable) = made else {
        shared.live.fetch_sub(1, Ordering::AcqRel);
        let future = future.take().unwrap_or_else(|| unreachable!("not built"));
        return Err(SpawnError::Shutdown(future));
    };
    join.wake_on_cancel(runnable.waker());
    runnable.schedule();
    Ok(JoinHandle::new(join))
}
