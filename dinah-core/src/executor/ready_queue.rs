//! [`ReadyQueue`]: the `'static` wake state behind the core executor, in
//! safe code. Its heap-free waker, an `unsafe` part, is `fenced/waker.rs`.
#![forbid(unsafe_code)]

use core::fmt;

use super::CancelError;
use crate::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering, fence};
use crate::id::TaskId;
use crate::raw::const_unless_loom;
use crate::raw::sched::{CancelRefused, GEN_MASK, Link16, Stale, TaskCell, WakeStack, Word};
use crate::task::TaskState;
use crate::telemetry::{Counts, Measure, Unmeasured};

/// One slot's shared wake state: 12 bytes (the shared [`TaskCell`], the
/// count of cloned wakers, the generation's high bits), plus the counters'
/// share.
pub(super) struct Cell<C: Measure> {
    pub(super) task: TaskCell<Link16>,
    /// Cloned wakers alive (invariant 4).
    pub(super) refs: AtomicU16,
    /// The generation's bits above the word's 24 (so 40 in all). Written by
    /// the consumer only, before the word of the first task that needs the
    /// new value, so that whoever reads a word and then this reads a
    /// generation no newer than the word's own.
    generation_high: AtomicU16,
    counters: C::Shared,
}

impl<C: Measure> Cell<C> {
    const_unless_loom! {
        /// A vacant cell, numbered 0 until [`ReadyQueue::claim`] numbers
        /// it (invariant 3).
        fn new() -> Self {
            Self {
                task: TaskCell::new(Link16::new()),
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
pub(super) const REFS_LIMIT: u16 = 1 << 15;

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
/// [`Waker`](core::task::Waker)s handed to tasks point into it and may outlive any task or
/// executor. It takes 12 bytes per slot, plus 12 for the future that
/// [`run_until`](crate::AsyncExecutor::run_until) drives and about 24 more.
/// Built by [`new`](Self::new) it is all zeros, so a `static` one takes RAM
/// only (`.bss`), no flash: the executor that claims it numbers its slots.
///
/// # Guarantees
///
/// - Waking never allocates, never blocks, never polls: it sets a bit and
///   pushes the slot's index, and is safe from any thread or interrupt
///   handler (atomics through `portable-atomic`). On targets with an
///   operating system, a wake that lands while the executor polls that very
///   task only sets the bit: the executor queues the task when the poll
///   ends (see [`AsyncExecutor::tick`](crate::AsyncExecutor::tick)).
/// - Wakes before the next poll coalesce into one entry, so the stack never
///   holds a slot twice and can never overflow.
/// - A wake for a task that is over is counted in [`stale_wakes`](Self::stale_wakes)
///   and otherwise ignored; it never reaches whatever task later uses the slot.
/// - One queue serves one executor, once: only the first
///   [`AsyncExecutor::new`](crate::AsyncExecutor::new) on it succeeds.
///
/// # What the binary must provide
///
/// On `thumbv6m-none-eabi` (no compare-and-swap) the binary enables a
/// `portable-atomic` back end: `unsafe-assume-single-core` on a single-core
/// chip in privileged mode, `critical-section` otherwise. If wakes can come
/// from another core or thread while the executor sleeps in its idle hook,
/// the binary installs a pender ([`with_pender`](Self::with_pender)) that wakes
/// that hook; wakes from interrupt handlers on the executor's own core need
/// none (see [`AsyncExecutor::run`](crate::AsyncExecutor::run)).
///
/// # Telling a task's own wakes apart
///
/// A wake that lands while a task is polled may be the task's own (its
/// waker called inside the poll) or come from elsewhere at that instant:
/// another thread, or an interrupt handler that preempted the poll. A
/// waker only points at its slot, and the core cannot see which thread or
/// interrupt it runs in (it has no `std` and no register access), so:
///
/// - Without a context function (built by [`new`](Self::new) or
///   [`with_pender`](Self::with_pender)), every wake that lands during a
///   poll counts as made by that poll: [`TickReport::self_woken`](crate::executor::TickReport::self_woken),
///   [`woken_in_poll`](crate::executor::TickReport::woken_in_poll) and the
///   telemetry's `self_wakes` then include wakes from other threads and
///   interrupts that happened to land during the poll. Right for an
///   executor whose wakes all come from its own tasks.
/// - With one ([`with_context`](Self::with_context)), a wake whose context
///   differs from the executor's counts as [`woken_outside`](crate::executor::TickReport::woken_outside),
///   whenever it lands. On a host, `dinah::executor::thread_context`
///   names the thread; on a microcontroller, the active interrupt number
///   (0 in thread mode) names the context.
///
/// Either way the wake is never lost and its task is polled once more;
/// only the figure it is counted in differs. The hosted executors tell
/// threads apart themselves.
#[repr(C)]
pub struct ReadyQueue<const N: usize, C: Measure = Unmeasured> {
    // Invariant 2: `cells` first and `main` right after, so index `i <= N`
    // is `i` cells from the start.
    cells: [Cell<C>; N],
    main: Cell<C>,
    pub(super) stack: WakeStack,
    claimed: AtomicBool,
    pender: Option<fn()>,
    /// Names the running context (see "Telling a task's own wakes apart").
    context: Option<fn() -> usize>,
    /// What `context` said in the executor's own context.
    owner: AtomicUsize,
}

impl<const N: usize, C: Measure> ReadyQueue<N, C> {
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
        // All zeros (with no pender), so that a `static` queue takes no
        // flash: `claim` numbers the cells (invariant 3).
        Self::with_cells([const { Cell::<C>::new() }; N], pender)
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
        Self::with_cells(core::array::from_fn(|_| Cell::new()), pender)
    }

    const_unless_loom! {
        fn with_cells(cells: [Cell<C>; N], pender: Option<fn()>) -> Self {
            Self {
                cells,
                main: Cell::new(),
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

    /// Marks the queue as owned by one executor, whose context this is,
    /// and numbers its cells (invariant 3): before this returns, no waker
    /// of the queue exists, since only the executor that claimed it makes
    /// them. `true` only the first time.
    pub(crate) fn claim(&self) -> bool {
        if self.claimed.swap(true, Ordering::AcqRel) {
            return false;
        }
        // Slots `0..N`, then the main cell at `N` (at most 65,534 slots,
        // checked in `build`).
        let mut index = 0;
        for cell in &self.cells {
            cell.task.set_index(index);
            index += 1;
        }
        self.main.task.set_index(index);
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
    pub(super) fn cell(&self, index: usize) -> &Cell<C> {
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
        (Some(generation) == id.generation() && word.state().is_some()).then_some((index, word))
    }

    /// The state of the task `id` names, or `None` if it names none.
    #[must_use]
    pub fn task_state(&self, id: TaskId) -> Option<TaskState> {
        self.slot_of(id).and_then(|(_, word)| word.state())
    }

    /// Requests cancellation of task `id` from any thread or interrupt: the
    /// executor drops its future at its next scheduling point (never while
    /// it is being polled) and records it as `Cancelled`.
    ///
    /// The request is made with one compare-and-swap on the slot's word,
    /// which holds the low 24 bits of the task's generation: it could reach
    /// a newer task only if 2<sup>24</sup> tasks came and went in that one
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
    pub(super) fn pend(&self) {
        if let Some(pender) = self.pender {
            pender();
        }
    }

    /// Wakes `cell`, one of this queue's, whose index is `index` (read once
    /// by the caller; see [`WakeStack::wake`]).
    ///
    /// A queue with a context function asks it whether a wake that lands
    /// during a poll is the executor's own. On a target without an
    /// operating system (firmware, where flash is scarce) one copy of the
    /// wake does both; elsewhere a queue with a context function takes an
    /// out-of-line copy, so the common wake calls nothing and keeps no
    /// stack frame.
    #[inline(always)]
    pub(super) fn wake_cell(&self, cell: &Cell<C>, index: usize) {
        let no_context = self.context.is_none();
        if cfg!(target_os = "none") || no_context {
            self.wake_marked(cell, index, no_context);
        } else {
            self.wake_cell_telling_context(cell, index);
        }
    }

    /// [`wake_cell`](Self::wake_cell) on a queue that names contexts, out of
    /// line.
    #[inline(never)]
    fn wake_cell_telling_context(&self, cell: &Cell<C>, index: usize) {
        self.wake_marked(cell, index, false);
    }

    /// Marks `cell` (asking the context function, unless `no_context`,
    /// whether a wake during a poll is the executor's own), then queues it,
    /// counts it as stale, or lets it coalesce. The party that queues the
    /// cell stamps it between setting `QUEUED` and pushing, so the stamp is
    /// the wake's own, and the consumer, which reads it after taking the
    /// entry, sees it.
    #[inline(always)]
    fn wake_marked(&self, cell: &Cell<C>, index: usize, no_context: bool) {
        let here = || no_context || self.in_owner_context();
        match self.stack.mark_at(&cell.task, index as u32, here) {
            Ok(true) => {
                if C::STAMPS {
                    // The tick source is the binary's code: if it panics,
                    // the wake is still queued (with an older stamp) on the
                    // way out.
                    let unwinding = PushOnUnwind { queue: self, index };
                    C::queued(&cell.counters);
                    core::mem::forget(unwinding);
                }
                self.stack.push_at(&cell.task, index as u32);
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
        if word.generation() == GEN_MASK {
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

    /// Pushes slot `index`, already `QUEUED` by whoever calls this (a wake
    /// whose stamp unwound, or the consumer for a wake that left the queuing
    /// to it), and calls the pender.
    pub(crate) fn push(&self, index: usize) {
        self.stack.push(self.task_cell(index));
        self.pend();
    }

    /// Stamps slot `index` as queued now, if the queue keeps stamps: for a
    /// task the consumer queues itself. Consumer only.
    #[inline(always)]
    pub(crate) fn restamp(&self, index: usize) {
        if C::STAMPS {
            C::queued(&self.cell(index).counters);
        }
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
        let state = if live { Some(TaskState::Running) } else { None };
        self.task_cell(N).set_state(state);
    }

    /// Whether `run_until` is driving a future.
    pub(crate) fn main_is_live(&self) -> bool {
        self.word(N).is_live()
    }
}
/// Queues a marked slot if the code between its mark and its push unwinds
/// (dropped only then: the normal path forgets it), so that no wake is
/// lost.
struct PushOnUnwind<'q, const N: usize, C: Measure> {
    queue: &'q ReadyQueue<N, C>,
    index: usize,
}

impl<const N: usize, C: Measure> Drop for PushOnUnwind<'_, N, C> {
    fn drop(&mut self) {
        self.queue.push(self.index);
    }
}

impl<const N: usize, C: Measure> ReadyQueue<N, C> {
    /// The counts kept for slot `index`'s task (its stale wakes from the
    /// cell, the rest from `local`), if counts are kept.
    pub(crate) fn counts(&self, index: usize, local: &C::Local) -> Option<Counts> {
        C::counts(&self.cell(index).counters, local)
    }
}

impl<const N: usize, C: Measure> Default for ReadyQueue<N, C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize, C: Measure> fmt::Debug for ReadyQueue<N, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadyQueue")
            .field("slots", &N)
            .field("stale_wakes", &self.stale_wakes())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
