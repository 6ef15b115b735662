//! [`Task`]: caller-owned storage for one task's future, which the core
//! executor polls and can drop in place.
#![forbid(unsafe_code)]

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use super::TaskOutput;
use crate::id::TaskId;

/// Caller-owned storage for one task's future, which the executor polls and
/// can drop in place.
///
/// Implemented for `Option<F>` for every future `F`: the caller pins
/// `Some(future)` where it wants the future to live (on `main`'s stack with
/// [`core::pin::pin!`], or in a `static`), and lends it to the executor.
/// When the task completes or is cancelled, the executor sets the option to
/// `None`, which runs the future's destructor exactly once, in place, while
/// its storage stays valid, as the `Pin` contract requires.
///
/// ```
/// use core::pin::pin;
/// use dinah::Task;
///
/// let task = pin!(Some(async {}));
/// assert!(task.has_future());
/// ```
pub trait Task {
    /// The error the future's output can carry (its
    /// [`TaskOutput::Error`]); the executor keeps only this, so tasks with
    /// different value types share one executor.
    type Error;

    /// Polls the future once; `Ready` says whether it succeeded, keeping
    /// its error. After it returns `Ready`, the future has been dropped and
    /// [`has_future`](Self::has_future) is `false`. Polling with no future
    /// stays `Pending` forever.
    fn poll_task(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>>;

    /// Drops the future in place, if there is one.
    fn drop_future(self: Pin<&mut Self>);

    /// Whether a future is stored (not yet finished or dropped).
    fn has_future(&self) -> bool;

    /// The executor's word at a turn of this storage's life, for storage
    /// that runs one task after another in the same slot (a
    /// [`TaskPool`](crate::executor::TaskPool) worker runs each job as a
    /// task of its own):
    ///
    /// - `Some(id)`: it starts as task `id`, at its spawn and at each
    ///   restart. The return value is ignored.
    /// - `None`: its future ended (it completed, failed, or was dropped by
    ///   a cancellation). Returning `true` asks the executor to keep the
    ///   storage and start it again in the same slot, as a new task with a
    ///   new id, once no waker of the ended task is left (so no wake meant
    ///   for it reaches the next); it is polled then as a new task. Such
    ///   storage must keep [`has_future`](Self::has_future) `true`, as a
    ///   spawn asks.
    ///
    /// The default does nothing and returns `false`: the executor lets go
    /// of the storage when its task ends.
    fn turn(self: Pin<&mut Self>, started: Option<TaskId>) -> bool {
        let _ = started;
        false
    }
}

impl<F> Task for Option<F>
where
    F: Future,
    F::Output: TaskOutput,
{
    type Error = <F::Output as TaskOutput>::Error;

    fn poll_task(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let Some(future) = self.as_mut().as_pin_mut() else {
            return Poll::Pending;
        };
        let Poll::Ready(output) = future.poll(cx) else {
            return Poll::Pending;
        };
        self.set(None);
        Poll::Ready(output.into_result().map(drop))
    }

    fn drop_future(mut self: Pin<&mut Self>) {
        self.set(None);
    }

    fn has_future(&self) -> bool {
        self.is_some()
    }
}
