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
//! 4. **A cloned waker holds one reference on its cell**; dropping it gives
//!    the reference back. The waker lent to a task during a poll holds none
//!    and is never dropped (it lives in a `ManuallyDrop`). A cell's reference
//!    count saturates at `REF_MAX` and then never goes down again, so a count
//!    can never reach zero while a clone exists.
//! 5. **A slot is reused only when its previous task is over and its
//!    reference count is zero.** So no waker of an old task can ever point at
//!    a new task in the same slot: a wake can only be stale (its task is
//!    over), never misdirected.
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
    CancelRefused, GEN_MAX, Life, Link16, QUEUED, REF_MAX, REF_ONE, Stale, TaskCell, WakeStack,
    Word, const_unless_loom,
};
use crate::sync::{AtomicBool, Ordering};
use crate::{TaskId, TaskState, TickSource};

/// One slot's shared wake state: 8 bytes (the shared [`TaskCell`]), plus
/// the counters' share.
struct Cell<C: Counting> {
    task: TaskCell<Link16>,
    counters: C::Shared,
}

impl<C: Counting> Cell<C> {
    const_unless_loom! {
        fn new(index: u16) -> Self {
            Self {
                task: TaskCell::new(Link16::new(index)),
                counters: C::SHARED,
            }
        }
    }
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

/// The slot index a core executor's task id encodes (its low 32 bits, less
/// one), whatever its generation; `None` for an id no slot can have.
pub(crate) fn slot_index(id: TaskId) -> Option<usize> {
    usize::try_from((id.get() & 0xffff_ffff).checked_sub(1)?).ok()
}

/// The wake state of an [`AsyncExecutor`](crate::AsyncExecutor) with `N`
/// task slots: one atomic state word per slot and a lock-free stack of the
/// slots woken since the executor last looked.
///
/// It must be `'static` (a `static`, or leaked on a host), because the
/// [`Waker`]s handed to tasks point into it and may outlive any task or
/// executor. It takes 8 bytes per slot, plus 8 for the future that
/// [`run_until`](crate::AsyncExecutor::run_until) drives and about 20 more.
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
}

impl<const N: usize, C: Counting> ReadyQueue<N, C> {
    const VTABLE: RawWakerVTable = RawWakerVTable::new(
        Self::clone_waker,
        Self::wake_by_value,
        Self::wake_by_ref,
        Self::drop_waker,
    );

    /// An empty queue with no pender. `N` must be between 1 and 65,534;
    /// anything else fails to compile.
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
            }
        }
    }

    /// Marks the queue as owned by one executor. `true` only the first time.
    pub(crate) fn claim(&self) -> bool {
        !self.claimed.swap(true, Ordering::AcqRel)
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

    /// The `TaskId` of slot `index` in generation `generation`.
    pub(crate) const fn id_of(index: usize, generation: u32) -> TaskId {
        let raw = ((generation as u64) << 32) | (index as u64 + 1);
        match TaskId::new(raw) {
            Ok(id) => id,
            Err(_) => unreachable!(),
        }
    }

    /// The slot an id names, if its generation is still the slot's.
    pub(crate) fn slot_of(&self, id: TaskId) -> Option<(usize, Word)> {
        let raw = id.get();
        let index = slot_index(id)?;
        if index >= N || raw >> 32 > u64::from(GEN_MAX) {
            return None;
        }
        let word = self.word(index);
        (u64::from(word.generation()) == raw >> 32 && word.life() != Life::Vacant)
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
    /// # Errors
    ///
    /// [`CancelError::UnknownTask`] when `id` names no task of this queue,
    /// [`CancelError::AlreadyFinished`] when the task is already over.
    pub fn cancel(&self, id: TaskId) -> Result<(), CancelError> {
        let (index, _) = self.slot_of(id).ok_or(CancelError::UnknownTask(id))?;
        match self
            .stack
            .cancel(self.task_cell(index), (id.get() >> 32) as u32)
        {
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
    fn wake_index(&self, index: usize) {
        let cell = self.cell(index);
        match self.stack.mark(&cell.task) {
            Ok(true) => {
                C::queued(&cell.counters);
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

    /// Whether a slot whose task is over can go back on the free list: no
    /// cloned waker left and not queued.
    pub(crate) const fn reusable(word: Word) -> bool {
        !word.is_live() && word.refs() == 0 && !word.is_queued()
    }

    /// Puts a new task in slot `index` (see [`WakeStack::start`]). Consumer
    /// only, and only for a slot whose previous task is over with no cloned
    /// waker left and not queued (invariant 5). Returns the new generation.
    pub(crate) fn reuse(&self, index: usize) -> u32 {
        C::queued(&self.cell(index).counters);
        let generation = self.stack.start(self.task_cell(index));
        self.pend();
        generation
    }

    /// Queues slot `index` again from the consumer's side, unless it is
    /// queued already (used when a poll unwinds).
    pub(crate) fn requeue(&self, index: usize) {
        if self.stack.requeue(self.task_cell(index)) {
            self.pend();
        }
    }

    /// Marks the main future's cell live (its lifecycle is only ever
    /// `Running` or `Vacant`).
    pub(crate) fn set_main_live(&self, live: bool) {
        let life = if live { Life::Running } else { Life::Vacant };
        self.task_cell(N).set_life(life);
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
        let cell = queue.task_cell(index);
        // Take one reference (invariant 4); once saturated, leave it pinned.
        let _ = cell
            .state()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
                (Word(state).refs() < REF_MAX).then_some(state + REF_ONE)
            });
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
        let cell = queue.task_cell(index);
        // Give the reference back (invariant 4). The drop that takes the
        // count to zero for a finished task queues the slot so that the
        // executor recycles it (invariant 5).
        // The main future's cell is never recycled, so it is never queued.
        let recycles =
            |word: Word| index < N && word.refs() == 1 && !word.is_live() && !word.is_queued();
        let previous = cell
            .state()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
                let word = Word(state);
                if word.refs() == REF_MAX {
                    return None;
                }
                let queued = if recycles(word) { QUEUED } else { 0 };
                Some((state - REF_ONE) | queued)
            });
        if let Ok(previous) = previous
            && recycles(Word(previous))
        {
            queue.stack.push(cell);
            queue.pend();
        }
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
