//! A pool's telemetry: [`PoolProbe`], and the [`Seen`] state it diagnoses.
#![forbid(unsafe_code)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use dinah_core::TaskId;
use dinah_core::telemetry::TraceEventKind;

use super::AdmissionBound;
use crate::primitives::lock_std;
use crate::telemetry::hook::{Probe, Stamp, micros};
use crate::telemetry::{PoolFigures, TelemetryConfig, Thresholds, Verdict};

/// What a pool measures, when it measures.
pub(crate) struct PoolProbe {
    probe: Probe,
    figures: Mutex<PoolFigures>,
    last_full: Stamp,
    rejected_full: AtomicU64,
}

impl PoolProbe {
    pub(crate) fn new(config: TelemetryConfig) -> Self {
        Self {
            probe: Probe::new(config),
            figures: Mutex::new(PoolFigures::default()),
            last_full: Stamp::new(),
            rejected_full: AtomicU64::new(0),
        }
    }

    /// A watch on the calling worker thread's account with the scheduler,
    /// where one can be kept (see `telemetry::cpu`).
    pub(crate) fn cpu_watch(&self) -> Option<crate::telemetry::cpu::CpuWatch> {
        crate::telemetry::cpu::CpuWatch::for_probe(&self.probe)
    }

    /// Now, on the pool's clock.
    pub(crate) fn now(&self) -> u64 {
        self.probe.now()
    }

    /// A submission was accepted with `queued` tasks now waiting; returns its
    /// stamp.
    pub(crate) fn submitted(&self, task: TaskId, queued: usize) -> u64 {
        let now = self.probe.now();
        {
            let mut figures = lock_std(&self.figures);
            figures.max_queued = figures.max_queued.max(queued);
        }
        self.probe.emit(task, TraceEventKind::Submitted, now);
        now
    }

    /// A submission was refused; `full` when for lack of room.
    pub(crate) fn rejected(&self, task: TaskId, full: bool) {
        let now = self.probe.now();
        if full {
            self.rejected_full.fetch_add(1, Ordering::Relaxed);
            lock_std(&self.figures).rejected_full += 1;
            self.last_full.set(now);
        }
        self.probe.emit(task, TraceEventKind::Rejected, now);
    }

    /// A task queued at `queued_at` starts now; returns the start.
    pub(crate) fn started(&self, task: TaskId, queued_at: u64) -> u64 {
        let now = self.probe.now();
        lock_std(&self.figures)
            .wait
            .record(micros(now.saturating_sub(queued_at)));
        self.probe.emit(task, TraceEventKind::Started, now);
        now
    }

    /// The task that started at `start` ran to its end: `completed`, or
    /// panicked.
    pub(crate) fn ended(&self, task: TaskId, start: u64, completed: bool) {
        let now = self.probe.now();
        let kind = if completed {
            TraceEventKind::Completed
        } else {
            TraceEventKind::Failed
        };
        let took = now.saturating_sub(start);
        {
            let mut figures = lock_std(&self.figures);
            figures.run_time.record(micros(took));
            if self.probe.is_long(took) {
                figures.long_runs += 1;
            }
        }
        self.probe.emit(task, kind, now);
    }

    /// A queued task was dropped or handed back by a shutdown, or cancelled.
    pub(crate) fn dropped(&self, task: TaskId) {
        self.probe.emit(
            task,
            TraceEventKind::CancellationAcknowledged,
            self.probe.now(),
        );
    }

    pub(crate) fn figures(&self) -> PoolFigures {
        lock_std(&self.figures).clone()
    }

    /// The verdicts for a pool whose state is `seen`.
    pub(crate) fn diagnose(&self, thresholds: &Thresholds, seen: &Seen) -> Vec<Verdict> {
        let now = self.probe.now();
        let age = |at: u64| Duration::from_nanos(now.saturating_sub(at));
        let recently_full = self
            .last_full
            .get()
            .filter(|&at| age(at) <= thresholds.admission_window);
        let mut verdicts = Vec::new();
        if seen.blocking {
            // Saturation needs evidence that work waits: a queued job older
            // than the threshold, or a refusal for lack of room. A pool at
            // its limit that admits and finishes its jobs is only busy.
            let oldest_wait = seen.oldest_queued.map_or(Duration::ZERO, age);
            if oldest_wait > thresholds.blocking_wait || recently_full.is_some() {
                verdicts.push(Verdict::BlockingSaturated {
                    queued: seen.queued,
                    capacity: seen.capacity,
                    running: seen.running_tasks,
                    oldest_wait,
                    rejected_full: self.rejected_full.load(Ordering::Relaxed),
                });
                return verdicts;
            }
        }
        for &(worker, task, start, fared) in &seen.running {
            let running_for = age(start);
            if running_for > thresholds.blocked {
                let starved = fared.and_then(|f| {
                    f.verdict(task, None, Some(worker), running_for, thresholds.blocked)
                });
                verdicts.push(starved.unwrap_or(Verdict::WorkerBlocked {
                    name: None,
                    task,
                    worker: Some(worker),
                    running_for,
                    ready_behind: 0,
                    left: None,
                }));
            }
        }
        if !seen.blocking
            && let Some(at) = recently_full
        {
            verdicts.push(Verdict::AdmissionFull {
                rejected_full: self.rejected_full.load(Ordering::Relaxed),
                since_last: age(at),
                queued: match seen.bound {
                    AdmissionBound::Queued => seen.queued,
                    AdmissionBound::InFlight => seen.in_flight,
                },
                capacity: seen.capacity,
            });
        }
        verdicts
    }
}

/// A pool's state as the diagnosis needs it, read under the pool's lock.
pub(crate) struct Seen {
    pub(crate) blocking: bool,
    /// Tasks queued.
    pub(crate) queued: usize,
    /// Tasks queued or running: what an `InFlight` bound counts.
    pub(crate) in_flight: usize,
    /// Tasks a thread has taken and not finished.
    pub(crate) running_tasks: usize,
    pub(crate) capacity: usize,
    pub(crate) bound: AdmissionBound,
    pub(crate) oldest_queued: Option<u64>,
    /// Each running task with a start stamp: its worker, the task, the
    /// start, and how its thread fared with the scheduler since the last
    /// look (where that is known).
    pub(crate) running: Vec<(
        dinah_core::WorkerId,
        TaskId,
        u64,
        Option<crate::telemetry::cpu::Fared>,
    )>,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::telemetry::cpu::Fared;
    use crate::telemetry::{Cause, ManualClock};
    use dinah_core::WorkerId;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// How a worker's thread fared over a 150 ms window, runnable now.
    fn fared(ran: u64, waited: u64) -> Option<Fared> {
        Some(Fared {
            window: ms(150),
            ran: ms(ran),
            waited: ms(waited),
            runnable: true,
        })
    }

    #[test]
    fn a_long_job_on_a_starved_thread_names_the_host_and_one_that_ran_is_blocked() {
        let clock = ManualClock::new();
        let probe = PoolProbe::new(TelemetryConfig::new().with_clock(clock.clone()));
        clock.advance(ms(150));
        let worker = |n| WorkerId::new(n).unwrap();
        let task = |n| TaskId::new(n).unwrap();
        let seen = Seen {
            blocking: false,
            queued: 0,
            in_flight: 3,
            running_tasks: 3,
            capacity: 8,
            bound: AdmissionBound::Queued,
            oldest_queued: None,
            running: vec![
                // Waited 140 ms of its 150: the host's.
                (worker(1), task(1), 0, fared(1, 140)),
                // Ran 120 ms of its 150: its own.
                (worker(2), task(2), 0, fared(120, 30)),
                // Nothing known of its thread: the wall time's verdict.
                (worker(3), task(3), 0, None),
            ],
        };
        let verdicts = probe.diagnose(&Thresholds::default(), &seen);
        let causes: Vec<_> = verdicts.iter().map(Verdict::cause).collect();
        assert_eq!(
            causes,
            [
                Cause::HostStarved,
                Cause::WorkerBlocked,
                Cause::WorkerBlocked
            ]
        );
        let Verdict::HostStarved {
            task: starved,
            worker: on,
            delayed,
            ..
        } = verdicts[0]
        else {
            unreachable!()
        };
        assert_eq!((starved, on, delayed), (task(1), Some(worker(1)), ms(150)));
    }
}
