//! Timers: dinah's against tokio's and embassy-time's, in the same run.
//!
//! - `sleep_create_poll_drop`: one sleep made, polled once (so it is
//!   armed) and dropped (so it is cancelled), 10,000 times inside one
//!   `block_on`: dinah's `LocalExecutor` and its timer wheel, tokio's
//!   current-thread runtime with its time driver, and embassy-time's
//!   `Timer` on its std driver and generic queue, driven by
//!   `futures::executor::block_on` (the queue keeps one entry per waker and
//!   does not cancel: a dropped timer stays queued until its deadline, so
//!   its cost is the insert alone).
//! - `expiry_lag_10k`: 10,000 tasks each sleep a different 1–100 ms and
//!   note how late they woke (deadline to the task's poll); p50 and p99 per
//!   round, medians over the rounds. tokio rounds deadlines up to whole
//!   milliseconds, dinah to microseconds. Each round also counts the times
//!   the thread running the executor gave up the CPU to wait (its voluntary
//!   context switches, from `/proc/thread-self/status` on Linux): the parks
//!   that reached the kernel; and the CPU time that thread ran
//!   (`/proc/thread-self/sched`). Then the machine's floor, in the
//!   same run: how late a bare 200 µs `park_timeout` wakes, and how often a
//!   spinning thread loses the CPU for over 100 µs.
//!
//! `cargo bench --bench timers [-- FILTER] [--samples N]`; `--callgrind
//! CONTENDER TIMES` runs one contender's create+poll+drop loop untimed
//! (for `valgrind --tool=callgrind`) and exits.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

mod harness;
use harness::{Contender, Options, run_case, target};

use dinah::LocalExecutor;
use dinah::time;

const SLEEPS: usize = 10_000;

/// A task of the lag case.
type Task = std::pin::Pin<Box<dyn Future<Output = ()>>>;

/// Polls `future` once in the caller's task context, then drops it.
async fn poll_once<F: Future>(future: F) {
    let mut future = pin!(future);
    poll_fn(|cx| {
        let _ = future.as_mut().poll(cx);
        Poll::Ready(())
    })
    .await;
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime")
}

fn create_poll_drop(options: &Options) -> Option<f64> {
    if !options.wants("sleep_create_poll_drop") {
        return None;
    }
    let dinah = LocalExecutor::new();
    let tokio = tokio_runtime();
    let mut contenders = vec![
        Contender::new("dinah LocalExecutor + wheel", false, || {
            dinah.block_on(async {
                let start = Instant::now();
                for _ in 0..SLEEPS {
                    poll_once(time::sleep(Duration::from_secs(1))).await;
                }
                start.elapsed() / SLEEPS as u32
            })
        }),
        Contender::new("tokio current-thread sleep", true, || {
            tokio.block_on(async {
                let start = Instant::now();
                for _ in 0..SLEEPS {
                    poll_once(tokio::time::sleep(Duration::from_secs(1))).await;
                }
                start.elapsed() / SLEEPS as u32
            })
        }),
        Contender::new("embassy-time Timer (std driver)", true, || {
            futures_executor::block_on(async {
                let start = Instant::now();
                for _ in 0..SLEEPS {
                    poll_once(embassy_time::Timer::after(
                        embassy_time::Duration::from_secs(1),
                    ))
                    .await;
                }
                start.elapsed() / SLEEPS as u32
            })
        }),
    ];
    let results = run_case(
        "sleep_create_poll_drop",
        1,
        options.samples,
        &mut contenders,
    );
    let ratio = results[0].1.as_secs_f64() / results[1].1.as_secs_f64();
    target(
        "sleep_create_poll_drop: dinah / tokio (at most 0.5)",
        ratio,
        ratio <= 0.5,
    );
    Some(ratio)
}

/// The times this thread gave up the CPU of its own accord so far (its
/// voluntary context switches): each wait that blocked in the kernel is
/// one. `None` where the kernel does not say (not Linux).
fn voluntary_switches() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|count| count.trim().parse().ok())
}

/// The CPU time this thread has run so far, in microseconds, from the
/// scheduler's own account (`/proc/thread-self/sched`). `None` where the
/// kernel does not say.
fn cpu_micros() -> Option<u64> {
    let sched = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
    let millis: f64 = sched
        .lines()
        .find_map(|line| line.strip_prefix("se.sum_exec_runtime"))?
        .trim_start_matches([' ', ':'])
        .trim()
        .parse()
        .ok()?;
    Some((millis * 1_000.0) as u64)
}

/// What one round of the lag case measured on one contender.
struct Round {
    /// Each task's lag, sorted.
    lags: Vec<u64>,
    /// Waits that blocked in the kernel.
    parks: Option<u64>,
    /// CPU time the executor's thread ran, in microseconds.
    cpu: Option<u64>,
}

/// One round of 10,000 sleeps on `spawn`'s runtime.
fn lags(run: &dyn Fn(Vec<Task>), sleep: fn(Duration) -> Task) -> Round {
    let lags = Rc::new(RefCell::new(Vec::with_capacity(SLEEPS)));
    let tasks: Vec<Task> = (0..SLEEPS as u64)
        .map(|i| {
            let lags = Rc::clone(&lags);
            let wait = Duration::from_micros(1_000 + (i * 7_919) % 99_000);
            Box::pin(async move {
                let deadline = Instant::now() + wait;
                sleep(wait).await;
                let late = Instant::now().saturating_duration_since(deadline);
                lags.borrow_mut().push(late.as_micros() as u64);
            }) as Task
        })
        .collect();
    let (switches, cpu) = (voluntary_switches(), cpu_micros());
    run(tasks);
    let parks = voluntary_switches()
        .zip(switches)
        .map(|(after, before)| after - before);
    let cpu = cpu_micros().zip(cpu).map(|(after, before)| after - before);
    let mut lags = Rc::try_unwrap(lags).expect("tasks done").into_inner();
    lags.sort_unstable();
    Round { lags, parks, cpu }
}

/// One contender's figures of the lag case, a value per round.
#[derive(Default)]
struct Rounds {
    p50: Vec<u64>,
    p99: Vec<u64>,
    /// Waits that blocked in the kernel (none where they are not counted).
    parks: Vec<u64>,
    /// CPU time of the executor's thread, in microseconds (none where it
    /// is not counted).
    cpu: Vec<u64>,
}

fn percentile(sorted: &[u64], per_mille: usize) -> u64 {
    sorted[(sorted.len() * per_mille / 1_000).min(sorted.len() - 1)]
}

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

fn expiry_lag(options: &Options) -> Option<(f64, f64)> {
    if !options.wants("expiry_lag_10k") {
        return None;
    }
    let rounds = options.samples.min(7);
    let mut results: Vec<(&str, Rounds)> = vec![
        ("dinah LocalExecutor + wheel", Rounds::default()),
        ("tokio current-thread sleep", Rounds::default()),
    ];
    for _ in 0..rounds {
        let dinah = lags(
            &|tasks| {
                let executor = LocalExecutor::new();
                let handles: Vec<_> = tasks
                    .into_iter()
                    .map(|task| executor.try_spawn(task).expect("no cap"))
                    .collect();
                executor.block_on(async {
                    for handle in handles {
                        let _ = handle.await;
                    }
                });
            },
            |wait| Box::pin(time::sleep(wait)),
        );
        let tokio = lags(
            &|tasks| {
                let runtime = tokio_runtime();
                let local = tokio::task::LocalSet::new();
                local.block_on(&runtime, async {
                    let handles: Vec<_> = tasks.into_iter().map(tokio::task::spawn_local).collect();
                    for handle in handles {
                        let _ = handle.await;
                    }
                });
            },
            |wait| Box::pin(tokio::time::sleep(wait)),
        );
        for ((_, rounds), round) in results.iter_mut().zip([dinah, tokio]) {
            rounds.p50.push(percentile(&round.lags, 500));
            rounds.p99.push(percentile(&round.lags, 990));
            rounds.parks.extend(round.parks);
            rounds.cpu.extend(round.cpu);
        }
    }
    println!(
        "\n## expiry_lag_10k ({SLEEPS} sleeps of 1-100 ms, median of {rounds} rounds; lag = deadline to the task's poll)"
    );
    let mut medians = Vec::new();
    for (
        name,
        Rounds {
            p50,
            p99,
            parks,
            cpu,
        },
    ) in &results
    {
        let parked = (!parks.is_empty()).then(|| median(parks.clone()));
        let counted = |values: &Vec<u64>| {
            if values.is_empty() {
                "not counted".to_owned()
            } else {
                median(values.clone()).to_string()
            }
        };
        println!(
            "{name:<34} p50 {:>6} us | p99 {:>6} us | parks {} | cpu {} us | raw p50 {p50:?} p99 {p99:?} parks {parks:?} cpu {cpu:?}",
            median(p50.clone()),
            median(p99.clone()),
            counted(parks),
            counted(cpu),
        );
        medians.push((median(p50.clone()), median(p99.clone()), parked));
    }
    let ratio = |d: u64, t: u64| d as f64 / (t.max(1)) as f64;
    let (p50, p99) = (
        ratio(medians[0].0, medians[1].0),
        ratio(medians[0].1, medians[1].1),
    );
    target(
        "expiry_lag_10k p50: dinah / tokio (at most 1.0)",
        p50,
        p50 <= 1.0,
    );
    target(
        "expiry_lag_10k p99: dinah / tokio (at most 1.0)",
        p99,
        p99 <= 1.0,
    );
    println!(
        "expiry_lag_10k p99 under 100 us: {} us -> {}",
        medians[0].1,
        if medians[0].1 < 100 { "met" } else { "MISSED" }
    );
    if let (Some(dinah), Some(tokio)) = (medians[0].2, medians[1].2) {
        let parks = ratio(dinah, tokio);
        target(
            "expiry_lag_10k parks (waits that blocked): dinah / tokio (at most 1.0)",
            parks,
            parks <= 1.0,
        );
    }
    let (floor50, floor99, stalls, longest) = machine_floor();
    println!(
        "machine floor, same run: a bare 200 us park_timeout wakes late by p50 {floor50} us, p99 {floor99} us; \
         a spinning thread lost the CPU {stalls} times over 100 us in 0.5 s (longest {longest} us)"
    );
    Some((p50, p99))
}

/// How precisely this machine wakes a parked thread, and how often it
/// takes the CPU from a running one: the floor under any timer's lag here.
/// Returns the p50 and p99 of a bare 200 µs `park_timeout`'s lateness (µs,
/// over 0.5 s), then how many times a spinning thread saw a gap of over
/// 100 µs in 0.5 s, and the longest.
fn machine_floor() -> (u64, u64, usize, u64) {
    let mut late = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(500) {
        let parked = Instant::now();
        std::thread::park_timeout(Duration::from_micros(200));
        late.push((parked.elapsed().as_micros() as u64).saturating_sub(200));
    }
    late.sort_unstable();
    let mut gaps = Vec::new();
    let start = Instant::now();
    let mut last = start;
    while start.elapsed() < Duration::from_millis(500) {
        let now = Instant::now();
        let gap = now.duration_since(last).as_micros() as u64;
        if gap > 100 {
            gaps.push(gap);
        }
        last = now;
    }
    (
        percentile(&late, 500),
        percentile(&late, 990),
        gaps.len(),
        gaps.iter().copied().max().unwrap_or(0),
    )
}

/// `--callgrind`: `times` loops of [`SLEEPS`] sleeps made, polled once and
/// dropped, untimed.
fn callgrind(contender: &str, times: usize) {
    let sleeps = |d: &LocalExecutor| {
        d.block_on(async {
            for _ in 0..SLEEPS {
                poll_once(time::sleep(Duration::from_secs(1))).await;
            }
        });
    };
    match contender {
        "dinah" => {
            let dinah = LocalExecutor::new();
            for _ in 0..times {
                sleeps(&dinah);
            }
        }
        "tokio" => {
            let tokio = tokio_runtime();
            for _ in 0..times {
                tokio.block_on(async {
                    for _ in 0..SLEEPS {
                        poll_once(tokio::time::sleep(Duration::from_secs(1))).await;
                    }
                });
            }
        }
        other => panic!("no contender {other}: dinah or tokio"),
    }
}

fn main() {
    let options = Options::from_args();
    if let Some((contender, times)) = &options.callgrind {
        callgrind(contender, *times);
        return;
    }
    println!("# dinah timer benchmarks");
    create_poll_drop(&options);
    expiry_lag(&options);
}
