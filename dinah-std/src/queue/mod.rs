//! Queues of closures with a capacity chosen at run time, and running a
//! whole queue: [`BoundedQueue`], [`run_until_empty`] and [`run_parallel`].
//!
//! The fixed-capacity [`TaskQueue`](dinah_core::queue::TaskQueue), the
//! [`FifoQueue`](dinah_core::queue::FifoQueue) trait they all implement,
//! and the one-at-a-time [`run_next`](dinah_core::queue::run_next) and
//! [`drain`](dinah_core::queue::drain) are in `dinah_core::queue`; the
//! `dinah` facade's `queue` module holds both.
#![forbid(unsafe_code)]

mod bounded;
mod capacity;
mod parallel;

pub use bounded::BoundedQueue;
pub use capacity::CapacityError;
pub(crate) use capacity::reserve;
#[cfg(loom)]
pub(crate) use parallel::dispatch;
pub use parallel::{ParallelError, run_parallel, run_until_empty};
