//! Loom models of the pool engine's races: a submission against shutdown
//! (every accepted task runs exactly once or is handed back), a cancel
//! against a worker starting the task (exactly one wins), an idle worker
//! parking against a submission (no lost wakeup), and a keep-alive exit
//! against a new submission (the job still runs).
#![cfg(loom)]

use dinah_core::CoreConfig;
use dinah_core::executor::SpawnError;
use dinah_std::pool::{BlockingConfig, ShutdownPolicy};
use dinah_std::{BlockingPool, JoinError, WorkerPool};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use std::time::Duration;

fn one_worker() -> WorkerPool {
    WorkerPool::new(CoreConfig::new(1).unwrap(), 2).unwrap()
}

#[test]
fn an_idle_worker_never_misses_a_submission() {
    loom::model(|| {
        // The worker may be anywhere between finding the queue empty and
        // waiting when the task arrives; a lost wakeup would leave `join`
        // waiting forever, which loom reports as a deadlock.
        let pool = one_worker();
        let handle = pool.try_spawn(|| 5).unwrap_or_else(|_| unreachable!());
        assert_eq!(handle.join(), Ok(5));
        let second = pool.try_spawn(|| 6).unwrap_or_else(|_| unreachable!());
        assert_eq!(second.join(), Ok(6));
        drop(pool);
    });
}

#[test]
fn a_submission_racing_shutdown_runs_or_is_handed_back() {
    for policy in [ShutdownPolicy::Drain, ShutdownPolicy::CancelPending] {
        loom::model(move || {
            let pool = one_worker();
            let submitter = pool.spawner();
            let runs = Arc::new(AtomicUsize::new(0));
            let racer = {
                let runs = Arc::clone(&runs);
                thread::spawn(move || {
                    submitter
                        .try_spawn(move || {
                            runs.fetch_add(1, Ordering::SeqCst);
                        })
                        .map_err(|refused| matches!(refused, SpawnError::Shutdown(_)))
                })
            };
            let report = pool.shutdown(policy);
            let submitted = racer.join().unwrap();
            let ran = runs.load(Ordering::SeqCst);
            match submitted {
                // Refused: handed back to the submitter, never ran.
                Err(shutting_down) => {
                    assert!(shutting_down);
                    assert_eq!(ran, 0);
                    assert!(report.handed_back.is_empty());
                }
                Ok(handle) => {
                    let handed_back = report.handed_back.len();
                    // Accepted: ran exactly once, or handed back unrun.
                    assert_eq!(ran + handed_back, 1, "{policy:?}");
                    if policy == ShutdownPolicy::Drain {
                        assert_eq!(ran, 1);
                    }
                    drop(report);
                    let outcome = handle.join();
                    if ran == 1 {
                        assert_eq!(outcome, Ok(()));
                    } else {
                        assert_eq!(outcome, Err(JoinError::Cancelled));
                    }
                }
            }
        });
    }
}

#[test]
fn cancel_racing_the_start_has_one_winner() {
    loom::model(|| {
        let pool = one_worker();
        let runs = Arc::new(AtomicUsize::new(0));
        let task_runs = Arc::clone(&runs);
        let handle = pool
            .try_spawn(move || {
                task_runs.fetch_add(1, Ordering::SeqCst);
                1
            })
            .unwrap_or_else(|_| unreachable!());
        let cancelled = handle.cancel();
        let outcome = handle.join();
        drop(pool);
        let ran = runs.load(Ordering::SeqCst);
        if cancelled {
            assert_eq!((ran, outcome), (0, Err(JoinError::Cancelled)));
        } else {
            assert_eq!((ran, outcome), (1, Ok(1)));
        }
    });
}

#[test]
fn a_keep_alive_exit_never_strands_a_new_job() {
    loom::model(|| {
        // Zero keep-alive: the thread leaves the moment it finds no job,
        // racing the second submission. Either it takes the job or the
        // submission starts a new thread; the job runs either way.
        let config = BlockingConfig::new(1, 2).keep_alive(Duration::ZERO);
        let pool = BlockingPool::new(config).unwrap();
        let first = pool.try_spawn(|| 1).unwrap_or_else(|_| unreachable!());
        assert_eq!(first.join(), Ok(1));
        let second = pool.try_spawn(|| 2).unwrap_or_else(|_| unreachable!());
        assert_eq!(second.join(), Ok(2));
        let report = pool.shutdown(ShutdownPolicy::Drain);
        assert_eq!(report.completed, 2);
    });
}
