//! The bounded ingress through which [`Spawner`](super::Spawner)s hand
//! `Send` futures to an executor from other threads: each waiting future is
//! a [`Submission`] until the executor takes it in, or drops it at
//! shutdown.
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;

use dinah_core::TaskId;
use dinah_core::task::TaskOutput;

use super::resolver::{AbortNote, BoxedTask, Resolve, wrap};
use crate::primitives::{AtomicBool, Mutex, Ordering, lock};
use crate::task::{Join, JoinError};
use crate::unwind::{drop_quietly, panic_text};

/// A future submitted through the ingress, with its join, not yet taken in.
pub(super) trait Submission: Send {
    /// The task's id.
    fn id(&self) -> TaskId;
    /// When it was submitted, in the telemetry clock's nanoseconds (0
    /// without telemetry).
    fn submitted_at(&self) -> u64;
    /// The task's name, if it was given one.
    fn name(&self) -> Option<&'static str>;
    /// Hands the future (wrapped) and its join to the executor.
    /// `note` is the slot's abort note, for the task's resolver.
    fn admit<'a>(
        self: Box<Self>,
        note: Rc<AbortNote<'a>>,
    ) -> (BoxedTask<'a>, Arc<dyn Resolve + Send + Sync>);
}

/// One submitted future and its join.
pub(super) struct Remote<F: Future> {
    pub(super) future: Option<F>,
    pub(super) join: Arc<Join<F::Output>>,
    pub(super) submitted_at: u64,
    pub(super) name: Option<&'static str>,
}

impl<F> Submission for Remote<F>
where
    F: Future + Send + 'static,
    F::Output: TaskOutput + Send + 'static,
{
    fn id(&self) -> TaskId {
        self.join.id()
    }

    fn submitted_at(&self) -> u64 {
        self.submitted_at
    }

    fn name(&self) -> Option<&'static str> {
        self.name
    }

    fn admit<'a>(
        mut self: Box<Self>,
        note: Rc<AbortNote<'a>>,
    ) -> (BoxedTask<'a>, Arc<dyn Resolve + Send + Sync>) {
        let future = self.future.take().expect("a submission is admitted once");
        let join = Arc::clone(&self.join);
        (Box::pin(wrap(future, Arc::clone(&join), note)), join)
    }
}

impl<F: Future> Drop for Remote<F> {
    /// A submission dropped before the executor took it in (shutdown):
    /// the future is dropped first, then its handle resolves `Cancelled`,
    /// or `Panicked` if the future's destructor panicked.
    fn drop(&mut self) {
        if let Some(future) = self.future.take() {
            let why = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                drop(future);
            })) {
                Ok(()) => JoinError::Cancelled,
                Err(payload) => {
                    let why = JoinError::Panicked(panic_text(&*payload));
                    drop_quietly(payload);
                    why
                }
            };
            self.join.abort(why);
        }
    }
}

struct Queue {
    items: VecDeque<Box<dyn Submission>>,
    open: bool,
}

/// Why the ingress refused a submission.
pub(super) enum Refused {
    Full,
    Closed,
}

/// The bounded FIFO of submissions, under one lock that never runs user
/// code, with a flag the executor reads without the lock.
pub(super) struct Ingress {
    queue: Mutex<Queue>,
    /// Something waits.
    pending: AtomicBool,
    capacity: usize,
}

impl Ingress {
    /// `items` has room reserved for `capacity` submissions.
    pub(super) fn new(capacity: usize, items: VecDeque<Box<dyn Submission>>) -> Self {
        Self {
            queue: Mutex::new(Queue { items, open: true }),
            pending: AtomicBool::new(false),
            capacity,
        }
    }

    /// How many submissions it holds at most.
    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Submissions waiting, and the capacity.
    pub(super) fn fill(&self) -> (usize, usize) {
        (lock(&self.queue).items.len(), self.capacity)
    }

    /// Whether a submission waits.
    #[inline]
    pub(super) fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Queues the submission `make` builds, if there is room and the
    /// ingress is open; `make` runs under the lock, before anything is
    /// queued (a telemetry hook's panic in it queues nothing).
    pub(super) fn push(&self, make: impl FnOnce() -> Box<dyn Submission>) -> Result<(), Refused> {
        let mut queue = lock(&self.queue);
        if !queue.open {
            return Err(Refused::Closed);
        }
        if queue.items.len() >= self.capacity {
            return Err(Refused::Full);
        }
        queue.items.push_back(make());
        self.pending.store(true, Ordering::Release);
        Ok(())
    }

    /// Takes up to `room` submissions, oldest first.
    pub(super) fn take(&self, room: usize) -> Vec<Box<dyn Submission>> {
        if !self.has_pending() || room == 0 {
            return Vec::new();
        }
        let mut queue = lock(&self.queue);
        let count = room.min(queue.items.len());
        let taken: Vec<_> = queue.items.drain(..count).collect();
        self.pending
            .store(!queue.items.is_empty(), Ordering::Release);
        taken
    }

    /// Refuses new submissions from now on, keeping those that wait (a
    /// draining shutdown takes them in).
    pub(super) fn seal(&self) {
        lock(&self.queue).open = false;
    }

    /// Closes the ingress for good and returns what waited in it.
    pub(super) fn close(&self) -> Vec<Box<dyn Submission>> {
        let mut queue = lock(&self.queue);
        queue.open = false;
        self.pending.store(false, Ordering::Release);
        queue.items.drain(..).collect()
    }
}
