//! A small relay service that stalls, five different ways, and the
//! diagnosis that tells the five apart.
//!
//! Three connections each receive messages on a `LocalExecutor` thread (the
//! relay). For every message a connection asks a `WorkerPool` for a checksum
//! (a bounded queue the application owns) and then persists the message on
//! a `BlockingPool` (the "disk"). Each fault switch breaks one handoff:
//!
//! | switch | what breaks | what `diagnose()` says |
//! | --- | --- | --- |
//! | `lost-wake` | connection 1's mailbox forgets to wake its reader | `NoWake` for that task |
//! | `ready-delay` | the relay thread does slow housekeeping between ticks | `ReadyButDelayed` |
//! | `blocked-worker` | connection 2 makes a blocking call inside its poll | `WorkerBlocked` for that task |
//! | `blocking-saturated` | the disk hangs, so persist jobs pile up | `BlockingSaturated` |
//! | `admission-full` | a bulk job floods the checksum queue | `AdmissionFull` |
//! | `healthy` | nothing | nothing |
//!
//! ```sh
//! cargo run --example relay_stall                    # every case, real time
//! cargo run --example relay_stall -- blocked-worker  # one case
//! cargo run --example relay_stall -- all --trace relay_stall.json
//! ```
//!
//! Every case records into one timeline, written as Chrome trace-event JSON
//! (default `target/relay_stall.trace.json`); open it in ui.perfetto.dev.
//! The tests run the same cases on a manual clock (`tests/relay_stall.rs`).

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

#[path = "support/gate.rs"]
mod gate;
use gate::Gate;
use std::task::{Poll, Waker};
use std::thread;
use std::time::Duration;

use dinah::executor::{ExecutorConfig, ExecutorMonitor};
use dinah::pool::{BlockingConfig, PoolMonitor};
use dinah::telemetry::{Recorder, TaskPhase, TelemetryConfig, Thresholds, Verdict};
use dinah::time;
use dinah::{BlockingPool, CoreConfig, LocalExecutor, SpawnError, TaskId, WorkerPool};

/// The relay's connections.
pub(crate) const CONNECTIONS: usize = 3;
/// Their tasks' names, as verdicts and the timeline show them.
const NAMES: [&str; CONNECTIONS] = ["connection 0", "connection 1", "connection 2"];
/// How long a connection waits for its disk write (dinah's timer, on the
/// relay's executor): far longer than any case holds the disk, so the
/// cases' verdicts do not depend on it.
const DISK_TIMEOUT: Duration = Duration::from_secs(30);

/// One fault to inject, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Case {
    /// Nothing is broken.
    Healthy,
    /// Connection 1's mailbox stores messages without waking its reader.
    LostWake,
    /// The relay thread stops ticking for a while.
    ReadyDelay,
    /// Connection 2 blocks its thread inside a poll.
    BlockedWorker,
    /// The disk hangs; persist jobs queue up on the blocking pool.
    BlockingSaturated,
    /// A bulk job fills the checksum queue; the relay is refused.
    AdmissionFull,
}

impl Case {
    /// Every case, healthy first.
    pub(crate) const ALL: [Case; 6] = [
        Case::Healthy,
        Case::LostWake,
        Case::ReadyDelay,
        Case::BlockedWorker,
        Case::BlockingSaturated,
        Case::AdmissionFull,
    ];

    /// The case's switch on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Case::Healthy => "healthy",
            Case::LostWake => "lost-wake",
            Case::ReadyDelay => "ready-delay",
            Case::BlockedWorker => "blocked-worker",
            Case::BlockingSaturated => "blocking-saturated",
            Case::AdmissionFull => "admission-full",
        }
    }
}

/// A connection's inbox: an async queue of messages.
#[derive(Default)]
struct Mailbox {
    inner: Mutex<(VecDeque<u64>, Option<Waker>)>,
    /// The fault: store messages without waking the reader.
    loses_wakes: AtomicBool,
}

impl Mailbox {
    fn send(&self, message: u64) {
        let waker = {
            let mut inner = self.inner.lock().unwrap();
            inner.0.push_back(message);
            inner.1.take()
        };
        if let Some(waker) = waker
            && !self.loses_wakes.load(Ordering::Relaxed)
        {
            waker.wake();
        }
    }

    fn recv(&self) -> impl Future<Output = u64> + '_ {
        poll_fn(|cx| {
            let mut inner = self.inner.lock().unwrap();
            match inner.0.pop_front() {
                Some(message) => Poll::Ready(message),
                None => {
                    inner.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }
}

/// A count the relay thread can await.
#[derive(Default)]
struct Progress(Mutex<(u64, Option<Waker>)>);

impl Progress {
    fn bump(&self) {
        let waker = {
            let mut inner = self.0.lock().unwrap();
            inner.0 += 1;
            inner.1.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn reached(&self, target: u64) -> impl Future<Output = ()> + '_ {
        poll_fn(move |cx| {
            let mut inner = self.0.lock().unwrap();
            if inner.0 >= target {
                Poll::Ready(())
            } else {
                inner.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}

/// What the relay's tasks and the driver share.
struct Shared {
    mailboxes: Vec<Mailbox>,
    workers: WorkerPool,
    disk: BlockingPool,
    processed: Progress,
    /// Checksums refused by the full queue (the relay goes on without).
    refused: AtomicU64,
    /// Disk writes abandoned after `DISK_TIMEOUT`.
    disk_timeouts: AtomicU64,
    /// Connection 2 blocks inside its poll while this is set.
    block_in_poll: AtomicBool,
    poll_gate: Gate,
    disk_gate: Gate,
    checksum_gate: Gate,
    housekeeping: Gate,
}

enum Command {
    /// Process until `processed` reaches the target, then say so.
    Run(u64),
    /// Housekeeping outside the executor: hold at the gate.
    Housekeeping,
    Stop,
}

/// A running relay: its thread, its pools, and the handles that watch them.
pub(crate) struct Relay {
    shared: Arc<Shared>,
    commands: mpsc::Sender<Command>,
    done: mpsc::Receiver<()>,
    monitor: ExecutorMonitor,
    tasks: Vec<TaskId>,
    workers: PoolMonitor,
    disk: PoolMonitor,
    thread: Option<thread::JoinHandle<()>>,
    sent: u64,
    /// Messages that will never be processed (lost wakes).
    lost: u64,
}

fn checksum(message: u64) -> u64 {
    (0..64).fold(message, |sum, n| sum.rotate_left(5) ^ n)
}

async fn connection(index: usize, shared: Arc<Shared>) {
    loop {
        let message = shared.mailboxes[index].recv().await;
        if index == 2 && shared.block_in_poll.load(Ordering::Relaxed) {
            // A synchronous call on the executor's thread.
            shared.poll_gate.hold();
        }
        let gate = Arc::clone(&shared);
        let sum = match shared.workers.try_spawn(move || {
            gate.checksum_gate.hold();
            checksum(message)
        }) {
            Ok(handle) => handle.await.ok(),
            Err(SpawnError::Full(_)) => {
                // Backpressure: relay without the checksum.
                shared.refused.fetch_add(1, Ordering::Relaxed);
                None
            }
            Err(_) => None,
        };
        let disk = Arc::clone(&shared);
        if let Ok(handle) = shared.disk.try_spawn(move || {
            disk.disk_gate.hold();
            sum
        }) {
            // A write that takes longer than this is abandoned (the job
            // still finishes on its thread); the message counts as relayed.
            if time::timeout(DISK_TIMEOUT, handle).await.is_err() {
                shared.disk_timeouts.fetch_add(1, Ordering::Relaxed);
            }
        }
        shared.processed.bump();
    }
}

impl Relay {
    /// Starts a relay whose runtimes measure with `telemetry(part)`, for
    /// `part` in `relay`, `checksum` and `disk`.
    pub(crate) fn start(lost_wake: bool, telemetry: &dyn Fn(&str) -> TelemetryConfig) -> Relay {
        let shared = Arc::new(Shared {
            mailboxes: (0..CONNECTIONS).map(|_| Mailbox::default()).collect(),
            workers: WorkerPool::with_telemetry(
                CoreConfig::new(1).unwrap(),
                3,
                telemetry("checksum"),
            )
            .unwrap(),
            disk: BlockingPool::with_telemetry(BlockingConfig::new(1, 3), telemetry("disk"))
                .unwrap(),
            processed: Progress::default(),
            refused: AtomicU64::new(0),
            disk_timeouts: AtomicU64::new(0),
            block_in_poll: AtomicBool::new(false),
            poll_gate: Gate::default(),
            disk_gate: Gate::default(),
            checksum_gate: Gate::default(),
            housekeeping: Gate::default(),
        });
        shared.mailboxes[1]
            .loses_wakes
            .store(lost_wake, Ordering::Relaxed);
        let (commands, inbox) = mpsc::channel();
        let (ready, done) = mpsc::channel();
        let (started, start) = mpsc::channel();
        let relay_config = telemetry("relay");
        let thread = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("relay".into())
                .spawn(move || {
                    let executor =
                        LocalExecutor::with_telemetry(ExecutorConfig::default(), relay_config)
                            .unwrap();
                    let shared = Rc::new(shared);
                    // The relay owns its connections: one group, shut down
                    // together when the relay stops.
                    let mut connections = executor.group::<()>();
                    let tasks: Vec<TaskId> = (0..CONNECTIONS)
                        .map(|index| {
                            connections
                                .spawn_named(NAMES[index], connection(index, Arc::clone(&shared)))
                                .unwrap_or_else(|_| unreachable!("the executor has no task cap"))
                        })
                        .collect();
                    executor.tick(usize::MAX);
                    started.send((executor.monitor(), tasks)).unwrap();
                    for command in inbox {
                        match command {
                            Command::Run(target) => {
                                executor.block_on(shared.processed.reached(target));
                                ready.send(()).unwrap();
                            }
                            Command::Housekeeping => shared.housekeeping.hold(),
                            Command::Stop => break,
                        }
                    }
                    let report = executor.block_on(connections.shutdown(Duration::from_secs(1)));
                    debug_assert_eq!(report.children.len(), CONNECTIONS);
                })
                .unwrap()
        };
        let (monitor, tasks) = start.recv().unwrap();
        Relay {
            workers: shared.workers.monitor().unwrap(),
            disk: shared.disk.monitor().unwrap(),
            shared,
            commands,
            done,
            monitor,
            tasks,
            thread: Some(thread),
            sent: 0,
            lost: 0,
        }
    }

    /// One message to every connection; the relay starts on them.
    fn send_round(&mut self) {
        self.send_round_after(None, |_| {});
    }

    /// One message to every connection. With `first`, that connection's
    /// message goes alone, and the others' only once `arrived` returns (it
    /// waits until that message holds the relay's thread): they arrive
    /// behind it, however fast the pools are.
    fn send_round_after(&mut self, first: Option<usize>, arrived: impl FnOnce(&Self)) {
        let message = self.sent;
        let losing = self
            .shared
            .mailboxes
            .iter()
            .filter(|mailbox| mailbox.loses_wakes.load(Ordering::Relaxed))
            .count() as u64;
        self.sent += CONNECTIONS as u64;
        self.lost += losing;
        if let Some(first) = first {
            self.shared.mailboxes[first].send(message);
        }
        self.commands
            .send(Command::Run(self.sent - self.lost))
            .unwrap();
        arrived(self);
        for (index, mailbox) in self.shared.mailboxes.iter().enumerate() {
            if Some(index) != first {
                mailbox.send(message);
            }
        }
    }

    /// Waits until the relay has processed every message it can.
    fn finish_round(&self) {
        self.done.recv().unwrap();
    }

    /// One message to every connection, processed.
    pub(crate) fn round(&mut self) {
        self.send_round();
        self.finish_round();
    }

    /// Every verdict of the relay's executor and both pools.
    pub(crate) fn diagnose(&self, thresholds: &Thresholds) -> Vec<Verdict> {
        let mut verdicts = self.monitor.diagnose(thresholds);
        verdicts.extend(self.workers.diagnose(thresholds));
        verdicts.extend(self.disk.diagnose(thresholds));
        verdicts
    }

    /// How many connection tasks are ready (woken, not yet polled).
    fn ready_connections(&self) -> usize {
        self.monitor
            .tasks()
            .iter()
            .filter(|task| matches!(task.phase, Some(TaskPhase::Ready { .. })))
            .count()
    }

    /// Whether every connection task waits (none is being polled or ready).
    fn relay_idle(&self) -> bool {
        self.monitor
            .tasks()
            .iter()
            .all(|task| matches!(task.phase, Some(TaskPhase::Waiting { .. })))
    }

    /// Waits (without sleeping on a clock) until `ready` holds, yielding the
    /// thread between looks.
    fn wait_until(&self, mut ready: impl FnMut(&Relay) -> bool) {
        while !ready(self) {
            thread::yield_now();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs `case` on a fresh relay and returns what `diagnose()` said while
/// the fault held (for `Healthy`, everything it said over a few rounds).
/// `pass` lets time go by: a manual clock's `advance`, or a real sleep.
pub(crate) fn run_case(
    case: Case,
    thresholds: &Thresholds,
    telemetry: &dyn Fn(&str) -> TelemetryConfig,
    pass: &dyn Fn(Duration),
) -> (Vec<Verdict>, Vec<TaskId>) {
    let mut relay = Relay::start(case == Case::LostWake, telemetry);
    let tasks = relay.tasks.clone();
    // A step shorter than every threshold: a healthy relay never trips one.
    let step = thresholds.ready_delay.min(thresholds.blocked) / 2;
    let warm = |relay: &mut Relay| {
        for _ in 0..3 {
            pass(step);
            relay.round();
        }
    };
    let verdicts = match case {
        Case::Healthy => {
            let mut said = Vec::new();
            for _ in 0..10 {
                pass(step);
                relay.round();
                said.extend(relay.diagnose(thresholds));
            }
            said
        }
        Case::LostWake => {
            let rounds = (thresholds.no_wake.as_nanos() / step.as_nanos()) as usize + 2;
            for _ in 0..rounds {
                pass(step);
                relay.round();
            }
            relay.diagnose(thresholds)
        }
        Case::ReadyDelay => {
            warm(&mut relay);
            relay.shared.housekeeping.close();
            relay.commands.send(Command::Housekeeping).unwrap();
            relay.shared.housekeeping.wait_arrivals(1);
            relay.send_round();
            pass(thresholds.ready_delay * 2);
            let said = relay.diagnose(thresholds);
            relay.shared.housekeeping.open();
            relay.finish_round();
            said
        }
        Case::BlockedWorker => {
            warm(&mut relay);
            relay.shared.poll_gate.close();
            relay.shared.block_in_poll.store(true, Ordering::Relaxed);
            // Connection 2's message first: its poll holds the thread
            // before the others' messages arrive, so they wait, ready,
            // behind it (had they come together, a connection whose pool
            // jobs finished at once could have ended its round before).
            relay.send_round_after(Some(2), |r| r.shared.poll_gate.wait_arrivals(1));
            relay.wait_until(|r| {
                let (workers, disk) = (r.workers.stats(), r.disk.stats());
                workers.active + workers.queued + disk.active + disk.queued == 0
                    && r.ready_connections() == CONNECTIONS - 1
            });
            pass(thresholds.blocked * 2);
            let said = relay.diagnose(thresholds);
            relay.shared.block_in_poll.store(false, Ordering::Relaxed);
            relay.shared.poll_gate.open();
            relay.finish_round();
            said
        }
        Case::BlockingSaturated => {
            warm(&mut relay);
            relay.shared.disk_gate.close();
            relay.send_round();
            relay.wait_until(|r| {
                let disk = r.disk.stats();
                disk.active == 1
                    && disk.queued == CONNECTIONS - 1
                    && r.workers.stats().active == 0
                    && r.relay_idle()
            });
            pass(thresholds.blocking_wait * 2);
            let said = relay.diagnose(thresholds);
            relay.shared.disk_gate.open();
            relay.finish_round();
            said
        }
        Case::AdmissionFull => {
            warm(&mut relay);
            relay.shared.checksum_gate.close();
            let arrived = relay.shared.checksum_gate.arrivals();
            // The flood: a bulk job takes the checksum worker, two more wait.
            let bulk: Vec<_> = (0..3)
                .map(|n| {
                    let gate = Arc::clone(&relay.shared);
                    relay
                        .shared
                        .workers
                        .try_spawn(move || {
                            gate.checksum_gate.hold();
                            checksum(n)
                        })
                        .unwrap_or_else(|_| unreachable!("the queue had room"))
                })
                .collect();
            relay.shared.checksum_gate.wait_arrivals(arrived + 1);
            relay.send_round();
            relay.wait_until(|r| r.shared.refused.load(Ordering::Relaxed) == 2);
            let said = relay.diagnose(thresholds);
            relay.shared.checksum_gate.open();
            for job in bulk {
                let _ = job.join();
            }
            relay.finish_round();
            said
        }
    };
    (verdicts, tasks)
}

#[allow(dead_code)]
fn main() {
    let mut args = std::env::args().skip(1);
    let mut cases: Vec<Case> = Vec::new();
    let mut trace = String::from("target/relay_stall.trace.json");
    while let Some(arg) = args.next() {
        if arg == "--trace" {
            trace = args.next().expect("--trace needs a path");
        } else if arg == "all" {
            cases.extend(Case::ALL);
        } else {
            let case = Case::ALL
                .into_iter()
                .find(|case| case.name() == arg)
                .unwrap_or_else(|| panic!("unknown case {arg}; the cases: all, healthy, lost-wake, ready-delay, blocked-worker, blocking-saturated, admission-full"));
            cases.push(case);
        }
    }
    if cases.is_empty() {
        cases.extend(Case::ALL);
    }
    // Real time, with thresholds small enough for a quick run.
    let thresholds = Thresholds {
        no_wake: Duration::from_millis(300),
        ready_delay: Duration::from_millis(10),
        blocked: Duration::from_millis(40),
        blocking_wait: Duration::from_millis(40),
        admission_window: Duration::from_secs(1),
    };
    let timeline = Arc::new(Recorder::new(200_000).expect("not zero"));
    for case in cases {
        let telemetry = |part: &str| {
            TelemetryConfig::new().with_sink(timeline.source(&format!("{} {part}", case.name())))
        };
        let (verdicts, tasks) = run_case(case, &thresholds, &telemetry, &|d| thread::sleep(d));
        println!(
            "{}: connections are tasks {:?}",
            case.name(),
            tasks.iter().map(|t| t.get()).collect::<Vec<_>>()
        );
        if verdicts.is_empty() {
            println!("  diagnose(): nothing to report");
        }
        for verdict in &verdicts {
            println!("  diagnose(): {verdict}");
        }
    }
    if let Some(parent) = std::path::Path::new(&trace).parent() {
        std::fs::create_dir_all(parent).expect("the trace's folder can be made");
    }
    let mut file = std::fs::File::create(&trace).expect("the trace file can be created");
    timeline
        .write_chrome_trace(&mut file)
        .expect("the trace is written");
    println!(
        "timeline: {} events written to {trace} (open it in ui.perfetto.dev)",
        timeline.len()
    );
}
