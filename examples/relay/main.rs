//! A relay service, for real, on dinah alone: producers send events over TCP, the relay batches them, commits
//! each batch to an upstream store over TCP (retrying while it is busy),
//! reports every commit to a blocking legacy system through a
//! `BlockingPool` behind a semaphore, and acknowledges each event.
//!
//! Laid out by its boundaries:
//!
//! | part | owns | knows |
//! | --- | --- | --- |
//! | `domain.rs` | events, batches, commits, validation, retry classification | no runtime types |
//! | `ports.rs` | the async operations the service needs (clock, upstream, legacy, intake, acks) and the service's loop over them | domain types, futures |
//! | `adapter.rs` | sockets, timers, channels, the blocking bridge, the fault switches | dinah |
//! | `app.rs` | the runtime (built once), every task (named), the budgets, shutdown | every part |
//! | `upstream.rs` | a stand-in for the upstream store, on an executor of its own | the drills' `Gate` (`examples/support/gate.rs`) |
//!
//! ```sh
//! cargo run --example relay                       # 3 producers, 30 events each
//! cargo run --example relay -- --trace relay.json # and write the timeline
//! cargo run --example relay -- --workers 2        # on a MultiExecutor of 2 workers
//! cargo run --example relay -- --serve            # no built-in producers: serve until
//!                                                 # Ctrl-C or SIGTERM, then stop and report
//! ```
//!
//! Open the timeline (default `target/relay.trace.json`) in
//! ui.perfetto.dev: each task's polls, its waits on sockets (`io wait`),
//! timers and the intake, the legacy pool's jobs. With `--workers`, the
//! relay's tasks run on a `MultiExecutor`: the timeline has a lane per
//! worker, with its polls and the steals it made. `tests/relay.rs` runs the
//! parts alone and together (on both executors), and injects the five
//! stall causes over real sockets, each diagnosed alone.

mod adapter;
mod app;
mod domain;
mod ports;
#[path = "../support/stop.rs"]
mod stop;
mod upstream;

use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;

use dinah::telemetry::{Recorder, TelemetryConfig, Thresholds};

const PRODUCERS: usize = 3;
const EVENTS: u64 = 30;

fn main() -> Result<(), domain::Error> {
    let mut trace = "target/relay.trace.json".to_owned();
    let mut workers = None;
    let mut serve = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--serve" {
            serve = true;
            continue;
        }
        match (flag.as_str(), args.next()) {
            ("--trace", Some(path)) => trace = path,
            ("--workers", Some(n)) => workers = Some(n.parse::<usize>()?),
            _ => return Err("usage: relay [--trace PATH] [--workers N] [--serve]".into()),
        }
    }
    let timeline = Arc::new(Recorder::new(1 << 18)?);
    let (upstream_addr, store) = upstream::start()?;
    // The upstream is busy twice, so the retry policy shows.
    store.busy.store(2, std::sync::atomic::Ordering::Relaxed);
    let sink = Arc::clone(&timeline);
    let relay = app::start(
        app::Config {
            workers,
            ..app::Config::loopback(upstream_addr, PRODUCERS)
        },
        move |part| TelemetryConfig::new().with_sink(sink.source(part)),
        Some(Arc::new(timeline.source("relay"))),
    )?;
    match workers {
        Some(n) => println!(
            "relay on {} ({n} workers), upstream on {upstream_addr}",
            relay.addr
        ),
        None => println!("relay on {}, upstream on {upstream_addr}", relay.addr),
    }

    let producers: Vec<_> = (0..if serve { 0 } else { PRODUCERS as u64 })
        .map(|producer| {
            let addr = relay.addr;
            std::thread::spawn(move || -> std::io::Result<u64> {
                let mut stream = std::net::TcpStream::connect(addr)?;
                let mut acks = BufReader::new(stream.try_clone()?);
                for n in 0..EVENTS {
                    writeln!(stream, "{} reading-{producer}-{n}", producer * 1_000 + n)?;
                }
                let mut acked = 0;
                let mut line = String::new();
                while acked < EVENTS && acks.read_line(&mut line)? > 0 {
                    if line.starts_with("ack ") {
                        acked += 1;
                    }
                    line.clear();
                }
                Ok(acked)
            })
        })
        .collect();
    for (producer, handle) in producers.into_iter().enumerate() {
        let acked = handle.join().map_err(|_| "a producer panicked")??;
        println!("producer {producer}: {acked} of {EVENTS} events acknowledged");
    }
    if serve {
        println!(
            "serving: send lines `ID TEXT` to {}; Ctrl-C or SIGTERM stops it",
            relay.addr
        );
        // The relay runs on its own thread; this one only listens.
        let listener = dinah::LocalExecutor::new();
        let stopped_by = listener.block_on(async {
            let mut stop = stop::Stop::new()?;
            Ok::<_, std::io::Error>(stop.wait().await)
        })?;
        println!("{stopped_by}: stopping the relay (its batches are committed first)");
    }
    let mut verdicts = relay.monitor.diagnose(&Thresholds::default());
    verdicts.extend(relay.pool.diagnose(&Thresholds::default()));
    println!("diagnosis: {verdicts:?}");
    let figures = relay.monitor.io();
    println!(
        "reactor: {} registered, {} events, {} stale, {} would-block",
        figures.registered, figures.events, figures.stale_events, figures.would_block
    );
    let report = relay.stop();
    println!(
        "batcher: {} batches, {} events committed, {} failed; upstream took {} batches",
        report.tally.batches,
        report.tally.committed,
        report.tally.failed,
        store.batches.load(std::sync::atomic::Ordering::Relaxed)
    );
    println!(
        "shutdown: {} tasks cancelled",
        report.shutdown.cancelled_tasks
    );
    let mut file = std::fs::File::create(&trace)?;
    timeline.write_chrome_trace(&mut file)?;
    println!("timeline: {trace} (open it in ui.perfetto.dev)");
    if !serve && report.tally.committed != PRODUCERS as u64 * EVENTS {
        return Err("not every event was committed".into());
    }
    Ok(())
}
