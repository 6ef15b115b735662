//! The tools an application owns, in one small service: a bounded intake
//! channel shared by long-lived handlers, a semaphore that caps work in
//! flight, a task group that owns the handlers, calls to a CPU pool, named
//! tasks, and a shutdown that drains.
//!
//! An `ingest` task sends 24 requests into a named channel of 4 (it waits
//! whenever the channel is full). Four `handler` tasks in a group share the
//! channel's receiver: each takes the next request, waits for one of 3
//! permits, and hands its CPU work to a 2-thread pool with `call`, which
//! waits for room instead of failing when the pool's queue is full and
//! then for the job's value. Errors of every kind go up with `?` as one
//! boxed error. At the end the figures of the channel, the semaphore and
//! the pool say where the backpressure was. Ctrl-C or SIGTERM stops the
//! intake early; the requests already sent are still handled, and the
//! draining shutdown reports every task.
//!
//! Run it with `cargo run --example pipeline`.

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use dinah::executor::ExecutorConfig;
use dinah::pool::ShutdownPolicy;
use dinah::sync::{SharedSemaphore, mpsc};
use dinah::task::ChildEnd;
use dinah::telemetry::TelemetryConfig;
use dinah::{CoreConfig, LocalExecutor, WorkerPool};

#[path = "support/stop.rs"]
mod stop;
use stop::Stop;

const REQUESTS: u64 = 24;
const HANDLERS: usize = 4;

/// Every error the service can meet, carried up by `?`.
type Error = Box<dyn std::error::Error + Send + Sync>;

/// A small, deterministic piece of CPU work.
fn checksum(seed: u64) -> u64 {
    (0..20_000u64).fold(seed, |acc, n| {
        acc.rotate_left(5) ^ n.wrapping_mul(0x9E37_79B9)
    })
}

fn main() -> Result<(), Error> {
    let executor =
        LocalExecutor::with_telemetry(ExecutorConfig::default(), TelemetryConfig::new())?;
    let pool = WorkerPool::new(CoreConfig::new(2)?, 2)?;
    let (intake, requests) = mpsc::named::<u64>("intake", 4)?;
    let in_flight = SharedSemaphore::named("requests in flight", 3);

    let ingest = executor.try_spawn_named("ingest", async move {
        // Ctrl-C or SIGTERM stops the intake; what was sent still drains.
        let mut stop = Stop::new()?;
        let mut sent = 0;
        for request in 0..REQUESTS {
            // Waits while the intake is full: the producer slows down.
            let mut send = std::pin::pin!(intake.send(request));
            let stopped = std::future::poll_fn(|cx| {
                if let Poll::Ready(kind) = stop.poll_stop(cx) {
                    return Poll::Ready(Some(kind));
                }
                send.as_mut().poll(cx).map(|_| None)
            })
            .await;
            if let Some(kind) = stopped {
                println!("{kind}: no more requests; draining the {sent} sent");
                break;
            }
            sent += 1;
        }
        Ok::<_, Error>((sent, intake.figures()))
    })?;

    let (cpu, permits) = (pool.spawner(), in_flight.clone());
    let requests = requests.shared();
    let mut handlers = executor.local_spawner().group::<Result<u64, Error>>();
    for _ in 0..HANDLERS {
        let (requests, permits, cpu) = (requests.clone(), permits.clone(), cpu.clone());
        handlers
            .spawn_named("handler", async move {
                let mut total = 0u64;
                while let Some(request) = requests.recv().await {
                    let _permit = permits.acquire().await?;
                    // Waits for room in the pool, then for the value.
                    total = total.wrapping_add(cpu.call(move || checksum(request)).await?);
                }
                Ok(total)
            })
            .map_err(|_| "the executor refused a handler")?;
    }
    drop(requests);

    let totals = executor.block_on(handlers.try_join_all())?;
    let total = totals.into_iter().fold(0u64, u64::wrapping_add);
    let (sent, intake) = executor.block_on(ingest)??;
    let expected = (0..sent)
        .map(checksum)
        .fold(0u64, |acc, sum| acc.wrapping_add(sum));
    println!("{sent} requests handled; checksum {total:#x} (expected {expected:#x})");
    assert_eq!(total, expected);

    println!(
        "channel {:?}: {} sent, high water {} of {}, at most {} senders waiting",
        intake.name.unwrap_or("?"),
        intake.sent,
        intake.high_water,
        intake.capacity,
        intake.peak_waiting
    );
    let semaphore = in_flight.figures();
    println!(
        "semaphore {:?}: {} acquisitions, at most {} waiting at once",
        semaphore.name.unwrap_or("?"),
        semaphore.acquired,
        semaphore.peak_waiting
    );
    let stats = pool.stats();
    println!(
        "cpu pool: {} accepted, {} refused (waiting submits are never refused for room)",
        stats.accepted, stats.rejected
    );
    let report = executor.shutdown_with(ShutdownPolicy::Drain, Duration::from_millis(100));
    let ended: Vec<(&str, ChildEnd)> = report
        .tasks
        .iter()
        .map(|task| (task.name.unwrap_or("unnamed"), task.end))
        .collect();
    println!("shutdown (drain): tasks alive when it began: {ended:?}");
    pool.shutdown(ShutdownPolicy::Drain);
    Ok(())
}
