//! Thread pools with an owned lifecycle: [`WorkerPool`] for CPU work on a
//! fixed set of persistent workers, and [`BlockingPool`] for blocking calls on
//! threads started on demand.
//!
//! Both run on one engine: a bounded FIFO under one lock, admission decided
//! by `try_spawn` (a refused task is handed back inside a
//! [`SpawnError`](dinah_core::executor::SpawnError)), a
//! [`JoinHandle`](crate::task::JoinHandle) per task that can be joined,
//! awaited or cancelled, panics
//! caught at the task boundary, live [`PoolStats`], and a shutdown that
//! either drains or hands back what has not started and reports everything
//! in a [`PoolReport`].
//!
//! # Which one
//!
//! - [`WorkerPool`]: as many workers as the [`CoreConfig`](dinah_core::CoreConfig)
//!   allows, all started by the constructor and kept until shutdown, plus
//!   fork-join batches ([`WorkerPool::run`]). Size it to the cores.
//! - [`BlockingPool`]: up to `max_threads` threads, each started when a job
//!   finds no thread headed for it and stopped after `keep_alive` without
//!   work, behind an explicit admission limit. Size it to the blocking calls
//!   you allow at once.
//!
//! In both, an idle thread looks for work for a while before it sleeps (a
//! `WorkerPool`'s about ten microseconds, a `BlockingPool`'s some tens; see
//! `spin.rs`), so bursts of short tasks start without a
//! wake-up, and a submission wakes (or starts) a thread only when fewer are
//! already headed for the queue than it has entries.
//!
//! # What is never lost
//!
//! An accepted task runs exactly once, or is cancelled through its handle
//! (its closure dropped unrun, its handle
//! [`JoinError::Cancelled`](crate::task::JoinError::Cancelled)), or is
//! handed back by a [`ShutdownPolicy::CancelPending`] shutdown as an
//! [`Unstarted`] in the report. A refused task is given back in the error.
//! The report's counts add up: every accepted task is completed, panicked or
//! cancelled once the shutdown has joined every thread.
//!
//! | file | holds |
//! | --- | --- |
//! | `worker.rs`, `batch.rs` | [`WorkerPool`] and its fork-join batches |
//! | `blocking.rs` | [`BlockingPool`] and [`BlockingConfig`] |
//! | `spawner.rs`, `call.rs` | [`PoolSpawner`], and its `call` with [`CallError`] |
//! | `config.rs` | [`AdmissionBound`], [`ShutdownPolicy`], [`PoolError`] |
//! | `report.rs` | [`PoolStats`], [`PoolReport`] and what else a pool tells back |
//! | `engine.rs` | the engine both run on: its queue and threads, with its invariants |
//! | `admission.rs` | admission: a place in the queue, a wait in line for room, or a refusal |
//! | `shutdown.rs` | the engine's shutdown and its report |
//! | `job.rs` | a queued task, type-erased, and [`Unstarted`] |
//! | `worker_cell.rs` | each thread's counters, and its [`WorkerReport`] |
//! | `owner.rs` | what both pools own, and how dropping one drains it |
//! | `spin.rs` | how long an idle thread looks for work before it sleeps |
//! | `probe.rs`, `monitor.rs` | telemetry, and [`PoolMonitor`] |
//! | `io_pool.rs` | the process's I/O pool, for dinah's own blocking calls (names, files), and [`io_pool_stats`] |
#![forbid(unsafe_code)]

mod admission;
mod batch;
mod blocking;
mod call;
mod config;
mod engine;
mod io_pool;
mod job;
mod monitor;
mod owner;
mod probe;
mod report;
mod shutdown;
mod spawner;
mod spawning;
mod spin;
mod worker;
mod worker_cell;

pub use blocking::{BlockingConfig, BlockingPool};
pub use call::CallError;
pub use config::{AdmissionBound, PoolError, ShutdownPolicy};
pub(crate) use io_pool::run as run_on_io_pool;
pub use io_pool::{IO_POOL_QUEUE, IO_POOL_THREADS, io_pool_stats};
pub use job::Unstarted;
pub use monitor::PoolMonitor;
pub use report::{PoolReport, PoolStats, Unfinished};
pub use spawner::PoolSpawner;
pub use spawning::Spawning;
pub use worker::WorkerPool;
pub use worker_cell::WorkerReport;

use owner::Owner;
