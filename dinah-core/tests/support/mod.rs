//! What the executor tests and the loom models share: a future that waits
//! at a gate, and the probe that opens it and watches it. Built on std's
//! types, or on loom's under `cfg(loom)`.
#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

#[cfg(loom)]
use loom::sync::Mutex;
#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::Mutex;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A gate's flag, the waker its future parked, and how often it was polled.
pub(crate) struct Probe {
    pub(crate) open: AtomicBool,
    pub(crate) parked: Mutex<Option<Waker>>,
    pub(crate) polls: AtomicUsize,
}

impl Default for Probe {
    fn default() -> Self {
        Self {
            open: AtomicBool::new(false),
            parked: Mutex::new(None),
            polls: AtomicUsize::new(0),
        }
    }
}

impl Probe {
    /// A probe whose gate is already open.
    pub(crate) fn opened() -> Self {
        let probe = Self::default();
        probe.open();
        probe
    }

    /// A future that is pending until the gate opens, parking a clone of
    /// its waker on every pending poll.
    pub(crate) fn gate(&self) -> Gate<'_> {
        Gate(self)
    }

    pub(crate) fn open(&self) {
        self.open.store(true, Ordering::Release);
    }

    pub(crate) fn polls(&self) -> usize {
        self.polls.load(Ordering::Relaxed)
    }

    /// Takes the waker the gate parked.
    pub(crate) fn take_parked(&self) -> Waker {
        self.parked.lock().unwrap().take().expect("a parked waker")
    }
}

/// See [`Probe::gate`].
pub(crate) struct Gate<'a>(&'a Probe);

impl Future for Gate<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.polls.fetch_add(1, Ordering::Relaxed);
        if self.0.open.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        *self.0.parked.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}
