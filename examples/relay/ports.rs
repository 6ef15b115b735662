//! The relay's ports: what the service needs from the outside, as async
//! operations on domain values, and the service's logic written against
//! them. No runtime types: a port is implemented by an adapter (dinah's,
//! in `adapter.rs`) or by a script in a test.
// Shared with tests/relay.rs, which uses parts the example does not.
#![allow(dead_code)]

use std::future::Future;
use std::pin::pin;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::{Either, select};

use crate::domain::{Batch, Commit, Error, Event, Failure, Reply, RetryPolicy, classify};

/// Time, as the service needs it.
pub(crate) trait Clock {
    /// Completes after `duration`.
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()>;
}

/// The upstream store batches are committed to.
pub(crate) trait Upstream {
    /// Sends `batch` and waits for the reply line (an `Err` is the
    /// connection's failure).
    fn exchange(&mut self, batch: &Batch) -> impl Future<Output = Result<String, Error>>;
}

/// The legacy system every committed batch is reported to: a blocking
/// call, made somewhere it may block.
pub(crate) trait Legacy {
    fn record(&self, commit: &Commit) -> impl Future<Output = Result<(), Error>>;
}

/// Where events come in, each with the route its acknowledgement takes.
pub(crate) trait Intake {
    type Route;
    /// The next event, or `None` when every producer is gone.
    fn next(&mut self) -> impl Future<Output = Option<(Event, Self::Route)>>;
}

/// Where acknowledgements go.
pub(crate) trait Acks<R> {
    /// Tells `route` what became of event `id`.
    fn ack(
        &mut self,
        route: &R,
        id: u64,
        outcome: &Result<u64, Failure>,
    ) -> impl Future<Output = ()>;
}

/// How the service batches and commits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Policy {
    /// Events per batch at most.
    pub(crate) max_batch: usize,
    /// How long a batch waits for more events after its first.
    pub(crate) linger: Duration,
    pub(crate) retry: RetryPolicy,
}

/// Commits `batch`: sends it, and tries again after the policy's backoff
/// while the upstream says it is busy.
pub(crate) async fn commit<U: Upstream, C: Clock>(
    upstream: &mut U,
    clock: &C,
    retry: RetryPolicy,
    batch: &Batch,
) -> Result<Commit, Failure> {
    let mut attempt = 0;
    loop {
        let reply = upstream
            .exchange(batch)
            .await
            .map_err(|error| Failure::Io(error.to_string()))?;
        match classify(&reply) {
            Reply::Committed(number) if number == batch.number => {
                return Ok(Commit {
                    batch: number,
                    ids: batch.events().iter().map(|event| event.id).collect(),
                });
            }
            Reply::Committed(number) => {
                return Err(Failure::Mismatch {
                    sent: batch.number,
                    committed: number,
                });
            }
            Reply::Rejected(reason) => return Err(Failure::Rejected(reason)),
            Reply::Transient => {
                attempt += 1;
                match retry.backoff(attempt) {
                    Some(wait) => clock.sleep(wait).await,
                    None => return Err(Failure::GaveUp { attempts: attempt }),
                }
            }
        }
    }
}

/// What a run of the service did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) batches: u64,
    pub(crate) committed: u64,
    pub(crate) failed: u64,
}

/// The service: gathers events into batches (up to `max_batch`, or what
/// came within `linger` of the first), commits each, reports it to the
/// legacy system, and acknowledges every event. Runs until the intake
/// ends, keeping `tally` up to date after each batch; the caller owns the
/// task it runs in.
pub(crate) async fn run<I, U, L, A, C>(
    intake: &mut I,
    upstream: &mut U,
    legacy: &L,
    acks: &mut A,
    clock: &C,
    policy: Policy,
    tally: &Mutex<Tally>,
) where
    I: Intake,
    U: Upstream,
    L: Legacy,
    A: Acks<I::Route>,
    C: Clock,
{
    let mut number = 0;
    loop {
        let Some(first) = intake.next().await else {
            return;
        };
        number += 1;
        let mut batch = Batch::new(number);
        let mut routes = Vec::new();
        batch.push(first.0);
        routes.push(first.1);
        let mut ended = false;
        {
            let mut linger = pin!(clock.sleep(policy.linger));
            while batch.len() < policy.max_batch {
                match select(pin!(intake.next()), linger.as_mut()).await {
                    Either::Left((Some((event, route)), _)) => {
                        batch.push(event);
                        routes.push(route);
                    }
                    Either::Left((None, _)) => {
                        ended = true;
                        break;
                    }
                    Either::Right(((), _)) => break,
                }
            }
        }
        let outcome = match commit(upstream, clock, policy.retry, &batch).await {
            Ok(commit) => match legacy.record(&commit).await {
                Ok(()) => Ok(commit.batch),
                Err(reason) => Err(Failure::Io(format!("legacy: {reason}"))),
            },
            Err(failure) => Err(failure),
        };
        {
            let mut counts = tally.lock().unwrap_or_else(PoisonError::into_inner);
            counts.batches += 1;
            match outcome {
                Ok(_) => counts.committed += batch.len() as u64,
                Err(_) => counts.failed += batch.len() as u64,
            }
        }
        for (event, route) in batch.events().iter().zip(&routes) {
            acks.ack(route, event.id, &outcome).await;
        }
        if ended {
            return;
        }
    }
}
