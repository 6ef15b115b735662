//! What tasks, threads and interrupt handlers share to coordinate: a
//! bounded [`Channel`], a [`Semaphore`], a [`Notify`], a [`Signal`] (the
//! latest value for one waiting task), a [`Watch`] (the latest value for
//! every follower), a [`PubSub`] (every message to every subscriber), an
//! async [`Mutex`], and [`CancellationToken`], the cooperative cancellation
//! flag, all in static storage. (`dinah-std` adds their run-time forms, an
//! owned `CancellationHandle`, a read-write lock, a once cell and
//! `Shared`.)
//!
//! The channel, the semaphore and the mutex (one permit and the value
//! under one lock) share one wait protocol
//! ([`raw::wait::WaitList`](crate::raw::wait::WaitList)): waiters are served first in,
//! first out, each woken once when its turn comes, and the std variants
//! run the same logic behind a short-held lock instead of a critical section.
#![forbid(unsafe_code)]

mod cancel;
pub mod channel;
mod mutex;
mod notify;
mod pubsub;
mod semaphore;
mod signal;
mod watch;

pub use crate::raw::wait::{ChannelFigures, SemaphoreFigures};
pub use crate::raw::wait::{Missed, PermitOverflow, Refusal, SendError, TryRecvError};
pub use cancel::CancellationToken;
pub use channel::Channel;
pub use mutex::{Locking, Mutex, MutexGuard};
pub use notify::{Notify, Wait};
pub use pubsub::{NextMessage, PubSub, Subscriber};
pub use semaphore::{Acquire, Permit, Semaphore};
pub use signal::{Signal, SignalWait};
pub use watch::{Changed, Watch, WatchReceiver};
