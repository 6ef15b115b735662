//! The relay service (`examples/relay/`), tested by its boundaries: the
//! domain with plain values,
//! the ports with scripted operations and a clock that records, the dinah
//! adapter under the executor with real sockets, the whole service end to
//! end over loopback, and the five stall causes injected over real sockets,
//! each diagnosed alone on a manual clock.
//!
//! Not under Miri: the service runs three threads and their sockets
//! through many round trips, which takes many minutes interpreted (its
//! verdict logic runs there in tests/diagnose.rs and tests/net.rs).
#![cfg(not(miri))]

#[path = "../examples/relay/adapter.rs"]
mod adapter;
#[path = "../examples/relay/app.rs"]
mod app;
#[path = "../examples/relay/domain.rs"]
mod domain;
#[path = "../examples/relay/ports.rs"]
mod ports;
#[path = "../examples/relay/upstream.rs"]
mod upstream;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::{Future, ready};
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use dinah::LocalExecutor;
use dinah::executor::ExecutorConfig;
use dinah::telemetry::{Cause, ManualClock, TelemetryConfig, Thresholds, Verdict};

use domain::{Batch, Commit, Error, Event, Failure, Invalid, Reply, RetryPolicy, classify, parse};
use ports::{Acks, Clock, Intake, Legacy, Policy, Tally, Upstream};

// ---- the domain, with plain values ----

#[test]
fn lines_parse_into_events_or_say_why_not() {
    assert_eq!(
        parse("42 temperature=21.5\n"),
        Ok(Event {
            id: 42,
            payload: "temperature=21.5".to_owned()
        })
    );
    assert_eq!(parse("no-space"), Err(Invalid::Shape));
    assert_eq!(parse("x payload"), Err(Invalid::Id));
    assert_eq!(
        parse(&format!("1 {}", "p".repeat(300))),
        Err(Invalid::Payload)
    );
}

#[test]
fn a_batch_encodes_its_events_in_order_and_replies_are_classified() {
    let mut batch = Batch::new(7);
    batch.push(parse("1 a").unwrap());
    batch.push(parse("2 b").unwrap());
    assert_eq!(batch.encode(), "batch 7 2\n1 a\n2 b\n");
    assert_eq!(classify("ok 7\n"), Reply::Committed(7));
    assert_eq!(classify("busy\n"), Reply::Transient);
    assert_eq!(
        classify("reject too big\n"),
        Reply::Rejected("too big".to_owned())
    );
    let policy = RetryPolicy {
        attempts: 3,
        first_backoff: Duration::from_millis(10),
    };
    assert_eq!(policy.backoff(1), Some(Duration::from_millis(10)));
    assert_eq!(policy.backoff(2), Some(Duration::from_millis(20)));
    assert_eq!(policy.backoff(3), None);
}

// ---- the ports, with scripted operations and a recording clock ----

/// A clock whose sleeps end at once and are written down.
#[derive(Default)]
struct RecordingClock(RefCell<Vec<Duration>>);

impl Clock for RecordingClock {
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> {
        self.0.borrow_mut().push(duration);
        ready(())
    }
}

/// An upstream that replies from a script and keeps what it was sent.
struct ScriptedUpstream {
    replies: VecDeque<Result<String, String>>,
    sent: Vec<String>,
}

impl Upstream for ScriptedUpstream {
    fn exchange(&mut self, batch: &Batch) -> impl Future<Output = Result<String, Error>> {
        self.sent.push(batch.encode());
        let reply = self
            .replies
            .pop_front()
            .unwrap_or_else(|| Err("script ended".to_owned()));
        ready(reply.map_err(Error::from))
    }
}

#[derive(Default)]
struct RecordingLegacy(RefCell<Vec<Commit>>);

impl Legacy for RecordingLegacy {
    fn record(&self, commit: &Commit) -> impl Future<Output = Result<(), Error>> {
        self.0.borrow_mut().push(commit.clone());
        ready(Ok(()))
    }
}

struct ScriptedIntake(VecDeque<(Event, u32)>);

impl Intake for ScriptedIntake {
    type Route = u32;
    fn next(&mut self) -> impl Future<Output = Option<(Event, u32)>> {
        ready(self.0.pop_front())
    }
}

#[derive(Default)]
struct RecordingAcks(Vec<(u32, u64, bool)>);

impl Acks<u32> for RecordingAcks {
    fn ack(
        &mut self,
        route: &u32,
        id: u64,
        outcome: &Result<u64, Failure>,
    ) -> impl Future<Output = ()> {
        self.0.push((*route, id, outcome.is_ok()));
        ready(())
    }
}

fn policy() -> Policy {
    Policy {
        max_batch: 2,
        linger: Duration::from_millis(5),
        retry: RetryPolicy {
            attempts: 3,
            first_backoff: Duration::from_millis(10),
        },
    }
}

fn intake(ids: &[u64]) -> ScriptedIntake {
    ScriptedIntake(
        ids.iter()
            .map(|&id| {
                (
                    parse(&format!("{id} payload-{id}")).unwrap(),
                    (id % 2) as u32,
                )
            })
            .collect(),
    )
}

/// What a scripted run of the service saw.
struct Scripted {
    upstream: ScriptedUpstream,
    clock: RecordingClock,
    legacy: RecordingLegacy,
    acks: RecordingAcks,
    tally: Tally,
}

/// Runs the service, with no runtime, over events `ids` and an upstream
/// that replies `replies` in turn.
fn scripted(ids: &[u64], replies: &[&str]) -> Scripted {
    let mut run = Scripted {
        upstream: ScriptedUpstream {
            replies: replies
                .iter()
                .map(|reply| Ok(format!("{reply}\n")))
                .collect(),
            sent: Vec::new(),
        },
        clock: RecordingClock::default(),
        legacy: RecordingLegacy::default(),
        acks: RecordingAcks::default(),
        tally: Tally::default(),
    };
    let tally = std::sync::Mutex::new(Tally::default());
    futures_executor::block_on(ports::run(
        &mut intake(ids),
        &mut run.upstream,
        &run.legacy,
        &mut run.acks,
        &run.clock,
        policy(),
        &tally,
    ));
    run.tally = *tally.lock().unwrap();
    run
}

#[test]
fn the_service_batches_retries_a_busy_upstream_with_backoff_records_and_acks_every_event() {
    let Scripted {
        upstream,
        clock,
        legacy,
        acks,
        tally,
    } = scripted(&[10, 11, 12], &["busy", "busy", "ok 1", "ok 2"]);
    // Two batches (at most two events each); the first sent three times.
    assert_eq!(
        upstream.sent,
        [
            "batch 1 2\n10 payload-10\n11 payload-11\n",
            "batch 1 2\n10 payload-10\n11 payload-11\n",
            "batch 1 2\n10 payload-10\n11 payload-11\n",
            "batch 2 1\n12 payload-12\n",
        ]
    );
    // Each batch armed its linger; the retries waited 10 ms, then 20 ms.
    let linger = Duration::from_millis(5);
    assert_eq!(
        *clock.0.borrow(),
        [
            linger,
            Duration::from_millis(10),
            Duration::from_millis(20),
            linger
        ]
    );
    assert_eq!(
        *legacy.0.borrow(),
        [
            Commit {
                batch: 1,
                ids: vec![10, 11]
            },
            Commit {
                batch: 2,
                ids: vec![12]
            }
        ]
    );
    assert_eq!(acks.0, [(0, 10, true), (1, 11, true), (0, 12, true)]);
    assert_eq!(
        tally,
        Tally {
            batches: 2,
            committed: 3,
            failed: 0
        }
    );
}

#[test]
fn an_upstream_busy_past_the_policy_or_rejecting_gets_its_events_nacked() {
    let Scripted {
        legacy,
        acks,
        tally,
        ..
    } = scripted(&[1, 2, 3], &["busy", "busy", "busy", "reject full"]);
    assert!(legacy.0.borrow().is_empty(), "nothing was committed");
    assert_eq!(acks.0, [(1, 1, false), (0, 2, false), (1, 3, false)]);
    assert_eq!(tally.failed, 3);
}

#[test]
fn the_commit_port_waits_its_backoff_on_dinahs_paused_clock() {
    let executor = LocalExecutor::with_config(ExecutorConfig {
        start_paused: true,
        ..ExecutorConfig::default()
    })
    .unwrap();
    let clock = adapter::DinahClock(executor.timer());
    let mut upstream = ScriptedUpstream {
        replies: ["busy", "busy", "ok 1"]
            .map(|reply| Ok(format!("{reply}\n")))
            .into(),
        sent: Vec::new(),
    };
    let mut batch = Batch::new(1);
    batch.push(parse("5 x").unwrap());
    let commit = executor
        .block_on(ports::commit(&mut upstream, &clock, policy().retry, &batch))
        .unwrap();
    assert_eq!(commit.ids, [5]);
    // 10 ms, then 20 ms, of virtual time.
    assert_eq!(executor.timer().now().ticks(), 30_000);
}

// ---- the adapter, under the executor, with real sockets ----

#[test]
fn the_tcp_upstream_exchanges_batches_and_times_out_on_a_silent_store() {
    let (addr, store) = upstream::start().unwrap();
    // The real clock: a paused one would jump to the exchange's deadline
    // as soon as the executor has nothing ready, reply or not.
    let executor = LocalExecutor::new();
    let stream = executor
        .block_on(dinah::net::TcpStream::connect(addr))
        .unwrap();
    let mut tcp = adapter::TcpUpstream::new(stream, executor.timer(), Duration::from_secs(30));
    let mut batch = Batch::new(1);
    batch.push(parse("1 a").unwrap());
    batch.push(parse("2 b").unwrap());
    assert_eq!(executor.block_on(tcp.exchange(&batch)).unwrap(), "ok 1\n");
    assert_eq!(store.events.load(Ordering::Relaxed), 2);
    // The store holds its reply: the exchange's timer ends the wait.
    store.hold.close();
    tcp.timeout = Duration::from_millis(20);
    let silent = executor.block_on(tcp.exchange(&Batch::new(2)));
    assert_eq!(
        silent.map_err(|error| error.to_string()),
        Err("the upstream did not reply in time".to_owned())
    );
    store.hold.open();
}

#[test]
fn legacy_records_run_on_the_blocking_pool_behind_the_semaphore() {
    let executor = LocalExecutor::new();
    let pool = Arc::new(dinah::BlockingPool::new(dinah::pool::BlockingConfig::new(1, 4)).unwrap());
    let faults = Arc::new(adapter::Faults::default());
    let permits = dinah::sync::SharedSemaphore::named("legacy", 2);
    let legacy = adapter::PoolLegacy {
        pool: Arc::clone(&pool),
        permits: permits.clone(),
        faults: Arc::clone(&faults),
    };
    faults.legacy.close();
    let commit = |batch| Commit {
        batch,
        ids: vec![batch],
    };
    executor.block_on(async {
        // Two admitted (the permits), the calls held at the legacy gate.
        legacy.record(&commit(1)).await.unwrap();
        legacy.record(&commit(2)).await.unwrap();
    });
    faults.legacy.wait_arrivals(1);
    assert_eq!(permits.available(), 0);
    faults.legacy.open();
    executor.block_on(legacy.record(&commit(3))).unwrap();
    drop(legacy);
    let report = Arc::try_unwrap(pool)
        .unwrap_or_else(|_| unreachable!("the only owner"))
        .shutdown(dinah::pool::ShutdownPolicy::Drain);
    assert_eq!(report.completed, 3);
}

// ---- the whole service, end to end over loopback ----

/// A producer: its connection and the acknowledgements coming back.
struct Producer {
    stream: std::net::TcpStream,
    acks: BufReader<std::net::TcpStream>,
}

impl Producer {
    fn connect(addr: SocketAddr) -> Self {
        let stream = std::net::TcpStream::connect(addr).unwrap();
        // A guard against a hang, not a timing assertion.
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let acks = BufReader::new(stream.try_clone().unwrap());
        Self { stream, acks }
    }

    fn send(&mut self, id: u64) {
        writeln!(self.stream, "{id} reading-{id}").unwrap();
    }

    fn ack(&mut self) -> String {
        let mut line = String::new();
        self.acks.read_line(&mut line).unwrap();
        line
    }
}

const CONNECTIONS: usize = 3;

struct Service {
    relay: app::Relay,
    store: Arc<upstream::Store>,
    producers: Vec<Producer>,
    clock: ManualClock,
    next_id: u64,
}

impl Service {
    fn start() -> Self {
        Self::start_on(None)
    }

    /// The relay on a `LocalExecutor` (`None`) or on a `MultiExecutor` of
    /// that many workers. The multi-thread executor measures with the
    /// host's clock; the rest of the relay with the test's.
    fn start_on(workers: Option<usize>) -> Self {
        let (upstream_addr, store) = upstream::start().unwrap();
        let clock = ManualClock::new();
        let telemetry_clock = clock.clone();
        let config = app::Config {
            workers,
            ..app::Config::loopback(upstream_addr, CONNECTIONS)
        };
        let relay = app::start(
            config,
            move |_| TelemetryConfig::new().with_clock(telemetry_clock.clone()),
            None,
        )
        .unwrap();
        let producers = (0..CONNECTIONS)
            .map(|_| Producer::connect(relay.addr))
            .collect();
        Self {
            relay,
            store,
            producers,
            clock,
            next_id: 0,
        }
    }

    /// One event from each producer in `from`.
    fn send(&mut self, from: &[usize]) {
        for &producer in from {
            self.next_id += 1;
            let id = self.next_id;
            self.producers[producer].send(id);
        }
    }

    /// One round of traffic: 5 ms of clock, an event from each producer
    /// in `from` and its acknowledgement back.
    fn round(&mut self, from: &[usize]) {
        self.clock.advance(Duration::from_millis(5));
        self.send(from);
        for &producer in from {
            let ack = self.producers[producer].ack();
            assert!(ack.starts_with("ack "), "{ack}");
        }
        self.quiesce();
    }

    /// Waits until the relay thread has been between runs twice since now:
    /// no poll is under way then, so the work this round started (the
    /// polls that wrote the acks) is over before the clock moves.
    fn quiesce(&self) {
        let gate = &self.relay.faults.housekeeping;
        gate.wait_arrivals(gate.arrivals() + 2);
    }

    /// Waits until every legacy call of the batches committed so far has
    /// reached the legacy system.
    fn legacy_settled(&self) {
        let committed = self.store.batches.load(Ordering::Relaxed);
        let committed = usize::try_from(committed).unwrap();
        self.relay.faults.legacy.wait_arrivals(committed);
    }

    fn diagnose(&self) -> Vec<Verdict> {
        let mut verdicts = self.relay.monitor.diagnose(&thresholds());
        verdicts.extend(self.relay.pool.diagnose(&thresholds()));
        verdicts
    }

    /// Lets the monitor hand out readiness the OS holds until `events`
    /// readiness events were seen in all.
    fn until_events(&self, events: u64) {
        for _ in 0..10_000 {
            let _ = self.relay.monitor.diagnose(&thresholds());
            if self.relay.monitor.io().events >= events {
                return;
            }
            std::thread::yield_now();
        }
        panic!("the readiness never came");
    }

    /// Waits, a housekeeping round of the relay at a time (it publishes
    /// the intake's figures then), until `waiting` tasks wait in the
    /// intake's line.
    fn until_intake_waiting(&self, waiting: u32) {
        let gate = &self.relay.faults.housekeeping;
        for _ in 0..10_000 {
            if self.relay.intake().waiting == waiting {
                return;
            }
            gate.wait_arrivals(gate.arrivals() + 2);
        }
    }

    fn stop(self) -> app::Report {
        self.store.hold.open();
        self.relay.stop()
    }
}

/// As the incident drills of `examples/relay_stall.rs`: a fault held for
/// 15 ms of clock passes `ready_delay`, `blocked` and `blocking_wait`
/// (10 ms) but not `no_wake` (25 ms).
fn thresholds() -> Thresholds {
    Thresholds {
        no_wake: Duration::from_millis(25),
        ready_delay: Duration::from_millis(10),
        blocked: Duration::from_millis(10),
        blocking_wait: Duration::from_millis(10),
        admission_window: Duration::from_secs(1),
    }
}

fn causes(verdicts: &[Verdict]) -> Vec<Cause> {
    verdicts.iter().map(Verdict::cause).collect()
}

const EVERYONE: [usize; CONNECTIONS] = [0, 1, 2];

#[test]
fn end_to_end_every_event_is_committed_once_and_acknowledged_and_a_busy_upstream_is_retried() {
    end_to_end(None);
}

/// The same service on a `MultiExecutor` of two workers: its tasks (the
/// acceptor, a task per connection, the batcher) may be polled on either
/// worker, and their sockets with them. Its diagnosis reads the host's
/// clock, so "nothing to say" is judged with thresholds of a second.
#[test]
fn multi_executor_end_to_end_every_event_is_committed_once_and_acknowledged() {
    end_to_end(Some(2));
}

fn end_to_end(workers: Option<usize>) {
    let mut service = Service::start_on(workers);
    service.store.busy.store(2, Ordering::Relaxed);
    for _ in 0..20 {
        service.round(&EVERYONE);
    }
    // Bad input is answered, and does not stop the connection.
    writeln!(service.producers[0].stream, "not-an-event").unwrap();
    assert_eq!(service.producers[0].ack(), "error expected `id payload`\n");
    service.round(&EVERYONE);
    if workers.is_none() {
        assert_eq!(service.diagnose(), []);
    } else {
        let second = Duration::from_secs(1);
        let relaxed = Thresholds {
            no_wake: 60 * second,
            ready_delay: second,
            blocked: second,
            blocking_wait: second,
            admission_window: Duration::ZERO,
        };
        assert_eq!(service.relay.monitor.diagnose(&relaxed), []);
    }
    let store = Arc::clone(&service.store);
    let report = service.stop();
    assert_eq!(report.tally.committed, 21 * CONNECTIONS as u64);
    assert_eq!(report.tally.failed, 0);
    assert_eq!(
        store.events.load(Ordering::Relaxed),
        21 * CONNECTIONS as u64
    );
    // The producers are still connected: the shutdown ends their
    // connections and the batcher waiting for more, each named.
    let mut ended: Vec<_> = report
        .shutdown
        .tasks
        .iter()
        .filter(|task| task.end == dinah::task::ChildEnd::Cancelled)
        .filter_map(|task| task.name)
        .collect();
    ended.sort_unstable();
    assert_eq!(
        ended,
        ["batcher", "connection 0", "connection 1", "connection 2"]
    );
}

// ---- the five stall causes, over real sockets, each diagnosed alone ----

#[test]
fn a_healthy_relay_under_load_reports_nothing() {
    let mut service = Service::start();
    for _ in 0..10 {
        service.round(&EVERYONE);
        assert_eq!(service.diagnose(), []);
    }
    service.stop();
}

#[test]
fn a_reader_that_loses_its_waker_is_no_wake_naming_its_socket() {
    let mut service = Service::start();
    service.round(&EVERYONE);
    service
        .relay
        .faults
        .lose_wake
        .store(true, Ordering::Relaxed);
    // Connection 1's next read loses its waker; its events are not read.
    service.round(&[0, 2]);
    service.send(&[1]);
    service.round(&[0, 2]);
    for _ in 0..6 {
        service.round(&[0, 2]);
    }
    let verdicts = service.diagnose();
    assert_eq!(causes(&verdicts), [Cause::NoWake], "{verdicts:?}");
    let Verdict::NoWake { name, waits_on, .. } = &verdicts[0] else {
        unreachable!()
    };
    assert_eq!(*name, Some("connection 1"));
    let wait = waits_on.as_ref().expect("it waits on its socket");
    assert_eq!(wait.interest, dinah::io::Interest::Read);
    assert!(wait.resource.starts_with("tcp "), "{wait}");
    service.stop();
}

#[test]
fn housekeeping_that_holds_the_relay_thread_between_runs_is_ready_but_delayed() {
    let mut service = Service::start();
    service.round(&EVERYONE);
    // The round's legacy call has left the blocking pool's queue before
    // the clock moves: only the held relay thread is to be reported.
    service.legacy_settled();
    let events = service.relay.monitor.io().events;
    let gate = &service.relay.faults.housekeeping;
    let arrived = gate.arrivals();
    gate.close();
    gate.wait_arrivals(arrived + 1);
    service.send(&EVERYONE);
    service.until_events(events + CONNECTIONS as u64);
    service.clock.advance(Duration::from_millis(15));
    let verdicts = service.diagnose();
    assert_eq!(causes(&verdicts), [Cause::ReadyButDelayed], "{verdicts:?}");
    assert!(matches!(
        verdicts[0],
        Verdict::ReadyButDelayed {
            ready_tasks: CONNECTIONS,
            ..
        }
    ));
    service.relay.faults.housekeeping.open();
    for producer in EVERYONE {
        assert!(service.producers[producer].ack().starts_with("ack "));
    }
    service.stop();
}

#[test]
fn a_legacy_call_made_inside_a_poll_is_worker_blocked_naming_the_batcher() {
    let mut service = Service::start();
    service.round(&EVERYONE);
    let faults = Arc::clone(&service.relay.faults);
    service.legacy_settled();
    faults.call_inline.store(true, Ordering::Relaxed);
    faults.legacy.close();
    let arrived = faults.legacy.arrivals();
    service.send(&[0]);
    faults.legacy.wait_arrivals(arrived + 1);
    service.clock.advance(Duration::from_millis(15));
    let verdicts = service.diagnose();
    assert_eq!(causes(&verdicts), [Cause::WorkerBlocked], "{verdicts:?}");
    assert!(
        matches!(
            verdicts[0],
            Verdict::WorkerBlocked {
                name: Some("batcher"),
                worker: None,
                ..
            }
        ),
        "{verdicts:?}"
    );
    faults.call_inline.store(false, Ordering::Relaxed);
    faults.legacy.open();
    assert!(service.producers[0].ack().starts_with("ack "));
    service.stop();
}

#[test]
fn a_hung_legacy_system_saturates_the_blocking_pool() {
    let mut service = Service::start();
    service.round(&EVERYONE);
    let faults = Arc::clone(&service.relay.faults);
    service.legacy_settled();
    faults.legacy.close();
    // One batch a round from one producer: the first call hangs on the
    // pool's one thread, the second waits in its queue.
    let arrived = faults.legacy.arrivals();
    service.round(&[0]);
    faults.legacy.wait_arrivals(arrived + 1);
    service.round(&[0]);
    assert_eq!(service.relay.pool.stats().queued, 1);
    service.clock.advance(Duration::from_millis(15));
    let verdicts = service.diagnose();
    assert_eq!(
        causes(&verdicts),
        [Cause::BlockingSaturated],
        "{verdicts:?}"
    );
    faults.legacy.open();
    service.stop();
}

#[test]
fn a_stalled_upstream_fills_the_intake_and_is_backpressure_on_it() {
    let mut service = Service::start();
    service.round(&EVERYONE);
    let store = Arc::clone(&service.store);
    let arrived = store.hold.arrivals();
    store.hold.close();
    service.send(&[0]);
    store.hold.wait_arrivals(arrived + 1);
    // The batcher waits for the store (its timeout is a known wake path);
    // the intake fills and every reader waits in its line.
    // Eight fill it; the ninth, and one from each other producer, wait.
    for _ in 0..9 {
        service.send(&[0]);
    }
    service.send(&[1, 2]);
    service.until_intake_waiting(CONNECTIONS as u32);
    assert_eq!(
        service.relay.intake().waiting,
        CONNECTIONS as u32,
        "{:?} {:?}",
        service.relay.intake(),
        service.relay.monitor.local().tasks()
    );
    service.clock.advance(Duration::from_millis(30));
    let verdicts = service.diagnose();
    assert_eq!(causes(&verdicts), [Cause::Backpressure], "{verdicts:?}");
    assert!(matches!(
        verdicts[0],
        Verdict::Backpressure {
            on: Some("intake"),
            waiting: CONNECTIONS,
            ..
        }
    ));
    service.stop();
}
