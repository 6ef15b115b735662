//! The tools an application owns, in one small service: a bounded intake
//! channel, a semaphore that caps work in flight, a task group that owns
//! the request handlers, waiting submits to a CPU pool, named tasks, and a
//! shutdown that drains.
//!
//! An `ingest` task sends 24 requests into a named channel of 4 (it waits
//! whenever the channel is full). A `dispatch` task takes each request,
//! waits for one of 3 permits, and starts a handler in its group; each
//! handler hands its CPU work to a 2-thread pool with `spawn(..).await`,
//! which waits for room instead of failing when the pool's queue is full.
//! At the end the figures of the channel, the semaphore and the pool say
//! where the backpressure was. Ctrl-C or SIGTERM stops the intake early;
//! the requests already sent are still handled, and the draining shutdown
//! reports every task.
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

/// A small, deterministic piece of CPU work.
fn checksum(seed: u64) -> u64 {
    (0..20_000u64).fold(seed, |acc, n| {
        acc.rotate_left(5) ^ n.wrapping_mul(0x9E37_79B9)
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let executor =
        LocalExecutor::with_telemetry(ExecutorConfig::default(), TelemetryConfig::new())?;
    let cpu = WorkerPool::new(CoreConfig::new(2)?, 2)?;
    let (intake, mut requests) = mpsc::named::<u64>("intake", 4)?;
    let in_flight = SharedSemaphore::named("requests in flight", 3);

    let ingest = executor.try_spawn_named("ingest", async move {
        // Ctrl-C or SIGTERM stops the intake; what was sent still drains.
        let mut stop = Stop::new().map_err(|e| e.to_string())?;
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
        Ok::<u64, String>(sent)
    })?;

    let spawner = cpu.spawner();
    let permits = in_flight.clone();
    let local = executor.local_spawner();
    let dispatch = executor.try_spawn_named("dispatch", async move {
        let mut handlers = local.group::<Result<u64, String>>();
        while let Some(request) = requests.recv().await {
            let permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            let cpu = spawner.clone();
            handlers
                .spawn_named("handler", async move {
                    // Waits for room in the pool's queue instead of failing.
                    let job = cpu
                        .spawn(move || checksum(request))
                        .await
                        .map_err(|refused| format!("refused: {refused:?}"))?;
                    let sum = job.await.map_err(|e| e.to_string())?;
                    drop(permit);
                    Ok(sum)
                })
                .map_err(|_| "the executor refused a handler")?;
        }
        let mut total = 0u64;
        for (_, result) in handlers.join_all().await {
            total = total.wrapping_add(result.map_err(|e| e.to_string())??);
        }
        Ok::<_, String>((total, requests.figures()))
    })?;

    let (total, intake) = executor.block_on(dispatch)??;
    let sent = executor.block_on(ingest)??;
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
    let stats = cpu.stats();
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
    cpu.shutdown(ShutdownPolicy::Drain);
    Ok(())
}
