//! A task's state word: what each bit means, and the lifecycle it holds.
//!
//! | bits | meaning |
//! | --- | --- |
//! | 0 | `QUEUED`: on the wake stack, or taken off it and not yet polled |
//! | 1 | `WOKEN_IN_POLL`: set with `QUEUED` when the wake came, in the executor's own context, during some task's poll |
//! | 2 | `SELF_WOKEN`: set with `QUEUED` when the wake came, in the executor's own context, during this task's own poll |
//! | 3 | `CANCEL`: cancellation requested and not yet carried out |
//! | 4..7 | the lifecycle: 0 vacant, 1 completed, 2 failed, 3 cancelled, 4 pending, 5 running (bit 6 set: the task is live) |
//! | 7 | `POLLING`: the consumer is polling the task, or holds it for its next tick after a wake landed during that poll; a wake that finds it set leaves the queuing to the consumer |
//! | 8..32 | the generation's low 24 bits: which task of this cell an id names |
//!
//! A wake from another thread, another core or an interrupt handler that
//! lands during a poll is not the polled task's own: the waker says whether
//! it runs in the executor's context ([`WakeStack::mark`](super::WakeStack::mark)),
//! and only then are the two poll flags set.
//!
//! `POLLING` is set only by a consumer that queues its own polled tasks
//! ([`KEEPS_POLLED_WAKES`]): the core executor on targets with an operating
//! system. Elsewhere it is never set and every wake pushes.
#![forbid(unsafe_code)]

use super::state::TaskState;

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
/// The consumer is polling the task (or holds it, queued, for its next
/// tick): a wake that sets `QUEUED` now leaves the queuing to it.
pub(crate) const POLLING: u32 = 1 << 7;
pub(crate) const GEN_SHIFT: u32 = 8;

/// Whether the core executor marks the task it polls `POLLING` and queues a
/// task woken during its own poll itself, when the poll ends: a self-wake
/// then takes two locked operations (the wake's and the next take's)
/// instead of four (no push, no swap of the stack), and a task woken from
/// elsewhere pays one more (the poll's end clears the bit). On targets
/// without an operating system (firmware) the extra code costs more flash
/// than the operations are worth there, so every wake pushes. The
/// `dinah_plain_wakes` configuration turns it off on a host too, so that
/// both protocols are model-checked.
pub(crate) const KEEPS_POLLED_WAKES: bool = !cfg!(any(target_os = "none", dinah_plain_wakes));
/// The generation bits a state word keeps: generations wrap (in the word)
/// after this many reuses of one cell. An executor that needs longer-lived
/// ids keeps the higher bits beside the word.
pub const GEN_MASK: u32 = (1 << (32 - GEN_SHIFT)) - 1;

/// A lifecycle's three bits in the state word: 0 for a vacant cell (no
/// task), 1 to 3 for the terminal states, 4 and 5 for the live ones, so
/// that one bit ([`LIVE`]) tells a live task and one more ([`STARTED`]) is
/// all a first poll sets.
pub(crate) const fn life_bits(state: Option<TaskState>) -> u32 {
    match state {
        None => 0,
        Some(state) => state_bits(state),
    }
}

/// The lifecycle bits of a task in `state`.
pub(crate) const fn state_bits(state: TaskState) -> u32 {
    let field = match state {
        TaskState::Completed => 1,
        TaskState::Failed => 2,
        TaskState::Cancelled => 3,
        TaskState::Pending => 4,
        TaskState::Running => 5,
    };
    field << LIFE_SHIFT
}

/// The bits of a pending task, for the words that compare against them.
const PENDING: u32 = state_bits(TaskState::Pending);
/// Set in the lifecycle bits of a live task (`Pending` or `Running`), and
/// only there.
pub(crate) const LIVE: u32 = 0b100 << LIFE_SHIFT;
/// What a first poll adds to a `Pending` task's bits to make it `Running`
/// (and what a `Running` task has already).
pub(crate) const STARTED: u32 = state_bits(TaskState::Running) & !PENDING;
const _: () = assert!(PENDING & LIVE != 0 && state_bits(TaskState::Running) & LIVE != 0);
const _: () = assert!(PENDING | STARTED == state_bits(TaskState::Running));
const _: () = assert!(
    state_bits(TaskState::Completed) & LIVE == 0
        && state_bits(TaskState::Failed) & LIVE == 0
        && state_bits(TaskState::Cancelled) & LIVE == 0
);

/// A state word, read at one moment and decoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Word(pub(crate) u32);

impl Word {
    /// The task's state, or `None` when the cell is vacant (holds no
    /// task).
    #[must_use]
    pub const fn state(self) -> Option<TaskState> {
        match (self.0 & LIFE_MASK) >> LIFE_SHIFT {
            1 => Some(TaskState::Completed),
            2 => Some(TaskState::Failed),
            3 => Some(TaskState::Cancelled),
            4 => Some(TaskState::Pending),
            5 => Some(TaskState::Running),
            _ => None,
        }
    }
    /// Which task of the cell this is: the low 24 bits of its generation.
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
    /// Being polled by a consumer that queues the task's own wakes, or held
    /// by it for its next tick: the core executor on targets with an
    /// operating system (see [`AsyncExecutor::tick`](crate::AsyncExecutor::tick)).
    #[must_use]
    pub const fn is_polling(self) -> bool {
        self.has(POLLING)
    }
    /// `Pending` (never polled), without decoding the lifecycle.
    #[must_use]
    pub const fn is_pending(self) -> bool {
        self.0 & LIFE_MASK == PENDING
    }
    /// `Pending` or `Running`: the task is not over. One bit, without
    /// decoding the lifecycle.
    #[must_use]
    pub const fn is_live(self) -> bool {
        self.has(LIVE)
    }
    /// The word of the next task of this word's cell: the next generation
    /// (0 when its bits wrap), `Pending` and queued for its first poll. The
    /// same as `started` with the next generation, worked out as one or
    /// and one add: every bit below the generation set, then one more
    /// carries into it, plus the new task's bits.
    pub(crate) const fn next_task(self) -> Self {
        let below = (1 << GEN_SHIFT) - 1;
        Self((self.0 | below).wrapping_add(1 + (PENDING | QUEUED)))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_next_task_has_the_next_generation_and_nothing_else_of_the_old_word() {
        let generations = [0, 1, 2, 0x7f, 0x80, 0xff_fffe, GEN_MASK];
        let low_bits = [
            0,
            QUEUED | CANCEL,
            state_bits(TaskState::Completed) | WOKEN_IN_POLL | SELF_WOKEN,
            state_bits(TaskState::Cancelled) | POLLING,
            (1 << GEN_SHIFT) - 1,
        ];
        for generation in generations {
            for low in low_bits {
                let next = Word((generation << GEN_SHIFT) | low).next_task();
                let expected = (generation + 1) & GEN_MASK;
                assert_eq!(next.generation(), expected, "{generation} {low:#x}");
                assert_eq!(next.0, (expected << GEN_SHIFT) | PENDING | QUEUED);
                assert!(next.is_pending() && next.is_queued() && !next.is_polling());
            }
        }
    }
}
