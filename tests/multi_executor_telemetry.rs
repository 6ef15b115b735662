//! What the multi-thread `MultiExecutor` tells of itself: per-worker
//! figures (polls, steals, wake-to-poll), its diagnosis (a blocked worker
//! with the capacity left, a task ready but delayed in any queue, silence
//! when healthy) and its timeline (a lane per worker, steals marked). No
//! test asserts which worker polls a task.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use dinah::executor::{MultiConfig, MultiExecutor};
use dinah::yield_now;

mod support;
use support::workers::{CHILDREN, SetOnDrop, hold_a_worker, measured, steal_from_a_held_worker};

#[test]
fn multi_executor_counts_polls_and_the_steals_that_freed_a_blocked_worker_s_queue() {
    let executor = measured(2);
    steal_from_a_held_worker(&executor);
    // A worker counts a poll after it ends, which may be after the task's
    // handle resolves: joining the workers makes every count visible.
    let report = executor.shutdown();
    assert_eq!(report.left(), 0);
    let figures = executor.figures();
    assert_eq!(figures.workers.len(), 2);
    let polls: u64 = figures.workers.iter().map(|w| w.polls).sum();
    let steals: u64 = figures.workers.iter().map(|w| w.steals).sum();
    let stolen: u64 = figures.workers.iter().map(|w| w.stolen).sum();
    assert!(polls > CHILDREN as u64, "{figures:?}");
    assert!(
        steals >= 1 && stolen >= (CHILDREN - 1) as u64,
        "{figures:?}"
    );
    assert!(figures.workers.iter().any(|w| w.busy > Duration::ZERO));
    assert_eq!(figures.live_tasks, 0);
}

#[test]
fn multi_executor_diagnose_names_a_blocked_worker_and_the_capacity_left_and_is_silent_when_healthy()
{
    use dinah::telemetry::{Thresholds, Verdict, WorkersLeft};
    let executor = measured(2);
    let handle = executor.handle();
    // Generous, so that an interpreter or a sanitizer is not a stall.
    let thresholds = Thresholds {
        blocked: Duration::from_secs(60),
        ready_delay: Duration::from_secs(60),
        ..Thresholds::default()
    };
    // Loaded, every poll short: nothing to say.
    let busy: Vec<_> = (0..200)
        .map(|_| {
            handle
                .try_spawn(async {
                    for _ in 0..10 {
                        yield_now().await;
                    }
                })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    assert_eq!(executor.diagnose(&thresholds), []);
    executor.block_on(async {
        for task in busy {
            task.await.unwrap();
        }
    });
    // One poll that does not return: its worker is named, with the task.
    let (started, release) = (Arc::new(Barrier::new(2)), Arc::new(AtomicBool::new(false)));
    let uplink = {
        let (started, release) = (Arc::clone(&started), Arc::clone(&release));
        handle
            .try_spawn_named("uplink", async move {
                started.wait();
                while !release.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
            })
            .unwrap_or_else(|_| unreachable!())
    };
    // Should an assertion fail, the blocked task is released first, so
    // that the executor's drop can join its worker.
    let _release_on_exit = SetOnDrop(Arc::clone(&release));
    started.wait();
    // The other worker may still be ending the poll of the last busy task
    // (its stamp is cleared just after): look again until it has.
    let blocked_only = Thresholds {
        blocked: Duration::ZERO,
        ..Thresholds::default()
    };
    let verdicts = (0..1_000_000)
        .map(|_| {
            std::thread::yield_now();
            executor.diagnose(&blocked_only)
        })
        .find(|verdicts| verdicts.len() == 1)
        .expect("one blocked worker");
    let [
        Verdict::WorkerBlocked {
            task,
            name,
            worker,
            left,
            ..
        },
    ] = &verdicts[..]
    else {
        panic!("one blocked worker: {verdicts:?}");
    };
    assert_eq!((*task, *name), (uplink.id(), Some("uplink")));
    assert!(worker.is_some());
    assert_eq!(*left, Some(WorkersLeft { left: 1, of: 2 }));
    let said = verdicts[0].to_string();
    assert!(
        said.contains("uplink") && said.contains("1 of 2 workers left"),
        "{said}"
    );
    release.store(true, Ordering::Release);
    executor.block_on(uplink).unwrap();
    assert_eq!(executor.diagnose(&thresholds), []);
}

/// A task ready while every worker is held by a poll shorter than the
/// blocked threshold waits in the global queue: the diagnosis names it as
/// ready but delayed, across the queues. Once the workers are free it is
/// polled, and the wake-to-poll figures count every poll that followed a
/// wake or a spawn.
#[test]
fn multi_executor_diagnose_names_a_task_ready_but_delayed_and_counts_wake_to_poll() {
    use dinah::telemetry::{Thresholds, Verdict};
    let executor = measured(2);
    let handle = executor.handle();
    let started = Arc::new(Barrier::new(3));
    let release = Arc::new(AtomicBool::new(false));
    let _release_on_exit = SetOnDrop(Arc::clone(&release));
    let holders: Vec<_> = (0..2)
        .map(|_| hold_a_worker(&handle, &started, &release))
        .collect();
    // Both workers are held: the next task waits.
    started.wait();
    let late = handle
        .try_spawn_named("late", async {
            for _ in 0..3 {
                yield_now().await;
            }
        })
        .unwrap_or_else(|_| unreachable!());
    let thresholds = Thresholds {
        blocked: Duration::from_secs(3600),
        ready_delay: Duration::ZERO,
        ..Thresholds::default()
    };
    // Its stamp is older than now as soon as the clock moves on.
    let verdicts = (0..1_000_000)
        .map(|_| executor.diagnose(&thresholds))
        .find(|verdicts| !verdicts.is_empty())
        .expect("a verdict");
    let [
        Verdict::ReadyButDelayed {
            task,
            name,
            ready_tasks,
            ..
        },
    ] = &verdicts[..]
    else {
        panic!("one task ready but delayed: {verdicts:?}");
    };
    assert_eq!((*task, *name, *ready_tasks), (late.id(), Some("late"), 1));
    // Through the handle, from any thread, the same.
    assert!(matches!(
        &handle.diagnose(&thresholds)[..],
        [Verdict::ReadyButDelayed {
            name: Some("late"),
            ..
        }]
    ));
    release.store(true, Ordering::Release);
    executor.block_on(async move {
        for holder in holders {
            holder.await.unwrap();
        }
        late.await.unwrap();
    });
    let report = executor.shutdown();
    assert_eq!(report.left(), 0);
    let figures = executor.figures();
    // Every poll followed a spawn or a wake: the holders' one poll each,
    // the late task's four (its first, and one per yield).
    let polls: u64 = figures.workers.iter().map(|w| w.polls).sum();
    let woken: u64 = figures.workers.iter().map(|w| w.woken_polls).sum();
    assert_eq!((polls, woken), (6, 6), "{figures:?}");
    let longest = figures
        .workers
        .iter()
        .map(|w| w.longest_wake_to_poll)
        .max()
        .unwrap();
    // The late task waited for a worker at least as long as the diagnosis
    // took to see it waiting.
    assert!(longest > Duration::ZERO, "{figures:?}");
    for worker in &figures.workers {
        assert!(worker.mean_wake_to_poll() <= worker.longest_wake_to_poll);
        assert!(worker.wake_to_poll >= worker.longest_wake_to_poll);
    }
}

/// Given a recorder's sink, the executor's timeline has one lane per
/// worker thread: the polls of each worker on its own, and a steal marked
/// on the lane of the worker that stole.
#[test]
fn multi_executor_timeline_has_a_lane_per_worker_with_its_steals() {
    use dinah::telemetry::Recorder;
    let timeline = Arc::new(Recorder::new(1 << 14).unwrap());
    let executor = MultiExecutor::with_sink(
        MultiConfig {
            workers: Some(2),
            name: "lane",
            ..MultiConfig::default()
        },
        Arc::new(timeline.source("multi")),
    )
    .unwrap();
    steal_from_a_held_worker(&executor);
    assert_eq!(executor.shutdown().left(), 0);
    assert!(!executor.sink_failed());
    let json = timeline.chrome_trace();
    // The lanes: the workers' threads, by name, and their numbers.
    let lane = |name: &str| -> Option<String> {
        let at = json.find(&format!(r#""args":{{"name":"{name}"}}"#))?;
        let line = json[..at].rsplit('\n').next()?;
        let tid = line.split(r#""tid":"#).nth(1)?.split(',').next()?;
        Some(tid.to_owned())
    };
    let lanes: Vec<String> = ["lane-1", "lane-2"]
        .iter()
        .filter_map(|n| lane(n))
        .collect();
    assert_eq!(lanes.len(), 2, "a lane per worker: {json}");
    let on_lane = |what: &str, tid: &str| {
        json.lines()
            .any(|line| line.contains(what) && line.contains(&format!(r#""tid":{tid},"#)))
    };
    // Both workers polled (the parent on one, stolen children on the
    // other), and the steal is marked where it happened: on a lane whose
    // worker then polled a child.
    for tid in &lanes {
        assert!(
            on_lane(r#""cat":"poll""#, tid),
            "polls on lane {tid}: {json}"
        );
    }
    assert!(
        lanes.iter().any(|tid| on_lane(r#""name":"stolen""#, tid)
            && on_lane(r#""name":"child","cat":"poll""#, tid)),
        "a steal marked on the thief's lane: {json}"
    );
}
