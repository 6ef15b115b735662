//! The hosted layer of dinah, for desktops and servers.
//!
//! Built on [`dinah_core`] and `std` only, in safe Rust:
//!
//! | item | what it adds |
//! | --- | --- |
//! | [`BoundedQueue`] | a FIFO task queue on `VecDeque` whose capacity is chosen at run time |
//! | [`SchedulerExt`] | [`run_until_empty`](SchedulerExt::run_until_empty) and [`run_parallel`](SchedulerExt::run_parallel) on the core [`Scheduler`](dinah_core::Scheduler), with [`ParallelError`] |
//! | [`Shared`] | explicit mutex-backed sharing with poisoning reported, never guessed away |
//! | [`CancellationHandle`] | an owned, clonable handle to one cancellation flag |
//! | [`StdClock`] | the host's monotonic clock, for the core's telemetry [`Clock`](dinah_core::Clock) |
//! | [`TraceBuffer`] | a trace log with a run-time capacity, for many threads |
//! | [`WorkerPool`] | persistent workers for CPU work: bounded submission with [`TaskHandle`]s, fork-join batches, an owned shutdown with a [`PoolReport`] |
//! | [`BlockingPool`] | threads started on demand for blocking calls, behind an admission limit |
//! | [`LocalExecutor`] | an async executor for `!Send` futures on one thread, on the core's scheduling, with [`JoinHandle`]s, `block_on` and a bounded [`Spawner`] ingress |
//!
//! # Example
//!
//! ```
//! use dinah::{BoundedQueue, SchedulerExt};
//! use dinah::Scheduler;
//!
//! let mut queue = BoundedQueue::new(8)?;
//! for n in 0..8u64 {
//!     queue.try_push(move || n * n).unwrap_or_else(|_| unreachable!());
//! }
//! let squares = Scheduler::run_parallel(&mut queue, 2)?;
//! assert_eq!(squares, [0, 1, 4, 9, 16, 25, 36, 49]); // FIFO order, not completion order
//! assert!(queue.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod cancel;
mod clock;
mod executor;
mod pool;
mod queue;
mod scheduler;
mod shared;
mod sync;
mod telemetry;
mod trace;
mod unwind;

pub use cancel::CancellationHandle;
pub use clock::StdClock;
#[cfg(feature = "telemetry")]
pub use executor::Measured;
pub use executor::{
    ExecutorConfig, ExecutorMonitor, JoinFailure, JoinHandle, LocalExecutor, LocalSpawner,
    Measuring, ShutdownReport, Spawner, TrySpawnError, Unmeasured,
};
pub use pool::{
    AdmissionBound, BlockingConfig, BlockingPool, JoinError, PoolError, PoolMonitor, PoolReport,
    PoolStats, ShutdownPolicy, SubmitError, Submitter, TaskHandle, Unfinished, Unstarted,
    WorkerPool, WorkerReport,
};
pub use queue::{BoundedQueue, CapacityError};
pub use scheduler::{ParallelError, SchedulerExt};
pub use shared::{Shared, SynchronizationError};
#[cfg(feature = "tracing")]
pub use telemetry::TracingSink;
pub use telemetry::{
    Cause, ChromeTraceError, ExecutorFigures, ManualClock, Micros, PoolFigures, Recorder,
    SourceSink, TaskFigures, TaskPhase, TelemetryConfig, Thresholds, Verdict,
};
pub use trace::TraceBuffer;

#[cfg(loom)]
#[doc(hidden)]
pub mod loom_support {
    //! The parallel dispatch protocol, exposed only to loom model tests.
    pub use crate::scheduler::dispatch::{Dispatch, Outcome, work};
}
