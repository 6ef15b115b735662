//! Bounded FIFO queues of closures and running them: the [`FifoQueue`]
//! trait, the fixed-capacity [`TaskQueue`], and [`run_next`] and [`drain`],
//! which run what a queue holds on the caller's thread. (`dinah-std` adds
//! `BoundedQueue`, `run_until_empty` and `run_parallel`.)
#![forbid(unsafe_code)]

use core::fmt;

use heapless::Deque;

/// A bounded queue refused an item.
///
/// Every variant carries the refused item, so a task that was not accepted is
/// always handed back to the caller, never dropped.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QueuePushError<T> {
    /// The queue was at capacity. The queue is unchanged.
    Full(T),
}

impl<T> QueuePushError<T> {
    /// Gives back the item that was not queued.
    #[must_use]
    pub fn into_inner(self) -> T {
        match self {
            Self::Full(item) => item,
        }
    }
}

impl<T> fmt::Debug for QueuePushError<T> {
    /// Does not require `T: Debug`, so closures can be queued and unwrapped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
        }
    }
}

impl<T> fmt::Display for QueuePushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("queue is full; the item was handed back"),
        }
    }
}

impl<T> core::error::Error for QueuePushError<T> {}

/// A bounded, single-owner FIFO queue.
///
/// [`run_next`] and [`drain`] take any `FifoQueue`, so the fixed-capacity
/// [`TaskQueue`] here and a hosted queue with a run-time capacity run the
/// same way.
///
/// # Contract for implementors
///
/// - [`pop`](Self::pop) returns items in the order [`try_push`](Self::try_push)
///   accepted them, each item once.
/// - `try_push` on a queue holding `capacity()` items returns
///   [`QueuePushError::Full`] with the item and leaves the queue unchanged.
/// - [`len`](Self::len) is the number of items `pop` would return before
///   `None`; `len() <= capacity()` always, and `capacity()` never changes.
///
/// # What dinah does when an implementation breaks the contract
///
/// This is a safe trait, so a wrong implementation can make dinah misbehave
/// but never causes undefined behaviour. dinah trusts `pop`, not `len`, for
/// what runs:
///
/// - The drains run exactly the items `pop` returns until it returns `None`,
///   whatever `len` said.
/// - `len` only sizes things: how many worker threads
///   `run_parallel` (in `dinah-std`) starts, and how much result storage is
///   reserved up front, capped so that a huge `len` (up to `usize::MAX`)
///   neither aborts on allocation nor overflows. A `len` that is too small
///   starts fewer workers; a `len` of zero makes `run_parallel` treat the
///   queue as empty and remove nothing, so its items stay queued.
/// - A `pop` that panics is treated as a broken queue: the drain stops
///   removing and the panic reaches the caller (see each drain's `# Panics`).
pub trait FifoQueue {
    /// What the queue holds, typically a task closure or `fn` pointer.
    type Item;

    /// Appends `item` at the back.
    ///
    /// # Errors
    ///
    /// Returns [`QueuePushError::Full`] with `item` when the queue is full.
    fn try_push(&mut self, item: Self::Item) -> Result<(), QueuePushError<Self::Item>>;

    /// Removes and returns the oldest item, or `None` when empty.
    fn pop(&mut self) -> Option<Self::Item>;

    /// How many items are queued.
    fn len(&self) -> usize;

    /// The most items the queue can hold at once.
    fn capacity(&self) -> usize;

    /// Whether no item is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the next `try_push` would be refused.
    fn is_full(&self) -> bool {
        self.len() >= self.capacity()
    }
}

impl<Q: FifoQueue + ?Sized> FifoQueue for &mut Q {
    type Item = Q::Item;

    fn try_push(&mut self, item: Self::Item) -> Result<(), QueuePushError<Self::Item>> {
        (**self).try_push(item)
    }

    fn pop(&mut self) -> Option<Self::Item> {
        (**self).pop()
    }

    fn len(&self) -> usize {
        (**self).len()
    }

    fn capacity(&self) -> usize {
        (**self).capacity()
    }

    fn is_empty(&self) -> bool {
        (**self).is_empty()
    }

    fn is_full(&self) -> bool {
        (**self).is_full()
    }
}

/// A FIFO queue of at most `N` items, stored inline with no heap.
///
/// Built on [`heapless::Deque`]. `const fn new()`, so it can be a `static`
/// (behind the caller's own lock) or live on the stack.
///
/// # Guarantees
///
/// - FIFO: [`pop`](Self::pop) returns items in push order.
/// - A full queue refuses [`try_push`](Self::try_push) with
///   [`QueuePushError::Full`] holding the original item, and is unchanged.
/// - `N == 0` does not compile.
///
/// # What it does not do
///
/// It is not synchronized (`&mut self` for every change) and it never runs
/// what it holds: [`run_next`] and [`drain`] do.
///
/// ```
/// use dinah::queue::{QueuePushError, TaskQueue};
///
/// let mut queue: TaskQueue<u8, 2> = TaskQueue::new();
/// queue.try_push(1).unwrap();
/// queue.try_push(2).unwrap();
/// assert_eq!(queue.try_push(3), Err(QueuePushError::Full(3)));
/// assert_eq!(queue.pop(), Some(1));
/// queue.try_push(3).unwrap();
/// assert_eq!((queue.pop(), queue.pop(), queue.pop()), (Some(2), Some(3), None));
/// ```
///
/// A queue of capacity zero is refused at compile time:
///
/// ```compile_fail,E0080
/// let queue = dinah::TaskQueue::<fn(), 0>::new();
/// ```
pub struct TaskQueue<T, const N: usize> {
    items: Deque<T, N>,
}

impl<T, const N: usize> TaskQueue<T, N> {
    /// An empty queue. `N` must be at least 1; zero fails to compile.
    #[must_use]
    pub const fn new() -> Self {
        const { assert!(N > 0, "a TaskQueue needs a capacity of at least 1") };
        Self {
            items: Deque::new(),
        }
    }

    /// Appends `item` at the back.
    ///
    /// # Errors
    ///
    /// Returns [`QueuePushError::Full`] with `item`, leaving the queue
    /// unchanged, when it already holds `N` items.
    pub fn try_push(&mut self, item: T) -> Result<(), QueuePushError<T>> {
        self.items.push_back(item).map_err(QueuePushError::Full)
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

    /// Whether the queue holds `N` items.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.items.is_full()
    }

    /// The fixed capacity, `N`.
    #[must_use]
    pub const fn capacity(&self) -> usize {
        N
    }
}

impl<T, const N: usize> FifoQueue for TaskQueue<T, N> {
    type Item = T;

    fn try_push(&mut self, item: T) -> Result<(), QueuePushError<T>> {
        TaskQueue::try_push(self, item)
    }

    fn pop(&mut self) -> Option<T> {
        TaskQueue::pop(self)
    }

    fn len(&self) -> usize {
        TaskQueue::len(self)
    }

    fn capacity(&self) -> usize {
        N
    }

    fn is_empty(&self) -> bool {
        TaskQueue::is_empty(self)
    }

    fn is_full(&self) -> bool {
        TaskQueue::is_full(self)
    }
}

impl<T, const N: usize> Default for TaskQueue<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> fmt::Debug for TaskQueue<T, N> {
    /// Shows the fill level only, so closures can be queued.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskQueue")
            .field("len", &self.len())
            .field("capacity", &N)
            .finish()
    }
}

/// Removes the oldest task of `queue` and runs it now, on this thread;
/// `None` when the queue is empty.
///
/// The task is removed before it runs, and it runs only after the queue is
/// no longer borrowed for the removal. Its result comes back unchanged: a
/// task's error is just another result.
///
/// # Panics
///
/// A panicking task unwinds straight to the caller; it has already been
/// removed, and every task behind it is still queued, in order.
///
/// ```
/// use dinah::queue::{TaskQueue, run_next};
///
/// let mut queue: TaskQueue<fn() -> Result<u8, &'static str>, 2> = TaskQueue::new();
/// queue.try_push(|| Err("bad")).unwrap();
/// assert_eq!(run_next(&mut queue), Some(Err("bad")));
/// assert_eq!(run_next(&mut queue), None);
/// ```
pub fn run_next<Q, F, R>(queue: &mut Q) -> Option<R>
where
    Q: FifoQueue<Item = F> + ?Sized,
    F: FnOnce() -> R,
{
    let task = queue.pop()?;
    Some(task())
}

/// Runs every queued task of `queue`, oldest first, one at a time on this
/// thread, handing each result to `sink` with its FIFO index; returns how
/// many tasks ran.
///
/// The queue stays borrowed for the whole drain, so nothing can be queued
/// while it runs; it is empty on a normal return. Nothing allocates. No
/// background progress, no threads, no priorities beyond FIFO, no retry.
///
/// # Panics
///
/// As [`run_next`]: the panicking task has been removed, every task behind
/// it is still queued, in order.
///
/// ```
/// use dinah::queue::{TaskQueue, drain};
///
/// let mut queue: TaskQueue<fn() -> Result<u8, u8>, 3> = TaskQueue::new();
/// queue.try_push(|| Ok(1)).unwrap();
/// queue.try_push(|| Err(2)).unwrap();
/// queue.try_push(|| Ok(3)).unwrap();
///
/// let mut seen = [Ok(0); 3];
/// assert_eq!(drain(&mut queue, |i, r| seen[i] = r), 3);
/// assert_eq!(seen, [Ok(1), Err(2), Ok(3)]);
/// ```
pub fn drain<Q, F, R, S>(queue: &mut Q, mut sink: S) -> usize
where
    Q: FifoQueue<Item = F> + ?Sized,
    F: FnOnce() -> R,
    S: FnMut(usize, R),
{
    let mut ran = 0;
    while let Some(result) = run_next(queue) {
        sink(ran, result);
        ran += 1;
    }
    ran
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::RefCell;
    use std::panic::{self, AssertUnwindSafe};
    use std::string::ToString;
    use std::vec::Vec;

    #[test]
    fn empty_queue_reports_empty() {
        let mut queue = TaskQueue::<u32, 3>::new();
        assert!(queue.is_empty());
        assert!(!queue.is_full());
        assert_eq!((queue.len(), queue.capacity()), (0, 3));
        assert_eq!(queue.pop(), None);
    }

    #[test]
    fn full_queue_hands_the_item_back_and_is_unchanged() {
        let mut queue = TaskQueue::<&str, 2>::new();
        queue.try_push("a").unwrap();
        queue.try_push("b").unwrap();
        let error = queue.try_push("c").unwrap_err();
        assert_eq!(error.into_inner(), "c");
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.pop(), Some("a"));
        assert_eq!(queue.pop(), Some("b"));
    }

    #[test]
    fn closures_are_returned_intact_and_still_callable() {
        let mut queue = TaskQueue::<fn() -> u8, 1>::new();
        queue.try_push(|| 1).unwrap();
        let refused = queue.try_push(|| 2).unwrap_err().into_inner();
        assert_eq!(refused(), 2);
        assert_eq!(
            QueuePushError::Full(refused).to_string(),
            "queue is full; the item was handed back"
        );
    }

    #[test]
    fn trait_and_inherent_methods_agree() {
        fn fill<Q: FifoQueue<Item = u8>>(queue: &mut Q) -> u8 {
            let mut n = 0;
            while queue.try_push(n).is_ok() {
                n += 1;
            }
            n
        }
        let mut queue = TaskQueue::<u8, 5>::new();
        assert_eq!(fill(&mut queue), 5);
        assert!(FifoQueue::is_full(&queue));
        assert_eq!(FifoQueue::capacity(&queue), 5);
        assert_eq!(FifoQueue::pop(&mut queue), Some(0));
        assert_eq!(FifoQueue::len(&queue), 4);
    }
    type Log = RefCell<Vec<u32>>;

    #[test]
    fn dispatch_next_takes_the_oldest_task_once() {
        let log = Log::default();
        let mut queue: TaskQueue<_, 4> = TaskQueue::new();
        for n in 1..=3u32 {
            let log = &log;
            queue
                .try_push(move || {
                    log.borrow_mut().push(n);
                    n * 10
                })
                .unwrap_or_else(|_| unreachable!());
        }
        assert_eq!(run_next(&mut queue), Some(10));
        assert_eq!(queue.len(), 2);
        assert_eq!(*log.borrow(), [1]);
    }

    #[test]
    fn drain_runs_in_fifo_order_and_errors_do_not_stop_it() {
        let mut queue: TaskQueue<fn() -> Result<u32, u32>, 8> = TaskQueue::new();
        let tasks: [fn() -> Result<u32, u32>; 4] = [|| Ok(1), || Err(2), || Ok(3), || Err(4)];
        for task in tasks {
            queue.try_push(task).unwrap();
        }
        let mut results = Vec::new();
        let ran = drain(&mut queue, |index, result| results.push((index, result)));
        assert_eq!(ran, 4);
        assert_eq!(results, [(0, Ok(1)), (1, Err(2)), (2, Ok(3)), (3, Err(4))]);
        assert!(queue.is_empty());
    }

    #[test]
    fn draining_an_empty_queue_runs_nothing() {
        let mut queue: TaskQueue<fn(), 1> = TaskQueue::new();
        assert_eq!(drain(&mut queue, |_, ()| unreachable!()), 0);
        assert_eq!(run_next(&mut queue), None);
    }

    #[test]
    fn a_panic_unwinds_and_leaves_later_tasks_queued_in_order() {
        let mut queue: TaskQueue<fn() -> u32, 4> = TaskQueue::new();
        let tasks: [fn() -> u32; 4] = [|| 1, || panic!("boom"), || 3, || 4];
        for task in tasks {
            queue.try_push(task).unwrap();
        }
        let mut results = Vec::new();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            drain(&mut queue, |_, r| results.push(r))
        }));
        assert!(outcome.is_err());
        assert_eq!(results, [1]);
        assert_eq!(queue.len(), 2);
        assert_eq!(drain(&mut queue, |_, _| {}), 2);
    }

    #[test]
    fn a_task_runs_once_and_its_error_comes_back_as_it_was() {
        #[derive(Debug, PartialEq)]
        struct Refused(u8);
        let calls = core::cell::Cell::new(0);
        let mut queue: TaskQueue<_, 2> = TaskQueue::new();
        let task = || {
            calls.set(calls.get() + 1);
            Err::<u8, _>(Refused(3))
        };
        queue.try_push(task).unwrap_or_else(|_| unreachable!());
        assert_eq!(run_next(&mut queue), Some(Err(Refused(3))));
        assert_eq!(calls.get(), 1);
    }
}
