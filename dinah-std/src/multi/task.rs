//! A task of the multi-thread runtime: [`spawn`] makes its cell (one
//! `async-task` allocation: the future below, its id, cancellation flag
//! and the runtime it belongs to, then its output, which the join handle
//! reads; its schedule function is a plain function, `shared::schedule`,
//! which finds the runtime in the cell, so that `async-task` takes no
//! extra reference to the cell at each wake), enters it in the registry
//! and queues it; the future ([`Run`])
//! polls the user's future, catches its panics, drops it on cancellation,
//! and ends with the handle's result.
//!
//! # Invariants
//!
//! 1. The user's future is polled only inside [`Run`], on a worker, and
//!    never after a cancellation was requested of it (its worker says so
//!    before the poll, and a cancellation made as the poll began moves the
//!    runtime's cancel word, which makes the poll yield instead: see
//!    `shared.rs`, invariant 4) or of the runtime: the next poll drops it
//!    instead.
//! 2. It is dropped exactly once: by `Run`'s poll (ended, cancelled,
//!    panicked), or, if the cell is dropped before the task ended, by
//!    `Run`'s drop.
//! 3. `Run` always ends with a result, after the user's future is gone,
//!    and the task leaves the registry (which counts the live tasks) just before:
//!    the handle never sees a cell closed without an output (see
//!    `task/cell.rs`).
//! 4. No panic of user code reaches `async-task`, which aborts the process
//!    on a panic in a destructor it runs: the user's future is dropped
//!    inside `catch_unwind` wherever it is dropped, and so is the output
//!    (in a [`Quiet`](crate::task::cell::Quiet)) and the awaiting task's
//!    waker (see `task/cell.rs`).
#![forbid(unsafe_code)]

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::task::{Context, Poll};

use async_task::{Builder, WithInfo};
use dinah_core::executor::SpawnError;
use dinah_core::task::TaskOutput;
use dinah_core::telemetry::TraceEventKind;

use super::registry::{Key, Refusal};
use super::shared::{CancelWord, Shared, schedule};
use crate::runtime::context;
use crate::task::cell::{CellHandle, CellMeta, Owner, Quiet};
use crate::task::{ChildEnd, JoinError, JoinHandle};
use crate::unwind::{drop_quietly, panic_text};

/// The task's place in the runtime: leaves it once, when the task ends or
/// is dropped. Its id is in the registry's entry, not here (see [`Run`]).
struct Guard {
    shared: Arc<Shared>,
    /// Where the task is in the registry; [`Key::LEFT`] once it left.
    key: Key,
}

impl Guard {
    /// Whether the task left the runtime already.
    fn left(&self) -> bool {
        self.key == Key::LEFT
    }

    /// Takes the task out of the runtime, ended as `end`.
    fn leave(&mut self, end: ChildEnd) {
        let key = std::mem::replace(&mut self.key, Key::LEFT);
        let id = self.shared.registry.leave(key, end);
        if let (Some(tracer), Some(id)) = (&self.shared.tracer, id) {
            let kind = match end {
                ChildEnd::Completed => TraceEventKind::Completed,
                ChildEnd::Cancelled => TraceEventKind::CancellationAcknowledged,
                _ => TraceEventKind::Failed,
            };
            tracer.emit(id, kind);
        }
        self.shared.ended();
    }
}

pin_project_lite::pin_project! {
    /// The future a task's cell runs: the user's future, pinned, beside
    /// the task's guard. Written by hand rather than as an `async fn`, whose
    /// state machine kept the guard and the user's future twice (once as
    /// its argument, once in the pinned pair it awaited on): 240 bytes
    /// around a 16-byte future, against 40 here. With the guard at 16
    /// bytes (the id is in the registry, the key two `u32`s that also say
    /// whether the task left), the cell of such a task is 120 bytes, which
    /// glibc serves from its fast bins (chunks of at most 128 bytes).
    ///
    /// Dropping it (the cell dropped before the task ended, never polled or
    /// between polls) drops the future catching its panic, then takes the
    /// task out of the runtime (invariants 2 and 4).
    struct Run<F> {
        guard: Guard,
        #[pin]
        future: Option<F>,
    }

    impl<F> PinnedDrop for Run<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if this.guard.left() {
                return;
            }
            let mut future = this.future;
            let end = match catch_unwind(AssertUnwindSafe(|| future.set(None))) {
                Err(payload) => {
                    drop_quietly(payload);
                    ChildEnd::Failed
                }
                Ok(()) if std::thread::panicking() => ChildEnd::Failed,
                Ok(()) => ChildEnd::Cancelled,
            };
            this.guard.leave(end);
        }
    }
}

impl<F> Future for Run<F>
where
    F: Future,
    F::Output: TaskOutput,
{
    type Output = Quiet<Result<F::Output, JoinError>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match poll_user(self.as_mut(), cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(outcome) => Poll::Ready(Quiet::new(finish(self, outcome))),
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
fn poll_user<F: Future>(slot: Pin<&mut Run<F>>, cx: &mut Context<'_>) -> Poll<Outcome<F::Output>> {
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
fn finish<F>(slot: Pin<&mut Run<F>>, outcome: Outcome<F::Output>) -> Result<F::Output, JoinError>
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
        let run = Run {
            guard: Guard {
                shared: Arc::clone(shared),
                key,
            },
            future: future.take(),
        };
        let owner: Arc<dyn Owner> = Arc::clone(shared) as Arc<dyn Owner>;
        let (runnable, task) = Builder::new()
            .metadata(CellMeta::new(id, stamp, owner))
            .spawn(move |_| run, WithInfo(schedule));
        let waker = runnable.waker();
        ((runnable, task, waker.clone()), waker)
    });
    let (runnable, task, waker) = match made {
        Ok(made) => made,
        Err(refusal) => {
            let future = future.take().unwrap_or_else(|| unreachable!("not built"));
            return Err(match refusal {
                Refusal::Closed => SpawnError::Shutdown(future),
                Refusal::Full => SpawnError::Full(future),
            });
        }
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
