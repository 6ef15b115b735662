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
use core::mem::ManuallyDrop;
use core::ptr;
use core::task::{RawWaker, RawWakerVTable, Waker};

use crate::sync::{AtomicBool, AtomicU16, AtomicU32, Ordering};
use crate::{TaskId, TaskState};

// The state word of one cell.
/// On the wake stack, or taken off it and not yet polled.
pub(crate) const QUEUED: u32 = 1 << 0;
/// Set together with `QUEUED` when the wake came during some task's poll.
pub(crate) const WOKEN_IN_POLL: u32 = 1 << 1;
/// Set together with `QUEUED` when the wake came during this task's own poll.
pub(crate) const SELF_WOKEN: u32 = 1 << 2;
/// Cancellation was requested and not yet carried out.
pub(crate) const CANCEL: u32 = 1 << 3;
const LIFE_SHIFT: u32 = 4;
const LIFE_MASK: u32 = 0b111 << LIFE_SHIFT;
const REF_SHIFT: u32 = 7;
const REF_ONE: u32 = 1 << REF_SHIFT;
const REF_MAX: u32 = 0xfff;
const REF_MASK: u32 = REF_MAX << REF_SHIFT;
const GEN_SHIFT: u32 = 19;
/// Generations wrap after this many reuses of one slot.
pub(crate) const GEN_MAX: u32 = (1 << (32 - GEN_SHIFT)) - 1;

/// Where a slot's task is. Stored in three bits of the state word.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
pub(crate) enum Life {
    Vacant = 0,
    Pending = 1,
    Running = 2,
    Completed = 3,
    Failed = 4,
    Cancelled = 5,
}

impl Life {
    const fn of(state: u32) -> Self {
        match (state & LIFE_MASK) >> LIFE_SHIFT {
            1 => Self::Pending,
            2 => Self::Running,
            3 => Self::Completed,
            4 => Self::Failed,
            5 => Self::Cancelled,
            _ => Self::Vacant,
        }
    }

    const fn bits(self) -> u32 {
        (self as u32) << LIFE_SHIFT
    }

    pub(crate) const fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    pub(crate) const fn task_state(self) -> Option<TaskState> {
        match self {
            Self::Vacant => None,
            Self::Pending => Some(TaskState::Pending),
            Self::Running => Some(TaskState::Running),
            Self::Completed => Some(TaskState::Completed),
            Self::Failed => Some(TaskState::Failed),
            Self::Cancelled => Some(TaskState::Cancelled),
        }
    }
}

/// Decoded parts of a state word.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Word(pub(crate) u32);

impl Word {
    pub(crate) const fn life(self) -> Life {
        Life::of(self.0)
    }
    pub(crate) const fn refs(self) -> u32 {
        (self.0 & REF_MASK) >> REF_SHIFT
    }
    pub(crate) const fn generation(self) -> u32 {
        self.0 >> GEN_SHIFT
    }
    pub(crate) const fn has(self, flag: u32) -> bool {
        self.0 & flag != 0
    }
    /// `Pending` (never polled), without decoding the lifecycle.
    pub(crate) const fn is_pending(self) -> bool {
        self.0 & LIFE_MASK == Life::Pending.bits()
    }
    /// `Pending` or `Running`: the task is not over. Read from the bits,
    /// without decoding the lifecycle.
    pub(crate) const fn is_live(self) -> bool {
        ((self.0 & LIFE_MASK) >> LIFE_SHIFT).wrapping_sub(1) < 2
    }
}

/// One slot's shared wake state: 8 bytes, plus the counters' share.
struct Cell<C: Counting> {
    state: AtomicU32,
    /// The next entry below this one on the wake stack (index + 1, 0 for
    /// none), or in the executor's own lists while the cell is off the stack.
    next: AtomicU16,
    index: u16,
    counters: C::Shared,
}

/// Defines a `const fn`, or a plain `fn` under loom, whose atomics cannot
/// be built in a `const fn`.
macro_rules! const_unless_loom {
    ($(#[$attr:meta])* $vis:vis fn $($rest:tt)*) => {
        #[cfg(not(loom))]
        $(#[$attr])*
        $vis const fn $($rest)*

        #[cfg(loom)]
        $(#[$attr])*
        $vis fn $($rest)*
    };
}

impl<C: Counting> Cell<C> {
    const_unless_loom! {
        fn new(index: u16) -> Self {
            Self {
                state: AtomicU32::new(0),
                next: AtomicU16::new(0),
                index,
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

/// Whether an executor keeps [`TaskCounters`] per task: [`NoCounters`] (the
/// default: no RAM, no instructions) or [`CountPerTask`].
///
/// Sealed: the executor relies on exactly these two.
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
}

/// Keep no per-task counters (the default).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct NoCounters;

/// Keep [`TaskCounters`] per task: 16 bytes per slot in the executor and 4
/// in the queue (the stale-wake count, which wakers update from any
/// context).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct CountPerTask;

impl sealed::Sealed for NoCounters {}
impl sealed::Sealed for CountPerTask {}

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

impl Counting for CountPerTask {
    type Shared = StaleCount;
    #[allow(clippy::declare_interior_mutable_const)]
    const SHARED: StaleCount = StaleCount(portable_atomic::AtomicU32::new(0));
    type Local = TaskCounters;
    const LOCAL: TaskCounters = TaskCounters {
        polls: 0,
        wakes: 0,
        self_wakes: 0,
        stale_wakes: 0,
    };
    fn stale(shared: &StaleCount) {
        shared.0.fetch_add(1, Ordering::Relaxed);
    }
    fn reset(shared: &StaleCount, local: &mut TaskCounters) {
        shared.0.store(0, Ordering::Relaxed);
        *local = Self::LOCAL;
    }
    fn polled(local: &mut TaskCounters, woken: bool, self_woken: bool) {
        local.polls = local.polls.wrapping_add(1);
        if woken {
            local.wakes = local.wakes.wrapping_add(1);
        }
        if self_woken {
            local.self_wakes = local.self_wakes.wrapping_add(1);
        }
    }
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
    head: AtomicU32,
    polling: AtomicU32,
    stale: AtomicU32,
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
        let mut cells = [const { Cell::<C>::new(0) }; N];
        let mut index = 0;
        while index < N {
            cells[index].index = index as u16;
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
                head: AtomicU32::new(0),
                polling: AtomicU32::new(0),
                stale: AtomicU32::new(0),
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
        self.stale.load(Ordering::Relaxed)
    }

    /// Cell `index`; any index past the slots is the main future's cell.
    fn cell(&self, index: usize) -> &Cell<C> {
        self.cells.get(index).unwrap_or(&self.main)
    }

    /// The state word of slot `index` (`N` is the main future's cell).
    pub(crate) fn word(&self, index: usize) -> Word {
        Word(self.cell(index).state.load(Ordering::Acquire))
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
        let index = usize::try_from((raw & 0xffff_ffff) - 1).ok()?;
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
        let cell = self.cell(index);
        let mut current = cell.state.load(Ordering::Acquire);
        loop {
            let word = Word(current);
            if u64::from(word.generation()) != id.get() >> 32 {
                return Err(CancelError::UnknownTask(id));
            }
            if !word.is_live() {
                return Err(CancelError::AlreadyFinished(id));
            }
            let next = current | CANCEL | QUEUED;
            match cell.state.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if !word.has(QUEUED) {
                        self.push(index);
                    }
                    return Ok(());
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// Pushes slot `index` onto the wake stack. The caller set `QUEUED`.
    fn push(&self, index: usize) {
        let cell = self.cell(index);
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // Invariant 7: at most N + 1 entries, so `head` fits 16 bits.
            cell.next.store(head as u16, Ordering::Relaxed);
            match self.head.compare_exchange_weak(
                head,
                index as u32 + 1,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(actual) => head = actual,
            }
        }
        if let Some(pender) = self.pender {
            pender();
        }
    }

    /// Wakes slot `index`: sets `QUEUED` (with the wake flags) and pushes it,
    /// unless it is queued already (coalesced) or its task is over (stale).
    fn wake_index(&self, index: usize) {
        let cell = self.cell(index);
        let polling = self.polling.load(Ordering::Relaxed);
        let mut flags = QUEUED;
        if polling != 0 {
            flags |= WOKEN_IN_POLL;
            if polling == index as u32 + 1 {
                flags |= SELF_WOKEN;
            }
        }
        let mut current = cell.state.load(Ordering::Acquire);
        loop {
            let word = Word(current);
            if !word.is_live() {
                self.stale.fetch_add(1, Ordering::Relaxed);
                C::stale(&cell.counters);
                return;
            }
            // Already queued: the wake coalesces, but still as a
            // read-modify-write (writing the word back unchanged), so that it
            // releases what the waker did before waking to the executor's
            // `take_queued`. A plain load would not, and the poll could miss
            // it: a lost wakeup.
            let next = if word.has(QUEUED) {
                current
            } else {
                current | flags
            };
            match cell.state.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) if word.has(QUEUED) => return,
                Ok(_) => break,
                Err(actual) => current = actual,
            }
        }
        self.push(index);
    }

    /// Takes every entry off the wake stack and returns them as a chain in
    /// wake order, oldest first, linked through `next` (`index + 1`, ending
    /// in 0): its first and last entries, or `None` when nothing was woken.
    /// Consumer only (invariant 6).
    pub(crate) fn take_woken(&self) -> Option<(u16, u16)> {
        let mut top = self.head.swap(0, Ordering::Acquire) as u16;
        if top == 0 {
            return None;
        }
        // The stack is newest first: reverse it through the `next` links.
        let last = top;
        let mut reversed = 0;
        while top != 0 {
            let cell = self.cell(usize::from(top) - 1);
            let below = cell.next.load(Ordering::Relaxed);
            cell.next.store(reversed, Ordering::Relaxed);
            reversed = top;
            top = below;
        }
        Some((reversed, last))
    }

    /// Resets slot `index`'s counters for a new task. Consumer only.
    pub(crate) fn reset_counters(&self, index: usize, local: &mut C::Local) {
        C::reset(&self.cell(index).counters, local);
    }

    /// Whether a slot whose task is over can go back on the free list: no
    /// cloned waker left and not queued.
    pub(crate) const fn reusable(word: Word) -> bool {
        !word.is_live() && word.refs() == 0 && !word.has(QUEUED)
    }

    /// Whether any wake is waiting on the stack.
    pub(crate) fn has_woken(&self) -> bool {
        self.head.load(Ordering::Acquire) != 0
    }

    /// Clears `QUEUED` and the wake flags of slot `index` and returns the
    /// word as it was. Consumer only.
    pub(crate) fn take_queued(&self, index: usize) -> Word {
        Word(
            self.cell(index)
                .state
                .fetch_and(!(QUEUED | WOKEN_IN_POLL | SELF_WOKEN), Ordering::AcqRel),
        )
    }

    /// Sets the lifecycle of slot `index` and returns the new word. A
    /// terminal lifecycle also clears any cancellation request: the task is
    /// over. (`Pending -> Running` must keep it: an interrupt may have asked
    /// after the task was taken off the queue.) Consumer only.
    pub(crate) fn set_life(&self, index: usize, life: Life) -> Word {
        let clear = if life.is_terminal() {
            LIFE_MASK | CANCEL
        } else {
            LIFE_MASK
        };
        let cell = self.cell(index);
        let mut current = cell.state.load(Ordering::Acquire);
        loop {
            let next = (current & !clear) | life.bits();
            match cell.state.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Word(next),
                Err(actual) => current = actual,
            }
        }
    }

    /// Puts a new task in slot `index`: the next generation, `Pending`, and
    /// queued for its first poll. Consumer only, and only for a slot whose
    /// previous task is over with no cloned waker left and not queued
    /// (invariant 5). Returns the new generation.
    pub(crate) fn reuse(&self, index: usize) -> u32 {
        let cell = self.cell(index);
        let word = Word(cell.state.load(Ordering::Acquire));
        debug_assert!(!word.is_live() && word.refs() == 0 && !word.has(QUEUED));
        let generation = if word.generation() >= GEN_MAX {
            0
        } else {
            word.generation() + 1
        };
        cell.state.store(
            (generation << GEN_SHIFT) | Life::Pending.bits() | QUEUED,
            Ordering::Release,
        );
        self.push(index);
        generation
    }

    /// Links `index` into an executor-owned list through its `next` field
    /// (`index + 1` of the following entry, 0 for none; only while the cell
    /// is off the wake stack).
    pub(crate) fn set_link(&self, index: usize, next: u16) {
        self.cell(index).next.store(next, Ordering::Relaxed);
    }

    /// The `next` link of `index` (see [`set_link`](Self::set_link)).
    pub(crate) fn link(&self, index: usize) -> u16 {
        self.cell(index).next.load(Ordering::Relaxed)
    }

    /// Queues slot `index` again from the consumer's side, unless it is
    /// queued already (used when a poll unwinds).
    pub(crate) fn requeue(&self, index: usize) {
        let previous = self.cell(index).state.fetch_or(QUEUED, Ordering::AcqRel);
        if previous & QUEUED == 0 {
            self.push(index);
        }
    }

    /// Records which slot is being polled (`index + 1`), or none (`0`).
    pub(crate) fn set_polling(&self, slot: u32) {
        self.polling.store(slot, Ordering::Relaxed);
    }

    /// Marks the main future's cell live (its lifecycle is only ever
    /// `Running` or `Vacant`).
    pub(crate) fn set_main_live(&self, live: bool) {
        let life = if live { Life::Running } else { Life::Vacant };
        self.set_life(N, life);
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
        let index = usize::from(unsafe { (*cell).index });
        // SAFETY: the cell is `index` cells from the queue's start, and the
        // pointer's provenance covers the whole queue (invariants 2 and 3),
        // so stepping back lands on the queue's first byte.
        let queue = unsafe { &*cell.sub(index).cast::<Self>() };
        (queue, index)
    }

    unsafe fn clone_waker(data: *const ()) -> RawWaker {
        // SAFETY: `data` is a data pointer this vtable was built with.
        let (queue, index) = unsafe { Self::from_data(data) };
        let cell = queue.cell(index);
        // Take one reference (invariant 4); once saturated, leave it pinned.
        let _ = cell
            .state
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
        let cell = queue.cell(index);
        // Give the reference back (invariant 4). The drop that takes the
        // count to zero for a finished task queues the slot so that the
        // executor recycles it (invariant 5).
        // The main future's cell is never recycled, so it is never queued.
        let recycles =
            |word: Word| index < N && word.refs() == 1 && !word.is_live() && !word.has(QUEUED);
        let previous = cell
            .state
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
            queue.push(index);
        }
    }
}

impl<const N: usize> ReadyQueue<N, CountPerTask> {
    /// The stale wakes counted for slot `index` since its task was spawned.
    pub(crate) fn stale_of(&self, index: usize) -> u32 {
        self.cell(index).counters.0.load(Ordering::Relaxed)
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
