//! The multi-thread `MultiExecutor`'s own promises, beyond the runtime
//! contract it runs (`runtime_contract.rs`): its workers run tasks at the
//! same time, one blocked worker leaves the others running, nothing
//! spawned from outside starves, sockets move between tasks (and so
//! between workers), its blocking pool, and its typed errors. No test
//! asserts which worker polls a task.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use dinah::executor::{MultiConfig, MultiExecutor};
use dinah::pool::{PoolError, ShutdownPolicy};
use dinah::yield_now;

mod support;

/// Sets its flag when dropped: releases a task that holds a worker, even
/// when the test fails before it would.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Spawns a task that waits at `started`, then holds its worker without
/// yielding until `release` is set.
fn hold_a_worker(
    handle: &dinah::executor::MultiHandle,
    started: &Arc<Barrier>,
    release: &Arc<AtomicBool>,
) -> dinah::JoinHandle<()> {
    let (started, release) = (Arc::clone(started), Arc::clone(release));
    handle
        .try_spawn(async move {
            started.wait();
            while !release.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
        })
        .unwrap_or_else(|_| unreachable!())
}

/// An executor of `workers` workers that counts its figures.
fn measured(workers: usize) -> MultiExecutor {
    MultiExecutor::with_config(MultiConfig {
        workers: Some(workers),
        measure: true,
        ..MultiConfig::default()
    })
    .unwrap()
}

fn with_workers(workers: usize) -> MultiExecutor {
    MultiExecutor::with_config(MultiConfig {
        workers: Some(workers),
        ..MultiConfig::default()
    })
    .unwrap()
}

#[test]
fn multi_executor_refuses_zero_workers_with_a_typed_error() {
    let refused = MultiExecutor::with_config(MultiConfig {
        workers: Some(0),
        ..MultiConfig::default()
    });
    assert!(matches!(refused, Err(PoolError::ZeroMaxThreads)));
}

#[test]
fn multi_executor_runs_two_tasks_at_once_on_two_workers() {
    let executor = with_workers(2);
    let handle = executor.handle();
    // Each task waits inside its poll for the other: only two workers
    // polling at the same time let both through.
    let meet = Arc::new(Barrier::new(2));
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let meet = Arc::clone(&meet);
            handle
                .try_spawn(async move { Ok::<_, ()>(meet.wait().is_leader()) })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    let leaders = executor.block_on(async move {
        let mut leaders = 0;
        for task in tasks {
            leaders += usize::from(task.await.unwrap().unwrap());
        }
        leaders
    });
    assert_eq!(leaders, 1);
}

#[test]
fn multi_executor_keeps_running_while_one_worker_is_blocked() {
    let executor = with_workers(2);
    let handle = executor.handle();
    let release = Arc::new(AtomicBool::new(false));
    let blocked_started = Arc::new(Barrier::new(2));
    let blocker = hold_a_worker(&handle, &blocked_started, &release);
    // Should an assertion fail, the blocked task is released first, so
    // that the executor's drop can join its worker.
    let _release_on_exit = SetOnDrop(Arc::clone(&release));
    blocked_started.wait();
    // The other worker runs everything else meanwhile.
    let done = Arc::new(AtomicUsize::new(0));
    let others: Vec<_> = (0..100)
        .map(|_| {
            let done = Arc::clone(&done);
            handle
                .try_spawn(async move {
                    yield_now().await;
                    done.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    executor.block_on(async {
        for other in others {
            other.await.unwrap();
        }
    });
    assert_eq!(done.load(Ordering::SeqCst), 100);
    release.store(true, Ordering::Release);
    executor.block_on(blocker).unwrap();
}

#[test]
fn multi_executor_lets_no_self_waking_task_starve_a_spawn_from_outside() {
    let executor = with_workers(1);
    let handle = executor.handle();
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = {
        let stop = Arc::clone(&stop);
        handle
            .try_spawn(async move {
                while !stop.load(Ordering::Acquire) {
                    yield_now().await;
                }
            })
            .unwrap_or_else(|_| unreachable!())
    };
    // Spawned from this thread, onto the global queue, while the only
    // worker keeps polling the spinner.
    let outsider = {
        let stop = Arc::clone(&stop);
        handle
            .try_spawn(async move { stop.store(true, Ordering::Release) })
            .unwrap_or_else(|_| unreachable!())
    };
    executor.block_on(async {
        outsider.await.unwrap();
        spinner.await.unwrap();
    });
}

#[test]
fn multi_executor_block_on_inside_its_own_task_fails_with_a_message() {
    support::quiet_panics_containing(&["inside a task of the same executor"]);
    let executor = Arc::new(with_workers(1));
    let inner = Arc::clone(&executor);
    let task = executor
        .try_spawn(async move { inner.block_on(async {}) })
        .unwrap_or_else(|_| unreachable!());
    let failure = executor.block_on(task).unwrap_err();
    assert!(
        failure
            .to_string()
            .contains("inside a task of the same executor"),
        "{failure}"
    );
}

/// Reads exactly `buffer.len()` bytes.
#[cfg(not(miri))]
async fn read_exact(stream: &dinah::net::TcpStream, buffer: &mut [u8]) -> std::io::Result<()> {
    let mut filled = 0;
    while filled < buffer.len() {
        match stream.read(&mut buffer[filled..]).await? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => filled += n,
        }
    }
    Ok(())
}

#[cfg(not(miri))]
#[test]
fn multi_executor_moves_a_socket_from_task_to_task() {
    use dinah::net::{TcpListener, TcpStream};
    let executor = with_workers(2);
    let handle = executor.handle();
    let echoed = executor.block_on(async move {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
        let address = listener.local_addr().unwrap();
        let server = handle
            .try_spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                let mut buffer = [0u8; 5];
                read_exact(&stream, &mut buffer).await.unwrap();
                stream.write_all(&buffer).await.unwrap();
            })
            .unwrap_or_else(|_| unreachable!());
        // Connected in one task, written and read in others: a stream
        // made where one worker polls is polled where another may.
        let stream = handle
            .try_spawn(TcpStream::connect(address))
            .unwrap_or_else(|_| unreachable!())
            .await
            .unwrap()
            .unwrap();
        let stream = handle
            .try_spawn(async move {
                stream.write_all(b"hello").await?;
                Ok::<_, std::io::Error>(stream)
            })
            .unwrap_or_else(|_| unreachable!())
            .await
            .unwrap()
            .unwrap();
        let reply = handle
            .try_spawn(async move {
                let mut reply = [0u8; 5];
                read_exact(&stream, &mut reply).await?;
                Ok::<_, std::io::Error>(reply)
            })
            .unwrap_or_else(|_| unreachable!())
            .await
            .unwrap()
            .unwrap();
        server.await.unwrap();
        reply
    });
    assert_eq!(&echoed, b"hello");
    assert!(executor.io_figures().registered >= 2);
}

#[test]
fn multi_executor_runs_blocking_work_on_its_own_pool_and_reports_it() {
    let executor = with_workers(1);
    let handle = executor.handle();
    let worker_thread = std::thread::current().id();
    let (sum, on_pool) = executor.block_on(async move {
        let job = handle
            .spawn_blocking(move || {
                let here = std::thread::current();
                ((1..=100u64).sum::<u64>(), here.id() != worker_thread)
            })
            .await
            .unwrap();
        job.await.unwrap()
    });
    assert_eq!(sum, 5050);
    assert!(on_pool);
    let report = executor.shutdown_with(ShutdownPolicy::Drain, Duration::from_secs(5));
    let blocking = report.blocking.expect("the executor's pool");
    assert_eq!((blocking.accepted, blocking.completed), (1, 1));
}

/// Children spawned by one task, its "parent", which then holds its worker
/// until all but one of them are done.
const CHILDREN: usize = 10;

/// Runs a parent task that spawns [`CHILDREN`] children and then holds its
/// worker until all but one are done: only the other worker, stealing them
/// from the parent's deque, can run them (the last one waits in the
/// parent's next-task slot, which is not stolen). Returns when every child
/// is done.
fn steal_from_a_held_worker(executor: &MultiExecutor) {
    let handle = executor.handle();
    let done = Arc::new(AtomicUsize::new(0));
    let parent = {
        let (handle, done) = (handle.clone(), Arc::clone(&done));
        handle
            .clone()
            .try_spawn_named("parent", async move {
                for _ in 0..CHILDREN {
                    let done = Arc::clone(&done);
                    drop(
                        handle
                            .try_spawn_named("child", async move {
                                done.fetch_add(1, Ordering::SeqCst);
                            })
                            .unwrap_or_else(|_| unreachable!()),
                    );
                }
                while done.load(Ordering::SeqCst) < CHILDREN - 1 {
                    std::thread::yield_now();
                }
            })
            .unwrap_or_else(|_| unreachable!())
    };
    executor.block_on(parent).unwrap();
    executor.block_on(async {
        while done.load(Ordering::SeqCst) < CHILDREN {
            yield_now().await;
        }
    });
}

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

/// A task whose socket always has data never returns `Pending` on its own:
/// the executor's budget makes its reads yield now and then, so the other
/// task on the same single worker runs before the data runs out.
#[cfg(not(miri))]
#[test]
fn multi_executor_budget_makes_a_task_whose_socket_is_always_ready_yield() {
    use std::io::Write;
    const DATA: usize = 1 << 20;
    let executor = with_workers(1);
    let handle = executor.handle();
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let address = listener.local_addr().unwrap();
    let writer = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        // The reader stops early and drops its end: a write error then.
        let _ = stream.write_all(&vec![7u8; DATA]);
    });
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (stop, progress) = (Arc::clone(&stop), Arc::clone(&progress));
        handle
            .try_spawn(async move {
                let stream = dinah::net::TcpStream::connect(address).await?;
                let mut byte = [0u8; 1];
                let mut reads = 0usize;
                while !stop.load(Ordering::Acquire) {
                    if stream.read(&mut byte).await? == 0 {
                        break;
                    }
                    reads += 1;
                    progress.store(reads, Ordering::Release);
                }
                Ok::<_, std::io::Error>(reads)
            })
            .unwrap_or_else(|_| unreachable!())
    };
    // Runs only when the reader yields; stops it once it has read a while.
    let stopper = {
        let (stop, progress) = (Arc::clone(&stop), Arc::clone(&progress));
        handle
            .try_spawn(async move {
                while progress.load(Ordering::Acquire) < 4096 {
                    yield_now().await;
                }
                stop.store(true, Ordering::Release);
            })
            .unwrap_or_else(|_| unreachable!())
    };
    executor.block_on(stopper).unwrap();
    let reads = executor.block_on(reader).unwrap().unwrap();
    assert!(
        reads < DATA,
        "the reader stopped before the data ran out: {reads}"
    );
    writer.join().unwrap();
}
