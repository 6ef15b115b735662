//! How a pool is set up: what its capacity bounds ([`AdmissionBound`]),
//! what a shutdown does with tasks not started ([`ShutdownPolicy`]), and why
//! it could not be built ([`PoolError`]).
#![forbid(unsafe_code)]

use std::fmt;
use std::io;

use dinah_core::WorkerId;

/// What a pool's capacity bounds.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum AdmissionBound {
    /// Only tasks waiting in the queue. Running tasks are bounded by the
    /// thread count alone, so up to `capacity + threads` tasks are in the
    /// pool at once.
    Queued,
    /// Queued and running tasks together: at most `capacity` tasks are in
    /// the pool at once, whatever the thread count.
    InFlight,
}

/// What a shutdown does with tasks that have not started.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum ShutdownPolicy {
    /// Run every accepted task, then stop.
    Drain,
    /// Run none that has not started: hand them back in
    /// [`PoolReport::handed_back`](super::PoolReport::handed_back). Tasks already running finish.
    CancelPending,
}

/// Why a pool, or a [`MultiExecutor`](crate::executor::MultiExecutor),
/// could not be built. Nothing is left running in any case.
#[derive(Debug)]
#[non_exhaustive]
pub enum PoolError {
    /// A queue capacity of zero.
    ZeroQueueCapacity,
    /// A thread limit of zero.
    ZeroMaxThreads,
    /// The operating system refused to start this worker. The workers
    /// started before it were stopped and joined.
    ThreadRefused {
        /// The worker that could not start.
        worker: WorkerId,
        /// The operating system's error.
        error: io::Error,
    },
    /// A multi-thread executor's reactor (its poll and waker) could not be
    /// made; this is the operating system's error.
    Reactor(io::Error),
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroQueueCapacity => f.write_str("queue capacity must be at least 1"),
            Self::ZeroMaxThreads => f.write_str("max_threads must be at least 1"),
            Self::ThreadRefused { worker, error } => {
                write!(f, "worker {} could not be started: {error}", worker.get())
            }
            Self::Reactor(error) => write!(f, "the reactor could not be made: {error}"),
        }
    }
}

impl std::error::Error for PoolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::ThreadRefused { error, .. } | Self::Reactor(error) => Some(error),
            _ => None,
        }
    }
}
