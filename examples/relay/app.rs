//! The relay application: builds the runtime once (one executor, driven
//! from the relay's own thread, and one blocking pool), owns every task
//! (named), the budgets (the intake's capacity, the legacy permits, the
//! pool's threads, the number of connections) and shutdown.
//!
//! The executor is the deployment's choice ([`Config::workers`]): a
//! `LocalExecutor` on the relay's thread, or a `MultiExecutor` whose
//! workers run the same tasks on every core. The tasks are the same
//! futures either way; only where they are spawned differs.
// Shared with tests/relay.rs, which uses parts the example does not.
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;
use std::time::Duration;

use dinah::executor::{
    ExecutorConfig, ExecutorMonitor, LocalSpawner, MultiConfig, MultiExecutor, MultiHandle,
    ShutdownReport,
};
use dinah::io::IoFigures;
use dinah::net::{TcpListener, TcpStream};
use dinah::pool::{BlockingConfig, PoolMonitor, ShutdownPolicy};
use dinah::sync::{ChannelFigures, SharedSemaphore, mpsc as channel};
use dinah::telemetry::{Measured, Sink, TelemetryConfig, Thresholds, Verdict};
use dinah::time::TimerHandle;
use dinah::{BlockingPool, JoinHandle, LocalExecutor};

use crate::adapter::{
    ChannelIntake, DinahClock, Faults, PoolLegacy, Route, SocketAcks, TcpUpstream, ingest,
};
use crate::domain::{Error, Event, RetryPolicy};
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
    /// `None`: the tasks run on a `LocalExecutor` on the relay's thread.
    /// `Some(n)`: on a `MultiExecutor` of `n` workers.
    pub(crate) workers: Option<usize>,
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
            workers: None,
        }
    }
}

/// What watches the relay's executor from other threads.
#[derive(Clone)]
pub(crate) enum Monitor {
    Local(ExecutorMonitor),
    Multi(MultiHandle),
}

impl Monitor {
    pub(crate) fn diagnose(&self, thresholds: &Thresholds) -> Vec<Verdict> {
        match self {
            Self::Local(monitor) => monitor.diagnose(thresholds),
            Self::Multi(handle) => handle.diagnose(thresholds),
        }
    }

    pub(crate) fn io(&self) -> IoFigures {
        match self {
            Self::Local(monitor) => monitor.io(),
            Self::Multi(handle) => handle.io_figures(),
        }
    }

    /// The current-thread executor's own monitor (its per-task figures).
    ///
    /// # Panics
    ///
    /// On a multi-thread relay.
    pub(crate) fn local(&self) -> &ExecutorMonitor {
        match self {
            Self::Local(monitor) => monitor,
            Self::Multi(_) => panic!("a multi-thread relay has no per-task monitor"),
        }
    }
}

/// A running relay: its address, its monitors, its fault switches.
pub(crate) struct Relay {
    pub(crate) addr: SocketAddr,
    pub(crate) monitor: Monitor,
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
/// `telemetry` gives each part (`relay`, `legacy`) its telemetry; on a
/// multi-thread relay, the executor's task events go to `sink`, if any.
pub(crate) fn start(
    config: Config,
    telemetry: impl Fn(&str) -> TelemetryConfig + Send + 'static,
    sink: Option<Arc<dyn Sink + Send + Sync>>,
) -> Result<Relay, Error> {
    let (started, ready) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let faults = Arc::new(Faults::default());
    let intake = Arc::new(Mutex::new(ChannelFigures::default()));
    let thread = {
        let (stop, faults, intake) = (Arc::clone(&stop), Arc::clone(&faults), Arc::clone(&intake));
        thread::Builder::new()
            .name("relay".to_owned())
            .spawn(move || {
                serve(
                    &config,
                    &telemetry,
                    sink,
                    (&stop, faults, &intake),
                    &started,
                )
            })?
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
            |_| "the relay thread panicked".into(),
            |_| "the relay ended".into(),
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

type Started = Result<(SocketAddr, Monitor, PoolMonitor), Error>;

/// The executor the relay runs on, as its thread drives it.
trait Runtime {
    fn block_on<F: Future>(&self, future: F) -> F::Output;
    fn timer(&self) -> TimerHandle;
    fn monitor(&self) -> Monitor;
    fn shutdown(&self) -> ShutdownReport;
}

impl Runtime for LocalExecutor<'static, Measured> {
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        LocalExecutor::block_on(self, future)
    }
    fn timer(&self) -> TimerHandle {
        LocalExecutor::timer(self)
    }
    fn monitor(&self) -> Monitor {
        Monitor::Local(LocalExecutor::monitor(self))
    }
    fn shutdown(&self) -> ShutdownReport {
        self.shutdown_with(ShutdownPolicy::CancelPending, Duration::from_secs(1))
    }
}

impl Runtime for MultiExecutor {
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        MultiExecutor::block_on(self, future)
    }
    fn timer(&self) -> TimerHandle {
        MultiExecutor::timer(self)
    }
    fn monitor(&self) -> Monitor {
        Monitor::Multi(self.handle())
    }
    fn shutdown(&self) -> ShutdownReport {
        self.shutdown_with(ShutdownPolicy::CancelPending, Duration::from_secs(1))
    }
}

/// Spawns the connections' tasks, from the acceptor.
trait Spawn {
    fn spawn_named<F>(&self, name: &'static str, future: F)
    where
        F: Future<Output = std::io::Result<()>> + Send + 'static;
}

impl Spawn for LocalSpawner<'static, Measured> {
    fn spawn_named<F>(&self, name: &'static str, future: F)
    where
        F: Future<Output = std::io::Result<()>> + Send + 'static,
    {
        drop(self.try_spawn_named(name, future));
    }
}

impl Spawn for MultiHandle {
    fn spawn_named<F>(&self, name: &'static str, future: F)
    where
        F: Future<Output = std::io::Result<()>> + Send + 'static,
    {
        drop(self.try_spawn_named(name, future));
    }
}

/// The acceptor: takes `budget` producers, each served by a task of its
/// own that `spawner` spawns.
async fn acceptor(
    listener: TcpListener,
    spawner: impl Spawn,
    budget: usize,
    intake: channel::Sender<(Event, Route)>,
    faults: Arc<Faults>,
) -> std::io::Result<()> {
    for index in 0..budget {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let name = CONNECTION_NAMES.get(index).copied().unwrap_or("connection");
        spawner.spawn_named(
            name,
            ingest(index, stream, intake.clone(), Arc::clone(&faults)),
        );
    }
    Ok(())
}

/// The relay's parts, built before its tasks start.
struct Parts {
    pool: Arc<BlockingPool>,
    listener: TcpListener,
    upstream: TcpStream,
}

fn build<R: Runtime>(
    runtime: &R,
    config: &Config,
    telemetry: &dyn Fn(&str) -> TelemetryConfig,
) -> Result<Parts, Error> {
    let pool = BlockingPool::with_telemetry(
        BlockingConfig::new(config.legacy_threads, config.legacy_queue),
        telemetry("legacy"),
    )?;
    // Sockets register with the executor's reactor: made inside its
    // `block_on`, where any executor is entered.
    let (listener, upstream) = runtime.block_on(async {
        let listener = TcpListener::bind(config.listen)?;
        // The one error given context: which of the two sockets failed.
        let upstream = TcpStream::connect(config.upstream)
            .await
            .map_err(|error| format!("upstream: {error}"))?;
        Ok::<_, Error>((listener, upstream))
    })?;
    Ok(Parts {
        pool: Arc::new(pool),
        listener,
        upstream,
    })
}

/// The batcher: the service's loop over the dinah adapters, boxed so that
/// either executor's spawning code takes it as it is.
type Batcher = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What each executor spawns: the acceptor (over `listener`) and the
/// batcher.
struct Tasks {
    listener: TcpListener,
    budget: usize,
    intake: channel::Sender<(Event, Route)>,
    faults: Arc<Faults>,
    batcher: Batcher,
}

/// Builds the relay's parts on `runtime`, has `spawn` start its tasks, and
/// drives it from this thread (its housekeeping between runs) until the
/// stop; then shuts it down.
fn drive<R: Runtime>(
    runtime: &R,
    config: &Config,
    telemetry: &dyn Fn(&str) -> TelemetryConfig,
    (stop, faults, intake_figures): (&AtomicBool, Arc<Faults>, &Mutex<ChannelFigures>),
    started: &mpsc::Sender<Started>,
    spawn: impl FnOnce(Tasks) -> Option<JoinHandle<()>>,
) -> (Tally, ShutdownReport) {
    let parts = match build(runtime, config, telemetry) {
        Ok(parts) => parts,
        Err(error) => {
            let _ = started.send(Err(error));
            return (Tally::default(), ShutdownReport::default());
        }
    };
    let addr = parts.listener.local_addr().expect("a bound listener");
    let pool_monitor = parts.pool.monitor().expect("built with telemetry");
    let _ = started.send(Ok((addr, runtime.monitor(), pool_monitor)));

    let (intake_tx, intake_rx) = channel::named("intake", config.intake).expect("a capacity");
    // The relay's own view of its intake, for its housekeeping.
    let watch = intake_tx.clone();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let timers = runtime.timer();
    let mut upstream = TcpUpstream::new(parts.upstream, timers.clone(), config.upstream_timeout);
    let legacy = PoolLegacy {
        pool: Arc::clone(&parts.pool),
        permits: SharedSemaphore::named("legacy", config.legacy_permits),
        faults: Arc::clone(&faults),
    };
    let (policy, counts) = (config.policy, Arc::clone(&tally));
    let batcher = Box::pin(async move {
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
    });
    let batcher = spawn(Tasks {
        listener: parts.listener,
        budget: config.connections,
        intake: intake_tx,
        faults: Arc::clone(&faults),
        batcher,
    });

    // The relay thread: drives the executor (a `LocalExecutor` runs its
    // tasks here, waiting in its reactor when nothing is ready; a
    // `MultiExecutor`'s workers run them meanwhile), and does its
    // housekeeping between runs.
    let housekeeping = runtime.timer();
    // (The batcher runs until the stop: the relay's own intake sender,
    // `watch`, keeps the intake open.)
    while !stop.load(Ordering::Relaxed) {
        runtime.block_on(dinah::time::TimerDriver::sleep(
            housekeeping.clone(),
            config.housekeeping_every,
        ));
        *intake_figures.lock().unwrap() = watch.figures();
        faults.housekeeping.hold();
    }
    drop(watch);
    drop(batcher);
    let shutdown = runtime.shutdown();
    let tally = *tally.lock().unwrap_or_else(PoisonError::into_inner);
    (tally, shutdown)
}

fn serve(
    config: &Config,
    telemetry: &dyn Fn(&str) -> TelemetryConfig,
    sink: Option<Arc<dyn Sink + Send + Sync>>,
    watch: (&AtomicBool, Arc<Faults>, &Mutex<ChannelFigures>),
    started: &mpsc::Sender<Started>,
) -> (Tally, ShutdownReport) {
    let refused = |error: Error| {
        let _ = started.send(Err(error));
        (Tally::default(), ShutdownReport::default())
    };
    let Some(workers) = config.workers else {
        let executor =
            match LocalExecutor::with_telemetry(ExecutorConfig::default(), telemetry("relay")) {
                Ok(executor) => executor,
                Err(error) => return refused(error.into()),
            };
        return drive(&executor, config, telemetry, watch, started, |tasks| {
            let spawner = executor.local_spawner();
            let accepting = acceptor(
                tasks.listener,
                spawner,
                tasks.budget,
                tasks.intake,
                tasks.faults,
            );
            drop(executor.try_spawn_named("acceptor", accepting));
            executor.try_spawn_named("batcher", tasks.batcher).ok()
        });
    };
    let multi = MultiConfig {
        workers: Some(workers),
        name: "relay",
        measure: true,
        ..MultiConfig::default()
    };
    let built = match sink {
        Some(sink) => MultiExecutor::with_sink(multi, sink),
        None => MultiExecutor::with_config(multi),
    };
    let executor = match built {
        Ok(executor) => executor,
        Err(error) => return refused(error.into()),
    };
    drive(&executor, config, telemetry, watch, started, |tasks| {
        let handle = executor.handle();
        let accepting = acceptor(
            tasks.listener,
            handle.clone(),
            tasks.budget,
            tasks.intake,
            tasks.faults,
        );
        drop(handle.try_spawn_named("acceptor", accepting));
        handle.try_spawn_named("batcher", tasks.batcher).ok()
    })
}

/// The connections' task names, as verdicts and the timeline show them.
pub(crate) const CONNECTION_NAMES: [&str; 4] = [
    "connection 0",
    "connection 1",
    "connection 2",
    "connection 3",
];
