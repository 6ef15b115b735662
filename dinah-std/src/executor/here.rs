//! Which executor runs on this thread right now, and its local ready list:
//! a wake made on the executor's own thread while it runs is queued here,
//! with no atomics, no push and no unpark.
#![forbid(unsafe_code)]

use std::cell::{Cell, RefCell};

/// This thread's running executor, if any, and its local ready list.
pub(super) struct Here {
    /// The executor running a tick or `block_on` on this thread right now
    /// (the address of its hub), or 0.
    running: Cell<usize>,
    /// That executor's tasks woken on this thread while it runs, oldest
    /// first: its local ready list, which needs no atomics.
    local: RefCell<Vec<u32>>,
}

#[cfg(not(loom))]
std::thread_local! {
    static HERE: Here = const {
        Here {
            running: Cell::new(0),
            local: RefCell::new(Vec::new()),
        }
    };
}

// Loom's threads share one OS thread, so they need loom's thread-locals.
#[cfg(loom)]
loom::thread_local! {
    static HERE: Here = Here {
        running: Cell::new(0),
        local: RefCell::new(Vec::new()),
    };
}

/// Whether the executor at `address` runs on this thread right now (never
/// while the thread's thread-locals are being destroyed).
#[inline]
pub(super) fn is_running_here(address: usize) -> bool {
    HERE.try_with(|here| here.running.get())
        .is_ok_and(|running| running == address)
}

/// Queues `index` on this thread's local list if the executor at `address`
/// is the one running here; otherwise hands it back. A thread whose
/// thread-locals are being destroyed runs no executor: the index is handed
/// back.
#[inline]
pub(super) fn queue_here(address: usize, index: u32) -> Result<(), u32> {
    HERE.try_with(|here| {
        if here.running.get() == address {
            here.local.borrow_mut().push(index);
            Ok(())
        } else {
            Err(index)
        }
    })
    .unwrap_or(Err(index))
}

/// One look at this thread for a wake: whether the executor at `address`
/// runs here, and `mark`'s answer given that; when it does and `mark` says
/// the task is to be queued (`Ok(true)`), `index` is put on the local list.
/// A thread whose thread-locals are being destroyed is never "here".
#[inline]
pub(super) fn mark_here<E>(
    address: usize,
    index: u32,
    mark: impl Fn(bool) -> Result<bool, E>,
) -> (bool, Result<bool, E>) {
    match HERE.try_with(|local| {
        let here = local.running.get() == address;
        let marked = mark(here);
        if here && matches!(marked, Ok(true)) {
            local.local.borrow_mut().push(index);
        }
        (here, marked)
    }) {
        Ok(seen) => seen,
        Err(_) => (false, mark(false)),
    }
}

/// Marks an executor as running on this thread until dropped, with its local
/// ready list installed; then restores whatever ran before (executors may
/// nest on one thread).
pub(super) struct RunningHere<'r> {
    previous: usize,
    local: &'r RefCell<Vec<u32>>,
}

impl<'r> RunningHere<'r> {
    /// Enters the executor at `address`, whose local list is kept in
    /// `local` while it does not run.
    ///
    /// # Panics
    ///
    /// When called while this thread's thread-locals are being destroyed
    /// (an executor cannot run from a thread-local's destructor).
    #[inline]
    pub(super) fn enter(address: usize, local: &'r RefCell<Vec<u32>>) -> Self {
        let previous = HERE.with(|here| {
            here.local.swap(local);
            here.running.replace(address)
        });
        Self { previous, local }
    }

    /// Swaps the tasks woken locally since the last call into `ready` (which
    /// the caller has emptied; its storage is kept for the next round).
    #[inline]
    pub(super) fn swap_local(&self, ready: &mut Vec<u32>) {
        HERE.with(|here| std::mem::swap(&mut *here.local.borrow_mut(), ready));
    }

    /// Whether a task was woken locally since the last swap.
    #[inline]
    pub(super) fn has_local(&self) -> bool {
        HERE.with(|here| !here.local.borrow().is_empty())
    }
}

impl Drop for RunningHere<'_> {
    #[inline]
    fn drop(&mut self) {
        HERE.with(|here| {
            here.running.set(self.previous);
            here.local.swap(self.local);
        });
    }
}

/// Names the calling thread, for a core
/// [`ReadyQueue::with_context`](dinah_core::ReadyQueue::with_context) on a
/// host: the address of a thread-local of this thread, distinct between
/// threads alive at once and never 0. With it, a core executor counts a
/// wake from another thread that lands during a poll as woken from
/// outside, not as the poll's own.
///
/// ```
/// use dinah::ReadyQueue;
/// use dinah::executor::thread_context;
///
/// static QUEUE: ReadyQueue<4> = ReadyQueue::new().with_context(thread_context);
/// # let _ = &QUEUE;
/// ```
///
/// Not promised: that a thread that ended and one made later get
/// different names (an ended thread's storage may be reused).
#[must_use]
pub fn thread_context() -> usize {
    std::thread_local! {
        static NAME: u8 = const { 0 };
    }
    NAME.with(|name| std::ptr::from_ref(name) as usize)
}
