//! [`TaskCell`]: one task's state word and its link, and the one helper
//! every change of the word goes through ([`TaskCell::transition`]), with a
//! method named after each transition.
#![forbid(unsafe_code)]

use super::state::TaskState;
use super::word::{
    CANCEL, KEEPS_POLLED_WAKES, LIFE_MASK, LIVE, POLLING, QUEUED, STARTED, WAKE_FLAGS, Word,
    life_bits, state_bits,
};
use crate::atomic::{AtomicU16, AtomicU32, Ordering};

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
///
/// Its index starts at 0 and is numbered once by the table's owner before
/// anything reads it (a fixed table is then all zeros when built, so a
/// `static` one takes no flash).
#[derive(Debug)]
pub struct Link16 {
    next: AtomicU16,
    index: AtomicU16,
}

impl Link16 {
    /// Numbers the cell `index`. Relaxed: every later reader is ordered
    /// after it by whatever handed it the cell.
    pub(crate) fn set_index(&self, index: u16) {
        self.index.store(index, Ordering::Relaxed);
    }

    const_unless_loom! {
        /// A link pointing nowhere, numbered 0 until its table's owner
        /// numbers it.
        #[must_use]
        pub fn new() -> Self {
            Self {
                next: AtomicU16::new(0),
                index: AtomicU16::new(0),
            }
        }
    }
}

impl Default for Link16 {
    fn default() -> Self {
        Self::new()
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
        u32::from(self.index.load(Ordering::Relaxed))
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

/// What a transition decides, given the word it read: to write a new word
/// (and return `R` once it is written), or to leave the word alone (and
/// return `R` at once).
pub(crate) enum Change<R> {
    /// Write this word; return `R` when the write took.
    To(u32, R),
    /// Leave the word as it is and return `R`.
    Keep(R),
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

    /// The one way the word changes by compare-and-swap: `change` sees the
    /// word as it is and decides; a word changed meanwhile is read again and
    /// `change` asked again. Every other change is a single atomic
    /// read-modify-write ([`take_queued`](Self::take_queued),
    /// [`claim`](Self::claim), [`requeue`](Self::requeue)) or the
    /// consumer's store of a fresh word ([`begin`](Self::begin)).
    #[inline(always)]
    pub(crate) fn transition<R>(&self, mut change: impl FnMut(Word) -> Change<R>) -> R {
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            match change(Word(current)) {
                Change::Keep(result) => return result,
                Change::To(next, result) => match self.state.compare_exchange_weak(
                    current,
                    next,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return result,
                    Err(actual) => current = actual,
                },
            }
        }
    }

    /// **Wake**: sets `QUEUED` with `flags`' wake flags, unless the task is
    /// over (`None`) or already queued. Returns the word as it was. A wake
    /// that finds the task queued still writes the word back unchanged (a
    /// read-modify-write), so that it releases what the waker did before
    /// waking to the consumer's `take_queued`: a plain load would not, and
    /// the poll could miss it (a lost wakeup).
    #[inline(always)]
    pub(crate) fn mark(&self, flags: u32) -> Option<Word> {
        self.transition(|word| {
            if !word.is_live() {
                Change::Keep(None)
            } else if word.is_queued() {
                Change::To(word.0, Some(word))
            } else {
                Change::To(word.0 | flags, Some(word))
            }
        })
    }

    /// **Request cancellation** of generation `generation`: sets `CANCEL`
    /// and `QUEUED`, unless the cell holds another task or the task is
    /// over. Returns whether the queuing is someone else's: the cell was
    /// queued already, or its consumer is polling it (`POLLING`) and queues
    /// it when the poll ends.
    #[inline(always)]
    pub(crate) fn request_cancel(&self, generation: u32) -> Result<bool, CancelRefused> {
        self.transition(|word| {
            if word.generation() != generation || word.state().is_none() {
                Change::Keep(Err(CancelRefused::Unknown))
            } else if !word.is_live() {
                Change::Keep(Err(CancelRefused::Finished))
            } else {
                let queued = word.is_queued() || (KEEPS_POLLED_WAKES && word.is_polling());
                Change::To(word.0 | CANCEL | QUEUED, Ok(queued))
            }
        })
    }

    /// **Take off the list**: clears `QUEUED` and the wake flags and returns
    /// the word as it was. Consumer only.
    #[inline(always)]
    pub fn take_queued(&self) -> Word {
        Word(self.state.fetch_and(!WAKE_FLAGS, Ordering::AcqRel))
    }

    /// **Take for a poll**: [`take_queued`](Self::take_queued), and in the
    /// same step a `Pending` task without a cancellation request becomes
    /// `Running`: what a consumer does with a task it is about to poll.
    /// Returns the word as it was, so [`TickTally::step`](super::TickTally::step)
    /// still sees a first poll. Consumer only.
    #[inline(always)]
    pub fn take_for_poll(&self) -> Word {
        self.transition(|word| {
            let mut next = word.0 & !WAKE_FLAGS;
            // Live and not cancelled: `Pending` becomes `Running`, which a
            // `Running` task already is.
            if word.0 & (LIVE | CANCEL) == LIVE {
                next |= STARTED;
            }
            Change::To(next, word)
        })
    }

    /// **Take for a poll, marked `POLLING`**: clears `QUEUED` and the wake
    /// flags and returns the word as it was; a live task without a
    /// cancellation request is marked `POLLING` in the same step (and a
    /// `Pending` one becomes `Running`), so that a wake during its poll
    /// leaves the queuing to the consumer ([`end_poll`](Self::end_poll)
    /// says whether one came). Consumer only, which ends every poll it
    /// starts with [`end_poll`](Self::end_poll) or
    /// [`end_polled`](Self::end_polled).
    #[inline(always)]
    pub(crate) fn take_polling(&self) -> Word {
        self.transition(|word| {
            let mut next = word.0 & !(WAKE_FLAGS | POLLING);
            // Live and not cancelled: marked, and `Pending` becomes
            // `Running`, which a `Running` task already is.
            if word.0 & (LIVE | CANCEL) == LIVE {
                next |= POLLING | STARTED;
            }
            Change::To(next, word)
        })
    }

    /// **End a pending poll** of a task taken with
    /// [`take_polling`](Self::take_polling): `true` when a wake (or a
    /// cancellation request) landed during the poll, so the task is
    /// `QUEUED` but on no stack, and the consumer queues it itself (it stays
    /// `POLLING` until its next take, so later wakes coalesce); otherwise
    /// clears `POLLING`, after which wakes push as usual. Consumer only.
    #[inline(always)]
    pub(crate) fn end_poll(&self) -> bool {
        self.transition(|word| {
            if word.is_queued() {
                Change::Keep(true)
            } else {
                Change::To(word.0 & !POLLING, false)
            }
        })
    }

    /// **End a task after its poll**: [`set_state`](Self::set_state) with a
    /// terminal `state` (which clears `POLLING`), returning `true` when the
    /// task was `POLLING` and a wake landed during the poll: it is `QUEUED`
    /// on no stack, and the consumer queues it itself, so that its entry is
    /// released in order. Consumer only.
    pub(crate) fn end_polled(&self, state: TaskState) -> bool {
        debug_assert!(state.is_terminal());
        self.transition(|word| {
            let next = (word.0 & !(LIFE_MASK | CANCEL | POLLING)) | state_bits(state);
            Change::To(next, word.is_polling() && word.is_queued())
        })
    }

    /// **End, start running, or vacate**: sets the task's state (`None`:
    /// the cell holds no task) and returns the new word. A terminal state
    /// also clears any cancellation request and `POLLING`: the task is
    /// over. (`Pending -> Running` keeps them: a request may have come
    /// after the task was taken off the stack.) Consumer only.
    pub fn set_state(&self, state: impl Into<Option<TaskState>>) -> Word {
        let state = state.into();
        let terminal = matches!(state, Some(state) if state.is_terminal());
        let clear = if terminal {
            LIFE_MASK | CANCEL | POLLING
        } else {
            LIFE_MASK
        };
        self.transition(|word| {
            let next = (word.0 & !clear) | life_bits(state);
            Change::To(next, Word(next))
        })
    }

    /// **Queue again from the consumer's side**, unless queued already (a
    /// poll that unwound). Returns `true` when this call set `QUEUED`: the
    /// caller pushes the cell.
    #[inline(always)]
    pub(crate) fn requeue(&self) -> bool {
        self.state.fetch_or(QUEUED, Ordering::AcqRel) & QUEUED == 0
    }

    /// **Claim a finished cell**: sets `QUEUED` on a cell whose task is
    /// over, and says whether this call set it: whoever does owns the cell's
    /// recycling (the fixed-slot executor's claim on a finished slot). Any
    /// thread or interrupt.
    pub(crate) fn claim(&self) -> bool {
        self.state.fetch_or(QUEUED, Ordering::AcqRel) & QUEUED == 0
    }

    /// **Begin a new task**: stores `word` (from [`Word::started`]) over a
    /// cell whose previous task is over and that is on no list. Consumer
    /// only.
    #[inline(always)]
    pub(crate) fn begin(&self, word: Word) {
        self.state.store(word.0, Ordering::Release);
    }
}

/// Why [`WakeStack::cancel`](super::WakeStack::cancel) did nothing.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CancelRefused {
    /// The cell holds another task now (or none).
    Unknown,
    /// The task is already over.
    Finished,
}

#[cfg(all(test, not(loom)))]
impl<L: Link> TaskCell<L> {
    /// Gives a finished cell the generation bits `generation`, as if that
    /// many tasks had come and gone in it.
    pub(crate) fn age_to(&self, generation: u32) {
        let word = self.word();
        assert!(!word.is_live());
        self.state.store(
            (word.0 & !(super::word::GEN_MASK << super::word::GEN_SHIFT))
                | (generation << super::word::GEN_SHIFT),
            Ordering::Release,
        );
    }
}

impl TaskCell<Link16> {
    /// Numbers a fixed-slot cell (see [`Link16`]).
    pub(crate) fn set_index(&self, index: u16) {
        self.link.set_index(index);
    }
}
