//! [`ReadyQueue`]: the `'static` wake state behind the async executor, and
//! the heap-free [`Waker`] that enqueues a task's identity into it.
//!
//! This is the only module of `dinah-core` that uses `unsafe`: building a
//! `Waker` without a heap needs [`Waker::from_raw`], and its vtable functions
//! receive a raw pointer. Everything else about a task (storage, polling,
//! results) is safe code in [`async_executor`](crate::async_executor).
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
//! 3. **Every cell knows its index.** `Cell::index` is written once, in
//!    `ReadyQueue::new`, and never changes; `index <= N`.
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

use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ptr;
use core::task::{RawWaker, RawWakerVTable, Waker};

use crate::sched::{
    CancelRefused, GEN_MASK, Life, Link16, Stale, TaskCell, WakeStack, Word, const_unless_loom,
};
use crate::sync::{AtomicBool, AtomicU16, AtomicUsize, Ordering, fence};
use crate::{TaskId, TaskState, TickSource};

/// One slot's shared wake state: 12 bytes (the shared [`TaskCell`], the
/// count of cloned wakers, the generation's high bits), plus the counters'
/// share.
struct Cell<C: Counting> {
    task: TaskCell<Link16>,
    /// Cloned wakers alive (invariant 4).
    refs: AtomicU16,
    /// The generation's bits above the word's 25 (so 41 in all). Written by
    /// the consumer only, before the word of the first task that needs the
    /// new value, so that whoever reads a word and then this reads a
    /// generation no newer than the word's own.
    generation_high: AtomicU16,
    counters: C::Shared,
}

impl<C: Counting> Cell<C> {
    const_unless_loom! {
        fn new(index: u16) -> Self {
            Self {
                task: TaskCell::new(Link16::new(index)),
                refs: AtomicU16::new(0),
                generation_high: AtomicU16::new(0),
                counters: C::SHARED,
            }
        }
    }

    /// The full generation of the task whose word is `word`.
    fn generation(&self, word: Word) -> u64 {
        let high = self.generation_high.load(Ordering::Acquire);
        (u64::from(high) << GEN_MASK.count_ones()) | u64::from(word.generation())
    }
}

/// The most cloned wakers one task can have alive at once. Half the
/// count's range, so that clones racing past it cannot wrap it.
const REFS_LIMIT: u16 = 1 << 15;

/// A task has 32,768 cloned wakers alive: its count cannot go higher and
/// stay exact.
#[cold]
fn too_many_wakers() -> ! {
    panic!("dinah: a task has 32,768 cloned wakers alive")
}

/// Why [`ReadyQueue::cancel`] did nothing.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CancelError {
    /// The id names no task of this queue: it was never spawned here, or its
    /// slot has since been reused.
    UnknownTask(TaskId),
    /// The task already completed, failed or was cancelled.
    AlreadyFinished(TaskId),
}

impl fmt::Display for CancelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTask(_) => f.write_str("no such task in this executor"),
            Self::AlreadyFinished(_) => f.write_str("the task has already finished"),
        }
    }
}

impl core::error::Error for CancelError {}

/// What one task's counters say, from [`AsyncExecutor::task_counters`](crate::AsyncExecutor::task_counters).
///
/// Kept per slot from the task's spawn until the slot is reused. Counts wrap
/// at `u32::MAX`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct TaskCounters {
    /// Times the task was polled.
    pub polls: u32,
    /// Polls caused by a wake (every poll but the first). Wakes that arrive
    /// while the task is already queued coalesce into the same poll and are
    /// not counted again.
    pub wakes: u32,
    /// Of those, wakes the task made during its own poll.
    pub self_wakes: u32,
    /// Wakes that arrived after the task was over.
    pub stale_wakes: u32,
}

mod sealed {
    pub trait Sealed {}
}

/// Whether an executor keeps [`TaskCounters`] per task and stamps wakes:
/// [`NoCounters`] (the default: no RAM, no instructions), [`CountPerTask`],
/// or [`Timed`] (counters, and each wake stamped so that observers learn how
/// long every poll waited).
///
/// Sealed: the executor relies on exactly these three.
pub trait Counting: sealed::Sealed + 'static {
    #[doc(hidden)]
    type Shared: Sync;
    #[doc(hidden)]
    const SHARED: Self::Shared;
    #[doc(hidden)]
    type Local;
    #[doc(hidden)]
    const LOCAL: Self::Local;
    #[doc(hidden)]
    fn stale(shared: &Self::Shared);
    #[doc(hidden)]
    fn reset(shared: &Self::Shared, local: &mut Self::Local);
    #[doc(hidden)]
    fn polled(local: &mut Self::Local, woken: bool, self_woken: bool);
    /// Whether wakes are stamped ([`queued`](Self::queued) reads a clock).
    #[doc(hidden)]
    const STAMPS: bool = false;
    /// Stamps the moment a cell became queued. Called only by the party
    /// that set `QUEUED`, before it queues the cell.
    #[doc(hidden)]
    #[inline(always)]
    fn queued(shared: &Self::Shared) {
        let _ = shared;
    }
    /// The stamp of the wake (or spawn) that queued the cell, if stamps are
    /// kept. Read by the consumer while the cell is still `QUEUED`.
    #[doc(hidden)]
    #[inline(always)]
    fn stamp(shared: &Self::Shared) -> Option<u32> {
        let _ = shared;
        None
    }
    /// Ticks from `stamp` to now.
    #[doc(hidden)]
    #[inline(always)]
    fn since(stamp: u32) -> u64 {
        let _ = stamp;
        0
    }
    /// The stale wakes counted for the cell's task.
    #[doc(hidden)]
    #[inline(always)]
    fn stale_count(shared: &Self::Shared) -> u32 {
        let _ = shared;
        0
    }
}

/// Keep no per-task counters (the default).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct NoCounters;

/// Keep [`TaskCounters`] per task: 16 bytes per slot in the executor and 4
/// in the queue (the stale-wake count, which wakers update from any
/// context).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct CountPerTask;

/// Keep [`TaskCounters`] per task, as [`CountPerTask`] does, and stamp every
/// wake that queues a task, and every spawn, with `T`'s ticks: 16 bytes per
/// slot in the executor and 8 in the queue.
///
/// An executor over a `Timed` queue tells its
/// [`PollObserver`](crate::PollObserver) how long each poll waited, since the
/// wake that queued it or, for a first poll, since the spawn
/// ([`poll_waited`](crate::PollObserver::poll_waited));
/// [`PollTimes`](crate::PollTimes) keeps those as its `wake_to_poll` and
/// `first_poll_delay` histograms. Each wake that queues a task reads `T`
/// once; a wake that coalesces with a queued one, or comes too late, does
/// not.
pub struct Timed<T: TickSource>(PhantomData<fn() -> T>);

impl<T: TickSource> Clone for Timed<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: TickSource> Copy for Timed<T> {}

impl<T: TickSource> Default for Timed<T> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T: TickSource> fmt::Debug for Timed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Timed")
    }
}

impl sealed::Sealed for NoCounters {}
impl sealed::Sealed for CountPerTask {}
impl<T: TickSource> sealed::Sealed for Timed<T> {}

impl Counting for NoCounters {
    type Shared = ();
    const SHARED: () = ();
    type Local = ();
    const LOCAL: () = ();
    #[inline(always)]
    fn stale(_: &()) {}
    #[inline(always)]
    fn reset(_: &(), _: &mut ()) {}
    #[inline(always)]
    fn polled(_: &mut (), _: bool, _: bool) {}
}

/// The stale-wake count a waker bumps. Plain `portable-atomic` even under
/// loom: a statistic, not part of the wake protocol.
#[doc(hidden)]
pub struct StaleCount(portable_atomic::AtomicU32);

impl StaleCount {
    const fn new() -> Self {
        Self(portable_atomic::AtomicU32::new(0))
    }
}

/// Counts a poll in a task's counters.
fn count_poll(local: &mut TaskCounters, woken: bool, self_woken: bool) {
    local.polls = local.polls.wrapping_add(1);
    if woken {
        local.wakes = local.wakes.wrapping_add(1);
    }
    if self_woken {
        local.self_wakes = local.self_wakes.wrapping_add(1);
    }
}

const NO_COUNTS: TaskCounters = TaskCounters {
    polls: 0,
    wakes: 0,
    self_wakes: 0,
    stale_wakes: 0,
};

impl Counting for CountPerTask {
    type Shared = StaleCount;
    #[allow(clippy::declare_interior_mutable_const)]
    const SHARED: StaleCount = StaleCount::new();
    type Local = TaskCounters;
    const LOCAL: TaskCounters = NO_COUNTS;
    fn stale(shared: &StaleCount) {
        shared.0.fetch_add(1, Ordering::Relaxed);
    }
    fn reset(shared: &StaleCount, local: &mut TaskCounters) {
        shared.0.store(0, Ordering::Relaxed);
        *local = NO_COUNTS;
    }
    fn polled(local: &mut TaskCounters, woken: bool, self_woken: bool) {
        count_poll(local, woken, self_woken);
    }
    fn stale_count(shared: &StaleCount) -> u32 {
        shared.0.load(Ordering::Relaxed)
    }
}

/// A [`Timed`] cell's share: the stale-wake count and the low 32 bits of the
/// tick at which the cell was last queued. Plain `portable-atomic`, as
/// [`StaleCount`]: the stamp is written before the push that publishes the
/// cell and read after the take that receives it, so the wake stack's own
/// ordering carries it.
#[doc(hidden)]
pub struct WakeStamp {
    stale: StaleCount,
    queued_at: portable_atomic::AtomicU32,
}

impl<T: TickSource> Counting for Timed<T> {
    const STAMPS: bool = true;
    type Shared = WakeStamp;
    #[allow(clippy::declare_interior_mutable_const)]
    const SHARED: WakeStamp = WakeStamp {
        stale: StaleCount::new(),
        queued_at: portable_atomic::AtomicU32::new(0),
    };
    type Local = TaskCounters;
    const LOCAL: TaskCounters = NO_COUNTS;
    fn stale(shared: &WakeStamp) {
        CountPerTask::stale(&shared.stale);
    }
    fn reset(shared: &WakeStamp, local: &mut TaskCounters) {
        CountPerTask::reset(&shared.stale, local);
    }
    fn polled(local: &mut TaskCounters, woken: bool, self_woken: bool) {
        count_poll(local, woken, self_woken);
    }
    fn queued(shared: &WakeStamp) {
        // The low 32 bits: waits are wrapping differences of them.
        shared.queued_at.store(T::now() as u32, Ordering::Relaxed);
    }
    fn stamp(shared: &WakeStamp) -> Option<u32> {
        Some(shared.queued_at.load(Ordering::Relaxed))
    }
    fn since(stamp: u32) -> u64 {
        u64::from((T::now() as u32).wrapping_sub(stamp))
    }
    fn stale_count(shared: &WakeStamp) -> u32 {
        CountPerTask::stale_count(&shared.stale)
    }
}

/// The slot index a core executor's task id encodes, whatever its
/// generation; `None` for an id no core executor made.
pub(crate) fn slot_index(id: TaskId) -> Option<usize> {
    id.slot().map(usize::from)
}

/// The wake state of an [`AsyncExecutor`](crate::AsyncExecutor) with `N`
/// task slots: one atomic state word per slot and a lock-free stack of the
/// slots woken since the executor last looked.
///
/// It must be `'static` (a `static`, or leaked on a host), because the
/// [`Waker`]s handed to tasks point into it and may outlive any task or
/// executor. It takes 12 bytes per slot, plus 12 for the future that
/// [`run_until`](crate::AsyncExecutor::run_until) drives and about 24 more.
///
/// # Guarantees
///
/// - Waking never allocates, never blocks, never polls: it sets a bit and
///   pushes the slot's index, and is safe from any thread or interrupt
///   handler (atomics through `portable-atomic`).
/// - Wakes before the next poll coalesce into one entry, so the stack never
///   holds a slot twice and can never overflow.
/// - A wake for a task that is over is counted in [`stale_wakes`](Self::stale_wakes)
///   and otherwise ignored; it never reaches whatever task later uses the slot.
/// - One queue serves one executor, once: only the first
///   [`AsyncExecutor::new`](crate::AsyncExecutor::new) on it succeeds.
///
/// # What the binary must provide
///
/// On `thumbv6m-none-eabi` (no compare-and-swap) the binary enables
/// `portable-atomic`'s `critical-section` feature. If wakes can come from
/// another core or thread while the executor sleeps in its idle hook, the
/// binary installs a pender ([`with_pender`](Self::with_pender)) that wakes
/// that hook; wakes from interrupt handlers on the executor's own core need
/// none (see [`AsyncExecutor::run`](crate::AsyncExecutor::run)).
#[repr(C)]
pub struct ReadyQueue<const N: usize, C: Counting = NoCounters> {
    // Invariant 2: `cells` first and `main` right after, so index `i <= N`
    // is `i` cells from the start.
    cells: [Cell<C>; N],
    main: Cell<C>,
    stack: WakeStack,
    claimed: AtomicBool,
    pender: Option<fn()>,
    /// Names the running context (see "Telling a task's own wakes apart").
    context: Option<fn() -> usize>,
    /// What `context` said in the executor's own context.
    owner: AtomicUsize,
}

impl<const N: usize, C: Counting> ReadyQueue<N, C> {
    const VTABLE: RawWakerVTable = RawWakerVTable::new(
        Self::clone_waker,
        Self::wake_by_value,
        Self::wake_by_ref,
        Self::drop_waker,
    );

    /// An empty queue with no pender. `N` must be between 1 and 65,534;
    /// anything else fails to compile:
    ///
    /// ```compile_fail,E0080
    /// static QUEUE: dinah::ReadyQueue<0> = dinah::ReadyQueue::new();
    /// ```
    #[cfg(not(loom))]
    #[must_use]
    pub const fn new() -> Self {
        Self::build(None)
    }

    /// An empty queue that calls `pender` after every wake that makes a task
    /// ready (from any context, so it must be quick and interrupt-safe), for
    /// example to unpark or signal the thread that runs the executor.
    #[cfg(not(loom))]
    #[must_use]
    pub const fn with_pender(pender: fn()) -> Self {
        Self::build(Some(pender))
    }

    #[cfg(not(loom))]
    const fn build(pender: Option<fn()>) -> Self {
        const {
            assert!(
                N > 0 && N < u16::MAX as usize,
                "a ReadyQueue needs between 1 and 65,534 slots"
            )
        };
        // Invariant 3: each cell is built with its own index.
        let mut cells = [const { Cell::<C>::new(0) }; N];
        let mut index = 0;
        while index < N {
            cells[index].task.set_index(index as u16);
            index += 1;
        }
        Self::with_cells(cells, pender)
    }

    /// An empty queue (loom's atomics cannot be built in a `const fn`).
    #[cfg(loom)]
    #[must_use]
    pub fn new() -> Self {
        Self::loom_build(None)
    }

    /// An empty queue with a pender (see the non-loom build).
    #[cfg(loom)]
    #[must_use]
    pub fn with_pender(pender: fn()) -> Self {
        Self::loom_build(Some(pender))
    }

    #[cfg(loom)]
    fn loom_build(pender: Option<fn()>) -> Self {
        Self::with_cells(
            core::array::from_fn(|index| Cell::new(index as u16)),
            pender,
        )
    }

    const_unless_loom! {
        fn with_cells(cells: [Cell<C>; N], pender: Option<fn()>) -> Self {
            Self {
                cells,
                main: Cell::new(N as u16),
                stack: WakeStack::new(),
                claimed: AtomicBool::new(false),
                pender,
                context: None,
                owner: AtomicUsize::new(0),
            }
        }
    }

    const_unless_loom! {
        /// The same queue, telling its wakes apart by `context`, which names
        /// the context it is called in: on a host the thread (for example a
        /// thread-local's address), on a microcontroller the active interrupt
        /// (0 in thread mode). A wake whose context differs from the
        /// executor's is never counted as made by the poll it lands in (see
        /// "Telling a task's own wakes apart"). `context` is called only by
        /// wakes that land during a poll, so it must be quick and
        /// interrupt-safe.
        ///
        /// ```
        /// use dinah::ReadyQueue;
        ///
        /// fn thread_mode() -> usize {
        ///     0 // on Cortex-M: `SCB::vect_active()` as a number
        /// }
        /// static QUEUE: ReadyQueue<4> = ReadyQueue::new().with_context(thread_mode);
        /// # let _ = &QUEUE;
        /// ```
        #[must_use]
        pub fn with_context(mut self, context: fn() -> usize) -> Self {
            self.context = Some(context);
            self
        }
    }

    /// Marks the queue as owned by one executor, whose context this is.
    /// `true` only the first time.
    pub(crate) fn claim(&self) -> bool {
        if self.claimed.swap(true, Ordering::AcqRel) {
            return false;
        }
        if let Some(context) = self.context {
            self.owner.store(context(), Ordering::Relaxed);
        }
        true
    }

    /// Whether a wake runs in the executor's own context (always, as far as
    /// the queue can tell, without a context function).
    fn in_owner_context(&self) -> bool {
        self.context
            .is_none_or(|context| context() == self.owner.load(Ordering::Relaxed))
    }

    /// Wakes that arrived after their task was over, since the queue was
    /// built. Wraps at `u32::MAX`.
    #[must_use]
    pub fn stale_wakes(&self) -> u32 {
        self.stack.stale_wakes()
    }

    /// Cell `index`; any index past the slots is the main future's cell.
    #[inline(always)]
    fn cell(&self, index: usize) -> &Cell<C> {
        self.cells.get(index).unwrap_or(&self.main)
    }

    /// The shared cell of slot `index` (`N` is the main future's).
    #[inline(always)]
    pub(crate) fn task_cell(&self, index: usize) -> &TaskCell<Link16> {
        &self.cell(index).task
    }

    /// The wake stack the executor consumes.
    #[inline(always)]
    pub(crate) fn stack(&self) -> &WakeStack {
        &self.stack
    }

    /// The state word of slot `index` (`N` is the main future's cell).
    #[inline(always)]
    pub(crate) fn word(&self, index: usize) -> Word {
        self.task_cell(index).word()
    }

    /// The `TaskId` of the task of slot `index` (`N` for the main future)
    /// whose word is `word`.
    pub(crate) fn id_of(&self, index: usize, word: Word) -> TaskId {
        TaskId::from_slot(index as u16, self.cell(index).generation(word))
    }

    /// The slot an id names and its word, if the id's task is still the
    /// slot's (or its latest, over and not yet replaced). The word is read
    /// before the generation's high bits, which the consumer writes before
    /// the word of a new task: a word and high bits read this way never
    /// name a task newer than the word's own, so a reused slot is never
    /// taken for its old task.
    pub(crate) fn slot_of(&self, id: TaskId) -> Option<(usize, Word)> {
        let index = slot_index(id)?;
        if index >= N {
            return None;
        }
        let cell = self.cell(index);
        let word = cell.task.word();
        let generation = cell.generation(word);
        (Some(generation) == id.generation() && word.life() != Life::Vacant)
            .then_some((index, word))
    }

    /// The state of the task `id` names, or `None` if it names none.
    #[must_use]
    pub fn task_state(&self, id: TaskId) -> Option<TaskState> {
        self.slot_of(id)
            .and_then(|(_, word)| word.life().task_state())
    }

    /// Requests cancellation of task `id` from any thread or interrupt: the
    /// executor drops its future at its next scheduling point (never while
    /// it is being polled) and records it as `Cancelled`.
    ///
    /// The request is made with one compare-and-swap on the slot's word,
    /// which holds the low 25 bits of the task's generation: it could reach
    /// a newer task only if 2<sup>25</sup> tasks came and went in that one
    /// slot between the caller's check of the id and that swap, a few
    /// instructions apart.
    ///
    /// # Errors
    ///
    /// [`CancelError::UnknownTask`] when `id` names no task of this queue,
    /// [`CancelError::AlreadyFinished`] when the task is already over.
    pub fn cancel(&self, id: TaskId) -> Result<(), CancelError> {
        let (index, word) = self.slot_of(id).ok_or(CancelError::UnknownTask(id))?;
        match self.stack.cancel(self.task_cell(index), word.generation()) {
            Ok(pushed) => {
                if pushed {
                    self.pend();
                }
                Ok(())
            }
            Err(CancelRefused::Unknown) => Err(CancelError::UnknownTask(id)),
            Err(CancelRefused::Finished) => Err(CancelError::AlreadyFinished(id)),
        }
    }

    /// Calls the pender, if there is one, after a push.
    #[inline(always)]
    fn pend(&self) {
        if let Some(pender) = self.pender {
            pender();
        }
    }

    /// Wakes slot `index` (see [`WakeStack::wake`]).
    /// The party that queues the cell stamps it between setting `QUEUED`
    /// and pushing, so the stamp is the wake's own, and the consumer, which
    /// reads it after taking the entry, sees it.
    #[inline(always)]
    fn wake_index(&self, index: usize) {
        if self.context.is_some() {
            // Out of line: its call to the context function would cost
            // every wake a stack frame.
            return self.wake_index_telling_context(index);
        }
        self.wake_marked(index, true);
    }

    /// [`wake_index`](Self::wake_index) on a queue that names contexts.
    #[inline(never)]
    fn wake_index_telling_context(&self, index: usize) {
        self.wake_marked(index, false);
    }

    /// Marks slot `index` (asking the context function, unless `no_context`,
    /// whether a wake during a poll is the executor's own), then queues it,
    /// counts it as stale, or lets it coalesce.
    #[inline(always)]
    fn wake_marked(&self, index: usize, no_context: bool) {
        let cell = self.cell(index);
        let here = || no_context || self.in_owner_context();
        match self.stack.mark(&cell.task, here) {
            Ok(true) => {
                if C::STAMPS {
                    // The tick source is the binary's code: if it panics,
                    // the wake is still queued (with an older stamp) on the
                    // way out.
                    let unwinding = PushOnUnwind { queue: self, index };
                    C::queued(&cell.counters);
                    core::mem::forget(unwinding);
                }
                self.stack.push(&cell.task);
                self.pend();
            }
            Ok(false) => {}
            Err(Stale) => C::stale(&cell.counters),
        }
    }

    /// The stamp of the wake or spawn that queued slot `index`, if the
    /// queue keeps stamps. Consumer only, while the slot is still `QUEUED`
    /// (before `take_queued`), so that a wake arriving after it cannot
    /// replace the stamp being read.
    #[inline(always)]
    pub(crate) fn stamp(&self, index: usize) -> Option<u32> {
        C::stamp(&self.cell(index).counters)
    }

    /// Takes every entry off the wake stack, as a chain in wake order (see
    /// [`WakeStack::take`]). Consumer only (invariant 6).
    #[inline(always)]
    pub(crate) fn take_woken(&self) -> Option<(u32, u32)> {
        self.stack.take(|index| self.task_cell(index))
    }

    /// Resets slot `index`'s counters for a new task. Consumer only.
    pub(crate) fn reset_counters(&self, index: usize, local: &mut C::Local) {
        C::reset(&self.cell(index).counters, local);
    }

    /// The consumer's claim on slot `index` once its task is over and its
    /// entry (if it had one) was taken off the stack: `true` when no cloned
    /// waker is left and this call claimed the slot (invariant 5), so the
    /// slot can go back on the free list. `false` leaves it to the drop of
    /// the last waker, which queues the slot, or to the entry still queued.
    pub(crate) fn claim_finished(&self, index: usize) -> bool {
        let cell = self.cell(index);
        let word = cell.task.word();
        if word.is_live() || word.is_queued() {
            return false;
        }
        // Pairs with the fence in `drop_waker`: the task's end (written
        // before this) or the last drop (written before that) is seen by
        // at least one side.
        fence(Ordering::SeqCst);
        cell.refs.load(Ordering::Relaxed) == 0 && cell.task.claim()
    }

    /// Puts a new task in slot `index`: the next generation, `Pending`,
    /// queued for its first poll. Consumer only, and only for a slot it
    /// claimed (invariant 5). Returns the task's id.
    pub(crate) fn start(&self, index: usize) -> TaskId {
        let cell = self.cell(index);
        let word = cell.task.word();
        if WakeStack::next_generation(word) == 0 {
            // The word's bits wrap: the high bits move on first, so that no
            // reader pairs the new word with the old high bits.
            let high = cell.generation_high.load(Ordering::Relaxed);
            cell.generation_high
                .store(high.wrapping_add(1), Ordering::Release);
        }
        self.stack.start(&cell.task);
        self.pend();
        // Stamped after the push: this is the consumer's own thread, which
        // reads the stamp only in a later tick; and if the tick source
        // panics, the task is queued all the same.
        C::queued(&cell.counters);
        self.id_of(index, cell.task.word())
    }

    /// Queues slot `index` again from the consumer's side, unless it is
    /// queued already (used when a poll unwinds).
    pub(crate) fn requeue(&self, index: usize) {
        if self.stack.requeue(self.task_cell(index)) {
            self.pend();
        }
    }

    /// Marks the main future's cell live (its lifecycle is only ever
    /// `Running`, while `run_until` drives it, or `Vacant`).
    pub(crate) fn set_main_live(&self, live: bool) {
        let life = if live { Life::Running } else { Life::Vacant };
        self.task_cell(N).set_life(life);
    }

    /// Whether `run_until` is driving a future.
    pub(crate) fn main_is_live(&self) -> bool {
        self.word(N).is_live()
    }

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

    /// Recovers the queue and the cell index from a waker's data pointer.
    ///
    /// # Safety
    ///
    /// `data` came from [`data_of`](Self::data_of) on a `ReadyQueue<N>` of
    /// this same `N`.
    unsafe fn from_data(data: *const ()) -> (&'static Self, usize) {
        let cell = data.cast::<Cell<C>>();
        // SAFETY: `cell` points at a live cell of a `'static` queue
        // (invariants 1 and 2), so reading its immutable `index` is fine.
        let index = unsafe { (*cell).task.index() } as usize;
        // SAFETY: the cell is `index` cells from the queue's start, and the
        // pointer's provenance covers the whole queue (invariants 2 and 3),
        // so stepping back lands on the queue's first byte.
        let queue = unsafe { &*cell.sub(index).cast::<Self>() };
        (queue, index)
    }

    unsafe fn clone_waker(data: *const ()) -> RawWaker {
        // SAFETY: `data` is a data pointer this vtable was built with.
        let (queue, index) = unsafe { Self::from_data(data) };
        let refs = &queue.cell(index).refs;
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
        let (queue, index) = unsafe { Self::from_data(data) };
        queue.wake_index(index);
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
        let (queue, index) = unsafe { Self::from_data(data) };
        let cell = queue.cell(index);
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
        if word.is_live() || word.is_queued() || word.life() == Life::Vacant {
            return;
        }
        if cell.task.claim() {
            queue.stack.push(&cell.task);
            queue.pend();
        }
    }
}

/// Queues a marked slot if the code between its mark and its push unwinds
/// (dropped only then: the normal path forgets it), so that no wake is
/// lost.
struct PushOnUnwind<'q, const N: usize, C: Counting> {
    queue: &'q ReadyQueue<N, C>,
    index: usize,
}

impl<const N: usize, C: Counting> Drop for PushOnUnwind<'_, N, C> {
    fn drop(&mut self) {
        self.queue.stack.push(self.queue.task_cell(self.index));
        self.queue.pend();
    }
}

impl<const N: usize, C: Counting<Local = TaskCounters>> ReadyQueue<N, C> {
    /// The stale wakes counted for slot `index` since its task was spawned.
    pub(crate) fn stale_of(&self, index: usize) -> u32 {
        C::stale_count(&self.cell(index).counters)
    }
}

impl<const N: usize, C: Counting> Default for ReadyQueue<N, C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize, C: Counting> fmt::Debug for ReadyQueue<N, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadyQueue")
            .field("slots", &N)
            .field("stale_wakes", &self.stale_wakes())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sched::GEN_MASK;
    use crate::{AsyncExecutor, TaskState};
    use core::pin::pin;
    use std::boxed::Box;

    /// A fresh `'static` queue, kept reachable so that Miri does not count
    /// it as a leak.
    fn leaked() -> &'static ReadyQueue<1> {
        static KEPT: std::sync::Mutex<std::vec::Vec<&'static ReadyQueue<1>>> =
            std::sync::Mutex::new(std::vec::Vec::new());
        let queue: &'static ReadyQueue<1> = Box::leak(Box::new(ReadyQueue::new()));
        KEPT.lock().unwrap().push(queue);
        queue
    }

    #[test]
    fn the_generation_goes_on_past_the_bits_its_word_keeps() {
        let queue = leaked();
        let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
        let mut first = pin!(Some(async {}));
        let mut second = pin!(Some(async {}));
        let old = executor.spawn(first.as_mut()).unwrap();
        executor.tick(4);
        // As if 2^25 - 2 more tasks had come and gone in the slot.
        queue.task_cell(0).age_to(GEN_MASK);
        let new = executor.spawn(second.as_mut()).unwrap();
        // The word's bits wrapped to 0; the id's generation did not.
        assert_eq!(queue.word(0).generation(), 0);
        assert_eq!(new.generation(), Some(1 << 25));
        assert_eq!(executor.task_state(new), Some(TaskState::Pending));
        // Ids of earlier generations, with the same low bits or not, name
        // nothing.
        assert_eq!(executor.task_state(TaskId::from_slot(0, 0)), None);
        assert_eq!(executor.task_state(old), None);
        assert_eq!(
            executor.cancel(TaskId::from_slot(0, 0)),
            Err(CancelError::UnknownTask(TaskId::from_slot(0, 0)))
        );
        executor.tick(4);
        assert_eq!(executor.task_state(new), Some(TaskState::Completed));
    }

    #[test]
    fn a_waker_count_that_cannot_stay_exact_panics_and_stays_where_it_was() {
        let queue = leaked();
        let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
        let mut task = pin!(Some(std::future::pending::<()>()));
        executor.spawn(task.as_mut()).unwrap();
        let waker = queue.with_waker(0, Waker::clone);
        let refs = &queue.cell(0).refs;
        assert_eq!(refs.load(Ordering::Relaxed), 1);
        refs.store(REFS_LIMIT, Ordering::Relaxed);
        let outcome = std::panic::catch_unwind(|| waker.clone());
        assert!(outcome.is_err(), "a clone past the limit panics");
        assert_eq!(
            refs.load(Ordering::Relaxed),
            REFS_LIMIT,
            "and is not counted"
        );
        refs.store(1, Ordering::Relaxed);
        drop(waker);
        assert_eq!(refs.load(Ordering::Relaxed), 0);
    }
}
