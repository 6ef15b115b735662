//! The heap-free [`Waker`] of the core executor: the vtable that enqueues a
//! task's identity into its [`ReadyQueue`], and nothing else.
//!
//! One of the two parts of `dinah-core` that use `unsafe` (see
//! [`fenced`](super)): building a `Waker` without a heap needs
//! [`Waker::from_raw`], and its vtable functions receive a raw pointer.
//! Everything else about a task (storage, polling, results, the queue's own
//! state) is safe code in the other files of `executor`.
//!
//! # Invariants
//!
//! 1. **The queue outlives every waker.** A waker's data pointer points at
//!    one `Cell` of a `ReadyQueue` reached through a `&'static` reference,
//!    so the memory it points at is never freed: a waker may outlive its
//!    task, its executor or the executor's run and still points at valid
//!    memory.
//! 2. **Provenance covers the whole queue.** Data pointers are derived from
//!    a pointer to the whole `ReadyQueue` (not from a reference to one cell),
//!    so stepping back from a cell to the queue's start stays in bounds.
//!    `ReadyQueue` is `repr(C)` with `cells` first, followed by `main`, so the
//!    cell with index `i` sits `i` cells after the queue's start, for
//!    `i <= N`.
//! 3. **Every cell knows its index.** `Cell::index` is written once, by
//!    `ReadyQueue::claim` (the first `AsyncExecutor::new` on the queue),
//!    and never changes after; `index <= N`. No waker exists before: wakers
//!    are made only by `with_waker`, which only the executor that claimed
//!    the queue calls, after `claim` returned. A waker reaches another
//!    thread or an interrupt handler only through a hand-off that orders
//!    it after its making (safe code cannot share a value without one), so
//!    every reader of the index is ordered after its write.
//! 4. **A cloned waker holds one reference on its cell's `refs` count**;
//!    dropping it gives the reference back. The count is exact: a clone that
//!    would take it past 32,768 panics and leaves the count as it was. The waker lent to a task during a poll holds none and is never
//!    dropped (it lives in a `ManuallyDrop`).
//! 5. **A slot is reused only when its previous task is over, its count is
//!    zero, and the consumer holds the claim on it.** The claim is the slot's
//!    `QUEUED` bit, set on a finished slot by exactly one party: the consumer,
//!    which reads the count after ending the task, or the drop that takes the
//!    count to zero, which reads the task's state after (and queues the slot
//!    for the consumer). Each of the two puts a sequentially consistent fence
//!    between its write and its read, so at least one sees the other's
//!    write, and the bit's read-modify-write lets only one of them win. So no
//!    waker of an old task can ever point at a new task in the same slot: a
//!    wake can only be stale (its task is over), never misdirected.
//! 6. **One consumer.** Only the executor that claimed the queue (at most one,
//!    ever: `ReadyQueue::claim`) takes entries off the wake stack, clears
//!    `QUEUED`, and changes a cell's lifecycle or generation. Wakers and
//!    [`ReadyQueue::cancel`], from any thread or interrupt, only set `QUEUED`,
//!    `CANCEL` and the wake flags and push.
//! 7. **A cell is on the wake stack at most once**: it is pushed only by the
//!    party that set `QUEUED`, and `QUEUED` is cleared only by the consumer
//!    after taking it off. So the stack never holds more than `N + 1`
//!    entries and a push never fails.
//!
//! What can go wrong here, and does not: a waker used after its executor is
//! gone only touches the `'static` queue (invariant 1); a stale wake cannot
//! poll another task's future (invariant 5); two consumers cannot race over
//! the stack (invariant 6).
#![deny(unsafe_op_in_unsafe_fn)]

use core::mem::ManuallyDrop;
use core::ptr;
use core::task::{RawWaker, RawWakerVTable, Waker};

use crate::atomic::{Ordering, fence};
use crate::executor::ReadyQueue;
use crate::executor::error::too_many_wakers;
use crate::executor::ready_queue::{Cell, REFS_LIMIT};
use crate::telemetry::Measure;

impl<const N: usize, C: Measure> ReadyQueue<N, C> {
    const VTABLE: RawWakerVTable = RawWakerVTable::new(
        Self::clone_waker,
        Self::wake_by_value,
        Self::wake_by_ref,
        Self::drop_waker,
    );

    /// Runs `poll` with the waker of slot `index` (`N` for the main future).
    /// The waker is lent, not owned: it holds no reference and is never
    /// dropped (invariant 4).
    pub(crate) fn with_waker<R>(&'static self, index: usize, poll: impl FnOnce(&Waker) -> R) -> R {
        let data = self.data_of(index);
        // SAFETY: `data` points at cell `index` of this `'static` queue with
        // provenance over the whole queue (invariants 1 and 2), which is
        // exactly what every function of `VTABLE` expects.
        let waker =
            ManuallyDrop::new(unsafe { Waker::from_raw(RawWaker::new(data, &Self::VTABLE)) });
        poll(&waker)
    }

    /// The waker data pointer of cell `index`: derived from the whole
    /// queue, pointing at the cell (invariant 2).
    fn data_of(&'static self, index: usize) -> *const () {
        debug_assert!(index <= N);
        ptr::from_ref(self)
            .cast::<Cell<C>>()
            .wrapping_add(index)
            .cast::<()>()
    }

    /// Recovers the queue, the cell and the cell's index from a waker's
    /// data pointer. The cell is the one the pointer points at, so a wake
    /// does not look it up again by index.
    ///
    /// # Safety
    ///
    /// `data` came from [`data_of`](Self::data_of) on a `ReadyQueue<N>` of
    /// this same `N`.
    unsafe fn from_data(data: *const ()) -> (&'static Self, &'static Cell<C>, usize) {
        let cell = data.cast::<Cell<C>>();
        // SAFETY: `cell` points at a live cell of a `'static` queue, which
        // is never freed (invariants 1 and 2); a cell is only ever shared
        // (its fields are atomics, or immutable), so a shared reference to
        // it for `'static` is sound.
        let cell_ref: &'static Cell<C> = unsafe { &*cell };
        let index = cell_ref.task.index() as usize;
        // SAFETY: the cell is `index` cells from the queue's start, and the
        // pointer's provenance covers the whole queue (invariants 2 and 3),
        // so stepping back lands on the queue's first byte.
        let queue = unsafe { &*cell.sub(index).cast::<Self>() };
        (queue, cell_ref, index)
    }

    unsafe fn clone_waker(data: *const ()) -> RawWaker {
        // SAFETY: `data` is a data pointer this vtable was built with.
        let (_, cell, _) = unsafe { Self::from_data(data) };
        let refs = &cell.refs;
        // One more reference (invariant 4). Relaxed, as for `Arc`: a clone
        // is made from a waker that already keeps the slot, or from the one
        // lent during a poll, before that poll returns.
        if refs.fetch_add(1, Ordering::Relaxed) >= REFS_LIMIT {
            refs.fetch_sub(1, Ordering::Relaxed);
            too_many_wakers();
        }
        RawWaker::new(data, &Self::VTABLE)
    }

    unsafe fn wake_by_ref(data: *const ()) {
        // SAFETY: `data` is a data pointer this vtable was built with.
        let (queue, cell, index) = unsafe { Self::from_data(data) };
        queue.wake_cell(cell, index);
    }

    unsafe fn wake_by_value(data: *const ()) {
        // SAFETY: the caller passes a waker it owns; waking then dropping it
        // is exactly what consuming it means.
        unsafe {
            Self::wake_by_ref(data);
            Self::drop_waker(data);
        }
    }

    unsafe fn drop_waker(data: *const ()) {
        // SAFETY: `data` is a data pointer this vtable was built with.
        let (queue, cell, index) = unsafe { Self::from_data(data) };
        // Give the reference back (invariant 4). The main future's cell is
        // never recycled.
        if cell.refs.fetch_sub(1, Ordering::Release) != 1 || index >= N {
            return;
        }
        // The last waker is gone. If the task is over, claim the slot and
        // queue it, so that the executor recycles it (invariant 5); the
        // fence pairs with the one in `claim_finished`.
        fence(Ordering::SeqCst);
        let word = cell.task.word();
        if word.is_live() || word.is_queued() || word.state().is_none() {
            return;
        }
        if cell.task.claim() {
            queue.stack.push_at(&cell.task, index as u32);
            queue.pend();
        }
    }
}
