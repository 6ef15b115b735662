//! The core `AsyncExecutor` side by side with embassy-executor (its raw
//! executor with a no-op pender, polled in a loop, as embassy's users run it
//! at its fastest) and futures' `LocalPool`, in the same run.
//!
//! ```text
//! cargo bench --bench executor                     # every case, 11 samples each
//! cargo bench --bench executor -- --samples 21     # more samples
//! cargo bench --bench executor -- yield            # only cases whose name contains "yield"
//! cargo bench --bench executor -- --callgrind dinah 1000   # one task, 1,000 yields, untimed
//! ```
//!
//! Cases:
//! - `yield_many`: 200 tasks, each yielding 1,000 times.
//! - `spawn_many`: 10,000 trivial tasks spawned and run to completion, in
//!   rounds of 256 on the executors with 256 slots (dinah, embassy's pool);
//!   `LocalPool` takes all 10,000 at once.
//! - `ping_pong`: two tasks pass a token back and forth 1,000 times through
//!   two one-slot mailboxes.
//!
//! Every contender runs the same futures (`dinah::yield_now`, the same
//! mailbox) on this thread. embassy's raw executor is polled until the case's
//! tasks have counted down to zero; its driver (`benches/embassy-raw`) holds
//! the `unsafe` that driving it takes. embassy's `platform-std` executor,
//! whose pender signals a condition variable on every wake, is not a row:
//! its pender and the no-op one cannot link into one binary.
//!
//! `--callgrind CONTENDER YIELDS` runs one task yielding `YIELDS` times and
//! exits (`dinah`, `embassy`, `local-pool` await `dinah::yield_now`; with
//! `-here`, the same contenders await a yield written in this crate); `benches/callgrind.sh` runs it under callgrind at 1,000 and 101,000
//! yields, and the difference divided by 100,000 is the instructions per
//! wake+poll. `--callgrind dinah-ping-pong ROUNDS` (or `embassy-ping-pong`)
//! runs the `ping_pong` case `ROUNDS` times instead, 2,000 handoffs each:
//! `DINAH_BENCH=handoff benches/callgrind.sh` gives the instructions per
//! handoff from 1 and 11 rounds.

use std::cell::Cell;
use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use dinah::{AsyncExecutor, ReadyQueue};
use dinah_bench_embassy_raw::RawExecutor;
use futures_executor::LocalPool;
use futures_util::task::LocalSpawnExt;

mod harness;
use harness::{Contender, Options, median_of, run_case, target};
mod workloads;
use workloads::{Mailbox, ROUND_TRIPS, ping, pong, yielder, yielder_here};

const YIELD_TASKS: usize = 200;
const YIELDS: usize = 1_000;
const SPAWNS: usize = 10_000;
const SLOTS: usize = 256;

/// A fresh `'static` queue for one executor (a queue serves one, once).
fn leaked_queue<const N: usize>() -> &'static ReadyQueue<N> {
    Box::leak(Box::new(ReadyQueue::new()))
}

/// A trivial task: counts itself and is done on its first poll. `Unpin`, so
/// it can sit in a plain `Vec` slot.
struct Tally<'a>(&'a Cell<usize>);

impl Future for Tally<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        self.0.set(self.0.get() + 1);
        Poll::Ready(())
    }
}

// dinah

fn dinah_yield_many() -> Duration {
    let queue = leaked_queue::<YIELD_TASKS>();
    let mut storage: Vec<_> = (0..YIELD_TASKS)
        .map(|_| Box::pin(Some(yielder(YIELDS))))
        .collect();
    let mut executor: AsyncExecutor<'_, YIELD_TASKS> = AsyncExecutor::new(queue).unwrap();
    let start = Instant::now();
    for task in &mut storage {
        executor.try_spawn(task.as_mut()).unwrap();
    }
    while executor.tick(usize::MAX).work_remaining {}
    let elapsed = start.elapsed();
    assert!(storage.iter().all(|task| task.is_none()));
    elapsed
}

fn dinah_spawn_many() -> Duration {
    let queue = leaked_queue::<SLOTS>();
    let count = Cell::new(0);
    let mut storage: Vec<Option<Tally<'_>>> = (0..SPAWNS).map(|_| Some(Tally(&count))).collect();
    let mut executor: AsyncExecutor<'_, SLOTS> = AsyncExecutor::new(queue).unwrap();
    let start = Instant::now();
    for round in storage.chunks_mut(SLOTS) {
        for task in round {
            let task: Pin<&mut Option<Tally<'_>>> = Pin::new(task);
            executor.try_spawn(task).unwrap();
        }
        while executor.tick(usize::MAX).work_remaining {}
    }
    let elapsed = start.elapsed();
    assert_eq!(count.get(), SPAWNS);
    elapsed
}

fn dinah_ping_pong() -> Duration {
    let queue = leaked_queue::<2>();
    let (to_pong, to_ping) = (Mailbox::default(), Mailbox::default());
    let mut a = pin!(Some(ping(&to_pong, &to_ping)));
    let mut b = pin!(Some(pong(&to_pong, &to_ping)));
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(queue).unwrap();
    let start = Instant::now();
    executor.try_spawn(a.as_mut()).unwrap();
    executor.try_spawn(b.as_mut()).unwrap();
    while executor.tick(usize::MAX).work_remaining {}
    let elapsed = start.elapsed();
    assert!(a.is_none() && b.is_none());
    elapsed
}

// futures' LocalPool

fn local_pool_yield_many() -> Duration {
    let mut pool = LocalPool::new();
    let spawner = pool.spawner();
    let start = Instant::now();
    for _ in 0..YIELD_TASKS {
        spawner.spawn_local(yielder(YIELDS)).unwrap();
    }
    pool.run();
    start.elapsed()
}

fn local_pool_spawn_many() -> Duration {
    let mut pool = LocalPool::new();
    let spawner = pool.spawner();
    let count = std::rc::Rc::new(Cell::new(0));
    let start = Instant::now();
    for _ in 0..SPAWNS {
        let count = std::rc::Rc::clone(&count);
        spawner
            .spawn_local(async move {
                let tally = Tally(&count);
                tally.await;
            })
            .unwrap();
    }
    pool.run();
    let elapsed = start.elapsed();
    assert_eq!(count.get(), SPAWNS);
    elapsed
}

fn local_pool_ping_pong() -> Duration {
    let mut pool = LocalPool::new();
    let spawner = pool.spawner();
    let boxes: &'static (Mailbox, Mailbox) = Box::leak(Box::default());
    let start = Instant::now();
    spawner.spawn_local(ping(&boxes.0, &boxes.1)).unwrap();
    spawner.spawn_local(pong(&boxes.0, &boxes.1)).unwrap();
    pool.run();
    start.elapsed()
}

// embassy-executor's raw executor with a no-op pender, polled in a loop on
// this thread until the case's tasks are done.

/// Counts tasks down to zero.
#[derive(Default)]
struct Countdown {
    left: Cell<usize>,
}

impl Countdown {
    fn arrive(&self) {
        self.left.set(self.left.get() - 1);
    }

    fn done(&self) -> bool {
        self.left.get() == 0
    }
}

#[embassy_executor::task(pool_size = YIELD_TASKS)]
async fn embassy_yielder(times: usize, done: &'static Countdown) {
    yielder(times).await;
    done.arrive();
}

#[embassy_executor::task]
async fn embassy_yielder_here(times: usize, done: &'static Countdown) {
    yielder_here(times).await;
    done.arrive();
}

#[embassy_executor::task(pool_size = SLOTS)]
async fn embassy_tally(count: &'static Cell<usize>, done: &'static Countdown) {
    Tally(count).await;
    done.arrive();
}

#[embassy_executor::task]
async fn embassy_ping(boxes: &'static (Mailbox, Mailbox), done: &'static Countdown) {
    ping(&boxes.0, &boxes.1).await;
    done.arrive();
}

#[embassy_executor::task]
async fn embassy_pong(boxes: &'static (Mailbox, Mailbox), done: &'static Countdown) {
    pong(&boxes.0, &boxes.1).await;
    done.arrive();
}

/// What the embassy cases share: one leaked executor for this thread, a
/// countdown, a tally and two mailboxes (embassy's tasks take `'static`
/// arguments).
struct Embassy {
    executor: &'static RawExecutor,
    done: &'static Countdown,
    count: &'static Cell<usize>,
    boxes: &'static (Mailbox, Mailbox),
}

fn embassy() -> &'static Embassy {
    thread_local! {
        static EMBASSY: &'static Embassy = Box::leak(Box::new(Embassy {
            executor: RawExecutor::leak(),
            done: Box::leak(Box::default()),
            count: Box::leak(Box::default()),
            boxes: Box::leak(Box::default()),
        }));
    }
    EMBASSY.with(|embassy| *embassy)
}

fn embassy_yield_many() -> Duration {
    let Embassy { executor, done, .. } = *embassy();
    let spawner = executor.spawner();
    let start = Instant::now();
    done.left.set(YIELD_TASKS);
    for _ in 0..YIELD_TASKS {
        spawner.spawn(embassy_yielder(YIELDS, done).unwrap());
    }
    executor.poll_until(|| done.done());
    start.elapsed()
}

fn embassy_spawn_many() -> Duration {
    let Embassy {
        executor,
        done,
        count,
        ..
    } = *embassy();
    let spawner = executor.spawner();
    count.set(0);
    let start = Instant::now();
    while count.get() < SPAWNS {
        let round = SLOTS.min(SPAWNS - count.get());
        done.left.set(round);
        for _ in 0..round {
            spawner.spawn(embassy_tally(count, done).unwrap());
        }
        executor.poll_until(|| done.done());
    }
    let elapsed = start.elapsed();
    assert_eq!(count.get(), SPAWNS);
    elapsed
}

fn embassy_ping_pong() -> Duration {
    let Embassy {
        executor,
        done,
        boxes,
        ..
    } = *embassy();
    let spawner = executor.spawner();
    let start = Instant::now();
    done.left.set(2);
    spawner.spawn(embassy_ping(boxes, done).unwrap());
    spawner.spawn(embassy_pong(boxes, done).unwrap());
    executor.poll_until(|| done.done());
    start.elapsed()
}

// callgrind mode: one task yielding `times` times, untimed. Each
// contender's loop is written out for each yield rather than shared through
// a generic helper: a shared helper moved dinah's count by up to 6
// instructions (the measuring loop's registers), which would blur the
// comparison the two ways are for.

fn callgrind(contender: &str, times: usize) {
    match contender {
        "dinah" => {
            let queue = leaked_queue::<1>();
            let mut task = pin!(Some(yielder(times)));
            let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
            executor.try_spawn(task.as_mut()).unwrap();
            while executor.tick(usize::MAX).work_remaining {}
        }
        "embassy" => {
            let Embassy { executor, done, .. } = *embassy();
            done.left.set(1);
            executor
                .spawner()
                .spawn(embassy_yielder(times, done).unwrap());
            executor.poll_until(|| done.done());
        }
        "local-pool" => {
            let mut pool = LocalPool::new();
            pool.spawner().spawn_local(yielder(times)).unwrap();
            pool.run();
        }
        "dinah-here" => {
            let queue = leaked_queue::<1>();
            let mut task = pin!(Some(yielder_here(times)));
            let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
            executor.try_spawn(task.as_mut()).unwrap();
            while executor.tick(usize::MAX).work_remaining {}
        }
        "embassy-here" => {
            let Embassy { executor, done, .. } = *embassy();
            done.left.set(1);
            executor
                .spawner()
                .spawn(embassy_yielder_here(times, done).unwrap());
            executor.poll_until(|| done.done());
        }
        "dinah-ping-pong" => {
            for _ in 0..times {
                dinah_ping_pong();
            }
        }
        "embassy-ping-pong" => {
            for _ in 0..times {
                embassy_ping_pong();
            }
        }
        "local-pool-here" => {
            let mut pool = LocalPool::new();
            pool.spawner().spawn_local(yielder_here(times)).unwrap();
            pool.run();
        }
        other => {
            panic!("unknown contender {other}: dinah, embassy or local-pool, each also with -here")
        }
    }
}

fn main() {
    let options = Options::from_args();
    if let Some((contender, times)) = &options.callgrind {
        callgrind(contender, *times);
        return;
    }
    let samples = options.samples;
    let wanted = |name: &str| options.wants(name);

    println!("# dinah AsyncExecutor benchmarks");
    let mut targets = Vec::new();
    type Case = (
        &'static str,
        usize,
        fn() -> Duration,
        fn() -> Duration,
        fn() -> Duration,
    );
    let cases: [Case; 3] = [
        (
            "yield_many",
            YIELD_TASKS * YIELDS,
            dinah_yield_many,
            local_pool_yield_many,
            embassy_yield_many,
        ),
        (
            "spawn_many",
            SPAWNS,
            dinah_spawn_many,
            local_pool_spawn_many,
            embassy_spawn_many,
        ),
        (
            "ping_pong",
            2 * ROUND_TRIPS as usize,
            dinah_ping_pong,
            local_pool_ping_pong,
            embassy_ping_pong,
        ),
    ];
    for (name, operations, dinah, local_pool, embassy) in cases {
        if !wanted(name) {
            continue;
        }
        let mut contenders = [
            Contender::new("embassy raw executor, no-op pender", true, embassy),
            Contender::new("futures LocalPool", true, local_pool),
            Contender::new("dinah AsyncExecutor", false, dinah),
        ];
        let results = run_case(name, operations, samples, &mut contenders);
        let ratio = median_of(&results, "dinah") / median_of(&results, "embassy");
        let (description, limit) = match name {
            "yield_many" => ("yield_many: dinah / embassy (limit 1.0)", 1.0),
            "spawn_many" => ("spawn_many: dinah / embassy (limit 0.1)", 0.1),
            _ => ("ping_pong: dinah / embassy (limit 1.0)", 1.0),
        };
        targets.push((description, ratio, ratio <= limit));
    }
    println!("\n## targets (medians from the same run)");
    for (description, ratio, holds) in targets {
        target(description, ratio, holds);
    }
}
