//! A task's state word: what each bit means, and the lifecycle it holds.
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
//! it runs in the executor's context ([`WakeStack::mark`](super::WakeStack::mark)),
//! and only then are the two poll flags set.
#![forbid(unsafe_code)]

use crate::task::TaskState;

/// On the wake stack, or taken off it and not yet polled.
pub(crate) const QUEUED: u32 = 1 << 0;
/// Set together with `QUEUED` when the wake came during some task's poll.
pub(crate) const WOKEN_IN_POLL: u32 = 1 << 1;
/// Set together with `QUEUED` when the wake came during this task's own poll.
pub(crate) const SELF_WOKEN: u32 = 1 << 2;
/// Cancellation was requested and not yet carried out.
pub(crate) const CANCEL: u32 = 1 << 3;
/// The wake flags `QUEUED` carries.
pub(crate) const WAKE_FLAGS: u32 = QUEUED | WOKEN_IN_POLL | SELF_WOKEN;
const LIFE_SHIFT: u32 = 4;
pub(crate) const LIFE_MASK: u32 = 0b111 << LIFE_SHIFT;
pub(crate) const GEN_SHIFT: u32 = 7;
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

    pub(crate) const fn bits(self) -> u32 {
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
    /// Queued by a wake made in the executor's own context during this
    /// task's own poll (the poll since the task was last taken off its
    /// list): it woke itself.
    #[must_use]
    pub const fn is_self_woken(self) -> bool {
        self.has(SELF_WOKEN)
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
    /// The word of a new task of generation `generation` (low bits),
    /// `Pending` and queued for its first poll.
    pub(crate) const fn started(generation: u32) -> Self {
        Self((generation << GEN_SHIFT) | Life::Pending.bits() | QUEUED)
    }
    /// This word with lifecycle `life`.
    pub(crate) const fn with_life(self, life: Life) -> Self {
        Self((self.0 & !LIFE_MASK) | life.bits())
    }
}
