//! [`TickReport`]: what one tick of an executor did.
#![forbid(unsafe_code)]

/// What one tick did, on either executor (the core
/// [`AsyncExecutor::tick`](crate::executor::AsyncExecutor::tick), or `dinah-std`'s
/// `LocalExecutor::tick`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[non_exhaustive]
pub struct TickReport {
    /// Tasks polled.
    pub polled: usize,
    /// Tasks that returned `Ok` (or `()`).
    pub completed: usize,
    /// Tasks that returned an error, kept as their failure.
    pub failed: usize,
    /// Tasks whose future was dropped because cancellation was requested.
    pub cancelled: usize,
    /// Polls caused by a wake made while no task was being polled (from an
    /// interrupt handler or another thread between polls, or from code
    /// outside the executor), or made from another context while one was
    /// (see [`ReadyQueue::with_context`](crate::executor::ReadyQueue::with_context)).
    pub woken_outside: usize,
    /// Polls caused by a wake made, in the executor's own context, while
    /// some other task was being polled (without a context function: any
    /// wake that lands while another task is polled, as for `self_woken`).
    pub woken_in_poll: usize,
    /// Polls caused by a task waking itself during its own poll (in the
    /// executor's own context). Without a context function a wake from
    /// another thread or interrupt that lands during the poll is counted
    /// here too (see [`ReadyQueue`](crate::executor::ReadyQueue)'s "Telling a task's
    /// own wakes apart").
    pub self_woken: usize,
    /// Wakes that arrived for tasks already over, since the previous tick.
    pub stale_wakes: u32,
    /// Whether a task is still ready (left over by the budget, or woken
    /// during this tick).
    pub work_remaining: bool,
}
