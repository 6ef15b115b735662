//! Runtime benchmarks, each case side by side with the baselines it must be
//! judged against, measured in the same run.
//!
//! ```text
//! cargo bench --bench runtime                      # every case, 11 samples each
//! cargo bench --bench runtime -- --samples 21      # more samples
//! cargo bench --bench runtime -- parallel          # only cases whose name contains "parallel"
//! ```
//!
//! A small harness of its own rather than criterion: every contender of a case
//! runs once per round, rounds interleave, and the report is the median of
//! each contender plus its ratio to every baseline from those same rounds. On
//! a shared, noisy machine that pairing matters more than criterion's
//! statistics, and ratios are what the targets are stated in.
//!
//! Every timed run checks its results afterwards (outside the timing), and
//! every dinah queue is asserted empty.

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use dinah::BoundedQueue;
use dinah::queue::{TaskQueue, run_next, run_parallel, run_until_empty};

mod harness;
use harness::{Contender, Options, median_of, run_case, target, timed};
mod workloads;
use workloads::{CPU_ITERATIONS, mix};

/// What one task does.
#[derive(Clone, Copy, PartialEq)]
enum Work {
    /// Returns its index.
    NoOp,
    /// Mixes its index for `CPU_ITERATIONS` rounds.
    Cpu,
}

impl Work {
    fn run(self, index: u64) -> u64 {
        match self {
            Work::NoOp => black_box(index),
            Work::Cpu => mix(index, CPU_ITERATIONS),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Work::NoOp => "no-op",
            Work::Cpu => "cpu",
        }
    }
}

type Task = Box<dyn FnOnce() -> u64 + Send>;

fn boxed_tasks(work: Work, tasks: usize) -> impl Iterator<Item = Task> {
    (0..tasks as u64).map(move |i| Box::new(move || work.run(i)) as Task)
}

fn dinah_queue(work: Work, tasks: usize) -> BoundedQueue<Task> {
    let mut queue = BoundedQueue::new(tasks).expect("non-zero capacity");
    for task in boxed_tasks(work, tasks) {
        queue
            .try_push(task)
            .unwrap_or_else(|_| unreachable!("sized to fit"));
    }
    queue
}

fn vecdeque_queue(work: Work, tasks: usize) -> VecDeque<Task> {
    boxed_tasks(work, tasks).collect()
}

/// The floor for a per-call scoped design: `threads` scoped threads pulling
/// task indices from one atomic counter.
fn scoped_atomic_index(work: Work, tasks: usize, threads: usize) -> Vec<u64> {
    let next = AtomicUsize::new(0);
    let parts: Vec<Vec<(usize, u64)>> = thread::scope(|s| {
        let handles: Vec<_> = (0..threads.min(tasks))
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::with_capacity(tasks / threads + 1);
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= tasks {
                            break done;
                        }
                        done.push((index, work.run(index as u64)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panics"))
            .collect()
    });
    let mut results = vec![0; tasks];
    for (index, value) in parts.into_iter().flatten() {
        results[index] = value;
    }
    results
}

fn expected(work: Work, tasks: usize) -> Vec<u64> {
    (0..tasks as u64).map(|i| work.run(i)).collect()
}

/// Enough repetitions that one sample takes a measurable time.
fn reps_for(work: Work, tasks: usize, parallel: bool) -> usize {
    match (work, parallel) {
        (Work::Cpu, _) => 1,
        (Work::NoOp, true) => 20,
        (Work::NoOp, false) => (65_536 / tasks).max(1),
    }
}

fn bench_direct_calls(samples: usize) {
    const CALLS: usize = 100_000;
    let mut contenders = vec![
        Contender::new("plain closure call (baseline)", true, || {
            let start = Instant::now();
            for i in 0..CALLS as u64 {
                let task = black_box(|| black_box(i));
                black_box(task());
            }
            start.elapsed()
        }),
        Contender::new("TaskQueue push + run_next", false, || {
            let mut queue: TaskQueue<_, 1> = TaskQueue::new();
            let start = Instant::now();
            for i in 0..CALLS as u64 {
                let _ = queue.try_push(black_box(move || black_box(i)));
                black_box(run_next(&mut queue));
            }
            start.elapsed()
        }),
    ];
    run_case(
        "one closure: called, or queued and run",
        CALLS,
        samples,
        &mut contenders,
    );
}

fn bench_sequential(work: Work, tasks: usize, samples: usize) -> Vec<(String, Duration)> {
    let reps = reps_for(work, tasks, false);
    let want = expected(work, tasks);
    let mut contenders = vec![
        Contender::new("VecDeque pop-and-call loop (baseline)", true, || {
            timed(
                reps,
                || vecdeque_queue(work, tasks),
                |queue| {
                    let mut out = Vec::with_capacity(queue.len());
                    while let Some(task) = queue.pop_front() {
                        out.push(task());
                    }
                    out
                },
                |queue, out| assert!(queue.is_empty() && out == want),
            )
        }),
        Contender::new("dinah run_until_empty", false, || {
            timed(
                reps,
                || dinah_queue(work, tasks),
                run_until_empty,
                |queue, out| assert!(queue.is_empty() && out == want),
            )
        }),
    ];
    let title = format!("sequential drain, {} tasks", work.name());
    run_case(&title, tasks, samples, &mut contenders)
}

fn bench_parallel(
    work: Work,
    tasks: usize,
    workers: usize,
    samples: usize,
    pool: &rayon::ThreadPool,
) -> Vec<(String, Duration)> {
    use rayon::prelude::*;

    let reps = reps_for(work, tasks, true);
    let want = expected(work, tasks);
    let mut contenders = vec![
        Contender::new(
            format!("scoped threads + atomic index x{workers} (baseline)"),
            true,
            || {
                timed(
                    reps,
                    || (),
                    |()| scoped_atomic_index(work, tasks, workers),
                    |(), out| assert!(out == want),
                )
            },
        ),
        Contender::new(
            format!("rayon install+par_iter x{workers} (baseline)"),
            true,
            || {
                timed(
                    reps,
                    || boxed_tasks(work, tasks).collect::<Vec<Task>>(),
                    |tasks| {
                        pool.install(|| {
                            std::mem::take(tasks)
                                .into_par_iter()
                                .map(|t| t())
                                .collect::<Vec<_>>()
                        })
                    },
                    |_, out| assert!(out == want),
                )
            },
        ),
    ];
    if work == Work::Cpu {
        contenders.push(Contender::new(
            "dinah run_until_empty (sequential)",
            true,
            || {
                timed(
                    reps,
                    || dinah_queue(work, tasks),
                    run_until_empty,
                    |queue, out| assert!(queue.is_empty() && out == want),
                )
            },
        ));
    }
    contenders.push(Contender::new(
        format!("dinah run_parallel x{workers}"),
        false,
        || {
            timed(
                reps,
                || dinah_queue(work, tasks),
                |queue| run_parallel(queue, workers).expect("non-zero workers"),
                |queue, out| assert!(queue.is_empty() && out == want),
            )
        },
    ));
    let title = format!("parallel drain, {} tasks, {workers} workers", work.name());
    run_case(&title, tasks, samples, &mut contenders)
}

fn main() {
    let options = Options::from_args();
    let samples = options.samples;
    let wanted = |name: &str| options.wants(name);

    println!("# dinah runtime benchmarks");
    println!(
        "available parallelism: {}",
        thread::available_parallelism().map_or(0, |n| n.get())
    );
    let pools: Vec<(usize, rayon::ThreadPool)> = [2, 4]
        .into_iter()
        .map(|threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("rayon pool");
            (threads, pool)
        })
        .collect();

    if wanted("executor") {
        bench_direct_calls(samples);
    }
    let mut targets = Vec::new();
    if wanted("sequential") {
        for tasks in [1, 16, 64, 256] {
            let results = bench_sequential(Work::NoOp, tasks, samples);
            if tasks == 256 {
                let ratio = median_of(&results, "dinah run_until_empty")
                    / median_of(&results, "VecDeque pop-and-call loop");
                targets.push((
                    "sequential drain, 256 no-op: dinah / VecDeque loop (limit 1.20)",
                    ratio,
                    ratio <= 1.20,
                ));
            }
        }
    }
    for work in [Work::NoOp, Work::Cpu] {
        if !wanted("parallel") && !wanted(work.name()) {
            continue;
        }
        for tasks in [16, 64, 256] {
            for (workers, pool) in &pools {
                let results = bench_parallel(work, tasks, *workers, samples, pool);
                if tasks != 256 || *workers != 2 {
                    continue;
                }
                let dinah = median_of(&results, "dinah run_parallel");
                match work {
                    Work::NoOp => {
                        let ratio = dinah / median_of(&results, "scoped threads");
                        targets.push(("run_parallel, 256 no-op, 2 workers: dinah / scoped+atomic floor (limit 1.25)", ratio, ratio <= 1.25));
                    }
                    Work::Cpu => {
                        let speedup = median_of(&results, "dinah run_until_empty") / dinah;
                        targets.push(("run_parallel, 256 cpu, 2 workers: speedup over sequential drain (at least 1.95)", speedup, speedup >= 1.95));
                        let ratio = dinah / median_of(&results, "rayon");
                        targets.push((
                            "run_parallel, 256 cpu, 2 workers: dinah / rayon (limit 1.03)",
                            ratio,
                            ratio <= 1.03,
                        ));
                    }
                }
            }
        }
    }
    if !targets.is_empty() {
        println!("\n## targets (medians from the same run)");
        for (description, ratio, holds) in targets {
            target(description, ratio, holds);
        }
    }
}
