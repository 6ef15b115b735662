//! [`CancellationHandle`]: an owned, clonable handle to one cancellation flag.
#![forbid(unsafe_code)]

use std::fmt;
use std::sync::Arc;

use dinah_core::sync::CancellationToken;

/// An owned, clonable handle to one cooperative cancellation flag.
///
/// Every clone shares one [`CancellationToken`]: any clone can request
/// cancellation and every clone observes it. `Clone + Send + Sync + 'static`,
/// so it moves into threads and tasks the way `tokio_util`'s token does.
///
/// # Guarantees and limits
///
/// Those of [`CancellationToken`]: [`request_cancellation`](Self::request_cancellation)
/// returns `true` to exactly one caller across all clones; the request is
/// published with Release and observed with Acquire. It interrupts nothing:
/// tasks poll it at safe points, and a request is not proof that work stopped.
/// There is no parent/child tree and no reset.
///
/// ```
/// use dinah::sync::CancellationHandle;
///
/// let handle = CancellationHandle::new();
/// let worker_view = handle.clone();
/// let worker = std::thread::spawn(move || {
///     let mut steps = 0u64;
///     while !worker_view.is_cancellation_requested() {
///         steps += 1;
///         std::thread::yield_now();
///     }
///     steps
/// });
/// assert!(handle.request_cancellation());
/// let _steps_done = worker.join().unwrap();
/// ```
#[derive(Clone, Default)]
pub struct CancellationHandle {
    token: Arc<CancellationToken>,
}

impl CancellationHandle {
    /// A handle to a new flag with no cancellation requested.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests cancellation; `true` only for the request that changed the flag.
    pub fn request_cancellation(&self) -> bool {
        self.token.request_cancellation()
    }

    /// Whether cancellation has been requested through any clone.
    #[must_use]
    pub fn is_cancellation_requested(&self) -> bool {
        self.token.is_cancellation_requested()
    }

    /// The shared core token, for code written against `&CancellationToken`.
    #[must_use]
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Whether `self` and `other` share one flag.
    #[must_use]
    pub fn same_flag(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.token, &other.token)
    }
}

impl fmt::Debug for CancellationHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellationHandle")
            .field("requested", &self.is_cancellation_requested())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_flag() {
        let a = CancellationHandle::new();
        let b = a.clone();
        let unrelated = CancellationHandle::new();
        assert!(a.same_flag(&b) && !a.same_flag(&unrelated));
        assert!(b.request_cancellation());
        assert!(a.is_cancellation_requested());
        assert!(a.token().is_cancellation_requested());
        assert!(!a.request_cancellation());
        assert!(!unrelated.is_cancellation_requested());
    }
}
