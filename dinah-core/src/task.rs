//! What an [`AsyncExecutor`](crate::AsyncExecutor) runs: the [`Task`] trait
//! over caller-owned, pinned futures, [`TaskOutput`], and the cooperative
//! helpers [`yield_now`] and [`chunked`].
#![forbid(unsafe_code)]

use core::convert::Infallible;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

/// What a task may return: `()` for a task that cannot fail, `!` for one
/// that never ends (`async { loop { … } }`), or `Result<T, E>` for one whose
/// error the executor keeps as its [`TaskFailure`](crate::TaskFailure).
///
/// The heap-free [`AsyncExecutor`](crate::AsyncExecutor) keeps only the
/// error and drops a value; `dinah-std`'s `LocalExecutor` hands the value to
/// the task's join handle.
///
/// ```
/// use dinah::TaskOutput;
///
/// fn error_of<O: TaskOutput<Error = core::convert::Infallible>>(_: impl FnOnce() -> O) {}
/// error_of(|| ());
/// error_of(|| -> Result<u8, core::convert::Infallible> { Ok(1) });
/// error_of(|| loop {}); // `!`: never returns, cannot fail
/// ```
pub trait TaskOutput {
    /// What a task that succeeded hands back (`()` for `()`).
    type Value;
    /// The error a failed task leaves behind (`Infallible` for `()`).
    type Error;

    /// The outcome, as a `Result`.
    ///
    /// # Errors
    ///
    /// The task's own error, unchanged.
    fn into_result(self) -> Result<Self::Value, Self::Error>;
}

impl TaskOutput for () {
    type Value = ();
    type Error = Infallible;

    fn into_result(self) -> Result<(), Infallible> {
        Ok(())
    }
}

/// Names `!` on stable Rust: the output type of a `fn() -> !`.
pub trait Returns {
    /// What the function returns.
    type Output;
}

impl<T> Returns for fn() -> T {
    type Output = T;
}

/// `!`, the type of a value that never exists: what a task that never ends
/// returns.
pub type Never = <fn() -> ! as Returns>::Output;

impl TaskOutput for Never {
    type Value = Never;
    type Error = Infallible;

    fn into_result(self) -> Result<Never, Infallible> {
        match self {}
    }
}

impl<T, E> TaskOutput for Result<T, E> {
    type Value = T;
    type Error = E;

    fn into_result(self) -> Self {
        self
    }
}

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

/// A future that wakes its own task once and returns `Pending`, then is
/// ready: the task goes to the back of the ready queue and the others run
/// first. Made by [`yield_now`].
#[derive(Debug, Default)]
#[must_use = "a future does nothing unless awaited"]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Gives the other ready tasks a turn: wakes this task and returns
/// `Pending` once.
///
/// On an [`AsyncExecutor`](crate::AsyncExecutor) the task is polled again in
/// the next tick, after every task already queued.
pub const fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// Does `work` on each unit of `units`, yielding after every unit, so long
/// CPU work shares the executor with other tasks.
///
/// Each unit runs in its own poll; the budget of one poll is one unit, so
/// choose units small enough for the latency other tasks need.
///
/// ```
/// use dinah::chunked;
///
/// let mut total = 0;
/// let work = chunked(1..=3, |n| total += n);
/// # drop(work);
/// ```
pub async fn chunked<I, W>(units: I, mut work: W)
where
    I: IntoIterator,
    W: FnMut(I::Item),
{
    for unit in units {
        work(unit);
        yield_now().await;
    }
}
