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
use std::future::Future;
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

/// The time of one round of `$body`, run `ROUNDS` times inside one
/// `block_on` of `$runtime`.
macro_rules! per_round {
    ($runtime:expr, $round:pat => $body:expr) => {
        $runtime.block_on(async {
            let start = Instant::now();
            for $round in 0..ROUNDS {
                $body;
            }
            start.elapsed() / ROUNDS as u32
        })
    };
}
const CONTENDERS: usize = 4;

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

/// Runs `contenders` as the case `title` and prints the goal line for
/// `case`: the median of the contender named `dinah` over tokio's.
fn measure(
    options: &Options,
    case: &str,
    title: &str,
    dinah: &str,
    contenders: &mut [Contender<'_>],
) {
    let results = run_case(title, 1, options.samples, contenders);
    let ratio = median_of(&results, dinah) / median_of(&results, "tokio");
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
        Contender::new(
            "dinah SharedMutex",
            false,
            || per_round!(dinah, _ => { *black_box(shared.lock().await) += 1 }),
        ),
        Contender::new("dinah static Mutex", false, || {
            per_round!(dinah, _ => {
                *black_box(CORE_MUTEX.lock().await.expect("room")) += 1
            })
        }),
        Contender::new(
            "tokio Mutex",
            true,
            || per_round!(tokio, _ => { *black_box(tokio_mutex.lock().await) += 1 }),
        ),
    ];
    measure(
        options,
        "mutex_lock_unlock",
        "mutex_lock_unlock (time per lock and unlock)",
        "dinah SharedMutex",
        &mut contenders,
    );
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
    measure(
        options,
        "mutex_contended_4",
        "mutex_contended_4 (time per lock, yield and unlock, four tasks in line)",
        "dinah SharedMutex",
        &mut contenders,
    );
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
        Contender::new(
            "dinah SharedRwLock",
            false,
            || per_round!(dinah, _ => { black_box(*shared.read().await) }),
        ),
        Contender::new(
            "tokio RwLock",
            true,
            || per_round!(tokio, _ => { black_box(*tokio_lock.read().await) }),
        ),
    ];
    measure(
        options,
        "rwlock_read",
        "rwlock_read (time per read and its end)",
        "dinah SharedRwLock",
        &mut contenders,
    );
}

fn oneshot_case(options: &Options) {
    if !options.wants("oneshot_send_recv") {
        return;
    }
    let dinah = LocalExecutor::new();
    let tokio = tokio_runtime();
    let mut contenders = vec![
        Contender::new("dinah oneshot", false, || {
            per_round!(dinah, n => {
                let (tx, rx) = oneshot::channel::<usize>();
                tx.send(n).expect("receiver alive");
                black_box(rx.await.expect("sent"))
            })
        }),
        Contender::new("tokio oneshot", true, || {
            per_round!(tokio, n => {
                let (tx, rx) = tokio::sync::oneshot::channel::<usize>();
                tx.send(n).expect("receiver alive");
                black_box(rx.await.expect("sent"))
            })
        }),
    ];
    measure(
        options,
        "oneshot_send_recv",
        "oneshot_send_recv (time per channel made, sent and received)",
        "dinah oneshot",
        &mut contenders,
    );
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

/// One receiving end of a fan-out case: reads the next value, or says the
/// sending side is gone.
trait Follow: Send + 'static {
    fn next(&mut self) -> impl Future<Output = bool> + Send;
}

/// The sending end of a fan-out case.
trait Announce {
    fn announce(&self, value: usize);
}

impl Follow for watch::Receiver<usize> {
    async fn next(&mut self) -> bool {
        let changed = self.changed().await.is_ok();
        black_box(*self.borrow_and_update());
        changed
    }
}

impl Announce for watch::Sender<usize> {
    fn announce(&self, value: usize) {
        self.send(value).expect("followers");
    }
}

impl Follow for broadcast::Receiver<usize> {
    async fn next(&mut self) -> bool {
        self.recv().await.map(black_box).is_ok()
    }
}

impl Announce for broadcast::Sender<usize> {
    fn announce(&self, value: usize) {
        self.send(value).expect("receivers");
    }
}

impl Follow for tokio::sync::watch::Receiver<usize> {
    async fn next(&mut self) -> bool {
        let changed = self.changed().await.is_ok();
        black_box(*self.borrow_and_update());
        changed
    }
}

impl Announce for tokio::sync::watch::Sender<usize> {
    fn announce(&self, value: usize) {
        self.send(value).expect("followers");
    }
}

impl Follow for tokio::sync::broadcast::Receiver<usize> {
    async fn next(&mut self) -> bool {
        self.recv().await.map(black_box).is_ok()
    }
}

impl Announce for tokio::sync::broadcast::Sender<usize> {
    fn announce(&self, value: usize) {
        self.send(value).expect("receivers");
    }
}

/// Counts the followers that have read the last value; the last one tells
/// the sender.
struct Round<N> {
    seen: std::sync::atomic::AtomicUsize,
    all_seen: N,
}

/// A follower's loop: read, count, and tell the sender when all have read.
async fn follow<R: Follow, N>(mut rx: R, round: Arc<Round<N>>, tell: fn(&N)) {
    while rx.next().await {
        if round
            .seen
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1
            == FOLLOWERS
        {
            tell(&round.all_seen);
        }
    }
}

/// One fan-out run on dinah's `LocalExecutor`: the time per send.
fn dinah_fan_out<T: Announce, R: Follow>(
    executor: &LocalExecutor<'_>,
    (tx, receivers): (T, Vec<R>),
) -> Duration {
    let round = Arc::new(Round {
        seen: std::sync::atomic::AtomicUsize::new(0),
        all_seen: SharedNotify::new(),
    });
    let followers: Vec<_> = receivers
        .into_iter()
        .map(|rx| {
            executor
                .try_spawn(follow(rx, Arc::clone(&round), SharedNotify::notify_one))
                .expect("room")
        })
        .collect();
    executor.block_on(async {
        dinah::task::yield_now().await; // the followers wait
        let start = Instant::now();
        for n in 1..=SENDS {
            round.seen.store(0, std::sync::atomic::Ordering::Relaxed);
            tx.announce(n);
            round.all_seen.notified().await;
        }
        let elapsed = start.elapsed();
        drop(tx);
        for follower in followers {
            follower.await.expect("ran");
        }
        elapsed / SENDS as u32
    })
}

/// One fan-out run on a tokio current-thread runtime: the time per send.
fn tokio_fan_out<T: Announce, R: Follow>(
    runtime: &tokio::runtime::Runtime,
    make: impl FnOnce() -> (T, Vec<R>),
) -> Duration {
    tokio::task::LocalSet::new().block_on(runtime, async {
        let (tx, receivers) = make();
        let round = Arc::new(Round {
            seen: std::sync::atomic::AtomicUsize::new(0),
            all_seen: tokio::sync::Notify::new(),
        });
        let followers: Vec<_> = receivers
            .into_iter()
            .map(|rx| {
                tokio::task::spawn_local(follow(
                    rx,
                    Arc::clone(&round),
                    tokio::sync::Notify::notify_one,
                ))
            })
            .collect();
        tokio::task::yield_now().await;
        let start = Instant::now();
        for n in 1..=SENDS {
            round.seen.store(0, std::sync::atomic::Ordering::Relaxed);
            tx.announce(n);
            round.all_seen.notified().await;
        }
        let elapsed = start.elapsed();
        drop(tx);
        for follower in followers {
            follower.await.expect("ran");
        }
        elapsed / SENDS as u32
    })
}

fn watch_case(options: &Options) {
    if !options.wants("watch_16") {
        return;
    }
    let dinah = LocalExecutor::new();
    let tokio = tokio_runtime();
    let mut contenders = vec![
        Contender::new("dinah watch", false, || {
            let (tx, rx) = watch::channel(0usize);
            dinah_fan_out(&dinah, (tx, vec![rx; FOLLOWERS]))
        }),
        Contender::new("tokio watch", true, || {
            tokio_fan_out(&tokio, || {
                let (tx, rx) = tokio::sync::watch::channel(0usize);
                (tx, vec![rx; FOLLOWERS])
            })
        }),
    ];
    measure(
        options,
        "watch_16",
        "watch_16 (time per send seen by sixteen followers)",
        "dinah watch",
        &mut contenders,
    );
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
            let receivers = (0..FOLLOWERS).map(|_| rx.resubscribe()).collect();
            dinah_fan_out(&dinah, (tx, receivers))
        }),
        Contender::new("tokio broadcast", true, || {
            tokio_fan_out(&tokio, || {
                let (tx, rx) = tokio::sync::broadcast::channel(64);
                (tx, (0..FOLLOWERS).map(|_| rx.resubscribe()).collect())
            })
        }),
    ];
    measure(
        options,
        "broadcast_16",
        "broadcast_16 (time per send read by sixteen receivers)",
        "dinah broadcast",
        &mut contenders,
    );
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
