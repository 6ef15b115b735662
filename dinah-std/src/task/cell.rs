//! A join handle's other form: a task whose result lives in its own cell
//! (one `async-task` allocation holding the future, then its output), as
//! the multi-thread executor spawns them. [`CellMeta`] is what the cell
//! carries beside the future, [`CellHandle`] the handle's side.
//!
//! # Invariants
//!
//! 1. The cell's future always ends with an output: it catches its task's
//!    panics and turns a cancellation into `Err(Cancelled)`, and the
//!    executor runs every queued cell to its end rather than dropping it,
//!    so awaiting the cell never finds it closed without one (a cell
//!    dropped unrun all the same reads as `Cancelled`).
//! 2. `cancel` returning `true` sets the flag, tells the executor
//!    ([`Owner::cancelled_one`]), then wakes the task; the executor reads
//!    the flag before each poll (and a poll that began as the flag was set
//!    learns of it from the executor), and the handle reads it when the
//!    output comes: from then on the handle says `Cancelled`, whatever the
//!    task returned, unless its code panicked.
//! 3. `async-task` aborts the process if a destructor or waker it calls
//!    panics. The output travels in a [`Quiet`], which drops it catching
//!    its panic; the awaiting task's waker is handed to the cell inside a
//!    [`QuietWaker`], which wakes and drops it the same way.
#![forbid(unsafe_code)]
// The multi-thread executor, its only user, is not built for loom.
#![cfg_attr(loom, allow(dead_code))]

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use dinah_core::TaskId;

use super::JoinError;
use crate::unwind::drop_quietly;

/// The executor a cell's task belongs to, as its cell knows it: the cell's
/// schedule function is a plain function (so `async-task` takes no
/// reference to the cell around each call, as it does for a schedule
/// function that holds data), and reaches the executor through here.
pub(crate) trait Owner: Send + Sync {
    /// Queues the task, woken on a thread that is none of this executor's
    /// workers.
    fn schedule_away(&self, runnable: async_task::Runnable<CellMeta>, yielded: bool);

    /// A handle set its task's cancellation flag, and is about to wake the
    /// task: a poll of the task that read the flag before it was set must
    /// learn of it all the same (see `multi/shared.rs`, invariant 4).
    fn cancelled_one(&self);
}

/// What a task's cell carries beside its future.
pub(crate) struct CellMeta {
    pub(crate) id: TaskId,
    /// The handle's `cancel` returned `true` (invariant 2).
    cancel: AtomicBool,
    /// Where the executor measures itself: since when (on its clock) the
    /// task has been ready and not yet polled, 0 while it is not; shared
    /// with the executor's list of live tasks, which its diagnosis reads.
    pub(crate) ready: Option<Arc<AtomicU64>>,
    /// The executor that spawned it, for as long as the cell is allocated.
    pub(crate) owner: Arc<dyn Owner>,
}

impl CellMeta {
    pub(crate) fn new(id: TaskId, ready: Option<Arc<AtomicU64>>, owner: Arc<dyn Owner>) -> Self {
        Self {
            id,
            cancel: AtomicBool::new(false),
            ready,
            owner,
        }
    }

    /// Whether the task's handle cancelled it.
    #[inline]
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Acquire)
    }
}

/// A cell's output: dropped, if nobody took it, with its destructor's
/// panic caught (invariant 3).
pub(crate) struct Quiet<T>(Option<T>);

impl<T> Quiet<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(Some(value))
    }

    fn take(mut self) -> Option<T> {
        self.0.take()
    }
}

impl<T> Drop for Quiet<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            drop_quietly(value);
        }
    }
}

/// The awaiting task's waker as the cell holds it: woken and dropped with
/// their panics caught (invariant 3). A panic in a waker is the waker's
/// owner's fault, and the task being awaited has ended well all the same.
struct QuietWaker(Option<Waker>);

impl Wake for QuietWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(waker) = &self.0
            && let Err(payload) = catch_unwind(AssertUnwindSafe(|| waker.wake_by_ref()))
        {
            drop_quietly(payload);
        }
    }
}

impl Drop for QuietWaker {
    fn drop(&mut self) {
        if let Some(waker) = self.0.take() {
            drop_quietly(waker);
        }
    }
}

/// The cell's own handle, with what its output is.
pub(crate) type Cell<T> = async_task::Task<Quiet<Result<T, JoinError>>, CellMeta>;

/// The handle's side of a task in its own cell.
pub(crate) struct CellHandle<T> {
    id: TaskId,
    /// Until the output is taken.
    task: Option<Cell<T>>,
    /// The task's waker: a cancellation wakes it so that its next poll
    /// drops it.
    waker: Waker,
    /// The waker last given to the cell for the awaiting task (the
    /// awaiter's own, and the [`QuietWaker`] around it), reused while the
    /// awaiter's stays the same.
    awaiter: Option<(Waker, Waker)>,
}

impl<T> CellHandle<T> {
    pub(crate) fn new(task: Cell<T>, waker: Waker) -> Self {
        Self {
            id: task.metadata().id,
            task: Some(task),
            waker,
            awaiter: None,
        }
    }

    pub(crate) fn id(&self) -> TaskId {
        self.id
    }

    pub(crate) fn cancel(&self) -> bool {
        let Some(task) = &self.task else {
            return false;
        };
        let meta = task.metadata();
        if meta.is_cancelled() {
            return true;
        }
        if task.is_finished() {
            return false;
        }
        meta.cancel.store(true, Ordering::Release);
        meta.owner.cancelled_one();
        self.waker.wake_by_ref();
        true
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(async_task::Task::is_finished)
    }

    /// The output, the cancellation applied (invariant 2), once.
    fn settle(&mut self, output: Result<T, JoinError>) -> Result<T, JoinError> {
        let cancelled = self
            .task
            .take()
            .is_some_and(|task| task.metadata().is_cancelled());
        match output {
            Ok(value) if cancelled => {
                drop_quietly(value);
                Err(JoinError::Cancelled)
            }
            other => other,
        }
    }

    pub(crate) fn poll_output(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        let Some(task) = self.task.as_mut() else {
            panic!("dinah: JoinHandle polled after its result was handed out");
        };
        // A finished cell keeps no waker: only a pending one needs the
        // quiet wrapper.
        let given = cx.waker();
        let quiet = match &self.awaiter {
            _ if task.is_finished() => given,
            Some((theirs, ours)) if theirs.will_wake(given) => ours,
            _ => {
                let ours = Waker::from(Arc::new(QuietWaker(Some(given.clone()))));
                &self.awaiter.insert((given.clone(), ours)).1
            }
        };
        let mut quiet_cx = Context::from_waker(quiet);
        // Invariant 1: a cell closed without an output reads as cancelled.
        match catch_unwind(AssertUnwindSafe(|| Pin::new(task).poll(&mut quiet_cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                let output = output.take().unwrap_or(Err(JoinError::Cancelled));
                Poll::Ready(self.settle(output))
            }
            Err(payload) => {
                drop_quietly(payload);
                Poll::Ready(self.settle(Err(JoinError::Cancelled)))
            }
        }
    }

    pub(crate) fn try_take(&mut self) -> Option<Result<T, JoinError>> {
        if !self.task.as_ref()?.is_finished() {
            return None;
        }
        match self.poll_output(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(output) => Some(output),
            Poll::Pending => None,
        }
    }

    /// Lets the task run on with nobody to read its output.
    pub(crate) fn detach(&mut self) {
        if let Some(task) = self.task.take() {
            task.detach();
        }
    }
}
