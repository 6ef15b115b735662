//! The `no_std`, heap-free core of the dinah task runtime.
//!
//! Everything here is a small explicit primitive that a firmware binary can
//! put in a `static` or on the stack. Nothing allocates, nothing starts a
//! thread, and nothing happens behind the caller's back: the executor runs
//! tasks only when called, and metrics and traces record only the events
//! they are given.
//!
//! The API is grouped by what a program is doing; the names nearly every
//! program uses are also at the root.
//!
//! | module | for |
//! | --- | --- |
//! | [`executor`] | running futures: [`AsyncExecutor`] in `N` fixed slots, its [`ReadyQueue`], what a tick reports, how a run loop sleeps |
//! | [`task`] | what a task is: [`TaskState`], [`TaskFailure`], [`TaskOutput`], the [`Task`] storage, [`yield_now`] |
//! | [`id`] | [`TaskId`], [`WorkerId`], `CoreId` |
//! | [`queue`] | bounded FIFO queues of closures ([`TaskQueue`], [`FifoQueue`]) and running them (`run_next`, `drain`) |
//! | [`sync`] | coordination: [`CancellationToken`] |
//! | [`config`] | [`CoreConfig`] and the lifecycle of long-lived resources |
//! | [`telemetry`] | clocks, events and sinks, metrics, the trace ring, poll observers and figures |
//! | [`raw`] | the scheduling core the executors share (no stability promise) |
//!
//! # What the binary chooses
//!
//! The library never picks a `critical-section` implementation and never turns
//! on `portable-atomic`'s `critical-section` or `unsafe-assume-single-core`
//! features. A firmware binary does both for its board; on a target without
//! atomic compare-and-swap (`thumbv6m-none-eabi`) it must enable one of
//! `portable-atomic`'s back ends: `unsafe-assume-single-core` on a
//! single-core chip in privileged mode (smaller), `critical-section`
//! otherwise. A hosted binary that uses a
//! [`TraceRing`] enables `critical-section/std`.
//!
//! # Example
//!
//! ```
//! use dinah::queue::{TaskQueue, drain};
//!
//! fn one() -> u32 { 1 }
//! fn two() -> u32 { 2 }
//!
//! let mut queue: TaskQueue<fn() -> u32, 4> = TaskQueue::new();
//! queue.try_push(one as fn() -> u32).unwrap();
//! queue.try_push(two).unwrap();
//!
//! let mut results = [0; 2];
//! let ran = drain(&mut queue, |index, value| results[index] = value);
//! assert_eq!((ran, results), (2, [1, 2]));
//! assert!(queue.is_empty());
//! ```
#![no_std]
// Every module but `executor::fenced` (the heap-free waker, and the
// hand-off of tasks to an interrupt handler) forbids unsafe code; each of
// its two parts documents its invariants.
#![deny(unsafe_code)]
#![deny(missing_docs)]

#[cfg(test)]
extern crate std;

mod atomic;
pub mod config;
mod fmt;

pub mod executor;
pub mod id;
pub mod io;
pub mod queue;
pub mod raw;
pub mod sync;
pub mod task;
pub mod telemetry;
pub mod time;

#[cfg(feature = "defmt")]
mod defmt;

pub use config::CoreConfig;
pub use executor::{AsyncExecutor, ReadyQueue, SpawnError, TickReport};
pub use id::{TaskId, WorkerId};
pub use queue::{FifoQueue, TaskQueue};
pub use sync::CancellationToken;
pub use task::{Task, TaskFailure, TaskOutput, TaskState, yield_now};
pub use telemetry::{RuntimeMetrics, TraceRing};
