//! The rest of the sync toolbox: dinah's against tokio's, in the same run,
//! each on a current-thread executor.
//!
//! - `mutex_lock_unlock`: one task locks and unlocks, 10,000 times:
//!   dinah's `SharedMutex` and static `Mutex`, tokio's `Mutex`.
//! - `mutex_contended_4`: four tasks each lock, yield while holding the
//!   lock, and unlock, 2,500 times each: dinah's `SharedMutex` on a
//!   `LocalExecutor`, tokio's `Mutex` on a current-thread runtime
//!   (`LocalSet`).
//! - `rwlock_read`: one task reads and ends the read, 10,000 times:
//!   dinah's `SharedRwLock`, tokio's `RwLock`.
//! - `oneshot_send_recv`: one task makes a oneshot, sends and awaits the
//!   value, 10,000 times: dinah's `oneshot`, tokio's `oneshot`. The
//!   allocations per channel after warm-up are counted for both.
//! - `watch_16`: sixteen tasks follow a watch; one sends 1,000 values, each
//!   after every follower has seen the last (they count down a shared
//!   counter): dinah's `watch` on a `LocalExecutor`, tokio's `watch` on a
//!   current-thread runtime (`LocalSet`). Time per send and the sixteen
//!   wakes and reads it causes.
//! - `broadcast_16`: sixteen tasks receive from a broadcast keeping 64
//!   values; one sends 1,000 values, each after every receiver has read
//!   the last: dinah's `broadcast`, tokio's `broadcast`, as above.
//!
//! `cargo bench --bench sync_toolbox [-- FILTER] [--samples N]`.

use std::alloc::System;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dinah::LocalExecutor;
use dinah::sync::{Mutex, SharedMutex, SharedNotify, SharedRwLock, broadcast, oneshot, watch};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

mod harness;
use harness::{Contender, Options, median_of, run_case, target};

/// Counts every allocation, to show what a oneshot allocates.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ROUNDS: usize = 10_000;
const CONTENDERS: usize = 4;

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

/// Prints the goal line: dinah's median over tokio's.
fn against_tokio(case: &str, results: &[(String, Duration)], dinah: &str) {
    let ratio = median_of(results, dinah) / median_of(results, "tokio");
    target(
        &format!("{case}: {dinah} / tokio (at most 1.0)"),
        ratio,
        ratio <= 1.0,
    );
}

static CORE_MUTEX: Mutex<u64> = Mutex::new(0);

fn mutex(options: &Options) {
    if !options.wants("mutex_lock_unlock") {
        return;
    }
    let dinah = LocalExecutor::new();
    let shared = SharedMutex::new(0u64);
    let tokio = tokio_runtime();
    let tokio_mutex = tokio::sync::Mutex::new(0u64);
    let mut contenders = vec![
        Contender::new("dinah SharedMutex", false, || {
            dinah.block_on(async {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    *black_box(shared.lock().await) += 1;
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
        Contender::new("dinah static Mutex", false, || {
            dinah.block_on(async {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    *black_box(CORE_MUTEX.lock().await.expect("room")) += 1;
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
        Contender::new("tokio Mutex", true, || {
            tokio.block_on(async {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    *black_box(tokio_mutex.lock().await) += 1;
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
    ];
    let results = run_case(
        "mutex_lock_unlock (time per lock and unlock)",
        1,
        options.samples,
        &mut contenders,
    );
    against_tokio("mutex_lock_unlock", &results, "dinah SharedMutex");
}

fn contended(options: &Options) {
    if !options.wants("mutex_contended_4") {
        return;
    }
    let dinah = LocalExecutor::new();
    let tokio = tokio_runtime();
    let each = ROUNDS / CONTENDERS;
    let mut contenders = vec![
        Contender::new("dinah SharedMutex", false, || {
            let mutex = Arc::new(SharedMutex::new(0usize));
            let start = Instant::now();
            let handles: Vec<_> = (0..CONTENDERS)
                .map(|_| {
                    let mutex = Arc::clone(&mutex);
                    dinah
                        .try_spawn(async move {
                            for _ in 0..each {
                                let mut held = mutex.lock().await;
                                dinah::task::yield_now().await;
                                *held += 1;
                            }
                        })
                        .expect("room")
                })
                .collect();
            dinah.block_on(async {
                for handle in handles {
                    handle.await.expect("ran");
                }
            });
            assert_eq!(*mutex.try_lock().expect("free"), ROUNDS);
            start.elapsed() / ROUNDS as u32
        }),
        Contender::new("tokio Mutex", true, || {
            let mutex = Arc::new(tokio::sync::Mutex::new(0usize));
            let local = tokio::task::LocalSet::new();
            let start = Instant::now();
            local.block_on(&tokio, async {
                let handles: Vec<_> = (0..CONTENDERS)
                    .map(|_| {
                        let mutex = Arc::clone(&mutex);
                        tokio::task::spawn_local(async move {
                            for _ in 0..each {
                                let mut held = mutex.lock().await;
                                tokio::task::yield_now().await;
                                *held += 1;
                            }
                        })
                    })
                    .collect();
                for handle in handles {
                    handle.await.expect("ran");
                }
            });
            assert_eq!(*mutex.try_lock().expect("free"), ROUNDS);
            start.elapsed() / ROUNDS as u32
        }),
    ];
    let results = run_case(
        "mutex_contended_4 (time per lock, yield and unlock, four tasks in line)",
        1,
        options.samples,
        &mut contenders,
    );
    against_tokio("mutex_contended_4", &results, "dinah SharedMutex");
}

fn rwlock(options: &Options) {
    if !options.wants("rwlock_read") {
        return;
    }
    let dinah = LocalExecutor::new();
    let shared = SharedRwLock::new(7u64);
    let tokio = tokio_runtime();
    let tokio_lock = tokio::sync::RwLock::new(7u64);
    let mut contenders = vec![
        Contender::new("dinah SharedRwLock", false, || {
            dinah.block_on(async {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    black_box(*shared.read().await);
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
        Contender::new("tokio RwLock", true, || {
            tokio.block_on(async {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    black_box(*tokio_lock.read().await);
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
    ];
    let results = run_case(
        "rwlock_read (time per read and its end)",
        1,
        options.samples,
        &mut contenders,
    );
    against_tokio("rwlock_read", &results, "dinah SharedRwLock");
}

fn oneshot_case(options: &Options) {
    if !options.wants("oneshot_send_recv") {
        return;
    }
    let dinah = LocalExecutor::new();
    let tokio = tokio_runtime();
    let mut contenders = vec![
        Contender::new("dinah oneshot", false, || {
            dinah.block_on(async {
                let start = Instant::now();
                for n in 0..ROUNDS {
                    let (tx, rx) = oneshot::channel::<usize>();
                    tx.send(n).expect("receiver alive");
                    black_box(rx.await.expect("sent"));
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
        Contender::new("tokio oneshot", true, || {
            tokio.block_on(async {
                let start = Instant::now();
                for n in 0..ROUNDS {
                    let (tx, rx) = tokio::sync::oneshot::channel::<usize>();
                    tx.send(n).expect("receiver alive");
                    black_box(rx.await.expect("sent"));
                }
                start.elapsed() / ROUNDS as u32
            })
        }),
    ];
    let results = run_case(
        "oneshot_send_recv (time per channel made, sent and received)",
        1,
        options.samples,
        &mut contenders,
    );
    against_tokio("oneshot_send_recv", &results, "dinah oneshot");
    let region = Region::new(GLOBAL);
    let dinah_allocations = dinah.block_on(async {
        let before = region.change().allocations;
        for n in 0..ROUNDS {
            let (tx, rx) = oneshot::channel::<usize>();
            tx.send(n).expect("receiver alive");
            black_box(rx.await.expect("sent"));
        }
        region.change().allocations - before
    });
    let tokio_allocations = tokio.block_on(async {
        let before = region.change().allocations;
        for n in 0..ROUNDS {
            let (tx, rx) = tokio::sync::oneshot::channel::<usize>();
            tx.send(n).expect("receiver alive");
            black_box(rx.await.expect("sent"));
        }
        region.change().allocations - before
    });
    println!(
        "oneshot allocations per channel, after warm-up: dinah {:.2}, tokio {:.2} (goal: none) -> {}",
        dinah_allocations as f64 / ROUNDS as f64,
        tokio_allocations as f64 / ROUNDS as f64,
        if dinah_allocations == 0 {
            "met"
        } else {
            "MISSED"
        }
    );
}

const FOLLOWERS: usize = 16;
const SENDS: usize = 1_000;

fn watch_case(options: &Options) {
    if !options.wants("watch_16") {
        return;
    }
    let dinah = LocalExecutor::new();
    let tokio = tokio_runtime();
    let mut contenders = vec![
        Contender::new("dinah watch", false, || {
            let (tx, rx) = watch::channel(0usize);
            let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let all_seen = Arc::new(SharedNotify::new());
            let followers: Vec<_> = (0..FOLLOWERS)
                .map(|_| {
                    let (mut rx, seen, all_seen) =
                        (rx.clone(), Arc::clone(&seen), Arc::clone(&all_seen));
                    dinah
                        .try_spawn(async move {
                            while rx.changed().await.is_ok() {
                                black_box(*rx.borrow_and_update());
                                if seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
                                    == FOLLOWERS
                                {
                                    all_seen.notify_one();
                                }
                            }
                        })
                        .expect("room")
                })
                .collect();
            drop(rx);
            dinah.block_on(async {
                dinah::task::yield_now().await; // the followers wait
                let start = Instant::now();
                for n in 1..=SENDS {
                    seen.store(0, std::sync::atomic::Ordering::Relaxed);
                    tx.send(n).expect("followers");
                    all_seen.notified().await;
                }
                let elapsed = start.elapsed();
                drop(tx);
                for follower in followers {
                    follower.await.expect("ran");
                }
                elapsed / SENDS as u32
            })
        }),
        Contender::new("tokio watch", true, || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&tokio, async {
                let (tx, rx) = tokio::sync::watch::channel(0usize);
                let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
                let all_seen = Arc::new(tokio::sync::Notify::new());
                let followers: Vec<_> = (0..FOLLOWERS)
                    .map(|_| {
                        let (mut rx, seen, all_seen) =
                            (rx.clone(), Arc::clone(&seen), Arc::clone(&all_seen));
                        tokio::task::spawn_local(async move {
                            while rx.changed().await.is_ok() {
                                black_box(*rx.borrow_and_update());
                                if seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
                                    == FOLLOWERS
                                {
                                    all_seen.notify_one();
                                }
                            }
                        })
                    })
                    .collect();
                drop(rx);
                tokio::task::yield_now().await;
                let start = Instant::now();
                for n in 1..=SENDS {
                    seen.store(0, std::sync::atomic::Ordering::Relaxed);
                    tx.send(n).expect("followers");
                    all_seen.notified().await;
                }
                let elapsed = start.elapsed();
                drop(tx);
                for follower in followers {
                    follower.await.expect("ran");
                }
                elapsed / SENDS as u32
            })
        }),
    ];
    let results = run_case(
        "watch_16 (time per send seen by sixteen followers)",
        1,
        options.samples,
        &mut contenders,
    );
    against_tokio("watch_16", &results, "dinah watch");
}

fn broadcast_case(options: &Options) {
    if !options.wants("broadcast_16") {
        return;
    }
    let dinah = LocalExecutor::new();
    let tokio = tokio_runtime();
    let mut contenders = vec![
        Contender::new("dinah broadcast", false, || {
            let (tx, rx) = broadcast::channel(64).expect("capacity");
            let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let all_seen = Arc::new(SharedNotify::new());
            let readers: Vec<_> = (0..FOLLOWERS)
                .map(|_| {
                    let (mut rx, seen, all_seen) =
                        (rx.resubscribe(), Arc::clone(&seen), Arc::clone(&all_seen));
                    dinah
                        .try_spawn(async move {
                            while let Ok(value) = rx.recv().await {
                                black_box(value);
                                if seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
                                    == FOLLOWERS
                                {
                                    all_seen.notify_one();
                                }
                            }
                        })
                        .expect("room")
                })
                .collect();
            drop(rx);
            dinah.block_on(async {
                dinah::task::yield_now().await; // the readers wait
                let start = Instant::now();
                for n in 1..=SENDS {
                    seen.store(0, std::sync::atomic::Ordering::Relaxed);
                    tx.send(n).expect("readers");
                    all_seen.notified().await;
                }
                let elapsed = start.elapsed();
                drop(tx);
                for reader in readers {
                    reader.await.expect("ran");
                }
                elapsed / SENDS as u32
            })
        }),
        Contender::new("tokio broadcast", true, || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&tokio, async {
                let (tx, rx) = tokio::sync::broadcast::channel(64);
                let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
                let all_seen = Arc::new(tokio::sync::Notify::new());
                let readers: Vec<_> = (0..FOLLOWERS)
                    .map(|_| {
                        let (mut rx, seen, all_seen) =
                            (rx.resubscribe(), Arc::clone(&seen), Arc::clone(&all_seen));
                        tokio::task::spawn_local(async move {
                            while let Ok(value) = rx.recv().await {
                                black_box(value);
                                if seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
                                    == FOLLOWERS
                                {
                                    all_seen.notify_one();
                                }
                            }
                        })
                    })
                    .collect();
                drop(rx);
                tokio::task::yield_now().await;
                let start = Instant::now();
                for n in 1..=SENDS {
                    seen.store(0, std::sync::atomic::Ordering::Relaxed);
                    tx.send(n).expect("readers");
                    all_seen.notified().await;
                }
                let elapsed = start.elapsed();
                drop(tx);
                for reader in readers {
                    reader.await.expect("ran");
                }
                elapsed / SENDS as u32
            })
        }),
    ];
    let results = run_case(
        "broadcast_16 (time per send read by sixteen receivers)",
        1,
        options.samples,
        &mut contenders,
    );
    against_tokio("broadcast_16", &results, "dinah broadcast");
}

fn main() {
    let options = Options::from_args();
    println!("# dinah mutex, read-write lock, oneshot, watch and broadcast benchmarks");
    mutex(&options);
    contended(&options);
    rwlock(&options);
    oneshot_case(&options);
    watch_case(&options);
    broadcast_case(&options);
}
