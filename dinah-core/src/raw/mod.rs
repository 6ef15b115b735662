//! The scheduling core both async executors share: one task's atomic state
//! word and its transitions, the lock-free stack of woken tasks, and the
//! tick loop that takes tasks off it.
//!
//! **No stability promise.** This module is public so that `dinah-std`'s
//! hosted executor can build on it; applications have no use for it, and it
//! may change in any release. (embassy-executor's `raw` module plays the same
//! part.)
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
//! Nothing here is `unsafe`, and nothing polls: this module only moves bits
//! and links, and calls back into the storage for what differs.
//!
//! | file | holds |
//! | --- | --- |
//! | `word.rs` | the state word: its bits, [`Life`] and [`Word`] |
//! | `cell.rs` | [`TaskCell`], its [`Link`]s, and the one [`transition`](TaskCell) helper every change of the word goes through |
//! | `wake_stack.rs` | [`WakeStack`]: waking, cancelling, starting, taking |
//! | `tick.rs` | [`Tick`], [`tick`], [`TickTally`] and [`Step`]: one tick, for both executors |
//! | `timer_queue.rs` | [`TimerQueue`]: the timers of one store (entries, keys, wakers, fired timers), both executors' timer stores are built on; [`TimerStore`] and the [`TimerOrder`] it names |
//! | `timer_heap.rs` | [`TimerHeap`]: the binary heap that orders fixed stores (firmware) |
//! | `wheel.rs` | [`Wheel`]: the timer wheel that orders growing stores (hosts) |
//! | `timer_book.rs` | [`TimerBook`]: a timer queue with its figures, the logic of every timer store; [`Rate`], the clock's rate it converts lags by |
//! | `wait_list.rs` | [`WaitList`]: the first-in, first-out line of waiters of channels and semaphores |
//! | `permits.rs` | [`Permits`]: a semaphore's count and line, for both crates' semaphores |
//! | `channel_state.rs` | [`ChannelState`]: a bounded channel's buffer, line and receiver, for both crates' channels |
//! | `waiting.rs` | [`Lock`], and the send and acquire futures written once over it |
//!
//! # Rules every executor built on it keeps
//!
//! 1. **One consumer.** Only the executor that owns a [`WakeStack`] calls
//!    [`WakeStack::take`], [`TaskCell::take_queued`],
//!    [`TaskCell::take_for_poll`], [`TaskCell::set_life`],
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
mod channel_state;
mod permits;
mod tick;
mod timer_book;
mod timer_heap;
mod timer_queue;
mod wait_list;
mod waiting;
mod wake_stack;
mod wheel;
mod word;

pub(crate) use cell::const_unless_loom;
pub use cell::{CancelRefused, Link, Link16, Link32, TaskCell};
pub use channel_state::{ChannelState, SendPoll, SendSlot, Slots};
pub use permits::Permits;
pub use tick::{Step, Tick, TickTally, tick};
pub use timer_book::{Rate, TimerBook};
pub use timer_heap::TimerHeap;
pub use timer_queue::{
    Armed, TimerEntry, TimerIndex, TimerKey, TimerOrder, TimerQueue, TimerStore,
};
pub use wait_list::{Turn, WAKE_BATCH, WaitEntry, WaitKey, WaitList, WaitStore, WakeBatch};
pub use waiting::{
    Acquiring, ChannelLock, Item, Lock, PermitLock, Sending, Settle, add_permits, critical,
    critical_in, forget_permits, poll_recv, release, try_send, wake, with_batch,
};
pub use wake_stack::{Stale, WakeStack};
pub use wheel::Wheel;
pub(crate) use word::KEEPS_POLLED_WAKES;
pub use word::{GEN_MASK, Life, Word};
