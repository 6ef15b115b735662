//! [`CancellationToken`]: a cooperative cancellation flag that can live in a `static`.
#![forbid(unsafe_code)]

use portable_atomic::{AtomicBool, Ordering};

/// A cooperative request to stop, shared by reference.
///
/// One atomic flag. Any holder of `&CancellationToken` can request
/// cancellation; every holder can observe the request. The token is
/// `const`-constructible, so it can sit in a `static` and be requested from an
/// interrupt handler while the main loop polls it.
///
/// # Guarantees
///
/// - Requests are idempotent. [`request_cancellation`](Self::request_cancellation)
///   returns `true` to exactly one caller, the one that changed the flag, even
///   when many race.
/// - The request is published with `Release` and observed with `Acquire`: what
///   the requester wrote before requesting is visible to an observer that sees
///   the request.
///
/// # What it does not do
///
/// It interrupts nothing. It cannot stop a closure, kill a thread or roll back
/// side effects, and a request does not mean the work stopped. Task code polls
/// [`is_cancellation_requested`](Self::is_cancellation_requested) at its safe
/// points and returns; only then may the caller record the task as
/// [`Cancelled`](crate::TaskState::Cancelled). The flag never resets.
///
/// # Targets without compare-and-swap
///
/// `request_cancellation` needs an atomic swap. On `thumbv6m-none-eabi` the
/// firmware binary must enable a `portable-atomic` back end
/// (`unsafe-assume-single-core`, or `critical-section` with a
/// critical-section implementation); the library never does.
///
/// ```
/// use dinah::CancellationToken;
///
/// static STOP: CancellationToken = CancellationToken::new();
///
/// assert!(!STOP.is_cancellation_requested());
/// assert!(STOP.request_cancellation()); // first request wins
/// assert!(!STOP.request_cancellation()); // later ones only observe
/// assert!(STOP.is_cancellation_requested());
/// ```
#[derive(Debug, Default)]
pub struct CancellationToken {
    requested: AtomicBool,
}

impl CancellationToken {
    /// A token with no cancellation requested.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            requested: AtomicBool::new(false),
        }
    }

    /// Requests cancellation.
    ///
    /// Returns `true` only to the caller whose request changed the flag;
    /// every later or losing caller gets `false`. Safe to call from an
    /// interrupt handler.
    pub fn request_cancellation(&self) -> bool {
        !self.requested.swap(true, Ordering::AcqRel)
    }

    /// Whether cancellation has been requested. Never blocks.
    #[must_use]
    pub fn is_cancellation_requested(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::sync::atomic::AtomicUsize;
    use std::thread;

    #[test]
    fn starts_clear_and_stays_requested() {
        let token = CancellationToken::new();
        assert!(!token.is_cancellation_requested());
        assert!(token.request_cancellation());
        for _ in 0..3 {
            assert!(!token.request_cancellation());
            assert!(token.is_cancellation_requested());
        }
    }

    #[test]
    fn exactly_one_of_many_racing_requesters_wins() {
        let token = CancellationToken::new();
        let winners = AtomicUsize::new(0);
        let start = Barrier::new(8);
        thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    start.wait();
                    if token.request_cancellation() {
                        winners.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(winners.into_inner(), 1);
        assert!(token.is_cancellation_requested());
    }

    #[test]
    fn one_requester_and_16_observers_released_together() {
        const OBSERVERS: usize = 16;
        let token = CancellationToken::new();
        let start = Barrier::new(OBSERVERS + 1);
        let observed = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..OBSERVERS {
                s.spawn(|| {
                    start.wait();
                    while !token.is_cancellation_requested() {
                        thread::yield_now();
                    }
                    observed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                });
            }
            s.spawn(|| {
                start.wait();
                assert!(token.request_cancellation());
            });
        });
        assert_eq!(observed.into_inner(), OBSERVERS);
        assert!(!token.request_cancellation());
    }
}
