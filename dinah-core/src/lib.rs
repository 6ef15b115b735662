//! The `no_std`, heap-free core of the dinah task runtime.
//!
//! Everything here is a small explicit primitive that a firmware binary can
//! put in a `static` or on the stack. Nothing allocates, nothing starts a
//! thread, and nothing happens behind the caller's back: the executor and the
//! scheduler run tasks only when called, and metrics and traces record only
//! the events they are given.
//!
//! | module | holds |
//! | --- | --- |
//! | [`id`] | [`CoreId`], [`TaskId`], [`WorkerId`] and their zero-value errors |
//! | [`config`] | [`CoreConfig`], [`CoreError`] and [`LifecycleState`] |
//! | [`state`] | [`TaskState`] and [`InvalidTaskTransition`] |
//! | [`failure`] | [`TaskFailure`] and [`TaskFailureKind`] |
//! | [`queue`] | the [`FifoQueue`] trait, [`TaskQueue`] and [`QueuePushError`] |
//! | [`cancel`] | [`CancellationToken`] |
//! | [`metrics`] | [`RuntimeMetrics`], [`RuntimeMetrics32`] and their snapshots |
//! | [`telemetry`] | the [`Sink`] every event consumer implements, the [`Clock`] and [`TickSource`] traits, [`NoClock`], the allocation-free [`Log2Histogram`], and the poll observers |
//! | [`trace`] | [`TraceRing`], [`TraceEvent`], [`TraceEventKind`] and [`TraceRecordError`] |
//! | [`executor`] | [`Executor`]: runs one closure now |
//! | [`async_executor`] | [`AsyncExecutor`]: runs futures in `N` fixed slots, [`TickReport`], [`SpawnError`] |
//! | [`task`] | the [`Task`] and [`TaskOutput`] traits, [`yield_now`], [`chunked`] |
//! | [`waker`] | [`ReadyQueue`], the `'static` wake state, the heap-free waker (the crate's only `unsafe`), and the [`Counting`] modes ([`TaskCounters`], [`Timed`] wake stamps) |
//! | [`sched`] | the scheduling core both async executors share: a task's state word, the wake stack, the tick's rules |
//! | [`scheduler`] | [`Scheduler`] |
//!
//! # What the binary chooses
//!
//! The library never picks a `critical-section` implementation and never turns
//! on `portable-atomic`'s `critical-section` or `unsafe-assume-single-core`
//! features. A firmware binary does both for its board; on a target without
//! atomic compare-and-swap (`thumbv6m-none-eabi`) it must enable
//! `portable-atomic/critical-section`. A hosted binary that uses [`TraceRing`]
//! enables `critical-section/std`.
//!
//! # Example
//!
//! ```
//! use dinah::{Scheduler, TaskQueue};
//!
//! fn one() -> u32 { 1 }
//! fn two() -> u32 { 2 }
//!
//! let mut queue: TaskQueue<fn() -> u32, 4> = TaskQueue::new();
//! queue.try_push(one as fn() -> u32).unwrap();
//! queue.try_push(two).unwrap();
//!
//! let mut results = [0; 2];
//! let ran = Scheduler::drain(&mut queue, |index, value| results[index] = value);
//! assert_eq!((ran, results), (2, [1, 2]));
//! assert!(queue.is_empty());
//! ```
#![no_std]
// Every module but `waker` forbids unsafe code; `waker` builds the
// heap-free `Waker` and documents its invariants.
#![deny(unsafe_code)]
#![deny(missing_docs)]

#[cfg(test)]
extern crate std;

pub mod async_executor;
pub mod cancel;
pub mod config;
pub mod executor;
pub mod failure;
pub mod id;
pub mod metrics;
pub mod queue;
pub mod sched;
pub mod scheduler;
pub mod state;
mod sync;
pub mod task;
pub mod telemetry;
pub mod trace;
#[allow(unsafe_code)]
pub mod waker;

#[cfg(feature = "defmt")]
mod defmt;

pub use async_executor::{
    AsyncExecutor, Idle, Pended, QueueClaimed, SpawnError, TaskRef, TickReport,
};
pub use cancel::CancellationToken;
pub use config::{CoreConfig, CoreError, LifecycleState};
#[cfg(feature = "defmt")]
pub use defmt::DefmtSink;
pub use executor::Executor;
pub use failure::{TaskFailure, TaskFailureKind};
pub use id::{CoreId, CoreIdError, TaskId, TaskIdError, WorkerId, WorkerIdError};
pub use metrics::{MetricsSnapshot, MetricsSnapshot32, RuntimeMetrics, RuntimeMetrics32};
pub use queue::{FifoQueue, QueuePushError, TaskQueue};
pub use scheduler::Scheduler;
pub use state::{InvalidTaskTransition, TaskState};
pub use task::{Never, Returns, Task, TaskOutput, YieldNow, chunked, yield_now};
pub use telemetry::{
    Blocked, Clock, Log2Histogram, NoClock, PollEvents, PollObserver, PollStamp, PollTimes,
    PollWatch, Sink, TaskTime, TaskTimes, TickClock, TickSource,
};
pub use trace::{TraceEvent, TraceEventKind, TraceRecordError, TraceRing};
pub use waker::{CancelError, CountPerTask, Counting, NoCounters, ReadyQueue, TaskCounters, Timed};
