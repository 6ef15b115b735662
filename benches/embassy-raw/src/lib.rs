//! embassy-executor's raw executor with a no-op pender, as embassy's users
//! run it at its fastest: a loop that polls it (embassy's own `platform-spin`
//! executor is that loop). This is the baseline for dinah's core
//! `AsyncExecutor` in `benches/executor.rs`.
//!
//! Driving the raw executor takes `unsafe`: `raw::Executor::poll` is an
//! `unsafe fn` and the pender is a function exported under the symbol name
//! `__pender`. This crate holds that code so the benchmarks and dinah's own
//! crates keep `unsafe_code` forbidden. It is a dependency of the benchmarks
//! only and is not published.
//!
//! Because it exports `__pender`, no binary that links it may also turn on
//! one of embassy-executor's `platform-*` features (each exports its own).

use std::cell::Cell;

use embassy_executor::{Spawner, raw};

/// The pender: does nothing. The executor calls it when a task is woken or
/// spawned; [`RawExecutor::poll_until`] polls in a loop anyway, so there is
/// nothing to signal.
#[unsafe(export_name = "__pender")]
fn pender(_context: *mut ()) {}

/// A leaked raw executor and a guard against re-entrant polling.
///
/// Guarantees: [`poll_until`](Self::poll_until) never calls
/// `raw::Executor::poll` re-entrantly (a nested call panics instead) and, the
/// type being neither `Send` nor `Sync`, only from the thread that made it.
/// Does not guarantee anything about fairness or time beyond embassy's own.
pub struct RawExecutor {
    inner: raw::Executor,
    polling: Cell<bool>,
}

impl RawExecutor {
    /// A new executor that lives for the rest of the process (embassy's
    /// executors need `'static`). Each call leaks one.
    pub fn leak() -> &'static Self {
        Box::leak(Box::new(Self {
            inner: raw::Executor::new(std::ptr::null_mut()),
            polling: Cell::new(false),
        }))
    }

    /// A spawner for this executor's tasks.
    pub fn spawner(&'static self) -> Spawner {
        self.inner.spawner()
    }

    /// Polls the executor until `done` returns true, checking it after each
    /// pass over the ready tasks.
    ///
    /// # Panics
    /// If called while a `poll_until` of this executor is already running
    /// (from inside one of its tasks).
    #[inline]
    pub fn poll_until(&'static self, mut done: impl FnMut() -> bool) {
        assert!(!self.polling.replace(true), "poll_until is not re-entrant");
        loop {
            // SAFETY: `poll` must not run re-entrantly on one executor. The
            // flag above refuses a nested `poll_until`, the pender never
            // polls, and `RawExecutor` is `!Sync` (its `raw::Executor` holds
            // a raw pointer marker), so no other thread reaches this one.
            unsafe { self.inner.poll() };
            if done() {
                break;
            }
        }
        self.polling.set(false);
    }
}
