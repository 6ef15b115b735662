//! A task of the multi-thread runtime: [`spawn`] makes its cell (one
//! `async-task` allocation: the future below, its id, cancellation flag
//! and the runtime it belongs to, then its output, which the join handle
//! reads; its schedule function is a plain function, `shared::schedule`,
//! which finds the runtime in the cell, so that `async-task` takes no
//! extra reference to the cell at each wake), enters it in the registry
//! and queues it; the future ([`run`])
//! polls the user's future, catches its panics, drops it on cancellation,
//! and ends with the handle's result.
//!
//! # Invariants
//!
//! 1. The user's future is polled only inside [`run`], on a worker, and
//!    never after a cancellation was requested of it (its worker says so
//!    before the poll, and a cancellation made as the poll began moves the
//!    runtime's cancel word, which makes the poll yield instead: see
//!    `shared.rs`, invariant 4) or of the runtime: the next poll drops it
//!    instead.
//! 2. It is dropped exactly once: by `run` (ended, cancelled, panicked),
//!    or, if the cell is dropped before `run` finished, by the [`Guard`]
//!    it lives in (before its first poll) or by the [`Slot`] (after).
//! 3. `run` always ends with a result, after the user's future is gone,
//!    and the task leaves the registry (which counts the live tasks) just before:
//!    the handle never sees a cell closed without an output (see
//!    `task/cell.rs`).
//! 4. No panic of user code reaches `async-task`, which aborts the process
//!    on a panic in a destructor it runs: the user's future is dropped
//!    inside `catch_unwind` wherever it is dropped, and so is the output
//!    (in a [`Quiet`](crate::task::cell::Quiet)) and the awaiting task's
//!    waker (see `task/cell.rs`).
#![forbid(unsafe_code)]

use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::task::{Context, Poll};

use async_task::{Builder, WithInfo};
use dinah_core::TaskId;
use dinah_core::executor::SpawnError;
use dinah_core::task::TaskOutput;
use dinah_core::telemetry::TraceEventKind;

use super::registry::Key;
use super::shared::{CancelWord, Shared, schedule};
use crate::runtime::context;
use crate::task::cell::{CellHandle, CellMeta, Owner, Quiet};
use crate::task::{ChildEnd, JoinError, JoinHandle};
use crate::unwind::{drop_quietly, panic_text};

/// The task's place in the runtime: leaves it once, when the task ends or
/// is dropped.
struct Guard<F> {
    /// The user's future until the first poll moves it into [`run`].
    future: Option<F>,
    shared: Arc<Shared>,
    /// Where the task is in the registry.
    key: Key,
    id: TaskId,
    left: bool,
}

impl<F> Guard<F> {
    /// Takes the task out of the runtime, ended as `end`.
    fn leave(&mut self, end: ChildEnd) {
        if let Some(tracer) = &self.shared.tracer {
            let kind = match end {
                ChildEnd::Completed => TraceEventKind::Completed,
                ChildEnd::Cancelled => TraceEventKind::CancellationAcknowledged,
                _ => TraceEventKind::Failed,
            };
            tracer.emit(self.id, kind);
        }
        self.left = true;
        self.shared.registry.leave(self.key, end);
        self.shared.ended();
    }
}

impl<F> Drop for Guard<F> {
    fn drop(&mut self) {
        if self.left {
            return;
        }
        // Never polled, or dropped between polls: the future first.
        let future = self.future.take();
        let dropped = catch_unwind(AssertUnwindSafe(move || drop(future)));
        let end = match dropped {
            Err(payload) => {
                drop_quietly(payload);
                ChildEnd::Failed
            }
            Ok(()) if std::thread::panicking() => ChildEnd::Failed,
            Ok(()) => ChildEnd::Cancelled,
        };
        self.leave(end);
    }
}

pin_project_lite::pin_project! {
    /// The user's future, pinned, beside the task's guard: dropping the
    /// pair (the cell dropped between polls) drops the future catching its
    /// panic, then takes the task out of the runtime (invariants 2 and 4).
    struct Slot<F> {
        guard: Guard<F>,
        #[pin]
        future: Option<F>,
    }

    impl<F> PinnedDrop for Slot<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if this.future.is_some() && !this.guard.left {
                let mut future = this.future;
                if let Err(payload) = catch_unwind(AssertUnwindSafe(|| future.set(None))) {
                    drop_quietly(payload);
                    this.guard.leave(ChildEnd::Failed);
                }
            }
        }
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
fn poll_user<F: Future>(slot: Pin<&mut Slot<F>>, cx: &mut Context<'_>) -> Poll<Outcome<F::Output>> {
    let slot = slot.project();
    let seen = context::polled_cancel();
    let word = slot.guard.shared.cancel_word();
    if seen == context::POLLED_CANCELLED || word & CancelWord::ALL != 0 {
        return Poll::Ready(Outcome::Cancelled);
    }
    if word != seen {
        // A handle cancelled a task since the worker read this one's flag:
        // perhaps this one. Its next turn reads the flag again
        // (`shared.rs`, invariant 4).
        cx.waker().wake_by_ref();
        return Poll::Pending;
    }
    let Some(future) = slot.future.as_pin_mut() else {
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

/// Drops the user's future and takes the task out of the runtime with
/// the handle's result.
fn finish<F>(slot: Pin<&mut Slot<F>>, outcome: Outcome<F::Output>) -> Result<F::Output, JoinError>
where
    F: Future,
    F::Output: TaskOutput,
{
    let slot = slot.project();
    let mut future = slot.future;
    let dropped = catch_unwind(AssertUnwindSafe(|| future.set(None)));
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
    slot.guard.leave(match &result {
        Ok(output) if output.is_failure() => ChildEnd::Failed,
        Ok(_) => ChildEnd::Completed,
        Err(JoinError::Cancelled) => ChildEnd::Cancelled,
        Err(_) => ChildEnd::Failed,
    });
    result
}

/// The future a task's cell runs (see the module docs).
async fn run<F>(mut guard: Guard<F>) -> Quiet<Result<F::Output, JoinError>>
where
    F: Future,
    F::Output: TaskOutput,
{
    let future = guard.future.take();
    let mut slot = pin!(Slot { guard, future });
    let outcome = poll_fn(|cx| poll_user(slot.as_mut(), cx)).await;
    Quiet::new(finish(slot, outcome))
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
    let mut future = Some(future);
    let ready = shared.clock.is_some().then(|| Arc::new(AtomicU64::new(0)));
    let stamp = ready.clone();
    let made = shared.registry.enter(id, name, ready, |key| {
        let guard = Guard {
            future: future.take(),
            shared: Arc::clone(shared),
            key,
            id,
            left: false,
        };
        let owner: Arc<dyn Owner> = Arc::clone(shared) as Arc<dyn Owner>;
        let (runnable, task) = Builder::new()
            .metadata(CellMeta::new(id, stamp, owner))
            .spawn(move |_| run(guard), WithInfo(schedule));
        let waker = runnable.waker();
        ((runnable, task, waker.clone()), waker)
    });
    let Some((runnable, task, waker)) = made else {
        let future = future.take().unwrap_or_else(|| unreachable!("not built"));
        return Err(SpawnError::Shutdown(future));
    };
    if let Some(tracer) = &shared.tracer {
        if let Some(name) = name {
            tracer.name(id, name);
        }
        tracer.emit(id, TraceEventKind::Submitted);
    }
    shared.schedule_new(runnable);
    Ok(JoinHandle::of_cell(CellHandle::new(task, waker)))
}
