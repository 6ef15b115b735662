//! The hosted `LocalExecutor` side by side with tokio's current-thread
//! runtime (`LocalSet`, for `!Send` tasks), futures' `LocalPool` and
//! async-executor's `LocalExecutor`, in the same run.
//!
//! ```text
//! cargo bench --bench hosted                        # every case, 11 samples each
//! cargo bench --bench hosted -- --samples 21        # more samples
//! cargo bench --bench hosted -- yield               # only cases whose name contains "yield"
//! cargo bench --bench hosted -- --callgrind dinah 1000        # one task, 1,000 yields, untimed
//! cargo bench --bench hosted -- --callgrind dinah-spawn 1000  # 1,000 spawns, untimed
//! ```
//!
//! Cases (each contender spawns its tasks from inside its own `block_on`,
//! then yields until a shared counter says they are done). Each contender's
//! executor is built once, before any clock starts, and reused by every
//! sample, as a program keeps its runtime; the untimed warm-up round fills
//! its tables.
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
//! awaits it and exits (`ticked`: dinah driven by calls to
//! `LocalExecutor::tick` kept out of line, instead of `block_on`, which
//! inlines its tick); `DINAH_BENCH=hosted ./benches/callgrind.sh dinah
//! ticked tokio local-pool async-executor` gives instructions per wake+poll.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

use dinah::executor::LocalSpawner;
use dinah::{LocalExecutor, yield_now};
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
            Self::Dinah(spawner) => drop(spawner.try_spawn(task).expect("no cap")),
            Self::Tokio => drop(tokio::task::spawn_local(task)),
            Self::LocalPool(spawner) => spawner.spawn_local(task).expect("pool is running"),
            Self::AsyncExecutor(executor) => executor.spawn(task).detach(),
        }
    }
}

/// One contender's executor, built once and reused by every sample.
trait Runtime: Sized {
    const NAME: &'static str;
    fn build() -> Self;
    /// A spawner its tasks can carry.
    fn spawner(&self) -> Spawn;
    /// Runs `main` to completion on this executor.
    fn run(&self, main: impl Future<Output = ()>);

    /// Builds `main` (untimed), then times running it.
    fn time<F: Future<Output = ()>>(&self, main: impl FnOnce(Spawn) -> F) -> Duration {
        let main = main(self.spawner());
        let start = Instant::now();
        self.run(main);
        start.elapsed()
    }
}

struct Dinah(LocalExecutor<'static>);
struct Tokio(tokio::runtime::Runtime, tokio::task::LocalSet);
struct Pool(RefCell<LocalPool>);
struct AsyncEx(Rc<async_executor::LocalExecutor<'static>>);

impl Runtime for Dinah {
    const NAME: &'static str = "dinah LocalExecutor";
    fn build() -> Self {
        Self(LocalExecutor::new())
    }
    fn spawner(&self) -> Spawn {
        Spawn::Dinah(self.0.local_spawner())
    }
    fn run(&self, main: impl Future<Output = ()>) {
        self.0.block_on(main);
    }
}

impl Runtime for Tokio {
    const NAME: &'static str = "tokio current_thread + LocalSet";
    fn build() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        Self(runtime, tokio::task::LocalSet::new())
    }
    fn spawner(&self) -> Spawn {
        Spawn::Tokio
    }
    fn run(&self, main: impl Future<Output = ()>) {
        self.1.block_on(&self.0, main);
    }
}

impl Runtime for Pool {
    const NAME: &'static str = "futures LocalPool";
    fn build() -> Self {
        Self(RefCell::new(LocalPool::new()))
    }
    fn spawner(&self) -> Spawn {
        Spawn::LocalPool(self.0.borrow().spawner())
    }
    fn run(&self, main: impl Future<Output = ()>) {
        self.0.borrow_mut().run_until(main);
    }
}

impl Runtime for AsyncEx {
    const NAME: &'static str = "async-executor LocalExecutor";
    fn build() -> Self {
        Self(Rc::new(async_executor::LocalExecutor::new()))
    }
    fn spawner(&self) -> Spawn {
        Spawn::AsyncExecutor(Rc::clone(&self.0))
    }
    fn run(&self, main: impl Future<Output = ()>) {
        futures_executor::block_on(self.0.run(main));
    }
}

fn spawn_many<R: Runtime>(runtime: &R) -> Duration {
    spawn_n(runtime, SPAWNS)
}

fn spawn_n<R: Runtime>(runtime: &R, spawns: usize) -> Duration {
    runtime.time(|spawn| async move {
        let count = Rc::new(Cell::new(0));
        for _ in 0..spawns {
            let count = Rc::clone(&count);
            spawn.spawn(async move { bump(&count) });
        }
        until(&count, spawns).await;
    })
}

fn yield_many<R: Runtime>(runtime: &R) -> Duration {
    runtime.time(|spawn| async move {
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

fn ping_pong<R: Runtime>(runtime: &R) -> Duration {
    runtime.time(|spawn| async move {
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

fn chained_spawn<R: Runtime>(runtime: &R) -> Duration {
    runtime.time(|spawn| async move {
        let done = Rc::new(Cell::new(0));
        chain(spawn, CHAIN - 1, Rc::clone(&done));
        until(&done, 1).await;
    })
}

/// Runs `case` `times` times on a fresh `R`.
fn repeat<R: Runtime>(case: fn(&R) -> Duration, times: usize) {
    let runtime = R::build();
    for _ in 0..times {
        case(&runtime);
    }
}

/// callgrind mode: one spawned task yielding `times` times, awaited; or,
/// for `CONTENDER-spawn`, `times` trivial tasks spawned and run; or, for
/// `CONTENDER-CASE` (a case's name), the case run `times` times.
fn callgrind(contender: &str, times: usize) {
    if let Some((contender, case)) = contender.split_once('-')
        && contender != "local"
        && contender != "async"
    {
        let cases = cases();
        if case == "spawn" {
            match contender {
                "dinah" => spawn_n(&Dinah::build(), times),
                "tokio" => spawn_n(&Tokio::build(), times),
                other => panic!("unknown contender {other}"),
            };
            return;
        }
        let case = cases
            .iter()
            .find(|c| c.name == case)
            .unwrap_or_else(|| panic!("unknown case {case}"));
        match contender {
            "dinah" => repeat(case.dinah, times),
            "tokio" => repeat(case.tokio, times),
            "pool" => repeat(case.pool, times),
            other => panic!("unknown contender {other}: dinah, tokio or pool"),
        }
        return;
    }
    match contender {
        "dinah" => {
            let executor = LocalExecutor::new();
            let task = executor.try_spawn(yielder(times)).unwrap();
            executor.block_on(task).unwrap();
        }
        "ticked" => {
            let executor = LocalExecutor::new();
            let mut task = executor.try_spawn(yielder(times)).unwrap();
            while tick_out_of_line(&executor) {}
            task.try_take().unwrap().unwrap();
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
        other => {
            panic!("unknown contender {other}: dinah, ticked, tokio, local-pool or async-executor")
        }
    }
}

/// One `LocalExecutor::tick`, kept out of line, and whether work remains:
/// the `ticked` contender's loop calls the tick as a function, where
/// `block_on` inlines it.
#[inline(never)]
fn tick_out_of_line(executor: &LocalExecutor<'_>) -> bool {
    executor.tick(usize::MAX).work_remaining
}

/// One case: its name, the operations one run counts, and the workload on
/// each contender.
struct Case {
    name: &'static str,
    operations: usize,
    dinah: fn(&Dinah) -> Duration,
    tokio: fn(&Tokio) -> Duration,
    pool: fn(&Pool) -> Duration,
    async_executor: fn(&AsyncEx) -> Duration,
}

macro_rules! case {
    ($name:ident, $operations:expr) => {
        Case {
            name: stringify!($name),
            operations: $operations,
            dinah: $name::<Dinah>,
            tokio: $name::<Tokio>,
            pool: $name::<Pool>,
            async_executor: $name::<AsyncEx>,
        }
    };
}

fn cases() -> [Case; 4] {
    [
        case!(spawn_many, SPAWNS),
        case!(yield_many, YIELD_TASKS * YIELDS),
        case!(ping_pong, 2 * ROUND_TRIPS as usize),
        case!(chained_spawn, CHAIN),
    ]
}

fn main() {
    let options = Options::from_args();
    if let Some((contender, times)) = &options.callgrind {
        callgrind(contender, *times);
        return;
    }
    println!("# dinah LocalExecutor benchmarks");
    let cases = cases();
    let (dinah, tokio, pool, async_executor) = (
        Dinah::build(),
        Tokio::build(),
        Pool::build(),
        AsyncEx::build(),
    );
    let mut targets = Vec::new();
    for case in cases {
        let name = case.name;
        if !options.wants(name) {
            continue;
        }
        let mut contenders = vec![
            Contender::new(Dinah::NAME, false, || (case.dinah)(&dinah)),
            Contender::new(Tokio::NAME, true, || (case.tokio)(&tokio)),
            Contender::new(Pool::NAME, true, || (case.pool)(&pool)),
            Contender::new(AsyncEx::NAME, true, || {
                (case.async_executor)(&async_executor)
            }),
        ];
        let results = run_case(name, case.operations, options.samples, &mut contenders);
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
                "yield_many: dinah / tokio (at most 0.5)".to_owned(),
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
