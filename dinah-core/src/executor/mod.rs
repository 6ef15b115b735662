//! Executors: the core [`AsyncExecutor`], which runs futures in a fixed
//! number of task slots with no heap, on a microcontroller or a host, and
//! what it reports and refuses.
//!
//! It keeps up to `N` tasks, polls the ready ones in the order they were
//! woken, and leaves the rest alone until a [`Waker`](core::task::Waker)
//! says otherwise. `dinah-std`'s `LocalExecutor`, the hosted executor, has
//! the same scheduling (`raw`) and reports the same [`TickReport`].
//!
//! # Where futures live
//!
//! The caller owns every future: it pins `Some(future)` where it wants it,
//! usually on `main`'s stack with [`core::pin::pin!`], and lends it to the
//! executor for `'a` (the design lilos uses). That needs no macro, no
//! per-type `static` pool and no allocation, and a future of any type, even
//! an unnameable `async` block, fits any slot. The slot itself is two words
//! (the borrowed `dyn Task`). When a task ends, the executor drops the future
//! in place through [`Task::drop_future`], so its destructor runs exactly
//! once, at that moment.
//!
//! # Example
//!
//! ```
//! use core::pin::pin;
//! use core::sync::atomic::{AtomicU32, Ordering};
//! use dinah::executor::{AsyncExecutor, ReadyQueue};
//! use dinah::task::{TaskState, yield_now};
//!
//! static QUEUE: ReadyQueue<2> = ReadyQueue::new();
//! static LOG: AtomicU32 = AtomicU32::new(0);
//!
//! let mut a = pin!(Some(async {
//!     LOG.fetch_add(1, Ordering::Relaxed);
//!     yield_now().await;
//!     LOG.fetch_add(1, Ordering::Relaxed);
//! }));
//! let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
//! let id = executor.try_spawn(a.as_mut()).unwrap();
//!
//! let first = executor.tick(8);
//! assert_eq!((first.polled, first.completed, first.work_remaining), (1, 0, true));
//! let second = executor.tick(8);
//! assert_eq!((second.polled, second.completed), (1, 1));
//! assert_eq!(executor.task_state(id), Some(TaskState::Completed));
//! assert_eq!(LOG.load(Ordering::Relaxed), 2);
//! ```
//!
//! | file | holds |
//! | --- | --- |
//! | `async_executor.rs` | [`AsyncExecutor`]: its public API |
//! | `run.rs` | `tick`, `run`, `run_until`: the shared tick loop over this executor's storage, and the guards that keep a slot consistent when code unwinds |
//! | `idle.rs` | [`Idle`], [`Pended`]: how a run loop sleeps |
//! | `ready_queue.rs` | [`ReadyQueue`], the `'static` wake state, in safe code |
//! | `interrupt.rs` | [`InterruptExecutor`], [`InterruptTasks`]: an executor run by an interrupt handler, at that interrupt's priority |
//! | `fenced/` | the crate's only `unsafe`: the heap-free waker's vtable (`waker.rs`) and the hand-off of [`InterruptTasks`] to a handler (`handoff.rs`), each with numbered invariants |
//! | `report.rs` | [`TickReport`] |
//! | `error.rs` | [`SpawnError`], [`QueueClaimed`], [`CancelError`] |
//! | `task_pool.rs` | [`TaskPool`]: spawning from tasks and interrupt handlers into workers whose storage is reused, each job a task of its own |
//! | `pool_worker.rs` | [`Worker`]: a pool's task storage, started again as a new task for each job |
#![deny(unsafe_code)]

use core::pin::Pin;

use crate::task::{Task, TaskOutput};

mod async_executor;
mod error;
mod idle;
mod interrupt;
mod pool_worker;
mod ready_queue;
mod run;
mod task_pool;
// The one module of the crate that may use `unsafe`: the heap-free waker,
// and the hand-off of an executor to an interrupt handler.
#[allow(unsafe_code)]
mod fenced;

pub use crate::raw::sched::TickReport;
pub use async_executor::AsyncExecutor;
pub use error::{CancelError, QueueClaimed, SpawnError};
pub use idle::{Idle, Pended};
pub use interrupt::{InterruptExecutor, InterruptFigures, InterruptTasks, SendTaskRef, ServeError};
pub use pool_worker::Worker;
pub use ready_queue::ReadyQueue;
pub use task_pool::{JobId, JobState, TaskPool, TaskPoolFigures, TooManyWorkers};

/// A borrowed, pinned task as the core executor stores it: any task whose
/// error type is `O`'s (see [`AsyncExecutor`]).
pub type TaskRef<'a, O> = Pin<&'a mut dyn Task<Error = <O as TaskOutput>::Error>>;
