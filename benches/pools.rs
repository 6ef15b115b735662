//! The pools side by side with their peers, in the same run: `WorkerPool`
//! against rayon's `ThreadPool`, `BlockingPool` against tokio's
//! `spawn_blocking`.
//!
//! ```text
//! cargo bench --bench pools                     # every case, 11 samples each
//! cargo bench --bench pools -- --loaded         # beside one busy thread per core
//! cargo bench --bench pools -- --samples 21     # more samples
//! cargo bench --bench pools -- blocking         # only cases whose name contains "blocking"
//! ```
//!
//! Every pool and runtime is built once, before any clock starts, and reused
//! by every sample, as a program keeps its pools. Every sample starts after
//! a 2 ms pause, so the idle threads of the contender before it (which spin
//! for a while in every one of these pools) are asleep and cost it nothing.
//!
//! - `fork-join`: 256 boxed no-op tasks run as one batch (`WorkerPool::run`
//!   on a `BoundedQueue`; rayon `install` + `into_par_iter` on a `Vec`).
//!   Inputs are built before the clock starts.
//! - `batches`: 200 batches of 16 no-op tasks, each batch built and run in
//!   turn (building is timed for both).
//! - `many`: 100,000 no-op tasks in one batch.
//! - `cpu`: 256 tasks of 1,000,000 integer-mixing rounds, also against the
//!   sequential drain on the caller's thread.
//! - `blocking`: tokio's own `spawn_blocking` bench shape. `C` async tasks
//!   each run 100 batches of 16 no-op blocking jobs, awaiting every batch
//!   before the next, for `C` in 1, 8 and 64. dinah's tasks run on a
//!   `LocalExecutor` and await `BlockingPool` handles; tokio's run on its
//!   multi-thread runtime (2 workers) and on its current-thread runtime.
//!   Both pools may start up to 64 threads.
//! - `refusal`: `BlockingPool::try_spawn` on a full pool, timed per call, with
//!   the allocations it makes counted by a counting global allocator.

use std::alloc::System;
use std::hint::black_box;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use dinah::pool::BlockingConfig;
use dinah::queue::run_until_empty;
use dinah::{BlockingPool, BoundedQueue, CoreConfig, LocalExecutor, SpawnError, WorkerPool};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

mod harness;
use harness::{Contender, Options, median_of, run_case, target, timed};
mod workloads;
use workloads::{CPU_ITERATIONS, mix};

/// Counts every allocation, to show what a call allocates.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const WORKERS: usize = 2;
const BATCHES: usize = 200;
const BATCH: usize = 16;
const MANY: usize = 100_000;
/// tokio's `spawn_blocking` bench: batches per task and jobs per batch.
const BLOCKING_BATCHES: usize = 100;
const BLOCKING_BATCH: usize = 16;
const BLOCKING_THREADS: usize = 64;

/// How long every contender lets the machine settle before its sample:
/// long enough for every pool's idle threads (dinah's, rayon's, tokio's) to
/// stop spinning and sleep, so no contender's leftover spinning is timed in
/// another's sample.
const SETTLE: Duration = Duration::from_millis(2);

/// A contender whose every sample starts after [`SETTLE`] (outside its
/// timing).
fn quiet<'a>(
    name: impl Into<String>,
    baseline: bool,
    mut run: impl FnMut() -> Duration + 'a,
) -> Contender<'a> {
    Contender::new(name, baseline, move || {
        thread::sleep(SETTLE);
        run()
    })
}

type Task = Box<dyn FnOnce() -> u64 + Send>;

fn tasks(n: usize, cpu: bool) -> impl Iterator<Item = Task> {
    (0..n as u64).map(move |i| {
        Box::new(move || {
            if cpu {
                mix(i, CPU_ITERATIONS)
            } else {
                black_box(i)
            }
        }) as Task
    })
}

fn queue(n: usize, cpu: bool) -> BoundedQueue<Task> {
    let mut queue = BoundedQueue::new(n).expect("non-zero");
    for task in tasks(n, cpu) {
        queue
            .try_push(task)
            .unwrap_or_else(|_| unreachable!("sized to fit"));
    }
    queue
}

fn expected(n: usize, cpu: bool) -> Vec<u64> {
    (0..n as u64)
        .map(|i| if cpu { mix(i, CPU_ITERATIONS) } else { i })
        .collect()
}

/// One batch of `n` tasks on each worker pool, `reps` times per sample.
fn bench_batch(
    title: &str,
    n: usize,
    cpu: bool,
    reps: usize,
    samples: usize,
    dinah: &WorkerPool,
    rayon: &rayon::ThreadPool,
) -> Vec<(String, Duration)> {
    use rayon::prelude::*;
    let want = expected(n, cpu);
    let mut contenders = vec![
        quiet(format!("rayon install+par_iter x{WORKERS}"), true, || {
            timed(
                reps,
                || tasks(n, cpu).collect::<Vec<Task>>(),
                |tasks| {
                    rayon.install(|| {
                        std::mem::take(tasks)
                            .into_par_iter()
                            .map(|t| t())
                            .collect::<Vec<_>>()
                    })
                },
                |_, out| assert!(out == want),
            )
        }),
        quiet(format!("dinah WorkerPool::run x{WORKERS}"), false, || {
            timed(
                reps,
                || queue(n, cpu),
                |queue| dinah.run(queue),
                |_, out| assert!(out == want),
            )
        }),
    ];
    if cpu {
        contenders.push(quiet("dinah run_until_empty (sequential)", true, || {
            timed(
                reps,
                || queue(n, cpu),
                run_until_empty,
                |_, out| assert!(out == want),
            )
        }));
    }
    run_case(title, n, samples, &mut contenders)
}

/// 200 batches of 16, each built and run in turn.
fn bench_batches(
    samples: usize,
    dinah: &WorkerPool,
    rayon: &rayon::ThreadPool,
) -> Vec<(String, Duration)> {
    use rayon::prelude::*;
    let want = expected(BATCH, false);
    let mut contenders = vec![
        quiet(format!("rayon install+par_iter x{WORKERS}"), true, || {
            let start = Instant::now();
            for _ in 0..BATCHES {
                let batch: Vec<Task> = tasks(BATCH, false).collect();
                let out: Vec<u64> = rayon.install(|| batch.into_par_iter().map(|t| t()).collect());
                assert!(out == want);
            }
            start.elapsed()
        }),
        quiet(format!("dinah WorkerPool::run x{WORKERS}"), false, || {
            let start = Instant::now();
            for _ in 0..BATCHES {
                let mut batch = queue(BATCH, false);
                let out = dinah.run(&mut batch);
                assert!(out == want);
            }
            start.elapsed()
        }),
    ];
    run_case(
        &format!("{BATCHES} batches of {BATCH} no-op tasks, {WORKERS} workers"),
        BATCHES * BATCH,
        samples,
        &mut contenders,
    )
}

/// `concurrency` async tasks, each running `BLOCKING_BATCHES` batches of
/// `BLOCKING_BATCH` no-op blocking jobs and awaiting every batch.
fn bench_blocking(
    concurrency: usize,
    samples: usize,
    dinah: &BlockingPool,
    tokio_multi: &tokio::runtime::Runtime,
    tokio_current: &tokio::runtime::Runtime,
) -> Vec<(String, Duration)> {
    async fn tokio_batches() {
        for _ in 0..BLOCKING_BATCHES {
            let handles: Vec<_> = (0..BLOCKING_BATCH)
                .map(|i| tokio::task::spawn_blocking(move || black_box(i)))
                .collect();
            for handle in handles {
                handle.await.expect("no panics");
            }
        }
    }
    let tokio_run = |rt: &tokio::runtime::Runtime| {
        let start = Instant::now();
        rt.block_on(async {
            let tasks: Vec<_> = (0..concurrency)
                .map(|_| tokio::spawn(tokio_batches()))
                .collect();
            for task in tasks {
                task.await.expect("no panics");
            }
        });
        start.elapsed()
    };
    let executor = LocalExecutor::new();
    let mut contenders = vec![
        quiet("tokio spawn_blocking, multi-thread x2", true, || {
            tokio_run(tokio_multi)
        }),
        quiet("tokio spawn_blocking, current-thread", true, || {
            tokio_run(tokio_current)
        }),
        quiet("dinah BlockingPool on LocalExecutor", false, || {
            let start = Instant::now();
            let submitter = dinah.spawner();
            let tasks: Vec<_> = (0..concurrency)
                .map(|_| {
                    let submitter = submitter.clone();
                    executor
                        .try_spawn(async move {
                            for _ in 0..BLOCKING_BATCHES {
                                let handles: Vec<_> = (0..BLOCKING_BATCH)
                                    .map(|i| {
                                        submitter
                                            .try_spawn(move || black_box(i))
                                            .unwrap_or_else(|_| panic!("sized to fit"))
                                    })
                                    .collect();
                                for handle in handles {
                                    handle.await.expect("no panics");
                                }
                            }
                        })
                        .expect("room for every task")
                })
                .collect();
            executor.block_on(async {
                for task in tasks {
                    task.await.expect("no panics");
                }
            });
            start.elapsed()
        }),
    ];
    run_case(
        &format!(
            "blocking: {concurrency} tasks x {BLOCKING_BATCHES} batches of {BLOCKING_BATCH} no-op jobs"
        ),
        concurrency * BLOCKING_BATCHES * BLOCKING_BATCH,
        samples,
        &mut contenders,
    )
}

/// `BlockingPool::try_spawn` on a full pool: time per refused call, and what the
/// refusals allocated.
fn bench_refusal(samples: usize) -> (Duration, usize) {
    const CALLS: u32 = 100_000;
    let pool = BlockingPool::new(BlockingConfig::new(1, 1)).expect("valid config");
    // The gate signals with a mutex and condition variable, which allocate
    // nothing, so the count below sees only the refused calls.
    let gate_state = Arc::new((Mutex::new(0u8), Condvar::new()));
    let in_gate = Arc::clone(&gate_state);
    let gate = pool
        .try_spawn(move || {
            let (state, changed) = &*in_gate;
            let mut state = state.lock().expect("no poison");
            *state = 1;
            changed.notify_all();
            while *state != 2 {
                state = changed.wait(state).expect("no poison");
            }
        })
        .unwrap_or_else(|_| unreachable!("empty pool"));
    {
        let (state, changed) = &*gate_state;
        let mut state = state.lock().expect("no poison");
        while *state != 1 {
            state = changed.wait(state).expect("no poison");
        }
    }
    let queued = pool
        .try_spawn(|| ())
        .unwrap_or_else(|_| unreachable!("room for one"));
    let mut medians = Vec::with_capacity(samples);
    let mut allocations = 0;
    for _ in 0..samples {
        let region = Region::new(GLOBAL);
        let start = Instant::now();
        for i in 0..CALLS {
            match pool.try_spawn(move || black_box(i)) {
                Err(SpawnError::Full(f)) => {
                    let _ = black_box(f);
                }
                _ => unreachable!("the pool is full"),
            }
        }
        let elapsed = start.elapsed() / CALLS;
        allocations += region.change().allocations;
        medians.push(elapsed);
    }
    {
        let (state, changed) = &*gate_state;
        *state.lock().expect("no poison") = 2;
        changed.notify_all();
    }
    gate.join().expect("gate ran");
    queued.join().expect("queued ran");
    medians.sort_unstable();
    let median = medians[medians.len() / 2];
    println!(
        "\n## refusal: BlockingPool::try_spawn on a full pool ({CALLS} calls, median of {samples})"
    );
    println!(
        "  dinah BlockingPool::try_spawn (Full): {:.1} ns per call, {allocations} allocations in {} calls",
        median.as_secs_f64() * 1e9,
        u64::from(CALLS) * samples as u64
    );
    (median, allocations)
}

fn main() {
    let options = Options::from_args();
    let samples = options.samples;
    println!("# dinah pool benchmarks");
    // Started before the pools, kept until the end: every case runs beside it.
    let load = options.loaded.then(harness::Load::start);
    if let Some(load) = &load {
        println!("loaded: {} busy threads beside every case", load.threads());
    }
    println!(
        "available parallelism: {}",
        thread::available_parallelism().map_or(0, |n| n.get())
    );
    let pool = WorkerPool::new(CoreConfig::new(WORKERS).expect("non-zero"), 1024).expect("workers");
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(WORKERS)
        .build()
        .expect("rayon pool");
    let mut targets: Vec<(String, f64, bool)> = Vec::new();
    let mut ratio_target = |results: &[(String, Duration)], description: &str, limit: f64| {
        let ratio = median_of(results, "dinah WorkerPool") / median_of(results, "rayon");
        targets.push((
            format!("{description} (limit {limit:.2})"),
            ratio,
            ratio <= limit,
        ));
    };

    if options.wants("fork-join") {
        let results = bench_batch(
            "fork-join: 256 no-op tasks, 2 workers",
            256,
            false,
            20,
            samples,
            &pool,
            &rayon,
        );
        ratio_target(&results, "fork-join 256 no-op: dinah / rayon", 1.0);
    }
    if options.wants("batches") {
        let results = bench_batches(samples, &pool, &rayon);
        ratio_target(&results, "200 batches of 16 no-op: dinah / rayon", 1.0);
    }
    if options.wants("many") {
        let results = bench_batch(
            "many: 100,000 no-op tasks, 2 workers",
            MANY,
            false,
            1,
            samples,
            &pool,
            &rayon,
        );
        ratio_target(&results, "100,000 no-op: dinah / rayon", 1.0);
    }
    if options.wants("cpu") {
        let results = bench_batch(
            "cpu: 256 tasks of 1,000,000 mixing rounds, 2 workers",
            256,
            true,
            1,
            samples,
            &pool,
            &rayon,
        );
        ratio_target(&results, "256 cpu: dinah / rayon", 1.03);
        let speedup =
            median_of(&results, "dinah run_until_empty") / median_of(&results, "dinah WorkerPool");
        targets.push((
            "256 cpu: speedup over the sequential drain (at least 1.95)".to_owned(),
            speedup,
            speedup >= 1.95,
        ));
    }
    drop(pool);
    if options.wants("blocking") {
        let dinah = BlockingPool::new(BlockingConfig::new(BLOCKING_THREADS, 64 * BLOCKING_BATCH))
            .expect("valid config");
        let tokio_multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .max_blocking_threads(BLOCKING_THREADS)
            .build()
            .expect("tokio runtime");
        let tokio_current = tokio::runtime::Builder::new_current_thread()
            .max_blocking_threads(BLOCKING_THREADS)
            .build()
            .expect("tokio runtime");
        for concurrency in [1, 8, 64] {
            let results =
                bench_blocking(concurrency, samples, &dinah, &tokio_multi, &tokio_current);
            let dinah_median = median_of(&results, "dinah");
            let fastest = median_of(&results, "tokio spawn_blocking, multi")
                .min(median_of(&results, "tokio spawn_blocking, current"));
            let ratio = dinah_median / fastest;
            targets.push((
                format!(
                    "blocking at concurrency {concurrency}: dinah / fastest tokio (limit 1.00)"
                ),
                ratio,
                ratio <= 1.0,
            ));
        }
    }
    if options.wants("refusal") {
        let (median, allocations) = bench_refusal(samples);
        let nanos = median.as_secs_f64() * 1e9;
        targets.push((
            "refusal: ns per BlockingPool::try_spawn on a full pool (limit 1000)".to_owned(),
            nanos,
            nanos < 1000.0,
        ));
        targets.push((
            "refusal: allocations made by refused calls (limit 0)".to_owned(),
            allocations as f64,
            allocations == 0,
        ));
    }
    if !targets.is_empty() {
        println!("\n## targets (medians from the same run)");
        for (description, ratio, holds) in targets {
            target(&description, ratio, holds);
        }
    }
}
