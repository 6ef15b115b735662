//! A multi-thread executor's figures read whole, and its verdicts: what
//! [`MultiExecutor`](super::MultiExecutor) and [`MultiHandle`](super::MultiHandle)
//! answer with, from the shared state alone.
#![forbid(unsafe_code)]

use dinah_core::WorkerId;
use dinah_core::telemetry::Clock;

use super::figures::{self, MultiFigures};
use super::shared::Shared;
use crate::telemetry::{Thresholds, Verdict, WorkersLeft};

/// The executor's figures now.
pub(super) fn figures(shared: &Shared) -> MultiFigures {
    figures::read(
        &shared.counters,
        |worker| shared.stealers[worker].len(),
        shared.global.len(),
        shared.idle.counts(),
        shared.registry.live(),
    )
}

/// The verdicts of `MultiExecutor::diagnose`, whose docs say what each
/// means.
pub(super) fn diagnose(shared: &Shared, thresholds: &Thresholds) -> Vec<Verdict> {
    let Some(clock) = &shared.clock else {
        return Vec::new();
    };
    let blocked: Vec<_> = shared
        .counters
        .iter()
        .enumerate()
        .filter_map(|(worker, counters)| {
            counters
                .blocked(clock, thresholds.blocked)
                .map(|(task, running_for)| (worker, task, running_for))
        })
        .collect();
    if blocked.is_empty() {
        // Read after the poll stamps: a task picked up meanwhile has its
        // stamp cleared, and is not counted.
        return shared
            .registry
            .ready_beyond(clock.now(), thresholds.ready_delay)
            .map(|ready| Verdict::ReadyButDelayed {
                task: ready.task,
                name: ready.name,
                ready_for: ready.ready_for,
                ready_tasks: ready.tasks,
            })
            .into_iter()
            .collect();
    }
    let workers = shared.workers();
    let left = WorkersLeft {
        left: workers - blocked.len(),
        of: workers,
    };
    blocked
        .into_iter()
        .map(|(worker, task, running_for)| Verdict::WorkerBlocked {
            task,
            name: shared.registry.name_of(task),
            worker: WorkerId::new(worker as u64 + 1).ok(),
            running_for,
            ready_behind: shared.stealers[worker].len(),
            left: Some(left),
        })
        .collect()
}
