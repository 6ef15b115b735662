//! dinah: a small task runtime with a `no_std`, heap-free core and a hosted layer.
//!
//! This crate is a facade over [`dinah_core`] and, with the default `std`
//! feature, `dinah_std`. It writes no code of its own: each module below
//! holds both crates' parts of one area, so one `use dinah::…` reaches
//! everything, and no two different things share a name.
//!
//! | module | for |
//! | --- | --- |
//! | [`executor`] | running futures: the heap-free [`AsyncExecutor`] in fixed slots, the hosted `LocalExecutor`, spawning, ticks, idling |
//! | `pool` (with `std`) | thread pools: `WorkerPool` for CPU work, `BlockingPool` for blocking calls |
//! | [`task`] | what a task is and what it gives back: [`TaskState`], [`TaskOutput`], `JoinHandle`, `JoinError`, [`yield_now`] |
//! | [`queue`] | queues of closures and running them: [`TaskQueue`], `BoundedQueue`, `drain`, `run_parallel` |
//! | [`sync`] | coordination: [`CancellationToken`], `CancellationHandle`, `Shared` |
//! | [`time`] | waiting for time: `sleep`, `timeout`, [`Interval`](time::Interval), the firmware's [`Timers`](time::Timers) and tickless idle |
//! | [`io`] | event sources: [`Event`](io::Event) carries an interrupt's wake to tasks; with `std` the reactor |
//! | `net` (with `std`) | TCP and UDP sockets on the reactor, with `futures-io` traits behind the `futures-io` feature |
//! | [`telemetry`] | clocks, events and sinks, metrics, traces, poll observers, figures, diagnosis |
//! | [`id`] | [`TaskId`], [`WorkerId`], `CoreId` |
//! | [`config`] | [`CoreConfig`] and the lifecycle of long-lived resources |
//! | [`raw`] | the scheduling core the executors share (no stability promise) |
//!
//! - Firmware: depend on `dinah-core`, or on `dinah` with
//!   `default-features = false` (then only the core's parts are here).
//! - Desktop and server: depend on `dinah`.
//!
//! The map of the runtime, its cross-module contracts and its invariants,
//! is `docs/runtime.md`.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use dinah_core::{
    AsyncExecutor, CancellationToken, CoreConfig, ReadyQueue, SpawnError, Task, TaskId, TaskOutput,
    TaskQueue, TaskState, TickReport, WorkerId, yield_now,
};
pub use dinah_core::{config, id, raw};

#[cfg(feature = "std")]
pub use dinah_std::{BlockingPool, BoundedQueue, JoinError, JoinHandle, LocalExecutor, WorkerPool};

/// Running futures: both executors, spawning, ticks and idling.
///
/// From `dinah_core::executor`, and with `std` from `dinah_std::executor`.
pub mod executor {
    pub use dinah_core::executor::*;
    #[cfg(feature = "std")]
    pub use dinah_std::executor::*;
}

/// Thread pools (with `std`): from `dinah_std::pool`.
#[cfg(feature = "std")]
pub mod pool {
    pub use dinah_std::pool::*;
}

/// What a task is and what it gives back.
///
/// From `dinah_core::task`, and with `std` from `dinah_std::task`.
pub mod task {
    pub use dinah_core::task::*;
    #[cfg(feature = "std")]
    pub use dinah_std::task::*;
}

/// Queues of closures, and running them.
///
/// From `dinah_core::queue`, and with `std` from `dinah_std::queue`.
pub mod queue {
    pub use dinah_core::queue::*;
    #[cfg(feature = "std")]
    pub use dinah_std::queue::*;
}

/// Coordination between tasks and threads.
///
/// From `dinah_core::sync`, and with `std` from `dinah_std::sync`.
pub mod sync {
    pub use dinah_core::sync::*;
    #[cfg(feature = "std")]
    pub use dinah_std::sync::*;
}

/// Waiting for time: sleeps, timeouts and intervals, on firmware
/// ([`Timers`](time::Timers)) and, with `std`, on the hosted executor.
///
/// From `dinah_core::time`, and with `std` from `dinah_std::time`.
pub mod time {
    pub use dinah_core::time::*;
    #[cfg(feature = "std")]
    pub use dinah_std::time::*;
}

/// Event sources: an interrupt's wake carried to waiting tasks
/// ([`Event`](io::Event)), and with `std` the reactor: readiness from the
/// operating system turned into wakes, its figures, and what a task waits
/// on.
///
/// From `dinah_core::io`, and with `std` from `dinah_std::io`.
pub mod io {
    pub use dinah_core::io::*;
    #[cfg(feature = "std")]
    pub use dinah_std::io::*;
}

/// Sockets on the reactor (with `std`): [`TcpListener`](net::TcpListener),
/// [`TcpStream`](net::TcpStream) and [`UdpSocket`](net::UdpSocket).
///
/// From `dinah_std::net`.
#[cfg(feature = "std")]
pub mod net {
    pub use dinah_std::net::*;
}

/// Files without blocking an executor's thread: operations on paths and an
/// async `File`, on the process's I/O pool.
///
/// From `dinah_std::fs`.
#[cfg(feature = "std")]
pub mod fs {
    pub use dinah_std::fs::*;
}

/// Ctrl-C and the process's other signals as futures, through the
/// executor's reactor (Unix).
///
/// From `dinah_std::signal`.
#[cfg(all(feature = "std", unix))]
pub mod signal {
    pub use dinah_std::signal::*;
}

/// Clocks, events and sinks, metrics, traces, observers, figures and
/// diagnosis.
///
/// From `dinah_core::telemetry`, and with `std` from `dinah_std::telemetry`.
pub mod telemetry {
    pub use dinah_core::telemetry::*;
    #[cfg(feature = "std")]
    pub use dinah_std::telemetry::*;
}

/// Without the `std` feature the hosted layer is not there at all:
///
/// ```compile_fail,E0432
/// use dinah::queue::BoundedQueue;
/// ```
#[cfg(all(doctest, not(feature = "std")))]
struct CoreOnlyDoctests;

/// Compiles and runs the README's Rust examples as doctests.
#[cfg(all(doctest, feature = "telemetry"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(all(doctest, feature = "telemetry"))]
#[doc = include_str!("../docs/operations.md")]
struct OperationsDoctests;
