//! [`GlobalQueue`]: a multi-thread runtime's global run queue, where
//! spawns and wakes from outside its workers land, and where a worker's
//! full deque spills half of its tasks.
//!
//! It is a `VecDeque` behind a mutex, with its length beside it in an
//! atomic so that a look at an empty queue takes no lock. It replaces
//! crossbeam's `Injector`, which is lock-free but allocates a block for
//! every 63 tasks pushed and frees it through its epoch collector: with
//! it, a runtime made about 1.005 allocations per spawned task where the
//! goal (and tokio) is one. This queue keeps its storage, so a runtime in
//! a steady state allocates nothing here; a spill moves half a deque in
//! one lock, and a worker takes a batch in one lock. Its cost beside the
//! injector is recorded in `artifacts/benchmarks/` (the `multi` bench, run
//! with each).
//!
//! The lock is held only to move pointers, never while user code runs.
//! At 64 workers it is the one lock every worker may meet: a worker takes
//! it only when its own deque is empty (and after stealing found nothing)
//! or every `GLOBAL_INTERVAL`th turn when the queue is not empty, and for
//! at most one batch. tokio's injection queue is a mutex too.
//!
//! # Invariants
//!
//! 1. `len` is the queue's length, written under the lock after every
//!    change: a reader without the lock may see an older length, never one
//!    of a change not yet made. A push is followed by the caller's
//!    `wake_one` (see `shared.rs`), so a worker that read 0 just before is
//!    woken.
//! 2. Tasks leave in the order they came, a batch as a whole.
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_deque::Worker;

use super::shared::Runnable;
use crate::primitives::lock_std;

/// Above this many slots an emptied queue gives its storage back (down to
/// [`KEPT`]): a burst of that many queued tasks does not hold its memory
/// for ever, and the bursts below it cost no allocation once the queue has
/// grown to them.
const SHRINK_ABOVE: usize = 1 << 16;
/// The slots an emptied queue keeps.
const KEPT: usize = 1 << 10;

/// The global run queue (see the module docs), of tasks (`T` is anything
/// else only in its tests).
pub(super) struct GlobalQueue<T = Runnable> {
    queue: Mutex<VecDeque<T>>,
    len: AtomicUsize,
    /// [`SHRINK_ABOVE`], but for the tests.
    shrink_above: usize,
}

impl<T> GlobalQueue<T> {
    pub(super) fn new() -> Self {
        Self::shrinking_above(SHRINK_ABOVE)
    }

    fn shrinking_above(shrink_above: usize) -> Self {
        Self {
            queue: Mutex::new(VecDeque::new()),
            len: AtomicUsize::new(0),
            shrink_above,
        }
    }

    /// Tasks queued now (invariant 1).
    pub(super) fn len(&self) -> usize {
        self.len.load(Ordering::SeqCst)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queues one task at the back.
    pub(super) fn push(&self, runnable: T) {
        let mut queue = lock_std(&self.queue);
        queue.push_back(runnable);
        self.len.store(queue.len(), Ordering::SeqCst);
    }

    /// Queues `batch`, in its order, at the back, in one lock.
    pub(super) fn push_batch(&self, batch: impl IntoIterator<Item = T>) {
        let mut queue = lock_std(&self.queue);
        queue.extend(batch);
        self.len.store(queue.len(), Ordering::SeqCst);
    }

    /// Takes the oldest task.
    pub(super) fn pop(&self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let mut queue = lock_std(&self.queue);
        let first = queue.pop_front();
        self.taken(&mut queue);
        first
    }

    /// Takes the oldest task, and up to `more` after it into `local`, in
    /// one lock.
    pub(super) fn pop_batch(&self, more: usize, local: &Worker<T>) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let mut queue = lock_std(&self.queue);
        let first = queue.pop_front();
        if first.is_some() {
            let more = more.min(queue.len());
            for runnable in queue.drain(..more) {
                local.push(runnable);
            }
        }
        self.taken(&mut queue);
        first
    }

    /// Writes the length after a take, and gives storage back if the
    /// queue emptied after a large burst.
    fn taken(&self, queue: &mut VecDeque<T>) {
        if queue.is_empty() && queue.capacity() > self.shrink_above {
            queue.shrink_to(KEPT.min(self.shrink_above));
        }
        self.len.store(queue.len(), Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_leave_in_the_order_they_came_and_the_length_follows() {
        let queue = GlobalQueue::new();
        assert_eq!(queue.pop(), None);
        queue.push(1);
        queue.push_batch(2..=5);
        assert_eq!(queue.len(), 5);
        let local = Worker::new_fifo();
        assert_eq!(queue.pop_batch(2, &local), Some(1));
        assert_eq!(local.len(), 2);
        assert_eq!(local.pop(), Some(2));
        assert_eq!(local.pop(), Some(3));
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.pop_batch(10, &local), Some(4));
        assert_eq!(local.pop(), Some(5));
        assert_eq!(local.pop(), None);
        assert!(queue.is_empty());
        assert_eq!(queue.pop_batch(10, &local), None);
    }

    #[test]
    fn an_emptied_queue_gives_back_the_storage_of_a_large_burst_only() {
        const ABOVE: usize = 64;
        let queue = GlobalQueue::shrinking_above(ABOVE);
        queue.push_batch(0..ABOVE);
        while queue.pop().is_some() {}
        assert!(lock_std(&queue.queue).capacity() >= ABOVE);
        queue.push_batch(0..=ABOVE);
        assert!(lock_std(&queue.queue).capacity() > ABOVE);
        while queue.pop().is_some() {}
        assert!(lock_std(&queue.queue).capacity() <= ABOVE);
        assert!(queue.is_empty());
    }
}
