//! The relay's domain: events, batches, commits, validation and the
//! classification of what the upstream said. No runtime types, no I/O,
//! no clock: plain values, tested as such.
// Shared with tests/relay.rs, which uses parts the example does not.
#![allow(dead_code)]

use std::fmt;
use std::time::Duration;

/// One event a producer sent: an id it chose and a payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) id: u64,
    pub(crate) payload: String,
}

/// Why a line is not an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Invalid {
    /// No `id payload` shape.
    Shape,
    /// The id is not a number.
    Id,
    /// The payload is empty or longer than [`MAX_PAYLOAD`].
    Payload,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Shape => "expected `id payload`",
            Self::Id => "the id is not a number",
            Self::Payload => "the payload is empty or too long",
        })
    }
}

/// The longest payload taken.
pub(crate) const MAX_PAYLOAD: usize = 256;

/// Parses one line, `id payload`, as a producer sends it.
pub(crate) fn parse(line: &str) -> Result<Event, Invalid> {
    let (id, payload) = line.trim_end().split_once(' ').ok_or(Invalid::Shape)?;
    let id = id.parse().map_err(|_| Invalid::Id)?;
    if payload.is_empty() || payload.len() > MAX_PAYLOAD {
        return Err(Invalid::Payload);
    }
    Ok(Event {
        id,
        payload: payload.to_owned(),
    })
}

/// Events gathered to be committed together, in arrival order.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub(crate) number: u64,
    events: Vec<Event>,
}

impl Batch {
    pub(crate) fn new(number: u64) -> Self {
        Self {
            number,
            events: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, event: Event) {
        self.events.push(event);
    }

    pub(crate) fn len(&self) -> usize {
        self.events.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub(crate) fn events(&self) -> &[Event] {
        &self.events
    }

    /// The batch as the upstream's protocol has it: a header line, then
    /// one line per event.
    pub(crate) fn encode(&self) -> String {
        let mut out = format!("batch {} {}\n", self.number, self.events.len());
        for event in &self.events {
            out.push_str(&format!("{} {}\n", event.id, event.payload));
        }
        out
    }
}

/// A batch the upstream took: its number and its events' ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Commit {
    pub(crate) batch: u64,
    pub(crate) ids: Vec<u64>,
}

/// What the upstream's reply means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `ok N`: batch `N` is committed.
    Committed(u64),
    /// `busy`: try again later.
    Transient,
    /// `reject reason`: it will never take this batch.
    Rejected(String),
}

/// Classifies one reply line.
pub(crate) fn classify(line: &str) -> Reply {
    let line = line.trim_end();
    if let Some(number) = line.strip_prefix("ok ") {
        return match number.parse() {
            Ok(number) => Reply::Committed(number),
            Err(_) => Reply::Rejected(format!("bad ok line: {line}")),
        };
    }
    if line == "busy" {
        return Reply::Transient;
    }
    Reply::Rejected(line.strip_prefix("reject ").unwrap_or(line).to_owned())
}

/// How often and how long to wait before trying a batch again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetryPolicy {
    pub(crate) attempts: u32,
    pub(crate) first_backoff: Duration,
}

impl RetryPolicy {
    /// The wait before attempt `attempt` (1 is the first retry), doubling,
    /// or `None` when the attempts are spent.
    pub(crate) fn backoff(&self, attempt: u32) -> Option<Duration> {
        (attempt < self.attempts).then(|| self.first_backoff * 2u32.saturating_pow(attempt - 1))
    }
}

/// What a port's operation failed with: any error, carried with `?` from
/// wherever it came (a socket, a pool, a parse) with no mapping.
pub(crate) type Error = Box<dyn std::error::Error + Send + Sync>;

/// Why a batch was not committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The upstream rejected it.
    Rejected(String),
    /// It stayed busy through every attempt.
    GaveUp { attempts: u32 },
    /// The connection failed.
    Io(String),
    /// The upstream committed another batch than the one sent.
    Mismatch { sent: u64, committed: u64 },
}
