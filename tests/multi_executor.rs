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
use support::workers::{SetOnDrop, hold_a_worker};

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

/// Ids are unique within a runtime whichever thread spawns (each thread
/// takes them from a block of its own), and a thread that holds a block
/// of one runtime's ids takes none of them for another runtime.
#[test]
fn multi_executor_gives_every_task_a_distinct_id_whichever_thread_spawns_it() {
    use std::collections::BTreeSet;
    let (first, second) = (with_workers(2), with_workers(2));
    let mut ids = vec![Vec::new(), Vec::new()];
    // This thread spawns into both, in turn: a block from each.
    for _ in 0..100 {
        for (runtime, ids) in [&first, &second].into_iter().zip(&mut ids) {
            let task = runtime
                .handle()
                .try_spawn(async {})
                .unwrap_or_else(|_| unreachable!());
            ids.push(task.id());
        }
    }
    // Two other threads, and tasks on the workers, spawn into the first.
    let outside: Vec<_> = (0..2)
        .map(|_| {
            let handle = first.handle();
            std::thread::spawn(move || {
                (0..150)
                    .map(|_| {
                        handle
                            .try_spawn(async {})
                            .unwrap_or_else(|_| unreachable!())
                            .id()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let handle = first.handle();
    let inside = first.block_on(async move {
        let roots: Vec<_> = (0..4)
            .map(|_| {
                let handle = handle.clone();
                handle
                    .clone()
                    .try_spawn(async move {
                        Ok::<_, ()>(
                            (0..100)
                                .map(|_| {
                                    handle
                                        .try_spawn(async {})
                                        .unwrap_or_else(|_| unreachable!())
                                        .id()
                                })
                                .collect::<Vec<_>>(),
                        )
                    })
                    .unwrap_or_else(|_| unreachable!())
            })
            .collect();
        let mut inside = Vec::new();
        for root in roots {
            inside.push(root.id());
            inside.extend(root.await.unwrap().unwrap());
        }
        inside
    });
    ids[0].extend(inside);
    for thread in outside {
        ids[0].extend(thread.join().unwrap());
    }
    for (ids, spawned) in ids.iter().zip([100 + 300 + 404, 100]) {
        let distinct: BTreeSet<_> = ids.iter().copied().collect();
        assert_eq!((ids.len(), distinct.len()), (spawned, spawned));
    }
    // The second runtime counts from 1 though this thread held a block of
    // the first's when it first spawned there.
    assert_eq!(ids[1].iter().min().map(|id| id.get()), Some(1));
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
