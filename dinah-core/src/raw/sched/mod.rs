//! The scheduling core both async executors share: one task's atomic state
//! word and its transitions, the lock-free stack of woken tasks, and the
//! tick loop that takes tasks off it, with the values they report
//! ([`TaskState`], [`TickReport`]).
//!
//! Two executors are built on it, with two storages:
//!
//! - the core [`AsyncExecutor`](crate::executor::AsyncExecutor) keeps its
//!   tasks in `N` fixed slots and its cells in a `'static`
//!   [`ReadyQueue`](crate::executor::ReadyQueue), with a heap-free waker;
//! - `dinah-std`'s `LocalExecutor` keeps heap-allocated tasks, one cell per
//!   task behind an `Arc`, with a `std` waker.
//!
//! Both wake, coalesce, cancel, count stale wakes and order their polls with
//! the code below (the tick itself is [`tick`], over each executor's
//! [`Tick`] storage), so the loom models of this protocol cover both.
//!
//! | file | holds |
//! | --- | --- |
//! | `state.rs` | [`TaskState`], a task's public lifecycle |
//! | `word.rs` | the state word: its bits, [`Word`] |
//! | `cell.rs` | [`TaskCell`], its [`Link`]s, and the one transition helper every change of the word goes through |
//! | `wake_stack.rs` | [`WakeStack`]: waking, cancelling, starting, taking |
//! | `tick.rs` | [`Tick`], [`tick`], [`TickTally`] and [`Step`]: one tick, for both executors |
//! | `report.rs` | [`TickReport`], what a tick did |
//!
//! # Rules every executor built on it keeps
//!
//! 1. **One consumer.** Only the executor that owns a [`WakeStack`] calls
//!    [`WakeStack::take`], [`TaskCell::take_queued`],
//!    [`TaskCell::take_for_poll`], [`TaskCell::set_state`],
//!    [`WakeStack::start`] and [`WakeStack::requeue`]. Wakers and cancel
//!    requests, from any thread or interrupt, only call [`WakeStack::wake`],
//!    [`WakeStack::mark`] and [`WakeStack::cancel`].
//! 2. **A cell is on the stack at most once**: it is pushed only by the party
//!    that set `QUEUED`, and `QUEUED` is cleared only by the consumer after
//!    taking it off. So a wake can never be lost and never be doubled. The
//!    one exception is a cell the consumer marked `POLLING` (the core
//!    executor, on a host): a wake that sets `QUEUED` on it pushes nothing,
//!    and the consumer, which clears `POLLING` only by a compare-and-swap
//!    that sees `QUEUED` clear, queues the cell itself when it sees
//!    `QUEUED` at the poll's end.
//! 3. **A cell's storage is reused only when its task is over and it is not
//!    on the stack**, so whatever walks the stack always finds the cell that
//!    was pushed. (The fixed-slot executor leaves `QUEUED` set on a free
//!    slot as its claim on it; [`WakeStack::begin`] overwrites the word.)
#![forbid(unsafe_code)]

mod cell;
mod report;
mod state;
mod tick;
mod wake_stack;
mod word;

pub(crate) use cell::const_unless_loom;
pub use cell::{CancelRefused, Link, Link16, Link32, TaskCell};
pub use report::TickReport;
pub use state::{InvalidTaskTransition, TaskState};
pub use tick::{Step, Tick, TickTally, tick};
pub use wake_stack::{Stale, WakeStack};
pub(crate) use word::KEEPS_POLLED_WAKES;
pub use word::{GEN_MASK, Word};
