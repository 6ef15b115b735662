//! dinah's `MultiExecutor` side by side with tokio's multi-thread runtime
//! and async-executor's `Executor` run on as many threads, each with the
//! same number of workers, on the shapes of tokio's own
//! `rt_multi_threaded` benchmarks (spawn_many 10,000, yield_many 200 ×
//! 1,000, ping_pong 1,000 pairs, chained_spawn depth 1,000), plus a
//! CPU-bound fan-out of 256 tasks timed on 1 and 2 workers.
//!
//! Each contender is configured as its users run it at its best: tokio's
//! `new_multi_thread` runtime with `worker_threads(n)`, and an
//! async-executor `Executor` with `n` threads in `Executor::run`, as smol
//! runs one. Every case starts from one task on the runtime, which spawns
//! the rest (spawns from a worker); the benchmark thread waits in the
//! runtime's `block_on` (async-executor's in `futures_executor::block_on`)
//! for a count of finished tasks that all contenders share.
//!
//! A second dinah row counts its per-worker figures (`MultiConfig::measure`),
//! against the goal that measuring costs at most twice the time.
//!
//! `cargo bench --bench multi [-- CASE] [--samples N] [--workers N]`.
//!
//! `[CASE] --callgrind CONTENDER ROUNDS` (`dinah`, `tokio`,
//! `async-executor`) runs `ROUNDS` rounds of the case (spawn_many if none
//! is named) on one worker (or `--workers N`: for a profiler), untimed, and
//! exits: under callgrind, the
//! difference between two round counts over the operations between them is
//! the instructions per operation, start-up and shutdown cancelled out
//! (`benches/callgrind.sh` with `DINAH_BENCH=multi` counts spawn_many's).

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use std::alloc::System;

use dinah::executor::{MultiConfig, MultiExecutor, MultiHandle};
use futures_util::task::AtomicWaker;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

/// Counts allocations, for the allocations-per-spawn figure (every
/// contender runs under it alike).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

mod harness;
use harness::{Contender, Options, median_of, run_case, target};

const SPAWNS: usize = 10_000;
const YIELD_TASKS: usize = 200;
const YIELDS: usize = 1_000;
const PINGS: usize = 1_000;
const CHAIN: usize = 1_000;
const FAN_OUT: usize = 256;
/// Rounds of arithmetic per fan-out task: about 50 µs of one core.
const FAN_OUT_WORK: u64 = 60_000;

/// Counts finished tasks down to zero and wakes the waiter there: shared
/// by every contender, so the waiting costs the same for each.
struct Countdown {
    left: AtomicUsize,
    waiter: AtomicWaker,
}

impl Countdown {
    fn new(count: usize) -> Arc<Self> {
        Arc::new(Self {
            left: AtomicUsize::new(count),
            waiter: AtomicWaker::new(),
        })
    }

    fn done_one(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.waiter.wake();
        }
    }

    async fn wait(&self) {
        poll_fn(|cx| {
            self.waiter.register(cx.waker());
            if self.left.load(Ordering::Acquire) == 0 {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }
}

/// A one-value channel with no value: the same for every contender.
#[derive(Default)]
struct Oneshot {
    sent: AtomicBool,
    waiter: AtomicWaker,
}

impl Oneshot {
    fn send(&self) {
        self.sent.store(true, Ordering::Release);
        self.waiter.wake();
    }

    async fn recv(&self) {
        poll_fn(|cx| {
            self.waiter.register(cx.waker());
            if self.sent.load(Ordering::Acquire) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }
}

/// Returns `Pending` once, waking itself: a plain yield.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Spawns onto one contender from inside its tasks.
#[derive(Clone)]
enum Spawn {
    Dinah(MultiHandle),
    Tokio(tokio::runtime::Handle),
    AsyncExecutor(Arc<async_executor::Executor<'static>>),
}

impl Spawn {
    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        match self {
            Self::Dinah(handle) => drop(
                handle
                    .try_spawn(task)
                    .unwrap_or_else(|_| panic!("dinah refused a spawn")),
            ),
            Self::Tokio(handle) => drop(handle.spawn(task)),
            Self::AsyncExecutor(executor) => executor.spawn(task).detach(),
        }
    }

    /// The runtime's own yield, as its users write it.
    async fn yield_now(&self) {
        match self {
            Self::Dinah(_) => dinah::yield_now().await,
            Self::Tokio(_) => tokio::task::yield_now().await,
            Self::AsyncExecutor(_) => YieldNow(false).await,
        }
    }
}

/// A runtime under test, with its workers.
trait Runtime {
    fn spawner(&self) -> Spawn;
    fn block_on(&self, main: Pin<Box<dyn Future<Output = ()> + Send>>);

    /// Times `root` from its spawn on a worker to the last task's end.
    fn time(&self, tasks: usize, root: fn(Spawn, Arc<Countdown>)) -> Duration {
        let done = Countdown::new(tasks);
        let spawn = self.spawner();
        let start = Instant::now();
        let (inner, wait) = (spawn.clone(), Arc::clone(&done));
        spawn.spawn(async move { root(inner, wait) });
        self.block_on(Box::pin(async move { done.wait().await }));
        start.elapsed()
    }
}

struct Dinah(MultiExecutor);

impl Dinah {
    fn build(workers: usize) -> Self {
        Self::built(workers, false)
    }

    /// With its per-worker figures counted (`MultiConfig::measure`).
    fn measured(workers: usize) -> Self {
        Self::built(workers, true)
    }

    fn built(workers: usize, measure: bool) -> Self {
        Self(
            MultiExecutor::with_config(MultiConfig {
                workers: Some(workers),
                measure,
                ..MultiConfig::default()
            })
            .expect("dinah starts"),
        )
    }
}

impl Runtime for Dinah {
    fn spawner(&self) -> Spawn {
        Spawn::Dinah(self.0.handle())
    }
    fn block_on(&self, main: Pin<Box<dyn Future<Output = ()> + Send>>) {
        self.0.block_on(main);
    }
}

struct Tokio(tokio::runtime::Runtime);

impl Tokio {
    fn build(workers: usize) -> Self {
        Self(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .build()
                .expect("tokio starts"),
        )
    }
}

impl Runtime for Tokio {
    fn spawner(&self) -> Spawn {
        Spawn::Tokio(self.0.handle().clone())
    }
    fn block_on(&self, main: Pin<Box<dyn Future<Output = ()> + Send>>) {
        self.0.block_on(main);
    }
}

/// An async-executor `Executor` with `n` threads in `run`.
struct AsyncEx {
    executor: Arc<async_executor::Executor<'static>>,
    /// One stop signal per thread (a signal wakes one waiter).
    stops: Vec<Arc<Oneshot>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl AsyncEx {
    fn build(workers: usize) -> Self {
        let executor = Arc::new(async_executor::Executor::new());
        let stops: Vec<_> = (0..workers).map(|_| Arc::new(Oneshot::default())).collect();
        let threads = stops
            .iter()
            .map(|stop| {
                let (executor, stop) = (Arc::clone(&executor), Arc::clone(stop));
                std::thread::spawn(move || {
                    futures_executor::block_on(executor.run(async move { stop.recv().await }));
                })
            })
            .collect();
        Self {
            executor,
            stops,
            threads,
        }
    }
}

impl Drop for AsyncEx {
    fn drop(&mut self) {
        for stop in &self.stops {
            stop.send();
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Runtime for AsyncEx {
    fn spawner(&self) -> Spawn {
        Spawn::AsyncExecutor(Arc::clone(&self.executor))
    }
    fn block_on(&self, main: Pin<Box<dyn Future<Output = ()> + Send>>) {
        futures_executor::block_on(main);
    }
}

fn spawn_many(spawn: Spawn, done: Arc<Countdown>) {
    for _ in 0..SPAWNS {
        let done = Arc::clone(&done);
        spawn.spawn(async move { done.done_one() });
    }
}

fn yield_many(spawn: Spawn, done: Arc<Countdown>) {
    for _ in 0..YIELD_TASKS {
        let (done, inner) = (Arc::clone(&done), spawn.clone());
        spawn.spawn(async move {
            for _ in 0..YIELDS {
                inner.yield_now().await;
            }
            done.done_one();
        });
    }
}

fn ping_pong(spawn: Spawn, done: Arc<Countdown>) {
    for _ in 0..PINGS {
        let (done, inner) = (Arc::clone(&done), spawn.clone());
        spawn.spawn(async move {
            let (ping, pong) = (Arc::new(Oneshot::default()), Arc::new(Oneshot::default()));
            let (their_ping, their_pong) = (Arc::clone(&ping), Arc::clone(&pong));
            inner.spawn(async move {
                their_ping.recv().await;
                their_pong.send();
            });
            ping.send();
            pong.recv().await;
            done.done_one();
        });
    }
}

fn chain(spawn: Spawn, done: Arc<Countdown>, left: usize) {
    if left == 0 {
        done.done_one();
        return;
    }
    let inner = spawn.clone();
    spawn.spawn(async move { chain(inner, done, left - 1) });
}

fn chained_spawn(spawn: Spawn, done: Arc<Countdown>) {
    chain(spawn, done, CHAIN);
}

/// About 50 µs of arithmetic that the optimiser cannot remove.
fn crunch(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..FAN_OUT_WORK {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

fn fan_out(spawn: Spawn, done: Arc<Countdown>) {
    for n in 0..FAN_OUT {
        let done = Arc::clone(&done);
        spawn.spawn(async move {
            crunch(n as u64);
            done.done_one();
        });
    }
}

struct Case {
    name: &'static str,
    operations: usize,
    tasks: usize,
    root: fn(Spawn, Arc<Countdown>),
}

fn cases() -> [Case; 4] {
    [
        Case {
            name: "spawn_many",
            operations: SPAWNS,
            tasks: SPAWNS,
            root: spawn_many,
        },
        Case {
            name: "yield_many",
            operations: YIELD_TASKS * YIELDS,
            tasks: YIELD_TASKS,
            root: yield_many,
        },
        Case {
            name: "ping_pong",
            operations: 2 * PINGS,
            tasks: PINGS,
            root: ping_pong,
        },
        Case {
            name: "chained_spawn",
            operations: CHAIN,
            tasks: 1,
            root: chained_spawn,
        },
    ]
}

/// Spawns half as many tasks as `spawn_many`.
fn spawn_half(spawn: Spawn, done: Arc<Countdown>) {
    for _ in 0..SPAWNS / 2 {
        let done = Arc::clone(&done);
        spawn.spawn(async move { done.done_one() });
    }
}

/// Allocations made while `root` runs on `runtime`.
fn allocations(runtime: &dyn Runtime, tasks: usize, root: fn(Spawn, Arc<Countdown>)) -> usize {
    let region = Region::new(GLOBAL);
    runtime.time(tasks, root);
    region.change().allocations
}

/// Allocations per spawned task that does nothing: the allocations of a
/// run of `SPAWNS` tasks less those of a run of half as many, over the
/// tasks between them, so that what every run makes once (its root task,
/// the count it waits on, the runtime's `block_on`) does not count, nor
/// queues and tables growing (both runs are warmed up first).
fn allocations_per_spawn(runtime: &dyn Runtime) -> f64 {
    runtime.time(SPAWNS, spawn_many);
    runtime.time(SPAWNS / 2, spawn_half);
    let whole = allocations(runtime, SPAWNS, spawn_many);
    let half = allocations(runtime, SPAWNS / 2, spawn_half);
    (whole as f64 - half as f64) / (SPAWNS - SPAWNS / 2) as f64
}

/// `rounds` rounds of the first case `options` wants (spawn_many if it
/// names none) on `contender` with `--workers` workers (one if not given),
/// untimed.
fn callgrind(options: &Options, contender: &str, rounds: usize) {
    let workers = options.workers.unwrap_or(1);
    let runtime: Box<dyn Runtime> = match contender {
        "dinah" => Box::new(Dinah::build(workers)),
        "tokio" => Box::new(Tokio::build(workers)),
        "async-executor" => Box::new(AsyncEx::build(workers)),
        other => panic!("--callgrind: dinah, tokio or async-executor, not {other}"),
    };
    let case = cases()
        .into_iter()
        .find(|case| options.wants(case.name))
        .expect("--callgrind: the case names one of the four shapes");
    for _ in 0..rounds {
        runtime.time(case.tasks, case.root);
    }
}

fn main() {
    let options = Options::from_args();
    if let Some((contender, rounds)) = &options.callgrind {
        callgrind(&options, contender, *rounds);
        return;
    }
    println!("# dinah MultiExecutor benchmarks");
    let mut targets = Vec::new();
    if options.wants("allocations") {
        let (dinah, tokio) = (Dinah::build(1), Tokio::build(1));
        let (mine, theirs) = (allocations_per_spawn(&dinah), allocations_per_spawn(&tokio));
        println!("\n## allocations per spawned task (1 worker, {SPAWNS} tasks)");
        println!("dinah MultiExecutor: {mine:.3}; tokio multi_thread: {theirs:.3}");
        targets.push((
            "allocations per spawned task: dinah (at most 1)".to_owned(),
            mine,
            mine <= 1.0,
        ));
    }
    let worker_counts = options.workers.map_or(vec![2, 1], |workers| vec![workers]);
    for workers in worker_counts {
        let (dinah, measured, tokio, async_executor) = (
            Dinah::build(workers),
            Dinah::measured(workers),
            Tokio::build(workers),
            AsyncEx::build(workers),
        );
        for case in cases() {
            if !options.wants(case.name) {
                continue;
            }
            let title = format!("{} on {workers} worker(s)", case.name);
            let mut contenders = vec![
                Contender::new(format!("dinah MultiExecutor ({workers})"), false, || {
                    dinah.time(case.tasks, case.root)
                }),
                Contender::new(format!("tokio multi_thread ({workers})"), true, || {
                    tokio.time(case.tasks, case.root)
                }),
                Contender::new(format!("measured dinah ({workers})"), false, || {
                    measured.time(case.tasks, case.root)
                }),
                Contender::new(format!("async-executor ({workers} threads)"), true, || {
                    async_executor.time(case.tasks, case.root)
                }),
            ];
            let results = run_case(&title, case.operations, options.samples, &mut contenders);
            let mine = median_of(&results, "dinah");
            let tokio = median_of(&results, "tokio");
            let async_ex = median_of(&results, "async-executor");
            let counted = median_of(&results, "measured dinah");
            targets.push((
                format!("{title}: dinah measured / unmeasured (at most 2.0)"),
                counted / mine,
                counted / mine <= 2.0,
            ));
            targets.push((
                format!("{title}: dinah / tokio multi_thread (at most 0.8)"),
                mine / tokio,
                mine / tokio <= 0.8,
            ));
            targets.push((
                format!("{title}: dinah / async-executor (below 1.0)"),
                mine / async_ex,
                mine / async_ex < 1.0,
            ));
        }
    }
    if options.wants("fan_out") {
        let (one, two) = (Dinah::build(1), Dinah::build(2));
        let (tokio_one, tokio_two) = (Tokio::build(1), Tokio::build(2));
        let mut contenders = vec![
            Contender::new("dinah MultiExecutor (2)", false, || {
                two.time(FAN_OUT, fan_out)
            }),
            Contender::new("dinah MultiExecutor (1)", true, || {
                one.time(FAN_OUT, fan_out)
            }),
            Contender::new("tokio multi_thread (2)", false, || {
                tokio_two.time(FAN_OUT, fan_out)
            }),
            Contender::new("tokio multi_thread (1)", true, || {
                tokio_one.time(FAN_OUT, fan_out)
            }),
        ];
        let results = run_case(
            "fan_out of 256 CPU-bound tasks",
            FAN_OUT,
            options.samples,
            &mut contenders,
        );
        let speedup = median_of(&results, "dinah MultiExecutor (1)")
            / median_of(&results, "dinah MultiExecutor (2)");
        targets.push((
            "fan_out: dinah speedup from 1 to 2 workers (at least 1.9)".to_owned(),
            speedup,
            speedup >= 1.9,
        ));
    }
    println!("\n## Targets");
    for (description, ratio, holds) in targets {
        target(&description, ratio, holds);
    }
}
