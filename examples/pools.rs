//! The two pools: a `WorkerPool` for CPU work and a `BlockingPool` for
//! blocking calls. Submissions with their handles, a full queue handing a
//! task back, a panicking task reported, a cancelled task, a batch, a
//! blocking job awaited from the `LocalExecutor`, and both shutdown policies
//! with their reports.
//!
//! Run with `cargo run --example pools`.

use std::sync::mpsc;
use std::time::Duration;

use dinah::pool::{BlockingConfig, ShutdownPolicy};
use dinah::{
    BlockingPool, BoundedQueue, CoreConfig, JoinError, LocalExecutor, SpawnError, WorkerPool,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Two persistent workers, named dinah-worker-1 and dinah-worker-2, and
    // room for two queued tasks.
    let pool = WorkerPool::new(CoreConfig::new(2)?, 2)?;
    let sum = pool
        .try_spawn(|| (1..=100u64).sum::<u64>())
        .map_err(|refused| refused.to_string())?;
    println!("task {} summed to {:?}", sum.id().get(), sum.join());

    // Hold both workers, fill the queue, and see the next task handed back.
    let (release, gate) = gates(2);
    let held: Vec<_> = gate
        .into_iter()
        .map(|(started, wait)| {
            pool.try_spawn(move || {
                started.send(()).expect("main is listening");
                wait.recv().expect("main releases");
                "held"
            })
            .unwrap_or_else(|_| unreachable!("room for the holders"))
        })
        .collect();
    release.wait_started();
    let queued = pool
        .try_spawn(|| "queued")
        .unwrap_or_else(|_| unreachable!());
    let doomed = pool
        .try_spawn(|| "never runs")
        .unwrap_or_else(|_| unreachable!());
    match pool.try_spawn(|| "one too many") {
        Err(SpawnError::Full(task)) => println!("queue full: handed back, still ours: {}", task()),
        Err(other) => println!("refused: {other}"),
        Ok(_) => unreachable!("the queue holds two"),
    }
    // Cancel a task that has not started: it will never run.
    println!("cancelled before it started: {}", doomed.cancel());
    release.open();
    for handle in held {
        println!("holder: {:?}", handle.join());
    }
    println!(
        "queued: {:?}, cancelled: {:?}",
        queued.join(),
        doomed.join()
    );

    // A panic is that task's failure; the worker carries on. (The default
    // hook would print the caught panic; keep it quiet for this one.)
    std::panic::set_hook(Box::new(|_| {}));
    let failing = pool
        .try_spawn(|| -> u32 { panic!("sensor value out of range") })
        .unwrap_or_else(|_| unreachable!());
    let failure = failing.join();
    let _ = std::panic::take_hook();
    if let Err(failure @ JoinError::Panicked(_)) = failure {
        println!("{failure} (kind {:?})", failure.kind());
    }

    // A batch: every task of a queue, results in FIFO order, no thread
    // started for it.
    let mut batch = BoundedQueue::new(8)?;
    for n in 1..=8u64 {
        batch
            .try_push(move || n * n)
            .unwrap_or_else(|_| unreachable!("sized to fit"));
    }
    println!("batch squares: {:?}", pool.run(&mut batch));
    println!("worker pool stats: {:?}", pool.stats());

    // Shut down draining: every accepted task runs first.
    let report = pool.shutdown(ShutdownPolicy::Drain);
    println!(
        "drain: completed {}, panicked {}, cancelled {}, per worker {:?}",
        report.completed,
        report.panicked,
        report.cancelled,
        report
            .workers
            .iter()
            .map(|w| (w.id.get(), w.completed))
            .collect::<Vec<_>>()
    );

    // A blocking pool: one thread at most, two queued jobs, threads that
    // leave after a second without work.
    let blocking = BlockingPool::new(BlockingConfig::new(1, 2).keep_alive(Duration::from_secs(1)))?;
    // A blocking job awaited from the local executor: the pool thread that
    // finishes it wakes the waiting task.
    let executor = LocalExecutor::new();
    let read = blocking
        .try_spawn(|| "config file contents".len())
        .unwrap_or_else(|_| unreachable!());
    let length = executor.block_on(read);
    println!("awaited a blocking job: {length:?}");

    // Shut down with jobs still queued and hand them back.
    let (release, gate) = gates(1);
    let (started, wait) = gate.into_iter().next().expect("one gate");
    let running = blocking
        .try_spawn(move || {
            started.send(()).expect("main is listening");
            wait.recv().expect("main releases");
            "finished while shutting down"
        })
        .unwrap_or_else(|_| unreachable!());
    release.wait_started();
    let pending: Vec<_> = ["first", "second"]
        .into_iter()
        .map(|name| {
            blocking
                .try_spawn(move || name)
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    let submitter = blocking.spawner();
    let releaser = std::thread::spawn(move || {
        // Let the running job finish only once the shutdown has begun.
        while !submitter.is_shut_down() {
            std::thread::yield_now();
        }
        release.open();
    });
    let report = blocking.shutdown(ShutdownPolicy::CancelPending);
    releaser.join().expect("releaser");
    println!(
        "cancel pending: completed {}, handed back {:?}",
        report.completed,
        report
            .handed_back
            .iter()
            .map(|task| task.id().get())
            .collect::<Vec<_>>()
    );
    println!("running job: {:?}", running.join());
    // Run the first handed-back job ourselves; dropping the other cancels it.
    let mut handed_back = report.handed_back.into_iter();
    if let Some(first) = handed_back.next() {
        first.run();
    }
    drop(handed_back);
    let outcomes: Vec<_> = pending.into_iter().map(|handle| handle.join()).collect();
    println!("handed-back jobs: {outcomes:?}");
    Ok(())
}

/// Releases for tasks that hold a thread until told to go.
struct Release {
    started: mpsc::Receiver<()>,
    count: usize,
    go: Vec<mpsc::Sender<()>>,
}

impl Release {
    /// Waits until every holder has started.
    fn wait_started(&self) {
        for _ in 0..self.count {
            self.started.recv().expect("holder started");
        }
    }

    /// Lets every holder finish.
    fn open(self) {
        for go in self.go {
            go.send(()).expect("holder waiting");
        }
    }
}

/// What a holder gets: a sender to say it started and a receiver to wait on.
type Holder = (mpsc::Sender<()>, mpsc::Receiver<()>);

/// `count` holders and their release.
fn gates(count: usize) -> (Release, Vec<Holder>) {
    let (started_tx, started) = mpsc::channel();
    let mut go = Vec::new();
    let mut holders = Vec::new();
    for _ in 0..count {
        let (tx, rx) = mpsc::channel();
        go.push(tx);
        holders.push((started_tx.clone(), rx));
    }
    (Release { started, count, go }, holders)
}
