//! The hosted layer of dinah, for desktops and servers: built on
//! [`dinah_core`] and `std` only, in safe Rust.
//!
//! The API is grouped by what a program is doing; the names nearly every
//! program uses are also at the root.
//!
//! | module | for |
//! | --- | --- |
//! | [`executor`] | [`LocalExecutor`]: futures on the thread that owns it, join handles, `block_on`, a bounded [`Spawner`](executor::Spawner) ingress |
//! | [`pool`] | [`WorkerPool`] for CPU work and [`BlockingPool`] for blocking calls: admission, shutdown reports |
//! | [`task`] | [`JoinHandle`] and [`JoinError`]: one handle for every runtime above |
//! | [`queue`] | [`BoundedQueue`] with a run-time capacity; [`run_until_empty`](queue::run_until_empty) and [`run_parallel`](queue::run_parallel) |
//! | [`sync`] | [`CancellationHandle`], and [`Shared`](sync::Shared) with poisoning reported |
//! | [`io`] and [`net`] | the reactor, and TCP, UDP and Unix domain sockets whose waits it wakes |
//! | [`fs`] | files: the common operations on paths and an async `File`, on the process's I/O pool |
//! | `signal` (Unix) | Ctrl-C and the process's other signals as futures, through the reactor |
//! | [`telemetry`] | [`TelemetryConfig`], the host's clocks, the stall diagnosis, the timeline recorder |
//!
//! # Example
//!
//! ```
//! use dinah::queue::{BoundedQueue, run_parallel};
//!
//! let mut queue = BoundedQueue::new(8)?;
//! for n in 0..8u64 {
//!     queue.try_push(move || n * n).unwrap_or_else(|_| unreachable!());
//! }
//! let squares = run_parallel(&mut queue, 2)?;
//! assert_eq!(squares, [0, 1, 4, 9, 16, 25, 36, 49]); // FIFO order, not completion order
//! assert!(queue.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod executor;
pub mod fs;
pub mod io;
#[cfg(not(loom))]
mod multi;
pub mod net;
pub mod pool;
mod primitives;
pub mod queue;
mod runtime;
#[cfg(unix)]
pub mod signal;
pub mod sync;
pub mod task;
pub mod telemetry;
pub mod time;
mod unwind;

pub use executor::LocalExecutor;
pub use pool::{BlockingPool, WorkerPool};
pub use queue::BoundedQueue;
pub use sync::CancellationHandle;
pub use task::{JoinError, JoinHandle};
pub use telemetry::TelemetryConfig;

#[cfg(loom)]
#[doc(hidden)]
pub mod loom_support {
    //! The parallel dispatch protocol, exposed only to loom model tests.
    pub use crate::io::ModelSource;
    pub use crate::queue::dispatch::{Dispatch, Outcome, work};
    pub use crate::runtime::idle::Idle;
    pub use crate::runtime::park::{Blocker, Park};
    pub use crate::runtime::parker::Parker;
}
