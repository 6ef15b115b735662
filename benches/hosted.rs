//! The hosted `LocalExecutor` side by side with tokio's current-thread
//! runtime (`LocalSet`, for `!Send` tasks), futures' `LocalPool` and
//! async-executor's `LocalExecutor`, in the same run.
//!
//! ```text
//! cargo bench --bench hosted                        # every case, 11 samples each
//! cargo bench --bench hosted -- --samples 21        # more samples
//! cargo bench --bench hosted -- yield               # only cases whose name contains "yield"
//! cargo bench --bench hosted -- --callgrind dinah 1000   # one task, 1,000 yields, untimed
//! ```
//!
//! Cases (each contender spawns its tasks from inside its own `block_on`,
//! then yields until a shared counter says they are done; executors are built
//! before the clock starts):
//! - `spawn_many`: 10,000 trivial tasks spawned (handles dropped: detached)
//!   and run to completion.
//! - `yield_many`: 200 tasks, each yielding 1,000 times.
//! - `ping_pong`: two tasks pass a token back and forth 1,000 times through
//!   two one-slot mailboxes.
//! - `chained_spawn`: each task spawns the next, 1,000 deep.
//!
//! Every contender runs the same futures (`dinah::yield_now`, the same
//! mailbox).
//!
//! `--callgrind CONTENDER YIELDS` spawns one task yielding `YIELDS` times,
//! awaits it and exits; `DINAH_BENCH=hosted ./benches/callgrind.sh dinah
//! tokio local-pool async-executor` gives instructions per wake+poll.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

use dinah::{LocalExecutor, LocalSpawner, yield_now};
use futures_executor::LocalPool;
use futures_util::task::LocalSpawnExt;

mod harness;
use harness::{Contender, Options, run_case, target};
mod workloads;
use workloads::{Mailbox, ROUND_TRIPS, ping, pong, yielder};

const YIELD_TASKS: usize = 200;
const YIELDS: usize = 1_000;
const SPAWNS: usize = 10_000;
const CHAIN: usize = 1_000;

/// Yields until `count` reaches `goal`: how every driver waits for its
/// tasks.
async fn until(count: &Cell<usize>, goal: usize) {
    while count.get() < goal {
        yield_now().await;
    }
}

fn bump(count: &Cell<usize>) {
    count.set(count.get() + 1);
}

/// One way to run a case: build the executor, then time `drive` on it.
trait Runtime {
    const NAME: &'static str;
    /// Runs `main` (which spawns through `Spawn`) to completion, timed.
    fn time<F: Future<Output = ()> + 'static>(main: impl FnOnce(Spawn) -> F) -> Duration;
}

/// A spawner that every contender's tasks can carry.
#[derive(Clone)]
enum Spawn {
    Dinah(LocalSpawner<'static>),
    Tokio,
    LocalPool(futures_executor::LocalSpawner),
    AsyncExecutor(Rc<async_executor::LocalExecutor<'static>>),
}

impl Spawn {
    /// Spawns a detached `()` task.
    fn spawn(&self, task: impl Future<Output = ()> + 'static) {
        match self {
            Self::Dinah(spawner) => drop(spawner.spawn(task).expect("no cap")),
            Self::Tokio => drop(tokio::task::spawn_local(task)),
            Self::LocalPool(spawner) => spawner.spawn_local(task).expect("pool is running"),
            Self::AsyncExecutor(executor) => executor.spawn(task).detach(),
        }
    }
}

struct Dinah;
struct Tokio;
struct Pool;
struct AsyncEx;

impl Runtime for Dinah {
    const NAME: &'static str = "dinah LocalExecutor";
    fn time<F: Future<Output = ()> + 'static>(main: impl FnOnce(Spawn) -> F) -> Duration {
        let executor = LocalExecutor::new();
        let main = main(Spawn::Dinah(executor.local_spawner()));
        let start = Instant::now();
        executor.block_on(main);
        start.elapsed()
    }
}

impl Runtime for Tokio {
    const NAME: &'static str = "tokio current_thread + LocalSet";
    fn time<F: Future<Output = ()> + 'static>(main: impl FnOnce(Spawn) -> F) -> Duration {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let local = tokio::task::LocalSet::new();
        let main = main(Spawn::Tokio);
        let start = Instant::now();
        local.block_on(&runtime, main);
        start.elapsed()
    }
}

impl Runtime for Pool {
    const NAME: &'static str = "futures LocalPool";
    fn time<F: Future<Output = ()> + 'static>(main: impl FnOnce(Spawn) -> F) -> Duration {
        let mut pool = LocalPool::new();
        let main = main(Spawn::LocalPool(pool.spawner()));
        let start = Instant::now();
        pool.run_until(main);
        start.elapsed()
    }
}

impl Runtime for AsyncEx {
    const NAME: &'static str = "async-executor LocalExecutor";
    fn time<F: Future<Output = ()> + 'static>(main: impl FnOnce(Spawn) -> F) -> Duration {
        let executor = Rc::new(async_executor::LocalExecutor::new());
        let main = main(Spawn::AsyncExecutor(Rc::clone(&executor)));
        let start = Instant::now();
        futures_executor::block_on(executor.run(main));
        start.elapsed()
    }
}

fn spawn_many<R: Runtime>() -> Duration {
    R::time(|spawn| async move {
        let count = Rc::new(Cell::new(0));
        for _ in 0..SPAWNS {
            let count = Rc::clone(&count);
            spawn.spawn(async move { bump(&count) });
        }
        until(&count, SPAWNS).await;
    })
}

fn yield_many<R: Runtime>() -> Duration {
    R::time(|spawn| async move {
        let done = Rc::new(Cell::new(0));
        for _ in 0..YIELD_TASKS {
            let done = Rc::clone(&done);
            spawn.spawn(async move {
                yielder(YIELDS).await;
                bump(&done);
            });
        }
        until(&done, YIELD_TASKS).await;
    })
}

fn ping_pong<R: Runtime>() -> Duration {
    R::time(|spawn| async move {
        let boxes = Rc::new((Mailbox::default(), Mailbox::default()));
        let done = Rc::new(Cell::new(0));
        for pinger in [true, false] {
            let (boxes, done) = (Rc::clone(&boxes), Rc::clone(&done));
            spawn.spawn(async move {
                if pinger {
                    ping(&boxes.0, &boxes.1).await;
                } else {
                    pong(&boxes.0, &boxes.1).await;
                }
                bump(&done);
            });
        }
        until(&done, 2).await;
    })
}

/// Spawns a task that spawns the next, `left` more times.
fn chain(spawn: Spawn, left: usize, done: Rc<Cell<usize>>) {
    let next = spawn.clone();
    spawn.spawn(async move {
        if left == 0 {
            bump(&done);
        } else {
            chain(next, left - 1, done);
        }
    });
}

fn chained_spawn<R: Runtime>() -> Duration {
    R::time(|spawn| async move {
        let done = Rc::new(Cell::new(0));
        chain(spawn, CHAIN - 1, Rc::clone(&done));
        until(&done, 1).await;
    })
}

/// callgrind mode: one spawned task yielding `times` times, awaited.
fn callgrind(contender: &str, times: usize) {
    match contender {
        "dinah" => {
            let executor = LocalExecutor::new();
            let task = executor.spawn(yielder(times)).unwrap();
            executor.block_on(task).unwrap();
        }
        "tokio" => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let local = tokio::task::LocalSet::new();
            local
                .block_on(&runtime, async {
                    tokio::task::spawn_local(yielder(times)).await
                })
                .unwrap();
        }
        "local-pool" => {
            let mut pool = LocalPool::new();
            pool.spawner().spawn_local(yielder(times)).unwrap();
            pool.run();
        }
        "async-executor" => {
            let executor = async_executor::LocalExecutor::new();
            futures_executor::block_on(executor.run(executor.spawn(yielder(times))));
        }
        other => panic!("unknown contender {other}: dinah, tokio, local-pool or async-executor"),
    }
}

type Case = (&'static str, usize, [fn() -> Duration; 4]);

fn contenders(runs: [fn() -> Duration; 4]) -> Vec<Contender<'static>> {
    let names = [Dinah::NAME, Tokio::NAME, Pool::NAME, AsyncEx::NAME];
    names
        .into_iter()
        .zip(runs)
        .enumerate()
        .map(|(i, (name, run))| Contender::new(name, i > 0, run))
        .collect()
}

fn main() {
    let options = Options::from_args();
    if let Some((contender, times)) = &options.callgrind {
        callgrind(contender, *times);
        return;
    }
    println!("# dinah LocalExecutor benchmarks");
    let cases: [Case; 4] = [
        (
            "spawn_many",
            SPAWNS,
            [
                spawn_many::<Dinah>,
                spawn_many::<Tokio>,
                spawn_many::<Pool>,
                spawn_many::<AsyncEx>,
            ],
        ),
        (
            "yield_many",
            YIELD_TASKS * YIELDS,
            [
                yield_many::<Dinah>,
                yield_many::<Tokio>,
                yield_many::<Pool>,
                yield_many::<AsyncEx>,
            ],
        ),
        (
            "ping_pong",
            2 * ROUND_TRIPS as usize,
            [
                ping_pong::<Dinah>,
                ping_pong::<Tokio>,
                ping_pong::<Pool>,
                ping_pong::<AsyncEx>,
            ],
        ),
        (
            "chained_spawn",
            CHAIN,
            [
                chained_spawn::<Dinah>,
                chained_spawn::<Tokio>,
                chained_spawn::<Pool>,
                chained_spawn::<AsyncEx>,
            ],
        ),
    ];
    let mut targets = Vec::new();
    for (name, tasks, runs) in cases {
        if !options.wants(name) {
            continue;
        }
        let mut contenders = contenders(runs);
        let results = run_case(name, tasks, options.samples, &mut contenders);
        let dinah = results[0].1.as_secs_f64();
        let fastest = results[1..]
            .iter()
            .map(|(_, median)| median.as_secs_f64())
            .fold(f64::INFINITY, f64::min);
        let ratio = dinah / fastest;
        targets.push((
            format!("{name}: dinah / fastest peer (at most 1.0)"),
            ratio,
            ratio <= 1.0,
        ));
        if name == "yield_many" {
            let ratio = dinah / results[1].1.as_secs_f64();
            targets.push((
                "yield_many: dinah / tokio (at most 0.5)".into(),
                ratio,
                ratio <= 0.5,
            ));
        }
    }
    println!("\n## Targets");
    for (description, ratio, holds) in targets {
        target(&description, ratio, holds);
    }
}
