//! [`Stop`]: what a service waits on to stop, Ctrl-C (SIGINT) or its
//! supervisor's SIGTERM, whichever comes first.
// Each user takes the parts it needs.
#![allow(dead_code)]

use std::future::poll_fn;
use std::io;
use std::task::{Context, Poll};

use dinah::signal::{Signal, SignalKind};

/// Listeners for SIGINT and SIGTERM, made on the executor of the thread
/// that makes them (inside a task or `block_on`).
pub(crate) struct Stop {
    interrupt: Signal,
    terminate: Signal,
}

impl Stop {
    /// Listens for both from now on.
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self {
            interrupt: Signal::new(SignalKind::interrupt())?,
            terminate: Signal::new(SignalKind::terminate())?,
        })
    }

    /// `Ready` with the signal that came, if either has.
    pub(crate) fn poll_stop(&mut self, cx: &mut Context<'_>) -> Poll<SignalKind> {
        if self.interrupt.poll_recv(cx).is_ready() {
            return Poll::Ready(SignalKind::interrupt());
        }
        self.terminate
            .poll_recv(cx)
            .map(|_| SignalKind::terminate())
    }

    /// Waits for either, and names it.
    pub(crate) async fn wait(&mut self) -> SignalKind {
        poll_fn(|cx| self.poll_stop(cx)).await
    }
}
