//! [`HostTimers`]: one executor's timer store, its clock and its next
//! expiry: the time half of the runtime's [`Driver`](super::Driver).
//!
//! The store is dinah-core's [`TimerBook`] over a growing list of entries
//! ordered by a timer wheel ([`Wheel`]); the clock is the host's monotonic
//! clock in microseconds, or a paused one that moves only when told to.
//! [`time`](crate::time) is the API over it.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Waker;
use std::time::{Duration, Instant};

use dinah_core::raw::timer::{Rate, TimerBook, TimerEntry, TimerStore, Wheel};
use dinah_core::telemetry::Clock;
use dinah_core::time::{Divisor, TimerFigures};

use crate::primitives::SpinLock;
use crate::telemetry::ManualClock;

/// Wakers taken per lock when timers fire; woken after it is let go.
const WAKE_BATCH: usize = 32;

/// Lag above which a completion counts as late unless configured: 1 ms.
const DEFAULT_LATE_AFTER_MICROS: u64 = 1_000;
/// The timers' clock counts microseconds.
pub(crate) const MICROS: Rate = Rate::Divisor(Divisor::new(1_000_000));

/// A timer store that grows, and whose released entries keep their wakers
/// while its executor lives (see [`TimerStore::keeps_wakers`]).
#[derive(Debug, Default)]
pub(crate) struct Growing {
    entries: Vec<TimerEntry<u32>>,
    /// Whether released entries keep their wakers: on while the executor
    /// lives (a task that makes timers in a loop finds its waker still in
    /// the entry it reuses: no clone, no drop), off once it ended (see
    /// `HostTimers::stop_keeping_wakers`).
    keep: bool,
    /// The waker the latest arm replaced, to drop once the lock is let go.
    pub(crate) replaced: Option<Waker>,
}

impl TimerStore<u32> for Growing {
    type Order = Wheel<u32>;
    fn entries(&self) -> &[TimerEntry<u32>] {
        &self.entries
    }
    fn entries_mut(&mut self) -> &mut [TimerEntry<u32>] {
        &mut self.entries
    }
    fn grow(&mut self) -> bool {
        self.entries.push(TimerEntry::VACANT);
        true
    }
    fn keeps_wakers(&self) -> bool {
        self.keep
    }
    fn replaced(&mut self, waker: Waker) {
        // At most one arm per lock: the lock's holder takes it.
        self.replaced = Some(waker);
    }
}

/// The clock of an executor's timers.
#[derive(Clone, Debug)]
enum TimerClock {
    /// The host's monotonic clock, from this origin.
    Real(Instant),
    Paused(ManualClock),
}

/// The lock over an executor's timer store: a [`SpinLock`], since a timer
/// made, polled and dropped takes it twice; every hold is the wheel's O(1)
/// work, wakers are woken and dropped after it is let go, and nearly every
/// lock comes from the executor's own thread.
type BookLock = SpinLock<TimerBook<Growing, u32>>;

/// One executor's timers: the store, its clock and its next expiry.
pub(crate) struct HostTimers {
    book: BookLock,
    clock: TimerClock,
    /// When the store next has work (`u64::MAX`: nothing armed), readable
    /// without the lock. It may be early, never late.
    next: AtomicU64,
    /// Whether the executor's telemetry reads what each poll armed
    /// (`context::take_notes`); an unmeasured executor's polls do not note it.
    noting: bool,
}

impl HostTimers {
    pub(crate) fn new(paused: bool, noting: bool) -> Self {
        let mut book = TimerBook::new(Growing {
            keep: true,
            ..Growing::default()
        });
        book.set_late_after(DEFAULT_LATE_AFTER_MICROS);
        Self {
            book: BookLock::new(book),
            clock: if paused {
                TimerClock::Paused(ManualClock::new())
            } else {
                TimerClock::Real(Instant::now())
            },
            next: AtomicU64::new(u64::MAX),
            noting,
        }
    }

    /// The clock's reading, in microseconds.
    pub(crate) fn now(&self) -> u64 {
        match &self.clock {
            // Whole microseconds straight from the `Duration`: no 128-bit
            // nanoseconds on the way.
            TimerClock::Real(origin) => {
                let since = origin.elapsed();
                since
                    .as_secs()
                    .saturating_mul(1_000_000)
                    .saturating_add(u64::from(since.subsec_micros()))
            }
            TimerClock::Paused(clock) => clock.now() / 1_000,
        }
    }

    /// Runs `f` on the store, under its lock.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut TimerBook<Growing, u32>) -> R) -> R {
        f(&mut self.book.lock())
    }

    /// Stops vacant entries keeping their wakers and drops those they
    /// kept, once the executor has dropped its tasks: a kept waker of the
    /// executor's own tasks keeps the executor's shared state alive, and
    /// with it these timers.
    pub(crate) fn stop_keeping_wakers(&self) {
        let mut kept = Vec::new();
        self.with(|book| {
            book.store_mut().keep = false;
            book.forget_kept_wakers(|waker| kept.push(waker));
        });
        drop(kept);
    }

    /// Notes, under the lock, that a timer was armed for `deadline`: the
    /// store may have work then (firing at a deadline also moves every timer
    /// due between levels, so the deadline is as good a time as the wheel's
    /// own). `next` is written only under the lock, so no read-modify-write
    /// is needed. Returns whether that is earlier than the store's next
    /// work was: the executor's thread may then be waiting until a later
    /// deadline (or none), and the caller makes it wait anew.
    pub(crate) fn armed_for(&self, deadline: u64) -> bool {
        let earlier = deadline < self.next.load(Ordering::Relaxed);
        if earlier {
            self.next.store(deadline, Ordering::Relaxed);
        }
        earlier
    }

    /// Whether polls note what they arm for the executor's telemetry.
    pub(crate) fn noting(&self) -> bool {
        self.noting
    }

    /// The paused clock, if the clock is paused (virtual).
    pub(crate) fn paused_clock(&self) -> Option<&ManualClock> {
        match &self.clock {
            TimerClock::Paused(clock) => Some(clock),
            TimerClock::Real(_) => None,
        }
    }

    /// Fires the timers due now and wakes their tasks; one atomic load
    /// (inlined into the tick) when nothing is armed.
    #[inline]
    pub(crate) fn expire_due(&self) -> usize {
        let next = self.next.load(Ordering::Relaxed);
        if next == u64::MAX {
            return 0;
        }
        self.expire_from(next)
    }

    /// [`expire_due`](Self::expire_due) once something is armed.
    #[inline(never)]
    fn expire_from(&self, next: u64) -> usize {
        let now = self.now();
        if now < next {
            return 0;
        }
        let fired = self.with(|book| {
            let fired = book.expire(now);
            self.next
                .store(book.next_expiry().unwrap_or(u64::MAX), Ordering::Relaxed);
            fired
        });
        loop {
            let mut batch: Vec<Waker> = Vec::new();
            self.with(|book| {
                while batch.len() < WAKE_BATCH {
                    match book.take_fired() {
                        Some(waker) => batch.push(waker),
                        None => break,
                    }
                }
            });
            let full = batch.len() == WAKE_BATCH;
            for waker in batch {
                waker.wake();
            }
            if !full {
                return fired;
            }
        }
    }

    /// How long the executor may park when nothing is ready: `None` for
    /// no limit, `Some(ZERO)` when a timer is due now. A paused clock
    /// jumps to the next expiry instead, and says `Some(ZERO)`.
    pub(crate) fn park_limit(&self) -> Option<Duration> {
        if self.next.load(Ordering::Relaxed) == u64::MAX {
            return None;
        }
        // About to park: the hint may be stale (a cancelled timer), so ask
        // the wheel, and leave the exact answer for the next look.
        let next = self.with(|book| {
            let next = book.next_expiry().unwrap_or(u64::MAX);
            self.next.store(next, Ordering::Relaxed);
            next
        });
        if next == u64::MAX {
            return None;
        }
        let now = self.now();
        let ahead = next.saturating_sub(now);
        match &self.clock {
            TimerClock::Paused(clock) => {
                clock.advance(Duration::from_micros(ahead));
                Some(Duration::ZERO)
            }
            TimerClock::Real(_) => Some(Duration::from_micros(ahead)),
        }
    }

    pub(crate) fn figures(&self) -> TimerFigures {
        self.with(|book| book.figures())
    }
}
