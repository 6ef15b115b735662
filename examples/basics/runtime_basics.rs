//! dinah's main example: async tasks on a `LocalExecutor`, talking over a
//! bounded channel, paced by a timer, with a timeout and a cancellation.
//!
//! Run it with `cargo run --example runtime_basics`. It builds dinah and
//! nothing else: the benchmarks' peers and the tests' helpers live in other
//! packages of the workspace.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use dinah::LocalExecutor;
use dinah::sync::mpsc;
use dinah::task::JoinError;
use dinah::time::{self, Elapsed, MissedTicks};

const SENSORS: u32 = 3;
const READINGS: u32 = 4;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    // One executor on this thread: its tasks take turns, its timers fire
    // from the same loop, and nothing here needs `Send`.
    let executor = LocalExecutor::new();

    // A bounded channel with room for two readings: a sensor that finds it
    // full waits in line until the collector makes room.
    let (readings, mut inbox) = mpsc::channel::<(u32, u32)>(2)?;

    // Three sensor tasks, each taking a reading every 10 ms. An interval
    // keeps its schedule even when a send has to wait.
    let mut sensors = Vec::new();
    for sensor in 0..SENSORS {
        let readings = readings.clone();
        let sensor_task = async move {
            let mut every = time::interval(Duration::from_millis(10), MissedTicks::Skip)?;
            for n in 0..READINGS {
                every.tick().await;
                if readings.send((sensor, n)).await.is_err() {
                    break; // the collector has gone
                }
            }
            Ok::<_, time::ZeroPeriod>(())
        };
        let handle = executor
            .try_spawn(sensor_task)
            .map_err(|_| "an executor without a cap accepts every task")?;
        sensors.push(handle);
    }
    // The channel ends once every sender is dropped: the sensors hold the
    // clones, so this one goes.
    drop(readings);

    // The collector receives until the channel ends.
    let collector = executor
        .try_spawn(async move {
            let mut got = Vec::new();
            while let Some(reading) = inbox.recv().await {
                got.push(reading);
            }
            Ok::<_, Infallible>(got)
        })
        .map_err(|_| "accepted")?;

    // A task that would run far too long, cancelled through its handle.
    let stuck = executor
        .try_spawn(time::sleep(Duration::from_secs(3_600)))
        .map_err(|_| "accepted")?;

    let (got, ended, timed_out, cancelled) = executor.block_on(async {
        // A timeout races a future against a deadline.
        let slow = time::timeout(
            Duration::from_millis(5),
            time::sleep(Duration::from_secs(10)),
        );
        let timed_out = slow.await;
        stuck.cancel();
        // A handle resolves to the task's own output, inside the join's.
        let mut ended = Vec::new();
        for sensor in sensors {
            ended.push(sensor.await);
        }
        (collector.await, ended, timed_out, stuck.await)
    });
    if ended.iter().any(|end| !matches!(end, Ok(Ok(())))) {
        return Err(format!("a sensor failed: {ended:?}").into());
    }

    let got = got?.map_err(|never| match never {})?;
    println!(
        "collected {} readings from {SENSORS} sensors in {:?}",
        got.len(),
        started.elapsed()
    );
    for sensor in 0..SENSORS {
        let own: Vec<u32> = got.iter().filter(|r| r.0 == sensor).map(|r| r.1).collect();
        println!("  sensor {sensor}: readings {own:?}");
        if own != (0..READINGS).collect::<Vec<_>>() {
            return Err(format!("sensor {sensor}'s readings came out of order").into());
        }
    }
    println!("a 10 s sleep under a 5 ms timeout: {timed_out:?}");
    assert_eq!(timed_out, Err(Elapsed));
    println!("the hour-long task, cancelled: {cancelled:?}");
    assert_eq!(cancelled, Err(JoinError::Cancelled));

    let report = executor.shutdown();
    println!("shutdown: {} tasks left to cancel", report.left());
    Ok(())
}
