//! The core `AsyncExecutor` side by side with embassy-executor (its std
//! platform executor) and futures' `LocalPool`, in the same run.
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
//! mailbox). embassy's executor never returns, so it runs on a thread of its
//! own for the whole benchmark: a controller task there takes one command at
//! a time, runs the case and times it inside that thread.
//!
//! `--callgrind CONTENDER YIELDS` runs one task yielding `YIELDS` times and
//! exits (`dinah`, `embassy`, `local-pool` await `dinah::yield_now`; with
//! `-here`, the same contenders await a yield written in this crate); `benches/callgrind.sh` runs it under callgrind at 1,000 and 101,000
//! yields, and the difference divided by 100,000 is the instructions per
//! wake+poll.

use std::cell::Cell;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use dinah::{AsyncExecutor, ReadyQueue};
use embassy_executor::Spawner;
use futures_executor::LocalPool;
use futures_util::task::LocalSpawnExt;

mod harness;
use harness::{Contender, Options, median_of, run_case, target};
mod workloads;
use workloads::{Mailbox, ROUND_TRIPS, park, ping, pong, yielder, yielder_here};

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

// embassy-executor (std platform), on a thread of its own

#[derive(Clone, Copy, Debug)]
enum Command {
    YieldMany,
    SpawnMany,
    PingPong,
    Yield(usize),
    YieldHere(usize),
}

/// Commands in, elapsed times out.
struct Rig {
    command: Mutex<Option<Command>>,
    controller: Mutex<Option<Waker>>,
    replies: Mutex<mpsc::Sender<Duration>>,
}

/// Counts tasks down to zero and wakes the waiter there.
#[derive(Default)]
struct Countdown {
    left: Cell<usize>,
    waiter: Cell<Option<Waker>>,
}

impl Countdown {
    fn arrive(&self) {
        self.left.set(self.left.get() - 1);
        if self.left.get() == 0
            && let Some(waker) = self.waiter.take()
        {
            waker.wake();
        }
    }

    async fn wait(&self) {
        poll_fn(|cx| {
            if self.left.get() == 0 {
                Poll::Ready(())
            } else {
                park(&self.waiter, cx.waker());
                Poll::Pending
            }
        })
        .await;
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

#[embassy_executor::task]
async fn controller(spawner: Spawner, rig: &'static Rig) {
    let done: &'static Countdown = Box::leak(Box::default());
    let count: &'static Cell<usize> = Box::leak(Box::default());
    let boxes: &'static (Mailbox, Mailbox) = Box::leak(Box::default());
    loop {
        let command = poll_fn(|cx| match rig.command.lock().unwrap().take() {
            Some(command) => Poll::Ready(command),
            None => {
                *rig.controller.lock().unwrap() = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
        let start = Instant::now();
        match command {
            Command::YieldMany => {
                done.left.set(YIELD_TASKS);
                for _ in 0..YIELD_TASKS {
                    spawner.spawn(embassy_yielder(YIELDS, done).unwrap());
                }
                done.wait().await;
            }
            Command::SpawnMany => {
                count.set(0);
                for _ in 0..SPAWNS / SLOTS + 1 {
                    let round = SLOTS.min(SPAWNS - count.get());
                    if round == 0 {
                        break;
                    }
                    done.left.set(round);
                    for _ in 0..round {
                        spawner.spawn(embassy_tally(count, done).unwrap());
                    }
                    done.wait().await;
                }
                assert_eq!(count.get(), SPAWNS);
            }
            Command::PingPong => {
                done.left.set(2);
                spawner.spawn(embassy_ping(boxes, done).unwrap());
                spawner.spawn(embassy_pong(boxes, done).unwrap());
                done.wait().await;
            }
            Command::Yield(times) => {
                done.left.set(1);
                spawner.spawn(embassy_yielder(times, done).unwrap());
                done.wait().await;
            }
            Command::YieldHere(times) => {
                done.left.set(1);
                spawner.spawn(embassy_yielder_here(times, done).unwrap());
                done.wait().await;
            }
        }
        rig.replies.lock().unwrap().send(start.elapsed()).unwrap();
    }
}

/// The embassy executor thread and the way to reach it.
struct Embassy {
    rig: &'static Rig,
    replies: Mutex<mpsc::Receiver<Duration>>,
}

fn embassy() -> &'static Embassy {
    static EMBASSY: OnceLock<Embassy> = OnceLock::new();
    EMBASSY.get_or_init(|| {
        let (sender, receiver) = mpsc::channel();
        let rig: &'static Rig = Box::leak(Box::new(Rig {
            command: Mutex::new(None),
            controller: Mutex::new(None),
            replies: Mutex::new(sender),
        }));
        thread::Builder::new()
            .name("embassy-executor".into())
            .spawn(move || {
                let executor = Box::leak(Box::new(embassy_executor::Executor::new()));
                executor.run(|spawner| spawner.spawn(controller(spawner, rig).unwrap()))
            })
            .expect("the embassy thread starts");
        Embassy {
            rig,
            replies: Mutex::new(receiver),
        }
    })
}

/// Runs one case on the embassy thread and returns its time as measured
/// there.
fn on_embassy(command: Command) -> Duration {
    let embassy = embassy();
    *embassy.rig.command.lock().unwrap() = Some(command);
    if let Some(waker) = embassy.rig.controller.lock().unwrap().take() {
        waker.wake();
    }
    embassy.replies.lock().unwrap().recv().unwrap()
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
            on_embassy(Command::Yield(times));
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
            on_embassy(Command::YieldHere(times));
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
        Command,
    );
    let cases: [Case; 3] = [
        (
            "yield_many",
            YIELD_TASKS * YIELDS,
            dinah_yield_many,
            local_pool_yield_many,
            Command::YieldMany,
        ),
        (
            "spawn_many",
            SPAWNS,
            dinah_spawn_many,
            local_pool_spawn_many,
            Command::SpawnMany,
        ),
        (
            "ping_pong",
            2 * ROUND_TRIPS as usize,
            dinah_ping_pong,
            local_pool_ping_pong,
            Command::PingPong,
        ),
    ];
    for (name, operations, dinah, local_pool, command) in cases {
        if !wanted(name) {
            continue;
        }
        let mut contenders = [
            Contender::new("embassy-executor (std)", true, move || on_embassy(command)),
            Contender::new("futures LocalPool", true, local_pool),
            Contender::new("dinah AsyncExecutor", false, dinah),
        ];
        let results = run_case(name, operations, samples, &mut contenders);
        let ratio = median_of(&results, "dinah") / median_of(&results, "embassy");
        let (description, limit) = match name {
            "yield_many" => ("yield_many: dinah / embassy (limit 1.0)", 1.0),
            "spawn_many" => ("spawn_many: dinah / embassy (limit 0.1)", 0.1),
            _ => ("ping_pong: dinah / embassy (reported)", f64::INFINITY),
        };
        targets.push((description, ratio, ratio <= limit));
    }
    println!("\n## targets (medians from the same run)");
    for (description, ratio, holds) in targets {
        target(description, ratio, holds);
    }
}
