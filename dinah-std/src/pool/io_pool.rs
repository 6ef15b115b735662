//! The process's I/O pool: a [`BlockingPool`] made on first use, which
//! runs the blocking calls dinah makes for its own async APIs (name
//! lookups for `net`, file operations for `fs`), never on an executor's
//! thread.
#![forbid(unsafe_code)]

use std::io;
use std::sync::OnceLock;
use std::time::Duration;

use super::{BlockingConfig, BlockingPool, PoolStats};

/// Threads the I/O pool may run at once: the blocking calls in flight.
pub const IO_POOL_THREADS: usize = 32;
/// Calls the I/O pool queues beyond those it runs. A call past both waits
/// for room (it is not refused), so a burst of file operations slows down
/// instead of failing.
pub const IO_POOL_QUEUE: usize = 1024;

/// The pool, made on first use and kept for the process's life; its
/// threads leave after ten idle seconds.
pub(crate) fn io_pool() -> io::Result<&'static BlockingPool> {
    static POOL: OnceLock<BlockingPool> = OnceLock::new();
    if let Some(pool) = POOL.get() {
        return Ok(pool);
    }
    let config =
        BlockingConfig::new(IO_POOL_THREADS, IO_POOL_QUEUE).keep_alive(Duration::from_secs(10));
    let pool = BlockingPool::new(config).map_err(io::Error::other)?;
    // A second maker loses the race; its pool (no thread started) drops.
    Ok(POOL.get_or_init(|| pool))
}

/// Runs `call` on the I/O pool and waits for its result without blocking
/// the caller's thread (waiting in line while the pool is full).
///
/// Dropped while it waits, the call still runs to its end on the pool (a
/// blocking call cannot be interrupted) and its result is dropped.
///
/// # Errors
///
/// `call`'s; an error if the pool cannot start a thread, or if `call`
/// panicked.
pub(crate) async fn run<T: Send + 'static>(
    call: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let job = io_pool()?
        .spawn(call)
        .await
        .map_err(|refused| io::Error::other(format!("dinah: the I/O pool refused: {refused}")))?;
    job.await.map_err(io::Error::other)?
}

/// The I/O pool's counters now: jobs accepted, running, queued, threads
/// alive. All zero before its first use.
#[must_use]
pub fn io_pool_stats() -> PoolStats {
    io_pool().map(BlockingPool::stats).unwrap_or_default()
}
