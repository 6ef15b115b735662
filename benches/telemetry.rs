//! What the `LocalExecutor`'s telemetry costs, in the same run: the
//! executor unmeasured (the default, `LocalExecutor<'_, Unmeasured>`) and
//! measured (`with_telemetry`, the default configuration: `StdClock`, 50 µs
//! long polls, no sink), beside tokio's current-thread runtime (`LocalSet`).
//!
//! ```text
//! cargo bench --bench telemetry                          # both cases, 11 samples each
//! cargo bench --bench telemetry -- --samples 21          # more samples
//! cargo bench --bench telemetry -- --callgrind measured 1000   # one task, 1,000 yields, untimed
//! ```
//!
//! Cases (tasks spawned from inside `block_on`, which then waits for them):
//! - `yield_many`: 200 tasks, each yielding 1,000 times (a wake and a poll
//!   per yield, each measured);
//! - `ping_pong`: two tasks pass a token back and forth 1,000 times through
//!   two one-slot mailboxes.
//!
//! `--callgrind CONTENDER YIELDS` (`dinah`, `measured`, `tokio`) spawns one
//! task yielding `YIELDS` times, awaits it and exits;
//! `DINAH_BENCH=telemetry ./benches/callgrind.sh` gives instructions per
//! wake+poll. The zero-cost comparison (unmeasured against a build without
//! the `telemetry` feature) is `benches/hosted.rs`'s, built both ways.

use std::cell::Cell;
use std::time::{Duration, Instant};

use dinah::executor::ExecutorConfig;
use dinah::telemetry::{Measure, TelemetryConfig};
use dinah::{LocalExecutor, yield_now};

mod harness;
use harness::{Contender, Options, median_of, run_case};
mod workloads;
use workloads::{Mailbox, ROUND_TRIPS, ping, pong, yielder};

const YIELD_TASKS: usize = 200;
const YIELDS: usize = 1_000;

fn measured() -> LocalExecutor<'static, dinah::telemetry::Measured> {
    LocalExecutor::with_telemetry(ExecutorConfig::default(), TelemetryConfig::new())
        .expect("an executor")
}

/// Yields until `count` reaches `goal`.
async fn until(count: &Cell<usize>, goal: usize) {
    while count.get() < goal {
        yield_now().await;
    }
}

/// `yield_many` on a dinah executor, measured or not.
fn dinah_yield_many<M: Measure>(executor: &LocalExecutor<'static, M>) -> Duration {
    let done: &'static Cell<usize> = Box::leak(Box::new(Cell::new(0)));
    let spawner = executor.local_spawner();
    let start = Instant::now();
    executor.block_on(async {
        for _ in 0..YIELD_TASKS {
            drop(spawner.try_spawn(async move {
                yielder(YIELDS).await;
                done.set(done.get() + 1);
            }));
        }
        until(done, YIELD_TASKS).await;
    });
    start.elapsed()
}

/// `ping_pong` on a dinah executor, measured or not.
fn dinah_ping_pong<M: Measure>(executor: &LocalExecutor<'static, M>) -> Duration {
    let boxes: &'static (Mailbox, Mailbox) = Box::leak(Box::default());
    let done: &'static Cell<usize> = Box::leak(Box::new(Cell::new(0)));
    let spawner = executor.local_spawner();
    let start = Instant::now();
    executor.block_on(async {
        drop(spawner.try_spawn(async move {
            ping(&boxes.0, &boxes.1).await;
            done.set(done.get() + 1);
        }));
        drop(spawner.try_spawn(async move {
            pong(&boxes.0, &boxes.1).await;
            done.set(done.get() + 1);
        }));
        until(done, 2).await;
    });
    start.elapsed()
}

struct Tokio(tokio::runtime::Runtime, tokio::task::LocalSet);

impl Tokio {
    fn build() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        Self(runtime, tokio::task::LocalSet::new())
    }

    fn yield_many(&self) -> Duration {
        let done: &'static Cell<usize> = Box::leak(Box::new(Cell::new(0)));
        let start = Instant::now();
        self.1.block_on(&self.0, async {
            for _ in 0..YIELD_TASKS {
                drop(tokio::task::spawn_local(async move {
                    yielder(YIELDS).await;
                    done.set(done.get() + 1);
                }));
            }
            until(done, YIELD_TASKS).await;
        });
        start.elapsed()
    }

    fn ping_pong(&self) -> Duration {
        let boxes: &'static (Mailbox, Mailbox) = Box::leak(Box::default());
        let done: &'static Cell<usize> = Box::leak(Box::new(Cell::new(0)));
        let start = Instant::now();
        self.1.block_on(&self.0, async {
            drop(tokio::task::spawn_local(async move {
                ping(&boxes.0, &boxes.1).await;
                done.set(done.get() + 1);
            }));
            drop(tokio::task::spawn_local(async move {
                pong(&boxes.0, &boxes.1).await;
                done.set(done.get() + 1);
            }));
            until(done, 2).await;
        });
        start.elapsed()
    }
}

/// callgrind mode: one spawned task yielding `times` times, awaited.
#[inline(never)]
fn callgrind(contender: &str, times: usize) {
    match contender {
        "dinah" => {
            let executor = LocalExecutor::new();
            let task = executor.try_spawn(yielder(times)).unwrap();
            executor.block_on(task).unwrap();
        }
        "measured" => {
            let executor = measured();
            let task = executor.try_spawn(yielder(times)).unwrap();
            executor.block_on(task).unwrap();
        }
        "tokio" => {
            let Tokio(runtime, local) = Tokio::build();
            local
                .block_on(&runtime, async {
                    tokio::task::spawn_local(yielder(times)).await
                })
                .unwrap();
        }
        other => panic!("unknown contender {other}: dinah, measured or tokio"),
    }
}

fn main() {
    let options = Options::from_args();
    if let Some((contender, times)) = &options.callgrind {
        // The clock's one-off calibration happens here, outside what
        // callgrind.sh counts (only `callgrind` itself).
        let _ = dinah::telemetry::StdClock::new();
        callgrind(contender, *times);
        return;
    }
    println!("# What the LocalExecutor's telemetry costs");
    let (plain, measured, tokio) = (LocalExecutor::new(), measured(), Tokio::build());
    let mut targets = Vec::new();
    type Cases<'r> = [(
        &'static str,
        usize,
        Box<dyn Fn() -> Duration + 'r>,
        Box<dyn Fn() -> Duration + 'r>,
        Box<dyn Fn() -> Duration + 'r>,
    ); 2];
    let cases: Cases<'_> = [
        (
            "yield_many",
            YIELD_TASKS * YIELDS,
            Box::new(|| dinah_yield_many(&plain)),
            Box::new(|| dinah_yield_many(&measured)),
            Box::new(|| tokio.yield_many()),
        ),
        (
            "ping_pong",
            2 * ROUND_TRIPS as usize,
            Box::new(|| dinah_ping_pong(&plain)),
            Box::new(|| dinah_ping_pong(&measured)),
            Box::new(|| tokio.ping_pong()),
        ),
    ];
    for (name, operations, plain, measured, tokio) in &cases {
        if !options.wants(name) {
            continue;
        }
        let mut contenders = vec![
            Contender::new("dinah LocalExecutor", true, plain),
            Contender::new("dinah LocalExecutor, measured", false, measured),
            Contender::new("tokio current_thread + LocalSet", true, tokio),
        ];
        let results = run_case(name, *operations, options.samples, &mut contenders);
        let cost = median_of(&results, "dinah LocalExecutor, measured")
            / median_of(&results, "dinah LocalExecutor");
        targets.push((format!("{name}: measured / unmeasured"), cost));
    }
    println!("\n## Ratios (recorded; no goal is set for them)");
    for (description, ratio) in targets {
        println!("{description}: {ratio:.3}");
    }
}
