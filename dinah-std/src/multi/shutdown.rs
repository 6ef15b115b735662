//! How a [`MultiExecutor`] shuts down: [`shutdown`](MultiExecutor::shutdown),
//! [`shutdown_with`](MultiExecutor::shutdown_with) and the drain that runs
//! before it.
//!
//! # Order
//!
//! Spawns are refused first (the registry closes, so that the live tasks
//! can be counted); a drain runs the live tasks until none is left or the
//! deadline; then every poll from now on drops its task, the workers stop
//! after the poll each is in and are joined; every task left is woken onto
//! the global queue and run here, where its poll drops it; the blocking
//! pool goes last.
#![forbid(unsafe_code)]

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use super::{MultiExecutor, UnparkOnWake};
use crate::executor::ShutdownReport;
use crate::pool::ShutdownPolicy;
use crate::primitives::{current, lock, park, park_timeout};
use crate::task::ChildEnd;

impl MultiExecutor {
    /// Shuts the executor down at once:
    /// [`shutdown_with`](Self::shutdown_with) under
    /// [`ShutdownPolicy::CancelPending`].
    ///
    /// # Panics
    ///
    /// As [`shutdown_with`](Self::shutdown_with).
    pub fn shutdown(&self) -> ShutdownReport {
        self.shutdown_with(ShutdownPolicy::CancelPending, Duration::ZERO)
    }

    /// Shuts the executor down under `policy`, joins its workers, and
    /// reports each task alive when the shutdown began and how it ended.
    ///
    /// - [`ShutdownPolicy::Drain`]: spawns are refused from now on
    ///   ([`SpawnError::Shutdown`](dinah_core::executor::SpawnError::Shutdown)); the tasks already accepted run until
    ///   none is left or `deadline` passes on the executor's clock (a
    ///   paused clock moves when every worker sleeps; where a task keeps
    ///   waking itself it never does, so there the deadline is counted in
    ///   real time too); then whatever is left goes as under
    ///   `CancelPending`.
    /// - [`ShutdownPolicy::CancelPending`]: spawns are refused, each
    ///   worker stops after the poll it is in, and every task left is
    ///   dropped, exactly once, with its handle resolved
    ///   [`Cancelled`](crate::task::JoinError::Cancelled) (or
    ///   [`Panicked`](crate::task::JoinError::Panicked) if its destructor
    ///   panics). `deadline` is not used.
    ///
    /// The executor's blocking pool is shut down last, under the same
    /// policy: under `CancelPending` the jobs not started are dropped
    /// (their handles say `Cancelled`); a job already running is waited
    /// for (no job is stopped midway). Its totals are the report's
    /// `blocking`.
    ///
    /// No accepted task is lost. Calling it again reports nothing.
    ///
    /// # Panics
    ///
    /// When called on one of this executor's workers: it would wait for
    /// itself.
    pub fn shutdown_with(&self, policy: ShutdownPolicy, deadline: Duration) -> ShutdownReport {
        self.refuse_on_worker("shutdown");
        let Some(threads) = lock(&self.threads).take() else {
            return ShutdownReport::default();
        };
        let shared = &self.shared;
        shared.close();
        if policy == ShutdownPolicy::Drain {
            self.drain(deadline);
        }
        shared.cancel_all();
        shared.stop();
        for thread in threads {
            // A worker's own code does not panic; a task's panics are
            // caught in its poll.
            let _ = thread.join();
        }
        // No worker runs now: each live task is woken onto the global
        // queue and run here, where its poll drops it (it is cancelled).
        while shared.registry.live() > 0 {
            for waker in shared.registry.wakers() {
                waker.wake();
            }
            let mut ran = false;
            while let Some(runnable) = shared.global.pop() {
                super::worker::run(shared, runnable);
                ran = true;
            }
            if !ran {
                // A task being dropped elsewhere (by a waker's owner that
                // holds its last reference): it leaves on its own.
                std::thread::yield_now();
            }
        }
        // No task is live now, so no cell is queued: every cell ended with
        // its output (see `task/cell.rs`), none was dropped unrun.
        shared.driver.timers().stop_keeping_wakers();
        let tasks = shared.registry.take_ended();
        // Jobs not started are dropped under `CancelPending` (their
        // handles say `Cancelled`); started ones run to their end.
        let pool = lock(&self.blocking).take();
        let blocking = pool.map(|pool| {
            drop(pool.shutdown(policy));
            shared.blocking.stats()
        });
        ShutdownReport {
            cancelled_tasks: tasks
                .iter()
                .filter(|t| t.end == ChildEnd::Cancelled)
                .count(),
            cancelled_submissions: 0,
            tasks,
            blocking,
        }
    }

    /// Runs the accepted tasks until none is left or `deadline` passes.
    fn drain(&self, deadline: Duration) {
        let shared = &self.shared;
        let timer = self.timer();
        let paused = timer.is_paused();
        let real_end = Instant::now().checked_add(deadline);
        let me = current();
        shared.set_drain_waiter(Some(me.clone()));
        let waker = Waker::from(Arc::new(UnparkOnWake(me)));
        let mut cx = Context::from_waker(&waker);
        let mut out_of_time = pin!(dinah_core::time::TimerDriver::sleep(timer, deadline));
        loop {
            if shared.registry.live() == 0 {
                break;
            }
            let now = Instant::now();
            if paused && real_end.is_some_and(|end| now >= end) {
                break;
            }
            if out_of_time.as_mut().poll(&mut cx).is_ready() {
                break;
            }
            match real_end {
                Some(end) if paused => park_timeout(end.saturating_duration_since(now)),
                _ => park(),
            }
        }
        shared.set_drain_waiter(None);
    }
}
