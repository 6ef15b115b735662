//! Channels and semaphores: dinah's against tokio's, in the same run.
//!
//! - `channel_ping_pong`: two tasks on one current-thread executor pass a
//!   number back and forth over two channels of capacity 1, 10,000 round
//!   trips (each a send and a receive on each side, and each side waiting
//!   on every round): dinah's `mpsc` on a `LocalExecutor`, dinah's static
//!   `Channel` on the core `AsyncExecutor`, tokio's bounded `mpsc` on a
//!   current-thread runtime. The allocations of one dinah run after
//!   warm-up are counted (the goal is none).
//! - `notify_one_then_wait`: one task notifies and then waits (the kept
//!   notification completes the wait at once), 10,000 times: dinah's
//!   `SharedNotify` and static `Notify`, tokio's `Notify`.
//! - `semaphore_acquire_release`: one task acquires a permit and drops it,
//!   10,000 times: dinah's `SharedSemaphore` and static `Semaphore`, tokio's
//!   `Semaphore`.
//! - `group_shutdown_10k`: a group of 10,000 idle tasks (each waits
//!   forever) shut down: dinah's `TaskGroup::shutdown` (every child
//!   cancelled, dropped and named in the report), tokio's `JoinSet`
//!   (`shutdown`: abort all, wait for all). The goal is under 10 ms.
//!
//! `cargo bench --bench sync [-- FILTER] [--samples N]`.

use std::alloc::System;
use std::hint::black_box;
use std::pin::pin;
use std::time::{Duration, Instant};

use dinah::LocalExecutor;
use dinah::executor::{AsyncExecutor, ReadyQueue};
use dinah::sync::{Channel, Notify, Semaphore, SharedNotify, SharedSemaphore, mpsc};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

mod harness;
use harness::{Contender, Options, median_of, run_case, target};

/// Counts every allocation, to show what a send and a receive allocate.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ROUNDS: usize = 10_000;

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

/// One ping-pong run on a `LocalExecutor`: the time of one round trip.
fn dinah_ping_pong(executor: &LocalExecutor<'_>) -> Duration {
    let (ping_tx, mut ping_rx) = mpsc::channel::<usize>(1).expect("capacity 1");
    let (pong_tx, mut pong_rx) = mpsc::channel::<usize>(1).expect("capacity 1");
    let echo = executor
        .try_spawn(async move {
            while let Some(n) = ping_rx.recv().await {
                if pong_tx.send(n).await.is_err() {
                    break;
                }
            }
        })
        .expect("room");
    let took = executor.block_on(async move {
        let start = Instant::now();
        for n in 0..ROUNDS {
            ping_tx.send(n).await.expect("echo alive");
            black_box(pong_rx.recv().await);
        }
        start.elapsed()
    });
    executor.block_on(echo).expect("echo ends");
    took / ROUNDS as u32
}

/// What one core run uses for good: a queue its executor claims and two
/// channels it closes.
type CoreRun = (
    &'static ReadyQueue<2>,
    &'static Channel<usize, 1>,
    &'static Channel<usize, 1>,
);

/// One ping-pong run on the core executor with two static channels.
fn core_ping_pong((queue, ping, pong): CoreRun) -> Duration {
    let (ping_tx, mut ping_rx) = ping.split().expect("fresh channel");
    let (pong_tx, mut pong_rx) = pong.split().expect("fresh channel");
    let mut echo = pin!(Some(async move {
        while let Some(n) = ping_rx.recv().await {
            if pong_tx.send(n).await.is_err() {
                break;
            }
        }
    }));
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(queue).expect("the queue is free");
    executor.try_spawn(echo.as_mut()).expect("room");
    let took = executor.run_until(
        async move {
            let start = Instant::now();
            for n in 0..ROUNDS {
                ping_tx.send(n).await.expect("echo alive");
                black_box(pong_rx.recv().await);
            }
            start.elapsed()
        },
        64,
        || {},
    );
    while executor.tick(64).work_remaining {}
    took / ROUNDS as u32
}

fn tokio_ping_pong(runtime: &tokio::runtime::Runtime) -> Duration {
    let local = tokio::task::LocalSet::new();
    local.block_on(runtime, async {
        let (ping_tx, mut ping_rx) = tokio::sync::mpsc::channel::<usize>(1);
        let (pong_tx, mut pong_rx) = tokio::sync::mpsc::channel::<usize>(1);
        let echo = tokio::task::spawn_local(async move {
            while let Some(n) = ping_rx.recv().await {
                if pong_tx.send(n).await.is_err() {
                    break;
                }
            }
        });
        let start = Instant::now();
        for n in 0..ROUNDS {
            ping_tx.send(n).await.expect("echo alive");
            black_box(pong_rx.recv().await);
        }
        let took = start.elapsed();
        drop(ping_tx);
        echo.await.expect("echo ends");
        took / ROUNDS as u32
    })
}

fn ping_pong(options: &Options) {
    if !options.wants("channel_ping_pong") {
        return;
    }
    let dinah = LocalExecutor::new();
    let tokio = tokio_runtime();
    // A core run claims its queue and closes its channels for good: each
    // run gets fresh ones, kept for the rest of the process.
    let fresh = || -> CoreRun {
        (
            Box::leak(Box::new(ReadyQueue::new())),
            Box::leak(Box::new(Channel::new())),
            Box::leak(Box::new(Channel::new())),
        )
    };
    let mut contenders = vec![
        Contender::new("dinah LocalExecutor + mpsc", false, || {
            dinah_ping_pong(&dinah)
        }),
        Contender::new("dinah core AsyncExecutor + Channel", false, || {
            core_ping_pong(fresh())
        }),
        Contender::new("tokio current-thread mpsc", true, || {
            tokio_ping_pong(&tokio)
        }),
    ];
    let results = run_case(
        "channel_ping_pong (time per round trip)",
        1,
        options.samples,
        &mut contenders,
    );
    let ratio = median_of(&results, "dinah LocalExecutor") / median_of(&results, "tokio");
    target(
        "channel_ping_pong: dinah mpsc / tokio mpsc (at most 1.0)",
        ratio,
        ratio <= 1.0,
    );
    let region = Region::new(GLOBAL);
    let (ping_tx, mut ping_rx) = mpsc::channel::<usize>(1).expect("capacity 1");
    let (pong_tx, mut pong_rx) = mpsc::channel::<usize>(1).expect("capacity 1");
    let echo = dinah
        .try_spawn(async move {
            while let Some(n) = ping_rx.recv().await {
                if pong_tx.send(n).await.is_err() {
                    break;
                }
            }
        })
        .expect("room");
    let counted = dinah.block_on(async move {
        // Warm-up: the buffers and the lines reach their size.
        for n in 0..16 {
            ping_tx.send(n).await.expect("echo alive");
            pong_rx.recv().await;
        }
        let before = region.change().allocations;
        for n in 0..ROUNDS {
            ping_tx.send(n).await.expect("echo alive");
            black_box(pong_rx.recv().await);
        }
        region.change().allocations - before
    });
    dinah.block_on(echo).expect("echo ends");
    println!(
        "channel_ping_pong allocations per send and receive (dinah mpsc, after warm-up): {} in {} round trips -> {}",
        counted,
        ROUNDS,
        if counted == 0 { "met" } else { "MISSED" }
    );
}

static CORE_SEMAPHORE: Semaphore = Semaphore::new(1);

fn semaphore(options: &Options) {
    if !options.wants("semaphore_acquire_release") {
        return;
    }
    let dinah = LocalExecutor::new();
    let shared = SharedSemaphore::new(1);
    let tokio = tokio_runtime();
    let tokio_semaphore = tokio::sync::Semaphore::new(1);
    let mut contenders = vec![
        Contender::new("dinah SharedSemaphore", false, || {
            dinah.block_on(async {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    drop(black_box(shared.acquire().await.expect("open")));
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
        Contender::new("dinah static Semaphore", false, || {
            dinah.block_on(async {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    drop(black_box(CORE_SEMAPHORE.acquire().await.expect("open")));
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
        Contender::new("tokio Semaphore", true, || {
            tokio.block_on(async {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    drop(black_box(tokio_semaphore.acquire().await.expect("open")));
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
    ];
    let results = run_case(
        "semaphore_acquire_release (time per acquire and release)",
        1,
        options.samples,
        &mut contenders,
    );
    let ratio = median_of(&results, "dinah SharedSemaphore") / median_of(&results, "tokio");
    target(
        "semaphore_acquire_release: dinah SharedSemaphore / tokio (at most 1.0)",
        ratio,
        ratio <= 1.0,
    );
}

static CORE_NOTIFY: Notify = Notify::new();

fn notify(options: &Options) {
    if !options.wants("notify_one_then_wait") {
        return;
    }
    let dinah = LocalExecutor::new();
    let shared = SharedNotify::new();
    let tokio = tokio_runtime();
    let tokio_notify = tokio::sync::Notify::new();
    let mut contenders = vec![
        Contender::new("dinah SharedNotify", false, || {
            dinah.block_on(async {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    shared.notify_one();
                    shared.notified().await;
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
        Contender::new("dinah static Notify", false, || {
            dinah.block_on(async {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    CORE_NOTIFY.notify_one();
                    CORE_NOTIFY.notified().await.expect("room");
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
        Contender::new("tokio Notify", true, || {
            tokio.block_on(async {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    tokio_notify.notify_one();
                    tokio_notify.notified().await;
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
    ];
    let results = run_case(
        "notify_one_then_wait (time per notify_one and the wait it completes)",
        1,
        options.samples,
        &mut contenders,
    );
    let ratio = median_of(&results, "dinah SharedNotify") / median_of(&results, "tokio");
    target(
        "notify_one_then_wait: dinah SharedNotify / tokio (at most 1.0)",
        ratio,
        ratio <= 1.0,
    );
}

const GROUP: usize = 10_000;

fn group_shutdown(options: &Options) {
    if !options.wants("group_shutdown_10k") {
        return;
    }
    let dinah = LocalExecutor::new();
    let tokio = tokio_runtime();
    let mut reported = 0;
    let mut contenders = vec![
        Contender::new("dinah TaskGroup::shutdown", false, || {
            dinah.block_on(async {
                let mut group = dinah.group::<()>();
                for _ in 0..GROUP {
                    group.spawn(std::future::pending()).expect("no cap");
                }
                // Every child has been polled once and waits.
                dinah::yield_now().await;
                let start = Instant::now();
                let report = group.shutdown(Duration::from_secs(1)).await;
                let took = start.elapsed();
                reported = report.count(dinah::task::ChildEnd::Cancelled);
                took
            })
        }),
        Contender::new("tokio JoinSet::shutdown", true, || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&tokio, async {
                let mut set = tokio::task::JoinSet::new();
                for _ in 0..GROUP {
                    set.spawn_local(std::future::pending::<()>());
                }
                tokio::task::yield_now().await;
                let start = Instant::now();
                set.shutdown().await;
                start.elapsed()
            })
        }),
    ];
    let results = run_case(
        "group_shutdown_10k (time to shut down a group of 10,000 idle tasks)",
        1,
        options.samples,
        &mut contenders,
    );
    drop(contenders);
    let dinah_median = median_of(&results, "dinah");
    println!(
        "group_shutdown_10k: dinah {:.3} ms (goal under 10 ms) -> {}; children in the last report: {reported} of {GROUP} -> {}",
        dinah_median * 1e3,
        if dinah_median < 0.010 {
            "met"
        } else {
            "MISSED"
        },
        if reported == GROUP { "met" } else { "MISSED" }
    );
    let ratio = dinah_median / median_of(&results, "tokio");
    target(
        "group_shutdown_10k: dinah / tokio JoinSet (recorded)",
        ratio,
        true,
    );
}

/// `--callgrind CONTENDER TIMES`: one uncontended acquire and release
/// `TIMES` times inside one `block_on`, untimed (`benches/callgrind.sh`
/// with `DINAH_BENCH=sync` counts the instructions of one).
fn callgrind(contender: &str, times: usize) {
    match contender {
        "semaphore-dinah" => {
            let shared = SharedSemaphore::new(1);
            LocalExecutor::new().block_on(async {
                for _ in 0..times {
                    drop(black_box(shared.acquire().await.expect("open")));
                }
            });
        }
        "semaphore-static" => {
            LocalExecutor::new().block_on(async {
                for _ in 0..times {
                    drop(black_box(CORE_SEMAPHORE.acquire().await.expect("open")));
                }
            });
        }
        "semaphore-tokio" => {
            let semaphore = tokio::sync::Semaphore::new(1);
            tokio_runtime().block_on(async {
                for _ in 0..times {
                    drop(black_box(semaphore.acquire().await.expect("open")));
                }
            });
        }
        other => {
            panic!("no contender {other}: semaphore-dinah, semaphore-static or semaphore-tokio")
        }
    }
}

fn main() {
    let options = Options::from_args();
    if let Some((contender, times)) = &options.callgrind {
        callgrind(contender, *times);
        return;
    }
    println!("# dinah channel, semaphore and task group benchmarks");
    ping_pong(&options);
    semaphore(&options);
    notify(&options);
    group_shutdown(&options);
}
