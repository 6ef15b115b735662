//! Cooperation: [`yield_now`] and [`chunked`], which give the other ready
//! tasks a turn.
#![forbid(unsafe_code)]

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

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

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if core::mem::replace(&mut self.yielded, true) {
            return Poll::Ready(());
        }
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
/// use dinah::task::chunked;
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
