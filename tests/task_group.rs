//! Task groups: children joined in spawn order or as they finish,
//! cancelled together, shut down with one deadline and a report that names
//! every child's end; and the one rule for dropping a group.
//!
//! Time is the executor's paused clock: sleeps order the children and the
//! deadline passes the moment the executor idles, in no real time.
//!
//! The group's contract runs on both executors, one line each in the
//! `group_contract!` call; what is particular to one follows it.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::Duration;

use dinah::executor::{ExecutorConfig, MultiConfig, MultiExecutor};
use dinah::pool::BlockingConfig;
use dinah::task::{ChildEnd, ChildKind, JoinError};
use dinah::{BlockingPool, LocalExecutor};

mod support;

const MS: Duration = Duration::from_millis(1);
/// Children of the large group (fewer under Miri, which interprets).
const MANY: usize = if cfg!(miri) { 200 } else { 10_000 };

fn paused() -> LocalExecutor<'static> {
    LocalExecutor::with_config(ExecutorConfig {
        start_paused: true,
        ..ExecutorConfig::default()
    })
    .unwrap()
}

fn multi_paused() -> MultiExecutor {
    MultiExecutor::with_config(MultiConfig {
        workers: Some(2),
        start_paused: true,
        ..MultiConfig::default()
    })
    .unwrap()
}

/// A child that sleeps `ms` and returns it.
async fn after(ms: u64) -> Result<u64, &'static str> {
    dinah::time::sleep(Duration::from_millis(ms)).await;
    Ok(ms)
}

/// The suite every executor's groups pass: `$start` makes the executor,
/// with a paused clock.
macro_rules! group_contract {
    ($($module:ident: $start:path),+ $(,)?) => {$(
        mod $module {
            use super::*;

            #[test]
            fn join_all_is_in_spawn_order_and_join_next_in_finish_order() {
                let executor = $start();
                let (in_order, finished) = executor.block_on(async {
                    let mut group = executor.group();
                    for ms in [30, 10, 20] {
                        group.spawn(after(ms)).unwrap();
                    }
                    let in_order: Vec<u64> = group
                        .join_all()
                        .await
                        .into_iter()
                        .map(|(_, result)| result.unwrap().unwrap())
                        .collect();
                    assert!(group.is_empty());
                    for ms in [30, 10, 20] {
                        group.spawn(after(ms)).unwrap();
                    }
                    let mut finished = Vec::new();
                    while let Some((_, result)) = group.join_next().await {
                        finished.push(result.unwrap().unwrap());
                    }
                    (in_order, finished)
                });
                assert_eq!(in_order, [30, 10, 20]);
                assert_eq!(finished, [10, 20, 30]);
            }

            #[test]
            fn cancel_all_cancels_every_child_not_yet_joined() {
                let executor = $start();
                let results = executor.block_on(async {
                    let mut group = executor.group::<()>();
                    for _ in 0..3 {
                        group.spawn(std::future::pending()).unwrap();
                    }
                    group.cancel_all();
                    group.join_all().await
                });
                assert_eq!(results.len(), 3);
                assert!(
                    results
                        .iter()
                        .all(|(_, result)| *result == Err(JoinError::Cancelled))
                );
            }

            #[test]
            fn the_shutdown_report_names_each_child_s_end() {
                support::quiet_panics_containing(&["on purpose"]);
                let executor = $start();
                let pool = BlockingPool::new(BlockingConfig::new(1, 4)).unwrap();
                let (started_tx, started) = mpsc::channel();
                let (release, release_rx) = mpsc::channel::<()>();
                let report = executor.block_on(async {
                    let mut group = executor.group::<Result<u32, &'static str>>();
                    group.spawn_named("done", async { Ok(1) }).unwrap();
                    group.spawn_named("erred", async { Err("no") }).unwrap();
                    group
                        .spawn_named("panicked", async { panic!("a child panicked on purpose") })
                        .unwrap();
                    group.spawn_named("idle", std::future::pending()).unwrap();
                    let disk = pool.spawner();
                    group
                        .spawn_blocking(&disk, move || {
                            started_tx.send(()).unwrap();
                            release_rx.recv().unwrap();
                            Ok(5)
                        })
                        .unwrap();
                    // Let the quick ones end, and the blocking job start.
                    dinah::time::sleep(MS).await;
                    started.recv().unwrap();
                    group.shutdown(10 * MS).await
                });
                let ends: Vec<(Option<&str>, ChildKind, ChildEnd)> = report
                    .children
                    .iter()
                    .map(|child| (child.name, child.kind, child.end))
                    .collect();
                assert_eq!(
                    ends,
                    [
                        (Some("done"), ChildKind::Task, ChildEnd::Completed),
                        (Some("erred"), ChildKind::Task, ChildEnd::Failed),
                        (Some("panicked"), ChildKind::Task, ChildEnd::Failed),
                        (Some("idle"), ChildKind::Task, ChildEnd::Cancelled),
                        (None, ChildKind::Blocking, ChildEnd::Running),
                    ]
                );
                assert_eq!(report.count(ChildEnd::Failed), 2);
                release.send(()).unwrap();
                drop(pool);
            }

            #[test]
            fn a_queued_blocking_child_is_cancelled_at_shutdown() {
                let executor = $start();
                let pool = BlockingPool::new(BlockingConfig::new(1, 4)).unwrap();
                let (started_tx, started) = mpsc::channel();
                let (release, release_rx) = mpsc::channel::<()>();
                let report = executor.block_on(async {
                    let mut group = executor.group::<()>();
                    let disk = pool.spawner();
                    group
                        .spawn_blocking(&disk, move || {
                            started_tx.send(()).unwrap();
                            release_rx.recv().unwrap();
                        })
                        .unwrap();
                    started.recv().unwrap();
                    group.spawn_blocking(&disk, || ()).unwrap();
                    group.shutdown(10 * MS).await
                });
                let ends: Vec<ChildEnd> = report.children.iter().map(|child| child.end).collect();
                assert_eq!(ends, [ChildEnd::Running, ChildEnd::Cancelled]);
                release.send(()).unwrap();
            }

            #[test]
            fn many_idle_children_are_all_in_the_report() {
                let executor = $start();
                let report = executor.block_on(async {
                    let mut group = executor.group::<()>();
                    for _ in 0..MANY {
                        group.spawn(std::future::pending()).unwrap();
                    }
                    dinah::time::sleep(MS).await;
                    group.shutdown(MS).await
                });
                assert_eq!(report.children.len(), MANY);
                assert_eq!(report.count(ChildEnd::Cancelled), MANY);
            }
        }
    )+};
}

group_contract!(local: paused, multi_executor: multi_paused);

/// Dropping a group cancels its children: their futures are dropped at the
/// executor's next scheduling point, and nothing of them runs again.
#[test]
fn dropping_a_group_cancels_its_children() {
    struct Dropped(Rc<RefCell<usize>>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            *self.0.borrow_mut() += 1;
        }
    }
    let executor = paused();
    let dropped = Rc::new(RefCell::new(0));
    let mut group = executor.group::<()>();
    for _ in 0..4 {
        let guard = Dropped(Rc::clone(&dropped));
        group
            .spawn(async move {
                let _guard = guard;
                std::future::pending::<()>().await;
            })
            .unwrap();
    }
    executor.tick(usize::MAX);
    assert_eq!((*dropped.borrow(), executor.live_tasks()), (0, 4));
    drop(group);
    executor.tick(usize::MAX);
    assert_eq!((*dropped.borrow(), executor.live_tasks()), (4, 0));
}

/// On the multi-thread executor a group is `Send`: a task owns it, on
/// whichever worker polls it. When that task ends, its group goes with it,
/// and so do the children it never joined: each child's future is dropped
/// (each sends as it goes).
#[test]
fn on_the_multi_executor_a_task_owns_its_group_and_its_end_cancels_the_children() {
    struct Dropped(mpsc::Sender<()>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let executor = multi_paused();
    let handle = executor.handle();
    let (dropped_tx, dropped) = mpsc::channel();
    let owner = executor
        .handle()
        .try_spawn(async move {
            let mut group = handle.group::<Result<usize, ()>>();
            for n in 0..4 {
                let guard = Dropped(dropped_tx.clone());
                group
                    .spawn(async move {
                        let _guard = guard;
                        if n == 0 {
                            return Ok(n);
                        }
                        std::future::pending().await
                    })
                    .unwrap();
            }
            // The first child ends by itself; the others are left.
            Ok::<_, ()>(group.join_next().await.map(|(_, result)| result))
        })
        .unwrap();
    assert_eq!(executor.block_on(owner), Ok(Ok(Some(Ok(Ok(0))))));
    for _ in 0..4 {
        dropped.recv().unwrap();
    }
    // A child whose future is gone may not have left the executor yet:
    // the shutdown then reports it, as cancelled.
    let report = executor.shutdown();
    assert!(
        report
            .tasks
            .iter()
            .all(|task| task.end == ChildEnd::Cancelled)
    );
}

/// The executor's own shutdown takes the pools' policies and reports like
/// a group: a drain runs what was accepted (the ingress's waiting
/// submissions too) and refuses what comes after; what is left at the
/// deadline is dropped.
#[test]
fn an_executor_drain_runs_accepted_work_refuses_new_and_reports_each_task() {
    use dinah::SpawnError;
    use dinah::pool::ShutdownPolicy;
    let executor = paused();
    let spawner = executor.spawner();
    let local = executor.local_spawner();
    let refused = Rc::new(RefCell::new(None));
    let seen = Rc::clone(&refused);
    let _quick = executor
        .try_spawn_named("quick", async move {
            dinah::time::sleep(2 * MS).await;
            // Spawning during the drain is refused.
            *seen.borrow_mut() = Some(matches!(
                local.try_spawn(async {}),
                Err(SpawnError::Shutdown(_))
            ));
        })
        .unwrap();
    let _stuck = executor
        .try_spawn_named("stuck", std::future::pending::<()>())
        .unwrap();
    let _waiting = spawner.try_spawn_named("submitted", async {}).unwrap();
    // The clock is paused: the drain ends when only `stuck` is left and the
    // executor idles. The deadline also bounds the call in real time, so it
    // is long enough for a slow interpreter (Miri) to get there first.
    let report = executor.shutdown_with(ShutdownPolicy::Drain, 10_000 * MS);
    let ends: Vec<(Option<&str>, ChildEnd)> = report
        .tasks
        .iter()
        .map(|task| (task.name, task.end))
        .collect();
    assert_eq!(
        ends,
        [
            (Some("quick"), ChildEnd::Completed),
            (Some("stuck"), ChildEnd::Cancelled),
            (Some("submitted"), ChildEnd::Completed),
        ]
    );
    assert_eq!(*refused.borrow(), Some(true));
    assert_eq!(
        (report.cancelled_tasks, report.cancelled_submissions),
        (1, 0)
    );
    assert!(matches!(
        spawner.try_spawn(async {}),
        Err(SpawnError::Shutdown(_))
    ));
}

#[test]
fn an_executor_cancel_pending_shutdown_drops_everything_at_once() {
    use dinah::pool::ShutdownPolicy;
    let executor = paused();
    let _a = executor.try_spawn_named("a", after(1)).unwrap();
    let _b = executor.spawner().try_spawn_named("b", async {}).unwrap();
    let report = executor.shutdown_with(ShutdownPolicy::CancelPending, 10 * MS);
    let ends: Vec<(Option<&str>, ChildEnd)> = report
        .tasks
        .iter()
        .map(|task| (task.name, task.end))
        .collect();
    assert_eq!(
        ends,
        [
            (Some("a"), ChildEnd::Cancelled),
            (Some("b"), ChildEnd::Cancelled)
        ]
    );
}
