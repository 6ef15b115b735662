//! The scheduling core that dinah's async executors share: one task's atomic
//! state word, the lock-free stack of woken tasks, and the rules a tick
//! follows when it takes a task off that stack.
//!
//! Two executors are built on it, with two storages:
//!
//! - [`AsyncExecutor`](crate::AsyncExecutor) keeps its tasks in `N` fixed
//!   slots and its cells in a `'static` [`ReadyQueue`](crate::ReadyQueue),
//!   with a heap-free waker;
//! - `dinah-std`'s `LocalExecutor` keeps heap-allocated tasks, one cell per
//!   task behind an `Arc`, with a `std` waker.
//!
//! Both wake, coalesce, cancel, count stale wakes and order their polls with
//! the code below, so the loom models of this protocol cover both. Nothing
//! here is `unsafe`, and nothing polls: this module only moves bits and
//! links. It is public so that the hosted layer can use it; applications
//! have no reason to.
//!
//! # The state word
//!
//! | bits | meaning |
//! | --- | --- |
//! | 0 | `QUEUED`: on the wake stack, or taken off it and not yet polled |
//! | 1 | `WOKEN_IN_POLL`: set with `QUEUED` when the wake came, in the executor's own context, during some task's poll |
//! | 2 | `SELF_WOKEN`: set with `QUEUED` when the wake came, in the executor's own context, during this task's own poll |
//! | 3 | `CANCEL`: cancellation requested and not yet carried out |
//! | 4..7 | the lifecycle: vacant, pending, running, completed, failed, cancelled |
//! | 7..32 | the generation's low 25 bits: which task of this cell an id names |
//!
//! A wake from another thread, another core or an interrupt handler that
//! lands during a poll is not the polled task's own: the waker says whether
//! it runs in the executor's context ([`WakeStack::mark`]), and only then
//! are the two poll flags set.
//!
//! # Rules every executor built on it keeps
//!
//! 1. **One consumer.** Only the executor that owns a [`WakeStack`] calls
//!    [`WakeStack::take`], [`TaskCell::take_queued`],
//!    [`TaskCell::take_for_poll`], [`TaskCell::set_life`],
//!    [`WakeStack::start`] and [`WakeStack::requeue`]. Wakers and cancel
//!    requests, from any thread or interrupt, only call [`WakeStack::wake`]
//!    and [`WakeStack::cancel`].
//! 2. **A cell is on the stack at most once**: it is pushed only by the party
//!    that set `QUEUED`, and `QUEUED` is cleared only by the consumer after
//!    taking it off. So a wake can never be lost and never be doubled.
//! 3. **A cell's storage is reused only when its task is over and it is not
//!    on the stack**, so whatever walks the stack always finds the cell that
//!    was pushed. (The fixed-slot executor leaves `QUEUED` set on a free
//!    slot as its claim on it; [`WakeStack::begin`] overwrites the word.)
#![forbid(unsafe_code)]

use crate::TaskState;
use crate::sync::{AtomicU16, AtomicU32, Ordering};

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
const GEN_SHIFT: u32 = 7;
/// The generation bits a state word keeps: generations wrap (in the word)
/// after this many reuses of one cell. An executor that needs longer-lived
/// ids keeps the higher bits beside the word.
pub const GEN_MASK: u32 = (1 << (32 - GEN_SHIFT)) - 1;

/// Where a task is. Stored in three bits of the state word.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u32)]
pub enum Life {
    /// No task: the cell is free.
    Vacant = 0,
    /// Spawned, never polled.
    Pending = 1,
    /// Polled at least once, not over.
    Running = 2,
    /// Returned `Ok` (or `()`).
    Completed = 3,
    /// Returned an error, or panicked.
    Failed = 4,
    /// Dropped because cancellation was requested.
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

    /// Completed, failed or cancelled.
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The public [`TaskState`], or `None` for a vacant cell.
    #[must_use]
    pub const fn task_state(self) -> Option<TaskState> {
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

/// A state word, read at one moment and decoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Word(pub(crate) u32);

impl Word {
    /// The lifecycle.
    #[must_use]
    pub const fn life(self) -> Life {
        Life::of(self.0)
    }
    /// Which task of the cell this is: the low 25 bits of its generation.
    #[must_use]
    pub const fn generation(self) -> u32 {
        self.0 >> GEN_SHIFT
    }
    pub(crate) const fn has(self, flag: u32) -> bool {
        self.0 & flag != 0
    }
    /// On the wake stack, or taken off it and not yet polled.
    #[must_use]
    pub const fn is_queued(self) -> bool {
        self.has(QUEUED)
    }
    /// `Pending` (never polled), without decoding the lifecycle.
    #[must_use]
    pub const fn is_pending(self) -> bool {
        self.0 & LIFE_MASK == Life::Pending.bits()
    }
    /// `Pending` or `Running`: the task is not over. Read from the bits,
    /// without decoding the lifecycle.
    #[must_use]
    pub const fn is_live(self) -> bool {
        ((self.0 & LIFE_MASK) >> LIFE_SHIFT).wrapping_sub(1) < 2
    }
}

mod sealed {
    pub trait Sealed {}
}

/// How a [`TaskCell`] links to the next cell on a stack or list, and which
/// index names it: 16 bits for the fixed slots ([`Link16`], so a cell is 8
/// bytes), 32 for heap tasks ([`Link32`]). Sealed.
pub trait Link: sealed::Sealed + Sync {
    #[doc(hidden)]
    fn next(&self) -> u32;
    #[doc(hidden)]
    fn set_next(&self, next: u32);
    #[doc(hidden)]
    fn index(&self) -> u32;
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
pub(crate) use const_unless_loom;

/// A 16-bit link and index: for up to 65,534 fixed slots.
#[derive(Debug)]
pub struct Link16 {
    next: AtomicU16,
    index: u16,
}

impl Link16 {
    /// Renumbers a cell while a table of them is built in a `const fn`.
    #[cfg(not(loom))]
    pub(crate) const fn set_index(&mut self, index: u16) {
        self.index = index;
    }

    const_unless_loom! {
        /// The link of cell `index`, pointing nowhere.
        #[must_use]
        pub fn new(index: u16) -> Self {
            Self { next: AtomicU16::new(0), index }
        }
    }
}

/// A 32-bit link and index: for heap tasks.
#[derive(Debug)]
pub struct Link32 {
    next: AtomicU32,
    index: u32,
}

impl Link32 {
    /// The link of cell `index`, pointing nowhere. `index` must be below
    /// `u32::MAX`.
    #[must_use]
    pub fn new(index: u32) -> Self {
        Self {
            next: AtomicU32::new(0),
            index,
        }
    }
}

impl sealed::Sealed for Link16 {}
impl sealed::Sealed for Link32 {}

impl Link for Link16 {
    #[inline(always)]
    fn next(&self) -> u32 {
        u32::from(self.next.load(Ordering::Relaxed))
    }
    #[inline(always)]
    fn set_next(&self, next: u32) {
        // At most 65,535 cells per stack (the slots and the main cell).
        self.next.store(next as u16, Ordering::Relaxed);
    }
    #[inline(always)]
    fn index(&self) -> u32 {
        u32::from(self.index)
    }
}

impl Link for Link32 {
    #[inline(always)]
    fn next(&self) -> u32 {
        self.next.load(Ordering::Relaxed)
    }
    #[inline(always)]
    fn set_next(&self, next: u32) {
        self.next.store(next, Ordering::Relaxed);
    }
    #[inline(always)]
    fn index(&self) -> u32 {
        self.index
    }
}

/// One task's shared wake state: its state word and its link.
#[derive(Debug)]
pub struct TaskCell<L: Link> {
    state: AtomicU32,
    link: L,
}

impl<L: Link> TaskCell<L> {
    const_unless_loom! {
        /// A vacant cell.
        #[must_use]
        pub fn new(link: L) -> Self {
            Self { state: AtomicU32::new(0), link }
        }
    }

    /// The index this cell was built with.
    #[inline(always)]
    #[must_use]
    pub fn index(&self) -> u32 {
        self.link.index()
    }

    /// The state word now.
    #[inline(always)]
    #[must_use]
    pub fn word(&self) -> Word {
        Word(self.state.load(Ordering::Acquire))
    }

    /// The next cell on the list this one is on (`index + 1`, 0 for none).
    /// Only meaningful to the consumer, while the cell is off the stack.
    #[inline(always)]
    #[must_use]
    pub fn link(&self) -> u32 {
        self.link.next()
    }

    /// Sets the link (see [`link`](Self::link)). Consumer only.
    #[inline(always)]
    pub fn set_link(&self, next: u32) {
        self.link.set_next(next);
    }

    /// Clears `QUEUED` and the wake flags and returns the word as it was.
    /// Consumer only.
    #[inline(always)]
    pub fn take_queued(&self) -> Word {
        Word(
            self.state
                .fetch_and(!(QUEUED | WOKEN_IN_POLL | SELF_WOKEN), Ordering::AcqRel),
        )
    }

    /// [`take_queued`](Self::take_queued), and in the same atomic step a
    /// `Pending` task without a cancellation request becomes `Running`: what
    /// a consumer does with a task it is about to poll. Returns the word as
    /// it was, so [`TickTally::step`] still sees a first poll. Consumer only.
    #[inline(always)]
    pub fn take_for_poll(&self) -> Word {
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            let word = Word(current);
            let mut next = current & !(QUEUED | WOKEN_IN_POLL | SELF_WOKEN);
            if word.is_pending() && !word.has(CANCEL) {
                next = (next & !LIFE_MASK) | Life::Running.bits();
            }
            match self.state.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return word,
                Err(actual) => current = actual,
            }
        }
    }

    /// Sets the lifecycle and returns the new word. A terminal lifecycle
    /// also clears any cancellation request: the task is over.
    /// (`Pending -> Running` keeps it: a request may have come after the task
    /// was taken off the stack.) Consumer only.
    pub fn set_life(&self, life: Life) -> Word {
        let clear = if life.is_terminal() {
            LIFE_MASK | CANCEL
        } else {
            LIFE_MASK
        };
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            let next = (current & !clear) | life.bits();
            match self.state.compare_exchange_weak(
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

    /// Sets `QUEUED` on a cell whose task is over, and says whether this
    /// call set it: whoever does owns the cell's recycling (the fixed-slot
    /// executor's claim on a finished slot). Any thread or interrupt.
    pub(crate) fn claim(&self) -> bool {
        self.state.fetch_or(QUEUED, Ordering::AcqRel) & QUEUED == 0
    }
}

#[cfg(all(test, not(loom)))]
impl<L: Link> TaskCell<L> {
    /// Gives a finished cell the generation bits `generation`, as if that
    /// many tasks had come and gone in it.
    pub(crate) fn age_to(&self, generation: u32) {
        let word = self.word();
        assert!(!word.is_live());
        self.state.store(
            (word.0 & !(GEN_MASK << GEN_SHIFT)) | (generation << GEN_SHIFT),
            Ordering::Release,
        );
    }
}

impl TaskCell<Link16> {
    /// Renumbers a fixed-slot cell while its table is built.
    #[cfg(not(loom))]
    pub(crate) const fn set_index(&mut self, index: u16) {
        self.link.set_index(index);
    }
}

/// Why [`WakeStack::cancel`] did nothing.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CancelRefused {
    /// The cell holds another task now (or none).
    Unknown,
    /// The task is already over.
    Finished,
}

/// What [`TickTally::step`] says to do with a task taken off the stack.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Step {
    /// The task is over (its last waker is gone, or its poll unwound): let
    /// go of its storage and recycle the cell if nothing still needs it.
    Release,
    /// Cancellation was requested: drop the future and end it `Cancelled`.
    Cancel,
    /// Poll it. `first`: it was never polled (set it `Running`).
    /// `self_woken`: it woke itself during its previous poll.
    Poll {
        /// Never polled before.
        first: bool,
        /// Woken during its own previous poll.
        self_woken: bool,
    },
}

/// The lock-free stack of woken cells, plus the two counters every wake
/// consults: which cell is being polled, and how many wakes were stale.
///
/// Entries are `index + 1` of a cell (0 ends the stack), linked through the
/// cells themselves, so pushing never allocates and never fails.
#[derive(Debug)]
pub struct WakeStack {
    head: AtomicU32,
    polling: AtomicU32,
    stale: AtomicU32,
}

impl WakeStack {
    const_unless_loom! {
        /// An empty stack.
        #[must_use]
        pub fn new() -> Self {
            Self {
                head: AtomicU32::new(0),
                polling: AtomicU32::new(0),
                stale: AtomicU32::new(0),
            }
        }
    }

    /// Wakes that arrived after their task was over. Wraps at `u32::MAX`.
    #[must_use]
    pub fn stale_wakes(&self) -> u32 {
        self.stale.load(Ordering::Relaxed)
    }

    /// Whether any wake waits on the stack.
    #[inline(always)]
    #[must_use]
    pub fn has_woken(&self) -> bool {
        self.head.load(Ordering::Acquire) != 0
    }

    /// Which cell is being polled (`index + 1`), or `0` for none.
    #[inline(always)]
    #[must_use]
    pub fn polling(&self) -> u32 {
        self.polling.load(Ordering::Relaxed)
    }

    /// Records which cell is being polled (`index + 1`), or none (`0`), so
    /// that wakes can say whether they came during a poll. Consumer only.
    #[inline(always)]
    pub fn set_polling(&self, entry: u32) {
        self.polling.store(entry, Ordering::Relaxed);
    }

    /// Pushes `cell`. The caller set its `QUEUED`.
    #[inline(always)]
    pub fn push<L: Link>(&self, cell: &TaskCell<L>) {
        let entry = cell.index() + 1;
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            cell.set_link(head);
            match self
                .head
                .compare_exchange_weak(head, entry, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(actual) => head = actual,
            }
        }
    }

    /// Wakes `cell`: sets `QUEUED` (with the wake flags) and pushes it,
    /// unless it is queued already (the wake coalesces) or its task is over
    /// (counted as stale). Returns `true` when it pushed, so the caller can
    /// signal whoever sleeps waiting for work. Any thread or interrupt.
    ///
    /// # Errors
    ///
    /// [`Stale`] when the task is over.
    #[inline(always)]
    pub fn wake<L: Link>(&self, cell: &TaskCell<L>) -> Result<bool, Stale> {
        let marked = self.mark(cell, || true)?;
        if marked {
            self.push(cell);
        }
        Ok(marked)
    }

    /// The first half of [`wake`](Self::wake): sets `QUEUED` (with the wake
    /// flags) unless it is set already, and returns `true` when this call set
    /// it. The caller then owns the duty of queuing the cell exactly once:
    /// on this stack with [`push`](Self::push), or, on the consumer's own
    /// thread while it runs, in a list of the consumer's.
    ///
    /// `here` says whether the wake runs in the consumer's own context (its
    /// thread, not another thread, core or interrupt handler); it is asked
    /// only when a poll is running, and only a wake made here sets the poll
    /// flags, so a wake from elsewhere that lands during a poll is never
    /// taken for the polled task's own.
    ///
    /// # Errors
    ///
    /// [`Stale`] (counted) when the task is over.
    #[inline(always)]
    pub fn mark<L: Link>(
        &self,
        cell: &TaskCell<L>,
        here: impl FnOnce() -> bool,
    ) -> Result<bool, Stale> {
        let polling = self.polling.load(Ordering::Relaxed);
        let mut flags = QUEUED;
        if polling != 0 && here() {
            flags |= WOKEN_IN_POLL;
            if polling == cell.index() + 1 {
                flags |= SELF_WOKEN;
            }
        }
        let mut current = cell.state.load(Ordering::Acquire);
        loop {
            let word = Word(current);
            if !word.is_live() {
                self.stale.fetch_add(1, Ordering::Relaxed);
                return Err(Stale);
            }
            // Already queued: the wake coalesces, but still as a
            // read-modify-write (writing the word back unchanged), so that it
            // releases what the waker did before waking to the consumer's
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
                Ok(_) => return Ok(!word.has(QUEUED)),
                Err(actual) => current = actual,
            }
        }
    }

    /// Requests cancellation of the task of generation `generation` (its
    /// low 25 bits, as [`Word::generation`]) in `cell`: sets `CANCEL` and
    /// queues it (unless queued already), so that
    /// the consumer drops the future at its next scheduling point. Returns
    /// `true` when it pushed. Any thread or interrupt.
    ///
    /// # Errors
    ///
    /// [`CancelRefused::Unknown`] when the cell holds another generation,
    /// [`CancelRefused::Finished`] when the task is over.
    pub fn cancel<L: Link>(
        &self,
        cell: &TaskCell<L>,
        generation: u32,
    ) -> Result<bool, CancelRefused> {
        let mut current = cell.state.load(Ordering::Acquire);
        loop {
            let word = Word(current);
            if word.generation() != generation || word.life() == Life::Vacant {
                return Err(CancelRefused::Unknown);
            }
            if !word.is_live() {
                return Err(CancelRefused::Finished);
            }
            match cell.state.compare_exchange_weak(
                current,
                current | CANCEL | QUEUED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) if word.has(QUEUED) => return Ok(false),
                Ok(_) => {
                    self.push(cell);
                    return Ok(true);
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// Starts a new task in `cell`: the next generation, `Pending`, and
    /// queued for its first poll. Consumer only, and only for a cell whose
    /// previous task is over and that is not on the stack (for heap-free
    /// wakers: with no cloned waker left). Returns the new generation's low
    /// bits.
    pub fn start<L: Link>(&self, cell: &TaskCell<L>) -> u32 {
        let generation = Self::begin(cell);
        self.push(cell);
        generation
    }

    /// [`start`](Self::start) without the push: the new task is `QUEUED`
    /// and the caller queues it exactly once (rule 2), on this stack or on a
    /// list of the consumer's own. Consumer only.
    pub fn begin<L: Link>(cell: &TaskCell<L>) -> u32 {
        let word = cell.word();
        debug_assert!(!word.is_live());
        let generation = Self::next_generation(word);
        cell.state.store(
            (generation << GEN_SHIFT) | Life::Pending.bits() | QUEUED,
            Ordering::Release,
        );
        generation
    }

    /// The generation bits the next task of a cell whose word is `word`
    /// gets from [`begin`](Self::begin): 0 when they wrap.
    #[must_use]
    pub const fn next_generation(word: Word) -> u32 {
        (word.generation() + 1) & GEN_MASK
    }

    /// Queues `cell` again from the consumer's side unless it is queued
    /// already (used when a poll unwinds). Returns `true` when it pushed.
    pub fn requeue<L: Link>(&self, cell: &TaskCell<L>) -> bool {
        let previous = cell.state.fetch_or(QUEUED, Ordering::AcqRel);
        let push = previous & QUEUED == 0;
        if push {
            self.push(cell);
        }
        push
    }

    /// Takes every entry off the stack and returns them as a chain in wake
    /// order, oldest first, linked through the cells (`index + 1`, ending in
    /// 0): its first and last entries, or `None` when nothing was woken.
    /// `cell_of(index)` finds a cell by its index. Consumer only.
    #[inline(always)]
    pub fn take<'c, L: Link + 'c>(
        &self,
        cell_of: impl Fn(usize) -> &'c TaskCell<L>,
    ) -> Option<(u32, u32)> {
        let mut top = self.head.swap(0, Ordering::Acquire);
        if top == 0 {
            return None;
        }
        // The stack is newest first: reverse it through the links.
        let last = top;
        let mut reversed = 0;
        while top != 0 {
            let cell = cell_of(top as usize - 1);
            let below = cell.link();
            cell.set_link(reversed);
            reversed = top;
            top = below;
        }
        Some((reversed, last))
    }
}

impl Default for WakeStack {
    fn default() -> Self {
        Self::new()
    }
}

/// A wake for a task that is already over: counted, otherwise ignored.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Stale;

/// What one tick did, counted as it goes; becomes a
/// [`TickReport`](crate::TickReport).
#[derive(Clone, Copy, Debug, Default)]
pub struct TickTally {
    polled: usize,
    completed: usize,
    failed: usize,
    cancelled: usize,
    outside: usize,
    in_poll: usize,
    self_woken: usize,
}

impl TickTally {
    /// Nothing done yet.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            polled: 0,
            completed: 0,
            failed: 0,
            cancelled: 0,
            outside: 0,
            in_poll: 0,
            self_woken: 0,
        }
    }

    /// Tasks polled so far (what a budget is measured in).
    #[inline(always)]
    #[must_use]
    pub const fn polled(&self) -> usize {
        self.polled
    }

    /// Decides what to do with a task whose [`TaskCell::take_for_poll`]
    /// returned `word`, and counts it: a cancellation, or a poll and its
    /// cause (first poll, self-wake, wake during another poll, or from
    /// outside).
    #[inline(always)]
    pub fn step(&mut self, word: Word) -> Step {
        if !word.is_live() {
            return Step::Release;
        }
        if word.has(CANCEL) {
            self.cancelled += 1;
            return Step::Cancel;
        }
        let first = word.is_pending();
        let self_woken = word.has(SELF_WOKEN);
        if !first {
            if self_woken {
                self.self_woken += 1;
            } else if word.has(WOKEN_IN_POLL) {
                self.in_poll += 1;
            } else {
                self.outside += 1;
            }
        }
        self.polled += 1;
        Step::Poll { first, self_woken }
    }

    /// Counts a task that ended after its poll: completed, or failed.
    #[inline(always)]
    pub fn ended(&mut self, completed: bool) {
        if completed {
            self.completed += 1;
        } else {
            self.failed += 1;
        }
    }

    /// The report, with the stale wakes seen since the previous tick and
    /// whether work remains.
    #[must_use]
    pub const fn report(self, stale_wakes: u32, work_remaining: bool) -> crate::TickReport {
        crate::TickReport {
            polled: self.polled,
            completed: self.completed,
            failed: self.failed,
            cancelled: self.cancelled,
            woken_outside: self.outside,
            woken_in_poll: self.in_poll,
            self_woken: self.self_woken,
            stale_wakes,
            work_remaining,
        }
    }
}
