//! The relay application: builds the runtime once (one executor on its own
//! thread, one blocking pool), owns every task (named), the budgets (the
//! intake's capacity, the legacy permits, the pool's threads, the number of
//! connections) and shutdown.
// Shared with tests/relay.rs, which uses parts the example does not.
#![allow(dead_code)]

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use dinah::executor::{ExecutorConfig, ExecutorMonitor, ShutdownReport};
use dinah::net::{TcpListener, TcpStream};
use dinah::pool::{BlockingConfig, PoolMonitor, ShutdownPolicy};
use dinah::sync::{ChannelFigures, SharedSemaphore, mpsc as channel};
use dinah::telemetry::TelemetryConfig;
use dinah::{BlockingPool, LocalExecutor};

use crate::adapter::{
    ChannelIntake, DinahClock, Faults, PoolLegacy, SocketAcks, TcpUpstream, ingest,
};
use crate::domain::RetryPolicy;
use crate::ports::{Policy, Tally, run};

/// The deployment's choices.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// Where producers connect (port 0: one the OS picks).
    pub(crate) listen: SocketAddr,
    /// The upstream store.
    pub(crate) upstream: SocketAddr,
    /// Producers served; the acceptor ends after this many.
    pub(crate) connections: usize,
    /// Events waiting for the batcher at most (then producers wait).
    pub(crate) intake: usize,
    /// Legacy calls at once at most.
    pub(crate) legacy_permits: u32,
    /// The blocking pool's threads and queue.
    pub(crate) legacy_threads: usize,
    pub(crate) legacy_queue: usize,
    pub(crate) policy: Policy,
    /// How long the batcher waits for the upstream's reply.
    pub(crate) upstream_timeout: Duration,
    /// How often the relay thread does its housekeeping between runs.
    pub(crate) housekeeping_every: Duration,
}

impl Config {
    /// The example's deployment, on loopback: `connections` producers, an
    /// intake of 8, 4 legacy calls at once on 1 thread (8 queued),
    /// batches of up to 4 gathered for 1 ms, 4 attempts from 1 ms of
    /// backoff, 30 s for the upstream's reply, housekeeping every 1 ms.
    pub(crate) fn loopback(upstream: SocketAddr, connections: usize) -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            upstream,
            connections,
            intake: 8,
            legacy_permits: 4,
            legacy_threads: 1,
            legacy_queue: 8,
            policy: Policy {
                max_batch: 4,
                linger: Duration::from_millis(1),
                retry: RetryPolicy {
                    attempts: 4,
                    first_backoff: Duration::from_millis(1),
                },
            },
            upstream_timeout: Duration::from_secs(30),
            housekeeping_every: Duration::from_millis(1),
        }
    }
}

/// A running relay: its address, its monitors, its fault switches.
pub(crate) struct Relay {
    pub(crate) addr: SocketAddr,
    pub(crate) monitor: ExecutorMonitor,
    pub(crate) pool: PoolMonitor,
    pub(crate) faults: Arc<Faults>,
    /// The intake's figures, as the relay thread last published them (at
    /// each housekeeping).
    intake: Arc<Mutex<ChannelFigures>>,
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<(Tally, ShutdownReport)>,
}

/// What the relay did, and how its shutdown went.
pub(crate) struct Report {
    pub(crate) tally: Tally,
    pub(crate) shutdown: ShutdownReport,
}

/// Starts the relay on a thread of its own.
///
/// # Errors
///
/// Binding, connecting to the upstream, or building the runtime.
pub(crate) fn start(
    config: Config,
    telemetry: impl Fn(&str) -> TelemetryConfig + Send + 'static,
) -> Result<Relay, String> {
    let (started, ready) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let faults = Arc::new(Faults::default());
    let intake = Arc::new(Mutex::new(ChannelFigures::default()));
    let thread = {
        let (stop, faults, intake) = (Arc::clone(&stop), Arc::clone(&faults), Arc::clone(&intake));
        thread::Builder::new()
            .name("relay".to_owned())
            .spawn(move || serve(&config, &telemetry, &stop, faults, &intake, &started))
            .map_err(|e| e.to_string())?
    };
    match ready.recv() {
        Ok(Ok((addr, monitor, pool))) => Ok(Relay {
            addr,
            monitor,
            pool,
            faults,
            intake,
            stop,
            thread,
        }),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(thread.join().map_or_else(
            |_| "the relay thread panicked".to_owned(),
            |_| "the relay ended".to_owned(),
        )),
    }
}

impl Relay {
    /// The intake's figures at the relay's last housekeeping.
    pub(crate) fn intake(&self) -> ChannelFigures {
        *self.intake.lock().unwrap()
    }

    /// Stops the relay: its run loop ends, every task still there is
    /// cancelled (named in the report), the blocking pool is drained.
    pub(crate) fn stop(self) -> Report {
        self.stop.store(true, Ordering::Relaxed);
        self.faults.housekeeping.open();
        self.faults.legacy.open();
        let (tally, shutdown) = self.thread.join().expect("the relay thread");
        Report { tally, shutdown }
    }
}

type Started = Result<(SocketAddr, ExecutorMonitor, PoolMonitor), String>;

fn serve(
    config: &Config,
    telemetry: &dyn Fn(&str) -> TelemetryConfig,
    stop: &AtomicBool,
    faults: Arc<Faults>,
    intake_figures: &Mutex<ChannelFigures>,
    started: &mpsc::Sender<Started>,
) -> (Tally, ShutdownReport) {
    let built = (|| {
        let executor = LocalExecutor::with_telemetry(ExecutorConfig::default(), telemetry("relay"))
            .map_err(|e| e.to_string())?;
        let pool = BlockingPool::with_telemetry(
            BlockingConfig::new(config.legacy_threads, config.legacy_queue),
            telemetry("legacy"),
        )
        .map_err(|e| e.to_string())?;
        let listener = TcpListener::bind(config.listen).map_err(|e| e.to_string())?;
        Ok::<_, String>((executor, pool, listener))
    })();
    let (executor, pool, listener) = match built {
        Ok(built) => built,
        Err(error) => {
            let _ = started.send(Err(error));
            return (Tally::default(), ShutdownReport::default());
        }
    };
    let pool = Arc::new(pool);
    let upstream = match executor.block_on(TcpStream::connect(config.upstream)) {
        Ok(upstream) => upstream,
        Err(error) => {
            let _ = started.send(Err(format!("upstream: {error}")));
            return (Tally::default(), ShutdownReport::default());
        }
    };
    let addr = listener.local_addr().expect("a bound listener");
    let pool_monitor = pool.monitor().expect("built with telemetry");
    let _ = started.send(Ok((addr, executor.monitor(), pool_monitor)));

    let (intake_tx, intake_rx) = channel::named("intake", config.intake).expect("a capacity");
    let spawner = executor.local_spawner();
    let budget = config.connections;
    // The relay's own view of its intake, for its housekeeping.
    let watch = intake_tx.clone();
    let acceptor_faults = Arc::clone(&faults);
    drop(
        executor
            .try_spawn_named("acceptor", async move {
                for index in 0..budget {
                    let (stream, _) = listener.accept().await?;
                    let _ = stream.set_nodelay(true);
                    let name = CONNECTION_NAMES.get(index).copied().unwrap_or("connection");
                    drop(spawner.try_spawn_named(
                        name,
                        ingest(
                            index,
                            stream,
                            intake_tx.clone(),
                            Arc::clone(&acceptor_faults),
                        ),
                    ));
                }
                Ok::<(), std::io::Error>(())
            })
            .unwrap_or_else(|_| unreachable!("an empty executor has room")),
    );
    let timers = executor.timer();
    let mut upstream = TcpUpstream::new(upstream, timers.clone(), config.upstream_timeout);
    let legacy = PoolLegacy {
        pool: Arc::clone(&pool),
        permits: SharedSemaphore::named("legacy", config.legacy_permits),
        faults: Arc::clone(&faults),
    };
    let policy = config.policy;
    let tally = Rc::new(Cell::new(Tally::default()));
    let counts = Rc::clone(&tally);
    let batcher = executor
        .try_spawn_named("batcher", async move {
            let mut intake = ChannelIntake(intake_rx);
            let clock = DinahClock(timers);
            run(
                &mut intake,
                &mut upstream,
                &legacy,
                &mut SocketAcks,
                &clock,
                policy,
                &counts,
            )
            .await;
        })
        .unwrap_or_else(|_| unreachable!("an empty executor has room"));

    // The relay thread: runs the executor (waiting in its reactor when
    // nothing is ready), and does its housekeeping between runs.
    let housekeeping = executor.timer();
    // (The batcher runs until the stop: the relay's own intake sender,
    // `watch`, keeps the intake open.)
    while !stop.load(Ordering::Relaxed) {
        executor.block_on(dinah::time::TimerDriver::sleep(
            housekeeping.clone(),
            config.housekeeping_every,
        ));
        *intake_figures.lock().unwrap() = watch.figures();
        faults.housekeeping.hold();
    }
    drop(watch);
    drop(batcher);
    let shutdown = executor.shutdown_with(ShutdownPolicy::CancelPending, Duration::from_secs(1));
    (tally.get(), shutdown)
}

/// The connections' task names, as verdicts and the timeline show them.
pub(crate) const CONNECTION_NAMES: [&str; 4] = [
    "connection 0",
    "connection 1",
    "connection 2",
    "connection 3",
];
