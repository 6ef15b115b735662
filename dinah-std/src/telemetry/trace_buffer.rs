//! [`TraceBuffer`]: a trace log with a run-time capacity, for many threads.
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::fmt;
use std::num::NonZeroUsize;

use dinah_core::telemetry::{Sink, TraceEvent, TraceRecordError};

use crate::primitives::{Mutex, lock};
use crate::queue::CapacityError;
use crate::queue::reserve;

struct Log {
    events: VecDeque<TraceEvent>,
    rejected: u64,
}

/// A bounded trace log with a run-time capacity, shared by many threads.
///
/// The hosted counterpart of [`TraceRing`](dinah_core::TraceRing), with the
/// same contract: events come out in the order they were accepted; when full,
/// [`record`](Self::record) refuses the new event and hands it back in
/// [`TraceRecordError::Full`], never overwriting history, and counts the
/// refusal. Share it by reference (scoped threads) or in an `Arc`.
///
/// # What it does not promise
///
/// No order between events from different threads beyond the order the
/// internal lock admitted them. It keeps the stamps it is given and takes
/// none itself; for a timeline with threads and spans use
/// [`Recorder`](super::Recorder). Every method takes one short internal lock that
/// never runs user code.
///
/// ```
/// use dinah::TaskId;
/// use dinah::telemetry::{TraceEvent, TraceEventKind};
/// use dinah::telemetry::TraceBuffer;
///
/// let trace = TraceBuffer::new(1)?;
/// let task = TaskId::new(3).unwrap();
/// trace.record(TraceEvent::new(task, TraceEventKind::Started)).unwrap();
/// assert!(trace.record(TraceEvent::new(task, TraceEventKind::Completed)).is_err());
/// assert_eq!(trace.rejected(), 1);
/// assert_eq!(trace.drain()[0].kind, TraceEventKind::Started);
/// # Ok::<(), dinah::queue::CapacityError>(())
/// ```
pub struct TraceBuffer {
    log: Mutex<Log>,
    capacity: NonZeroUsize,
}

impl Sink for TraceBuffer {
    /// Records the event; when the buffer is full the event is dropped and
    /// the buffer counts the refusal ([`TraceBuffer::rejected`]).
    fn record(&self, event: TraceEvent) {
        let _ = TraceBuffer::record(self, event);
    }
}

impl TraceBuffer {
    /// An empty buffer for at most `capacity` events; storage is reserved
    /// now, so recording never allocates.
    ///
    /// # Errors
    ///
    /// [`CapacityError::Zero`] when `capacity` is zero;
    /// [`CapacityError::Allocation`] when storage for `capacity` events cannot
    /// be reserved (nothing is allocated then, and the process goes on).
    pub fn new(capacity: usize) -> Result<Self, CapacityError> {
        let (capacity, events) = reserve(capacity)?;
        Ok(Self {
            log: Mutex::new(Log {
                events,
                rejected: 0,
            }),
            capacity,
        })
    }

    /// Appends `event` after every event already accepted.
    ///
    /// # Errors
    ///
    /// When the buffer holds `capacity` events, returns
    /// [`TraceRecordError::Full`] with `event`, leaves the history unchanged
    /// and counts the refusal.
    pub fn record(&self, event: TraceEvent) -> Result<(), TraceRecordError> {
        let mut log = lock(&self.log);
        if log.events.len() == self.capacity.get() {
            log.rejected = log.rejected.saturating_add(1);
            return Err(TraceRecordError::Full(event));
        }
        log.events.push_back(event);
        Ok(())
    }

    /// Removes and returns the oldest event.
    pub fn pop(&self) -> Option<TraceEvent> {
        lock(&self.log).events.pop_front()
    }

    /// Copies every event, oldest first, without removing any.
    #[must_use]
    pub fn snapshot(&self) -> Vec<TraceEvent> {
        lock(&self.log).events.iter().copied().collect()
    }

    /// Copies the oldest events into `buffer` without removing any, and
    /// returns how many were copied: `min(self.len(), buffer.len())`. Slots
    /// past that count are left as they were. Allocates nothing.
    pub fn snapshot_into(&self, buffer: &mut [TraceEvent]) -> usize {
        let log = lock(&self.log);
        let mut copied = 0;
        for (slot, event) in buffer.iter_mut().zip(log.events.iter()) {
            *slot = *event;
            copied += 1;
        }
        copied
    }

    /// Removes every event and returns them, oldest first. The rejection
    /// count is kept.
    pub fn drain(&self) -> Vec<TraceEvent> {
        let mut log = lock(&self.log);
        let drained = log.events.drain(..).collect();
        drop(log);
        drained
    }

    /// Removes every event and resets the rejection count to zero.
    pub fn clear(&self) {
        let mut log = lock(&self.log);
        log.events.clear();
        log.rejected = 0;
    }

    /// How many events are held.
    #[must_use]
    pub fn len(&self) -> usize {
        lock(&self.log).events.len()
    }

    /// Whether no event is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the next [`record`](Self::record) would be refused (unless
    /// another thread removes an event first).
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.len() == self.capacity.get()
    }

    /// The capacity chosen at construction, never zero.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity.get()
    }

    /// How many events were refused because the buffer was full, since it
    /// was built or last [cleared](Self::clear). Saturates at `u64::MAX`.
    #[must_use]
    pub fn rejected(&self) -> u64 {
        lock(&self.log).rejected
    }
}

impl fmt::Debug for TraceBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let log = lock(&self.log);
        f.debug_struct("TraceBuffer")
            .field("len", &log.events.len())
            .field("capacity", &self.capacity)
            .field("rejected", &log.rejected)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use dinah_core::TaskId;
    use dinah_core::telemetry::TraceEventKind;

    fn event(task: u64, kind: TraceEventKind) -> TraceEvent {
        TraceEvent::new(TaskId::new(task).unwrap(), kind)
    }

    #[test]
    fn zero_capacity_is_a_typed_error() {
        assert_eq!(TraceBuffer::new(0).unwrap_err(), CapacityError::Zero);
        assert!(matches!(
            TraceBuffer::new(usize::MAX),
            Err(CapacityError::Allocation {
                requested: usize::MAX,
                ..
            })
        ));
    }

    #[test]
    fn full_buffer_refuses_and_keeps_history_then_drains_and_clears() {
        let trace = TraceBuffer::new(2).unwrap();
        let first = event(1, TraceEventKind::Submitted);
        let second = event(1, TraceEventKind::Started);
        let third = event(1, TraceEventKind::Completed);
        trace.record(first).unwrap();
        trace.record(second).unwrap();
        assert_eq!(trace.record(third), Err(TraceRecordError::Full(third)));
        assert_eq!(trace.snapshot(), [first, second]);
        assert_eq!((trace.len(), trace.capacity(), trace.rejected()), (2, 2, 1));

        assert_eq!(trace.drain(), [first, second]);
        assert!(trace.is_empty());
        assert_eq!(trace.rejected(), 1);
        trace.record(third).unwrap();
        trace.clear();
        assert!(trace.is_empty());
        assert_eq!(trace.rejected(), 0);
        trace.record(first).unwrap();
        assert_eq!(trace.snapshot(), [first]);
    }
}
