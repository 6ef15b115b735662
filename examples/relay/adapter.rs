//! The relay's dinah adapter: the ports over dinah's sockets, timers,
//! channels, blocking pool and semaphore, and the ingest edge that turns
//! bytes from producers into domain events. Faults for the incident drills
//! are switched on here, each at the handoff it breaks.
// Shared with tests/relay.rs, which uses parts the example does not.
#![allow(dead_code)]

use std::future::{Future, poll_fn};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Waker};
use std::time::Duration;

use dinah::BlockingPool;
use dinah::net::TcpStream;
use dinah::sync::SharedSemaphore;
use dinah::sync::mpsc::{Receiver, Sender};
use dinah::time::{TimerDriver, TimerHandle};

use crate::domain::{Batch, Commit, Error, Event, Failure, parse};
use crate::ports::{Acks, Clock, Intake, Legacy, Upstream};

#[path = "../support/gate.rs"]
mod gate;
pub(crate) use gate::Gate;

/// The faults an incident drill can switch on.
#[derive(Default)]
pub(crate) struct Faults {
    /// Connection 1's reader polls its socket with a waker that goes
    /// nowhere (a lost wake).
    pub(crate) lose_wake: AtomicBool,
    /// The batcher makes its legacy call inside its poll, holding the
    /// relay's thread (a blocked worker).
    pub(crate) call_inline: AtomicBool,
    /// The legacy system hangs (it waits at this gate).
    pub(crate) legacy: Gate,
    /// The relay thread's housekeeping between rounds (it waits here).
    pub(crate) housekeeping: Gate,
}

/// The legacy system's call: blocking, slow when its gate is shut.
pub(crate) fn legacy_call(faults: &Faults, commit: &Commit) -> Result<(), Error> {
    faults.legacy.hold();
    if commit.ids.is_empty() {
        return Err("an empty commit".into());
    }
    Ok(())
}

/// [`Clock`] on a dinah executor's timers.
pub(crate) struct DinahClock(pub(crate) TimerHandle);

impl Clock for DinahClock {
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> {
        self.0.clone().sleep(duration)
    }
}

/// [`Upstream`] over one TCP connection: a batch out, a reply line back,
/// within `timeout` (a timer the diagnosis sees as the wait's wake path).
pub(crate) struct TcpUpstream {
    pub(crate) stream: TcpStream,
    pub(crate) timers: TimerHandle,
    pub(crate) timeout: Duration,
    buffer: Vec<u8>,
}

impl TcpUpstream {
    pub(crate) fn new(stream: TcpStream, timers: TimerHandle, timeout: Duration) -> Self {
        Self {
            stream,
            timers,
            timeout,
            buffer: Vec::new(),
        }
    }
}

/// Reads one line from `stream` into `buffer` (which keeps what follows).
async fn read_line(stream: &TcpStream, buffer: &mut Vec<u8>) -> Result<String, Error> {
    loop {
        if let Some(end) = buffer.iter().position(|&byte| byte == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            return Ok(String::from_utf8(line)?);
        }
        let mut chunk = [0u8; 512];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err("closed".into());
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
}

impl Upstream for TcpUpstream {
    fn exchange(&mut self, batch: &Batch) -> impl Future<Output = Result<String, Error>> {
        let encoded = batch.encode();
        async move {
            let exchange = async {
                self.stream.write_all(encoded.as_bytes()).await?;
                read_line(&self.stream, &mut self.buffer).await
            };
            match self.timers.clone().timeout(self.timeout, exchange).await {
                Ok(reply) => reply,
                Err(_) => Err("the upstream did not reply in time".into()),
            }
        }
    }
}

/// [`Legacy`] on a blocking pool, behind a semaphore: a record is admitted
/// once it holds a permit and the pool took its call; the permit goes back
/// when the call returns. (With `call_inline` it calls on the spot, which
/// holds the relay's thread: the fault.)
pub(crate) struct PoolLegacy {
    pub(crate) pool: Arc<BlockingPool>,
    pub(crate) permits: SharedSemaphore,
    pub(crate) faults: Arc<Faults>,
}

impl Legacy for PoolLegacy {
    fn record(&self, commit: &Commit) -> impl Future<Output = Result<(), Error>> {
        let commit = commit.clone();
        async move {
            if self.faults.call_inline.load(Ordering::Relaxed) {
                return legacy_call(&self.faults, &commit);
            }
            let permit = self.permits.acquire_owned().await?;
            let faults = Arc::clone(&self.faults);
            let handle = self
                .pool
                .spawn(move || {
                    let done = legacy_call(&faults, &commit);
                    drop(permit);
                    done
                })
                .await?;
            // Admitted: the call runs on the pool; its result is not waited
            // for (its failures are the pool's figures).
            drop(handle);
            Ok(())
        }
    }
}

/// Where an event's acknowledgement goes: its producer's connection.
pub(crate) type Route = Arc<TcpStream>;

/// [`Intake`] from the relay's bounded channel.
pub(crate) struct ChannelIntake(pub(crate) Receiver<(Event, Route)>);

impl Intake for ChannelIntake {
    type Route = Route;
    fn next(&mut self) -> impl Future<Output = Option<(Event, Route)>> {
        self.0.recv()
    }
}

/// [`Acks`] written straight to the producers' connections.
pub(crate) struct SocketAcks;

impl Acks<Route> for SocketAcks {
    fn ack(
        &mut self,
        route: &Route,
        id: u64,
        outcome: &Result<u64, Failure>,
    ) -> impl Future<Output = ()> {
        let line = match outcome {
            Ok(batch) => format!("ack {id} {batch}\n"),
            Err(failure) => format!("nack {id} {failure:?}\n"),
        };
        let route = Arc::clone(route);
        async move {
            // A producer that left does not stop the others' acks.
            let _ = route.write_all(line.as_bytes()).await;
        }
    }
}

/// Reads some bytes, or, with the lost-wake fault on, polls with a waker
/// that goes nowhere (so readiness that comes later wakes no one).
async fn read_some(stream: &TcpStream, buf: &mut [u8], lossy: bool) -> std::io::Result<usize> {
    if !lossy {
        return stream.read(buf).await;
    }
    poll_fn(|_| stream.poll_read(&mut Context::from_waker(Waker::noop()), buf)).await
}

/// One producer's connection: lines in, events into the intake (waiting
/// for room: the application's backpressure), errors answered at once.
pub(crate) async fn ingest(
    index: usize,
    stream: TcpStream,
    intake: Sender<(Event, Route)>,
    faults: Arc<Faults>,
) -> std::io::Result<()> {
    let stream = Arc::new(stream);
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        while let Some(end) = buffer.iter().position(|&byte| byte == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            match parse(&String::from_utf8_lossy(&line)) {
                Ok(event) => {
                    if intake.send((event, Arc::clone(&stream))).await.is_err() {
                        return Ok(());
                    }
                }
                Err(invalid) => {
                    stream
                        .write_all(format!("error {invalid}\n").as_bytes())
                        .await?
                }
            }
        }
        let lossy = index == 1 && faults.lose_wake.load(Ordering::Relaxed);
        let n = read_some(&stream, &mut chunk, lossy).await?;
        if n == 0 {
            return Ok(());
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
}
