//! [`Spawning`]: a submission that waits for room in a pool, and the
//! blocking wait threads use.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use dinah_core::executor::SpawnError;
use dinah_core::raw::wait::{Turn, WaitKey};

use super::engine::{Admitted, Ask, Engine};
use crate::task::JoinHandle;

/// The future of a pool's `spawn`: the task is admitted at once if there
/// is room, or waits in line (first in, first out) until room frees.
///
/// Room that frees while it waits is reserved for it before anyone else
/// can take it, even a `try_spawn`. Dropping the future before it
/// completes drops the task unrun and hands any room reserved for it to
/// the next in line.
#[must_use = "a spawn does nothing unless awaited"]
pub struct Spawning<F, R> {
    engine: Arc<Engine>,
    task: Option<F>,
    key: Option<WaitKey>,
    output: PhantomData<fn() -> R>,
}

impl<F, R> Spawning<F, R> {
    pub(super) fn new(engine: Arc<Engine>, task: F) -> Self {
        Self {
            engine,
            task: Some(task),
            key: None,
            output: PhantomData,
        }
    }
}

impl<F, R> Unpin for Spawning<F, R> {}

impl<F, R> Future for Spawning<F, R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    type Output = Result<JoinHandle<R>, SpawnError<F, io::Error>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(task) = this.task.take() else {
            panic!("a spawn polled after it completed");
        };
        let ask = match this.key {
            None => Ask::OrWait(cx.waker()),
            Some(key) => match this.engine.turn(key, cx.waker()) {
                Turn::Waiting => {
                    this.task = Some(task);
                    return Poll::Pending;
                }
                Turn::Granted(_) => {
                    this.key = None;
                    Ask::Reserved
                }
                // Turned away by shutdown: asking again is refused as
                // `Shutdown`.
                Turn::Closed => {
                    this.key = None;
                    Ask::Now
                }
            },
        };
        match this.engine.admit(task, ask) {
            Admitted::Spawned(handle) => Poll::Ready(Ok(handle)),
            Admitted::Refused(refused) => Poll::Ready(Err(refused)),
            Admitted::Waiting(task, key) => {
                this.task = Some(task);
                this.key = Some(key);
                Poll::Pending
            }
        }
    }
}

impl<F, R> Drop for Spawning<F, R> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.engine.leave_line(key);
        }
    }
}

impl<F, R> fmt::Debug for Spawning<F, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Spawning")
            .field("waiting", &self.key.is_some())
            .finish_non_exhaustive()
    }
}

/// Waits on this thread, parked, until `spawning` completes.
pub(super) fn wait<F, R>(
    spawning: Spawning<F, R>,
) -> Result<JoinHandle<R>, SpawnError<F, io::Error>>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    crate::task::park_on(spawning)
}
