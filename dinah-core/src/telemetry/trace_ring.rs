//! [`TraceRing`]: a bounded, `static`-friendly log of task events.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;

use critical_section::Mutex;
use heapless::{Deque, Vec};

use super::TraceEvent;
#[cfg(test)]
use super::TraceEventKind;
#[cfg(test)]
use crate::id::TaskId;

/// A trace ring refused an event.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum TraceRecordError {
    /// The ring was full. The refused event is handed back; history is intact.
    Full(TraceEvent),
}

impl TraceRecordError {
    /// The event that was not recorded.
    #[must_use]
    pub const fn into_event(self) -> TraceEvent {
        match self {
            Self::Full(event) => event,
        }
    }
}

impl fmt::Display for TraceRecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("trace ring is full; the event was not recorded"),
        }
    }
}

impl core::error::Error for TraceRecordError {}

struct Ring<const N: usize> {
    events: Deque<TraceEvent, N>,
    rejected: u64,
}

/// A bounded log of up to `N` [`TraceEvent`]s, in recording order.
///
/// Every operation runs inside one short `critical-section`, so the ring can
/// be a `static` shared by threads and interrupt handlers; no user code ever
/// runs inside that section.
///
/// # Guarantees
///
/// - When full, [`record`](Self::record) refuses the new event and hands it
///   back in [`TraceRecordError::Full`]; recorded history is never
///   overwritten. Each refusal is counted, saturating at `u64::MAX`.
/// - Events come out in the order the ring accepted them.
/// - `N == 0` does not compile.
///
/// # What it does not promise
///
/// No order between events recorded concurrently from different contexts
/// beyond the order the critical section admitted them. It keeps the stamps
/// it is given and takes none itself; it exports nothing.
///
/// # Binary requirements
///
/// The binary links a `critical-section` implementation (for example
/// `cortex-m/critical-section-single-core` on a single-core MCU, or
/// `critical-section/std` on a host).
///
/// ```
/// use dinah::TaskId;
/// use dinah::telemetry::{TraceEvent, TraceEventKind, TraceRecordError, TraceRing};
///
/// static TRACE: TraceRing<2> = TraceRing::new();
///
/// let task = TaskId::new(1).unwrap();
/// TRACE.record(TraceEvent::new(task, TraceEventKind::Submitted)).unwrap();
/// TRACE.record(TraceEvent::new(task, TraceEventKind::Started)).unwrap();
///
/// let late = TraceEvent::new(task, TraceEventKind::Completed);
/// assert_eq!(TRACE.record(late), Err(TraceRecordError::Full(late)));
/// assert_eq!(TRACE.rejected(), 1);
///
/// let drained = TRACE.drain();
/// assert_eq!(drained[0].kind, TraceEventKind::Submitted);
/// assert_eq!(drained[1].kind, TraceEventKind::Started);
/// assert!(TRACE.is_empty());
/// ```
///
/// A ring of capacity zero is refused at compile time:
///
/// ```compile_fail,E0080
/// let ring = dinah::telemetry::TraceRing::<0>::new();
/// ```
pub struct TraceRing<const N: usize> {
    inner: Mutex<RefCell<Ring<N>>>,
}

impl<const N: usize> TraceRing<N> {
    /// An empty ring. `N` must be at least 1; zero fails to compile.
    #[must_use]
    pub const fn new() -> Self {
        const { assert!(N > 0, "a TraceRing needs a capacity of at least 1") };
        Self {
            inner: Mutex::new(RefCell::new(Ring {
                events: Deque::new(),
                rejected: 0,
            })),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Ring<N>) -> R) -> R {
        critical_section::with(|cs| match self.inner.borrow(cs).try_borrow_mut() {
            Ok(mut ring) => f(&mut ring),
            // Unreachable: no user code runs inside the section, so nothing
            // can re-enter it. A plain message keeps `core::fmt` out of
            // firmware that never formats panics.
            Err(_) => crate::fmt::fail!("TraceRing re-entered inside its own critical section"),
        })
    }

    /// Appends `event` after every event already recorded.
    ///
    /// # Errors
    ///
    /// When the ring holds `N` events, returns [`TraceRecordError::Full`] with
    /// `event`, leaves the history unchanged and counts the refusal.
    pub fn record(&self, event: TraceEvent) -> Result<(), TraceRecordError> {
        self.with(|ring| {
            ring.events.push_back(event).map_err(|event| {
                ring.rejected = ring.rejected.saturating_add(1);
                TraceRecordError::Full(event)
            })
        })
    }

    /// Removes and returns the oldest event.
    pub fn pop(&self) -> Option<TraceEvent> {
        self.with(|ring| ring.events.pop_front())
    }

    /// Copies every event, oldest first, without removing any.
    #[must_use]
    pub fn snapshot(&self) -> Vec<TraceEvent, N> {
        self.with(|ring| ring.events.iter().copied().collect())
    }

    /// Copies the oldest events into `buffer` without removing any, and
    /// returns how many were copied: `min(self.len(), buffer.len())`.
    pub fn snapshot_into(&self, buffer: &mut [TraceEvent]) -> usize {
        self.with(|ring| {
            let mut copied = 0;
            for (slot, event) in buffer.iter_mut().zip(ring.events.iter()) {
                *slot = *event;
                copied += 1;
            }
            copied
        })
    }

    /// Removes every event and returns them, oldest first, in one critical
    /// section. The rejection count is kept.
    pub fn drain(&self) -> Vec<TraceEvent, N> {
        self.with(|ring| {
            let mut drained = Vec::new();
            while let Some(event) = ring.events.pop_front() {
                // Cannot fail: the ring never holds more than N events.
                let _ = drained.push(event);
            }
            drained
        })
    }

    /// Removes every event and resets the rejection count to zero.
    pub fn clear(&self) {
        self.with(|ring| {
            ring.events.clear();
            ring.rejected = 0;
        });
    }

    /// How many events are recorded.
    #[must_use]
    pub fn len(&self) -> usize {
        self.with(|ring| ring.events.len())
    }

    /// Whether no event is recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the next [`record`](Self::record) would be refused.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.len() == N
    }

    /// The fixed capacity, `N`.
    #[must_use]
    pub const fn capacity(&self) -> usize {
        N
    }

    /// How many events were refused because the ring was full, since it was
    /// built or last [cleared](Self::clear). Saturates at `u64::MAX`.
    #[must_use]
    pub fn rejected(&self) -> u64 {
        self.with(|ring| ring.rejected)
    }
}

impl<const N: usize> Default for TraceRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> fmt::Debug for TraceRing<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (len, rejected) = self.with(|ring| (ring.events.len(), ring.rejected));
        f.debug_struct("TraceRing")
            .field("len", &len)
            .field("capacity", &N)
            .field("rejected", &rejected)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::thread;
    use std::vec::Vec as StdVec;

    fn event(task: u64, kind: TraceEventKind) -> TraceEvent {
        TraceEvent::new(TaskId::new(task).unwrap(), kind)
    }

    #[test]
    fn records_in_order_and_refuses_when_full_without_overwriting() {
        let ring = TraceRing::<3>::new();
        assert_eq!((ring.len(), ring.capacity(), ring.is_empty()), (0, 3, true));
        let accepted = [
            event(1, TraceEventKind::Submitted),
            event(1, TraceEventKind::Started),
            event(2, TraceEventKind::Submitted),
        ];
        for e in accepted {
            ring.record(e).unwrap();
        }
        assert!(ring.is_full());

        let refused = event(1, TraceEventKind::Completed);
        let error = ring.record(refused).unwrap_err();
        assert_eq!(error, TraceRecordError::Full(refused));
        assert_eq!(error.into_event(), refused);
        assert_eq!(ring.record(refused), Err(TraceRecordError::Full(refused)));
        assert_eq!(ring.rejected(), 2);
        assert_eq!(ring.snapshot().as_slice(), &accepted);
    }

    #[test]
    fn snapshot_into_copies_the_oldest_without_removing() {
        let ring = TraceRing::<4>::new();
        for task in 1..=3 {
            ring.record(event(task, TraceEventKind::Submitted)).unwrap();
        }
        let mut small = [event(9, TraceEventKind::Failed); 2];
        assert_eq!(ring.snapshot_into(&mut small), 2);
        assert_eq!(
            small,
            [
                event(1, TraceEventKind::Submitted),
                event(2, TraceEventKind::Submitted)
            ]
        );
        let mut large = [event(9, TraceEventKind::Failed); 6];
        assert_eq!(ring.snapshot_into(&mut large), 3);
        assert_eq!(
            large[3],
            event(9, TraceEventKind::Failed),
            "slots past len untouched"
        );
        assert_eq!(ring.len(), 3);
    }

    #[test]
    fn drain_pop_and_clear_cycle() {
        let ring = TraceRing::<2>::new();
        ring.record(event(1, TraceEventKind::Submitted)).unwrap();
        ring.record(event(1, TraceEventKind::Started)).unwrap();
        assert!(ring.record(event(1, TraceEventKind::Completed)).is_err());

        assert_eq!(ring.pop(), Some(event(1, TraceEventKind::Submitted)));
        ring.record(event(1, TraceEventKind::Completed)).unwrap();
        let drained = ring.drain();
        assert_eq!(
            drained.as_slice(),
            &[
                event(1, TraceEventKind::Started),
                event(1, TraceEventKind::Completed)
            ]
        );
        assert!(ring.is_empty());
        assert_eq!(ring.pop(), None);
        assert_eq!(ring.rejected(), 1, "drain keeps the rejection count");

        ring.record(event(2, TraceEventKind::Failed)).unwrap();
        ring.clear();
        assert!(ring.is_empty());
        assert_eq!(ring.rejected(), 0, "clear starts afresh");
        ring.record(event(3, TraceEventKind::CancellationRequested))
            .unwrap();
        assert_eq!(ring.len(), 1);
    }

    #[test]
    fn concurrent_producers_lose_nothing_and_keep_per_thread_order() {
        const PRODUCERS: u64 = 4;
        const PER_PRODUCER: usize = 50;
        static RING: TraceRing<150> = TraceRing::new();
        let start = Barrier::new(PRODUCERS as usize);
        let refused: StdVec<usize> = thread::scope(|s| {
            let handles: StdVec<_> = (1..=PRODUCERS)
                .map(|task| {
                    let start = &start;
                    s.spawn(move || {
                        start.wait();
                        let mut refused = 0;
                        for step in 0..PER_PRODUCER {
                            let kind = if step % 2 == 0 {
                                TraceEventKind::Started
                            } else {
                                TraceEventKind::Completed
                            };
                            if RING.record(event(task, kind)).is_err() {
                                refused += 1;
                            }
                        }
                        refused
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let refused: usize = refused.iter().sum();
        let total = PRODUCERS as usize * PER_PRODUCER;
        assert_eq!(RING.len(), 150);
        assert_eq!(refused, total - 150);
        assert_eq!(RING.rejected(), refused as u64);

        // Each producer's accepted events form a prefix of what it sent, in order.
        let events = RING.drain();
        for task in 1..=PRODUCERS {
            let mine: StdVec<_> = events.iter().filter(|e| e.task.get() == task).collect();
            for (step, e) in mine.iter().enumerate() {
                let expected = if step % 2 == 0 {
                    TraceEventKind::Started
                } else {
                    TraceEventKind::Completed
                };
                assert_eq!(e.kind, expected, "task {task} step {step}");
            }
        }
    }
}
