//! The three cores dinah's runtimes are built on, one submodule each, with
//! the value types they need: nothing here imports a module above it.
//!
//! **No stability promise.** This module is public so that `dinah-std`'s
//! runtimes can build on it; applications have no use for it, and it may
//! change in any release. (embassy-executor's `raw` module plays the same
//! part.)
//!
//! | module | core | built on it |
//! | --- | --- | --- |
//! | [`sched`] | scheduling: a task's state word, the lock-free stack of woken tasks, the tick loop | the core [`AsyncExecutor`](crate::executor::AsyncExecutor) and `dinah-std`'s `LocalExecutor` |
//! | [`timer`] | timers: entries, keys, wakers and fired timers over storage its owner picks, ordered by a heap or a wheel, with their figures | the firmware's [`Timers`](crate::time::Timers) and the hosted executors' timer store |
//! | [`wait`] | wait lines: the first-in, first-out line of channels and semaphores, a semaphore's count, a channel's buffer | the core's [`Channel`](crate::sync::Channel) and [`Semaphore`](crate::sync::Semaphore) (and the wake batches of [`Event`](crate::io::Event)), `dinah-std`'s channels, semaphores and pool admission |
//!
//! Each core's invariants are at the top of its module. Nothing here is
//! `unsafe`, and nothing polls: these modules only move bits, links and
//! wakers, and call back into their owner's storage for what differs.
#![forbid(unsafe_code)]

pub mod sched;
pub mod timer;
pub mod wait;

pub(crate) use sched::{KEEPS_POLLED_WAKES, const_unless_loom};
