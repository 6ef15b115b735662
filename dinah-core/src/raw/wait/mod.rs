//! The wait-line core channels, semaphores and pool admission are built on:
//! a first-in, first-out line of waiters over storage its owner picks
//! ([`WaitList`]), a semaphore's count and line ([`Permits`]), a bounded
//! channel's buffer, line and receiver ([`ChannelState`]), and the send and
//! acquire futures written once over a [`Lock`]; with the values they
//! report ([`Refusal`], [`SendError`], [`TryRecvError`], [`PermitOverflow`],
//! [`ChannelFigures`], [`SemaphoreFigures`]).
//!
//! | file | holds |
//! | --- | --- |
//! | `list.rs` | [`WaitList`]: the line, with its invariants |
//! | `permits.rs` | [`Permits`]: a semaphore's count and line, for both crates' semaphores |
//! | `held.rs` | [`Held`]: a mutex's value and its one permit under one lock, with its [`Locking`] future and [`HeldValue`] guard, for both crates' mutexes |
//! | `lent.rs` | [`Lent`]: a value lent out of its [`Vault`] while permits are held, for the read-write lock's writer |
//! | `mailbox.rs` | [`Mailbox`]: one value for one waiting receiver, for the core's `Signal` and std's `oneshot` |
//! | `notice.rs` | [`Notice`]: a kept notification and a line, for both crates' notifies, and their [`Notified`] future |
//! | `channel.rs` | [`ChannelState`]: a bounded channel's buffer, line and receiver, for both crates' channels |
//! | `crowd.rs` | [`Crowd`]: receivers a send wakes all at once, for the watches and broadcasts |
//! | `ring.rs` | [`Ring`]: the last values sent, each for every receiver, for the core's `PubSub` and std's `broadcast` |
//! | `watched.rs` | [`Watched`]: a value with a version and the receivers waiting for the next, for both crates' watches |
//! | `waiting.rs` | [`Lock`], and the send and acquire futures written once over it |
//! | `error.rs`, `figures.rs` | what a send, receive or acquire reports, and the figures |
#![forbid(unsafe_code)]

mod channel;
mod crowd;
mod error;
mod figures;
mod held;
mod lent;
mod list;
mod mailbox;
mod notice;
mod permits;
mod ring;
mod waiting;
mod watched;

pub use channel::{ChannelState, SendPoll, SendSlot, Slots};
pub use crowd::Crowd;
pub use error::{PermitOverflow, Refusal, SendError, TryRecvError};
pub use figures::{ChannelFigures, SemaphoreFigures};
pub use held::{Held, HeldLock, HeldValue, Locking};
pub use lent::{Lent, Vault};
pub use list::{Turn, WAKE_BATCH, WaitEntry, WaitKey, WaitList, WaitStore, WakeBatch};
pub use mailbox::{Mailbox, Put};
pub use notice::{Notice, NoticeLock, Notified, notify_one, notify_waiters};
pub use permits::Permits;
pub use ring::{Missed, Ring, RingSlots};
pub use waiting::{
    Acquiring, ChannelLock, Item, Lock, PermitLock, Sending, Settle, add_permits, critical,
    critical_in, forget_permits, poll_recv, release, try_send, wake, with_batch,
};
pub use watched::Watched;
