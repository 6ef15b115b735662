//! [`BoundedQueue`]: a FIFO queue whose capacity is chosen at run time.
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::fmt;
use std::num::NonZeroUsize;

use dinah_core::queue::{FifoQueue, QueuePushError};

use super::capacity::{CapacityError, reserve};

/// A FIFO queue of at most `capacity` items, with the capacity chosen at run time.
///
/// The hosted counterpart of [`TaskQueue`](dinah_core::TaskQueue), on a
/// `VecDeque` whose storage is reserved once, at construction. It implements
/// [`FifoQueue`], so [`drain`](dinah_core::queue::drain),
/// [`run_until_empty`](super::run_until_empty),
/// [`run_parallel`](super::run_parallel) and
/// [`WorkerPool::run`](crate::pool::WorkerPool::run) take it.
///
/// # Guarantees
///
/// - FIFO: [`pop`](Self::pop) returns items in push order.
/// - A full queue refuses [`try_push`](Self::try_push) with
///   [`QueuePushError::Full`] holding the original item, and is unchanged.
/// - Pushing within capacity never reallocates.
///
/// # What it does not do
///
/// It is not synchronized (`&mut self` for every change) and never runs what
/// it holds.
///
/// ```
/// use dinah::queue::{BoundedQueue, CapacityError, QueuePushError};
///
/// assert_eq!(BoundedQueue::<u8>::new(0).unwrap_err(), CapacityError::Zero);
///
/// let mut queue = BoundedQueue::new(1)?;
/// queue.try_push('a').unwrap();
/// assert_eq!(queue.try_push('b'), Err(QueuePushError::Full('b')));
/// assert_eq!(queue.pop(), Some('a'));
/// # Ok::<(), CapacityError>(())
/// ```
pub struct BoundedQueue<T> {
    items: VecDeque<T>,
    capacity: NonZeroUsize,
}

impl<T> BoundedQueue<T> {
    /// An empty queue holding at most `capacity` items; storage for all of
    /// them is reserved now, so pushing within capacity never allocates.
    ///
    /// # Errors
    ///
    /// [`CapacityError::Zero`] when `capacity` is zero;
    /// [`CapacityError::Allocation`] when storage for `capacity` items cannot
    /// be reserved (nothing is allocated then, and the process goes on).
    pub fn new(capacity: usize) -> Result<Self, CapacityError> {
        let (capacity, items) = reserve(capacity)?;
        Ok(Self { items, capacity })
    }

    /// Appends `item` at the back.
    ///
    /// # Errors
    ///
    /// Returns [`QueuePushError::Full`] with `item`, leaving the queue
    /// unchanged, when it already holds `capacity` items.
    pub fn try_push(&mut self, item: T) -> Result<(), QueuePushError<T>> {
        if self.is_full() {
            return Err(QueuePushError::Full(item));
        }
        self.items.push_back(item);
        Ok(())
    }

    /// Removes every item at once, oldest first, leaving the queue empty
    /// with the same capacity (its storage is reallocated on the next push).
    pub(crate) fn take_all(&mut self) -> VecDeque<T> {
        std::mem::take(&mut self.items)
    }

    /// Removes and returns the oldest item, or `None` when empty.
    pub fn pop(&mut self) -> Option<T> {
        self.items.pop_front()
    }

    /// How many items are queued.
    #[must_use]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no item is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Whether the queue holds `capacity` items.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.items.len() == self.capacity.get()
    }

    /// The capacity chosen at construction, never zero.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity.get()
    }
}

impl<T> FifoQueue for BoundedQueue<T> {
    type Item = T;

    fn try_push(&mut self, item: T) -> Result<(), QueuePushError<T>> {
        BoundedQueue::try_push(self, item)
    }

    fn pop(&mut self) -> Option<T> {
        BoundedQueue::pop(self)
    }

    fn len(&self) -> usize {
        BoundedQueue::len(self)
    }

    fn capacity(&self) -> usize {
        BoundedQueue::capacity(self)
    }
}

impl<T> fmt::Debug for BoundedQueue<T> {
    /// Shows the fill level only, so closures can be queued.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundedQueue")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_capacity_is_a_typed_error() {
        assert_eq!(BoundedQueue::<()>::new(0).unwrap_err(), CapacityError::Zero);
        assert_eq!(
            CapacityError::Zero.to_string(),
            "capacity must be at least 1"
        );
    }

    #[test]
    fn a_capacity_whose_size_overflows_is_a_typed_error() {
        let error = BoundedQueue::<[u8; 16]>::new(usize::MAX).unwrap_err();
        assert_eq!(
            error,
            CapacityError::Allocation {
                requested: usize::MAX,
                item_size: 16
            }
        );
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_capacity_the_allocator_refuses_is_a_typed_error() {
        if cfg!(miri) {
            // Miri stops the program on an allocation it cannot serve
            // instead of returning null, so this path cannot run there.
            std::eprintln!("skipped under Miri: an allocator refusal halts the interpreter");
            return;
        }
        // 2^57 items of 8 bytes = 2^60 bytes: a valid layout that no 64-bit
        // address space can map, so the allocator itself refuses it.
        let requested = 1usize << 57;
        let error = BoundedQueue::<u64>::new(requested).unwrap_err();
        assert_eq!(
            error,
            CapacityError::Allocation {
                requested,
                item_size: 8
            }
        );
        assert_eq!(
            error.to_string(),
            format!("could not reserve storage for {requested} items of 8 bytes each")
        );
    }

    #[test]
    fn fifo_with_rejection_and_reuse() {
        let mut queue = BoundedQueue::new(2).unwrap();
        assert!(queue.is_empty());
        queue.try_push(1).unwrap();
        queue.try_push(2).unwrap();
        assert!(queue.is_full());
        assert_eq!(queue.try_push(3).unwrap_err().into_inner(), 3);
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.pop(), Some(1));
        queue.try_push(3).unwrap();
        assert_eq!(
            (queue.pop(), queue.pop(), queue.pop()),
            (Some(2), Some(3), None)
        );
        assert_eq!(queue.capacity(), 2);
    }

    #[test]
    fn pushing_within_capacity_does_not_reallocate() {
        let mut queue = BoundedQueue::new(100).unwrap();
        let reserved = queue.items.capacity();
        for n in 0..100 {
            queue.try_push(n).unwrap();
        }
        assert_eq!(queue.items.capacity(), reserved);
    }
}
