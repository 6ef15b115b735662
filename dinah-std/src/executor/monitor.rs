//! [`ExecutorMonitor`]: a measured executor's figures, tasks and diagnosis,
//! read from any thread.
#![forbid(unsafe_code)]

use std::fmt;
use std::sync::Arc;

use dinah_core::telemetry::{ExecutorFigures, TaskFigures};

use super::hub::Hub;
use super::probe::ExecProbe;
use crate::telemetry::run_hooks;
use crate::telemetry::{Thresholds, Verdict};

/// Reads a [`LocalExecutor`](super::LocalExecutor)'s telemetry from any
/// thread: its figures, its tasks, and a diagnosis. `Send + Sync + Clone`.
///
/// Everything it reads is a snapshot of atomics and short locks the
/// executor holds only between polls: it never waits for a poll to end, so
/// it sees a poll that never returns.
#[derive(Clone)]
pub struct ExecutorMonitor {
    hub: Arc<Hub>,
}

impl ExecutorMonitor {
    #[cfg(feature = "telemetry")]
    pub(super) fn new(hub: Arc<Hub>) -> Self {
        Self { hub }
    }

    fn probe(&self) -> &ExecProbe {
        self.hub
            .probe
            .get()
            .map(|probe| &**probe)
            .expect("a monitor exists only for an executor with telemetry")
    }

    /// What the executor has measured since it was built.
    #[must_use]
    pub fn figures(&self) -> ExecutorFigures {
        self.probe().figures()
    }

    /// Every live task's figures, by task id.
    #[must_use]
    pub fn tasks(&self) -> Vec<TaskFigures> {
        let mut tasks = Vec::new();
        run_hooks(|| tasks = self.probe().tasks());
        tasks
    }

    /// The figures of the executor's timers: armed, fired, cancelled,
    /// refused, late, and the lag histogram.
    #[must_use]
    pub fn timers(&self) -> dinah_core::time::TimerFigures {
        self.hub.driver.timers().figures()
    }

    /// The figures of the executor's reactor (all zero before its first
    /// socket): see [`LocalExecutor::io_figures`](crate::LocalExecutor::io_figures).
    #[must_use]
    pub fn io(&self) -> crate::io::IoFigures {
        self.hub
            .driver
            .reactor()
            .map(|reactor| reactor.figures())
            .unwrap_or_default()
    }

    /// One [`Verdict`] for each thing not progressing, judged against
    /// `thresholds`; empty when every task progresses:
    ///
    /// - [`WorkerBlocked`](Verdict::WorkerBlocked) for a poll running longer
    ///   than `blocked` (the tasks ready behind it are counted in it);
    /// - otherwise [`ReadyButDelayed`](Verdict::ReadyButDelayed) when tasks
    ///   have been ready longer than `ready_delay`;
    /// - [`HostStarved`](Verdict::HostStarved) in place of either when the
    ///   executor's thread was runnable and waiting for a CPU the
    ///   operating system gave to others (Linux, host's clock only);
    /// - [`NoWake`](Verdict::NoWake) for each task pending, not ready and not
    ///   woken for longer than `no_wake`;
    /// - [`Backpressure`](Verdict::Backpressure) for each channel or
    ///   semaphore whose line has held a task longer than `no_wake` (such
    ///   tasks are not `NoWake`);
    /// - [`AdmissionFull`](Verdict::AdmissionFull) when the spawner ingress
    ///   (or the live-task cap) refused a submission within
    ///   `admission_window`.
    ///
    /// `block_on`'s own future is stamped like a task's poll, under an id of
    /// its own: a poll of it that holds the thread is `WorkerBlocked`.
    ///
    /// Readiness the operating system holds for the executor's sockets
    /// counts as a wake: when the executor's thread is not in its reactor
    /// (it runs, or a poll holds it), this call first hands that readiness
    /// out without waiting, so a task whose socket is ready is woken, and
    /// judged ready (`ReadyButDelayed`, or behind `WorkerBlocked`), never
    /// `NoWake`.
    #[must_use]
    pub fn diagnose(&self, thresholds: &Thresholds) -> Vec<Verdict> {
        if let Some(reactor) = self.hub.driver.reactor() {
            reactor.turn_if_free();
        }
        let mut verdicts = Vec::new();
        run_hooks(|| {
            verdicts = self.probe().diagnose(thresholds, self.hub.ingress.fill());
        });
        verdicts
    }
}

impl fmt::Debug for ExecutorMonitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutorMonitor").finish_non_exhaustive()
    }
}
