//! Time on the hosted executor: [`sleep`], [`timeout`], [`interval`] and
//! their kin, served by the timers of the
//! [`LocalExecutor`](crate::executor::LocalExecutor) that polls them, and a
//! clock a test can pause ([`ExecutorConfig::start_paused`](crate::executor::ExecutorConfig::start_paused)).
//!
//! Each executor keeps one store of timers (a growing store ordered by a
//! timer wheel, see [`dinah_core::raw::Wheel`]) and drives it itself: at the start of each
//! tick it fires the timers that are due, and when no task is ready it
//! parks until the next deadline; a wake from another thread cuts that
//! park short. There is no timer thread. The clock is the host's monotonic
//! clock, read in microseconds.
//!
//! The futures are dinah-core's ([`Sleep`],
//! [`Interval`]) over a [`TimerHandle`]; the
//! free functions here find the handle of the executor that runs on this
//! thread.
//!
//! # What a timer costs
//!
//! A sleep made, polled once and dropped on its executor's thread (the
//! timeout that did not fire) reads the clock once and takes the store's
//! lock twice, and touches no reference count in the common case:
//!
//! - the lock is a spin lock whose unlock is a plain store (a thread that
//!   finds it held yields; it is held only for the wheel's O(1) work, never
//!   while user code runs);
//! - a released entry keeps its task's waker, so the task's next timer in
//!   that entry needs no waker clone (kept wakers are let go when the
//!   executor ends; a waker an entry replaces is dropped after the lock);
//! - a handle dropped on the thread of its (current) executor is kept for
//!   the next [`current`] (a few per thread), so the free functions do not
//!   count references either.
#![forbid(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use dinah_core::raw::{Rate, TimerBook, TimerEntry, TimerKey, TimerStore, Wheel};
use dinah_core::telemetry::Clock;
use dinah_core::time::{
    Divisor, Elapsed, Interval, MissedTicks, Sleep, TimerDriver, TimerFigures, ZeroPeriod,
};

use crate::io::HostDriver;
use crate::primitives::SpinLock;
use crate::telemetry::ManualClock;

/// Wakers taken per lock when timers fire; woken after it is let go.
const WAKE_BATCH: usize = 32;

/// Lag above which a completion counts as late unless configured: 1 ms.
const DEFAULT_LATE_AFTER_MICROS: u64 = 1_000;
/// The timers' clock counts microseconds.
const MICROS: Rate = Rate::Divisor(Divisor::new(1_000_000));

/// A timer store that grows, and whose released entries keep their wakers
/// while its executor lives (see [`TimerStore::keeps_wakers`]).
#[derive(Debug, Default)]
struct Growing {
    entries: Vec<TimerEntry<u32>>,
    /// Whether released entries keep their wakers: on while the executor
    /// lives (a task that makes timers in a loop finds its waker still in
    /// the entry it reuses: no clone, no drop), off once it ended (see
    /// `HostTimers::stop_keeping_wakers`).
    keep: bool,
    /// The waker the latest arm replaced, to drop once the lock is let go.
    replaced: Option<Waker>,
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
    /// Where the executor's thread waits until `next`: a timer armed
    /// earlier than that cuts the wait short.
    driver: Arc<HostDriver>,
    /// Whether the executor's telemetry reads what each poll armed
    /// (`take_armed`); an unmeasured executor's polls do not note it.
    noting: bool,
}

impl HostTimers {
    pub(crate) fn new(paused: bool, driver: Arc<HostDriver>, noting: bool) -> Self {
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
            driver,
            noting,
        }
    }

    fn now(&self) -> u64 {
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

    fn with<R>(&self, f: impl FnOnce(&mut TimerBook<Growing, u32>) -> R) -> R {
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
    /// is needed.
    fn armed_for(&self, deadline: u64) {
        if deadline < self.next.load(Ordering::Relaxed) {
            self.next.store(deadline, Ordering::Relaxed);
            // The executor's thread may be waiting until a later deadline
            // (or none): make it wait anew. On its own thread, where it is
            // running, this costs one swap and one more look before it
            // waits.
            self.driver.unpark();
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

/// A handle to one executor's timers: a [`TimerDriver`], so it makes
/// sleeps, timeouts and intervals (the free functions of this module use
/// the handle of the executor running on this thread). `Send + Sync`,
/// cheap to clone.
///
/// Its clock reads microseconds since the executor was made; it is the
/// host's monotonic clock, or, for an executor made with
/// [`start_paused`](crate::executor::ExecutorConfig::start_paused), a
/// clock that moves only when the executor is idle (to the next deadline)
/// or when [`advance`](Self::advance) moves it.
///
/// A handle of the current executor dropped on its thread is kept for the
/// next [`current`] (up to a few per thread), so a task that makes timers
/// in a loop pays no reference count for their handles.
pub struct TimerHandle {
    /// `Some` until the handle's drop takes it, to keep it for reuse.
    shared: Option<Arc<HostTimers>>,
}

impl TimerHandle {
    pub(crate) fn new(timers: Arc<HostTimers>) -> Self {
        Self {
            shared: Some(timers),
        }
    }

    #[inline]
    fn timers(&self) -> &Arc<HostTimers> {
        match &self.shared {
            Some(timers) => timers,
            None => taken(),
        }
    }

    /// The clock's reading, in microseconds.
    #[must_use]
    pub fn now(&self) -> u64 {
        self.timers().now()
    }

    /// Whether the clock is paused (virtual).
    #[must_use]
    pub fn is_paused(&self) -> bool {
        matches!(self.timers().clock, TimerClock::Paused(_))
    }

    /// Moves a paused clock forward by `by`. Timers that come due fire at
    /// the executor's next tick.
    ///
    /// # Errors
    ///
    /// [`ClockNotPaused`] when the clock is the real one.
    pub fn advance(&self, by: Duration) -> Result<(), ClockNotPaused> {
        match &self.timers().clock {
            TimerClock::Paused(clock) => {
                clock.advance(by);
                Ok(())
            }
            TimerClock::Real(_) => Err(ClockNotPaused),
        }
    }

    /// The timers' figures: armed, fired, cancelled, refused, late, lag.
    #[must_use]
    pub fn figures(&self) -> TimerFigures {
        self.timers().figures()
    }

    /// The executor's driver (its reactor, once it has one).
    pub(crate) fn driver(&self) -> &Arc<HostDriver> {
        &self.timers().driver
    }

    /// Whether two handles reach the same timers.
    #[must_use]
    pub fn same_timers(&self, other: &Self) -> bool {
        Arc::ptr_eq(self.timers(), other.timers())
    }

    /// A poll of `key`'s timer, against the clock.
    fn poll_armed(&self, key: TimerKey, deadline: u64, cx: &mut Context<'_>) -> Poll<()> {
        let now = self.timers().now();
        let (poll, replaced) = self.timers().with(|book| {
            let poll = book.poll(key, deadline, now, MICROS, cx.waker());
            if poll.is_pending() {
                self.timers().armed_for(deadline);
            }
            (poll, book.store_mut().replaced.take())
        });
        drop(replaced);
        if poll.is_pending() && self.timers().noting {
            note_armed(deadline.saturating_sub(now));
        }
        poll
    }

    /// A timer's first poll: its entry and its arming in one lock, against
    /// the wheel's time (no clock read).
    fn first_poll(&self, deadline: u64, cx: &mut Context<'_>) -> (Option<TimerKey>, Poll<()>) {
        let (key, poll, wheel_time, replaced) = self.timers().with(|book| {
            let (key, poll) = book.start(deadline, cx.waker());
            if key.is_some() && poll.is_pending() {
                self.timers().armed_for(deadline);
            }
            (
                key,
                poll,
                book.queue().elapsed(),
                book.store_mut().replaced.take(),
            )
        });
        drop(replaced);
        if key.is_some() && poll.is_pending() && self.timers().noting {
            // Against the wheel's time, a lower bound of the clock: the
            // telemetry may think the timer due a little later than it is.
            note_armed(deadline.saturating_sub(wheel_time));
        }
        (key, poll)
    }
}

impl TimerDriver for TimerHandle {
    fn now(&self) -> u64 {
        self.timers().now()
    }

    fn ticks_per_second(&self) -> u64 {
        1_000_000
    }

    fn reserve(&self) -> Option<TimerKey> {
        self.timers().with(TimerBook::reserve)
    }

    fn poll_timer(
        &self,
        key: Option<TimerKey>,
        deadline: u64,
        cx: &mut Context<'_>,
    ) -> (Option<TimerKey>, Poll<()>) {
        match key {
            Some(key) => (Some(key), self.poll_armed(key, deadline, cx)),
            None => self.first_poll(deadline, cx),
        }
    }

    fn release(&self, key: TimerKey) {
        let waker = self.timers().with(|book| book.release(key));
        drop(waker);
    }
}

/// A handle's timers were used after its drop took them: not reachable
/// (only `drop` takes them).
#[cold]
fn taken() -> ! {
    unreachable!("dinah: a timer handle's timers were taken by its drop")
}

impl Clone for TimerHandle {
    fn clone(&self) -> Self {
        Self::new(Arc::clone(self.timers()))
    }
}

impl Drop for TimerHandle {
    /// Keeps the reference for the next [`current`] when these are this
    /// thread's current timers and fewer than eight are kept; otherwise
    /// lets it go.
    fn drop(&mut self) {
        let Some(timers) = self.shared.take() else {
            return;
        };
        // Moved into the closure: dropped with it when it is not kept (or
        // when the thread-locals are gone and it never runs).
        let _ = CURRENT.try_with(move |current| {
            // Borrowed already: this drop runs inside `enter` or `leave`.
            if let Ok(mut current) = current.try_borrow_mut()
                && current.spares.len() < SPARES
                && current
                    .timers
                    .as_ref()
                    .is_some_and(|now| Arc::ptr_eq(now, &timers))
            {
                current.spares.push(timers);
            }
        });
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHandle")
            .field("now", &self.now())
            .field("paused", &self.is_paused())
            .finish_non_exhaustive()
    }
}

/// [`TimerHandle::advance`] was asked to move the real clock.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct ClockNotPaused;

impl fmt::Display for ClockNotPaused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("only a paused clock can be advanced")
    }
}

impl std::error::Error for ClockNotPaused {}

std::thread_local! {
    /// How far off (µs) the earliest timer armed by the poll running on
    /// this thread is due, for the executor's telemetry: a task that waits
    /// on a timer has a known wake path. `u64::MAX`: none.
    static ARMED: Cell<u64> = const { Cell::new(u64::MAX) };

    /// The timers of the executor made or entered last on this thread,
    /// until it is dropped, and spare references to them.
    static CURRENT: RefCell<Current> = const {
        RefCell::new(Current {
            timers: None,
            spares: Vec::new(),
        })
    };
}

/// References to this thread's current timers kept by dropped handles, at
/// most.
const SPARES: usize = 8;

/// This thread's current timers.
struct Current {
    timers: Option<Arc<HostTimers>>,
    /// References to `timers` that dropped handles left, for the next
    /// handles to take: a handle made and dropped on this thread then
    /// touches no reference count. All point to `timers`.
    spares: Vec<Arc<HostTimers>>,
}

/// What [`Current::replace`] let go, for the caller to drop after the
/// thread-local is no longer borrowed.
type LetGo = (Option<Arc<HostTimers>>, Vec<Arc<HostTimers>>);

impl Current {
    /// A handle to the current timers, from a spare reference if there is
    /// one.
    fn handle(&mut self) -> Option<TimerHandle> {
        let timers = self.timers.as_ref()?;
        Some(TimerHandle::new(
            self.spares.pop().unwrap_or_else(|| Arc::clone(timers)),
        ))
    }

    /// Makes `timers` (or none) current; returns what was let go, for the
    /// caller to drop after the borrow ends.
    fn replace(&mut self, timers: Option<Arc<HostTimers>>) -> LetGo {
        let spares = std::mem::take(&mut self.spares);
        (std::mem::replace(&mut self.timers, timers), spares)
    }
}

/// Notes for the executor's telemetry that the poll running on this thread
/// armed a timer due in `due_in` µs.
fn note_armed(due_in: u64) {
    // `u64::MAX` is "nothing armed": a timer due that far off (it saturated)
    // is noted one short of it, still a timer.
    let due_in = due_in.min(u64::MAX - 1);
    let _ = ARMED.try_with(|armed| armed.set(armed.get().min(due_in)));
}

/// Takes (and clears) how far off the earliest timer armed on this thread
/// since the last take is due, in µs.
pub(crate) fn take_armed() -> Option<u64> {
    ARMED
        .try_with(|armed| armed.replace(u64::MAX))
        .ok()
        .filter(|&due_in| due_in != u64::MAX)
}

/// Makes `timers` this thread's current timers (cheap when they are
/// already).
pub(crate) fn enter(timers: &Arc<HostTimers>) {
    let _ = CURRENT.try_with(|current| {
        let let_go = {
            let mut current = current.borrow_mut();
            if current
                .timers
                .as_ref()
                .is_some_and(|now| Arc::ptr_eq(now, timers))
            {
                return;
            }
            current.replace(Some(Arc::clone(timers)))
        };
        drop(let_go);
    });
}

/// Forgets `timers` as this thread's current timers, if they are.
pub(crate) fn leave(timers: &Arc<HostTimers>) {
    let _ = CURRENT.try_with(|current| {
        let let_go = {
            let mut current = current.borrow_mut();
            if !current
                .timers
                .as_ref()
                .is_some_and(|now| Arc::ptr_eq(now, timers))
            {
                return;
            }
            current.replace(None)
        };
        drop(let_go);
    });
}

/// The timers of the executor made, or entered (by `block_on` or `tick`),
/// last on this thread, or `None` when there is none or it was dropped.
/// So `executor.block_on(time::sleep(d))` uses `executor`'s timers, and a
/// task always uses those of the executor that polls it.
#[must_use]
pub fn try_current() -> Option<TimerHandle> {
    CURRENT
        .try_with(|current| current.try_borrow_mut().ok()?.handle())
        .ok()
        .flatten()
}

/// [`try_current`], for the free functions.
///
/// # Panics
///
/// When no live executor was made or entered on this thread.
#[must_use]
pub fn current() -> TimerHandle {
    try_current().unwrap_or_else(|| {
        panic!(
            "dinah: no LocalExecutor was made or entered on this thread, so there are no timers to \
             wait on; call time functions from its tasks, or use a TimerHandle"
        )
    })
}

/// The current executor's clock, in microseconds.
///
/// # Panics
///
/// As [`current`].
#[must_use]
pub fn now() -> u64 {
    current().now()
}

/// A future that completes once `duration` has passed (see
/// [`Sleep`]), on the timers of the executor
/// running on this thread.
///
/// # Panics
///
/// As [`current`]: outside a task or `block_on` of a live executor.
#[must_use]
pub fn sleep(duration: Duration) -> Sleep<TimerHandle> {
    current().sleep(duration)
}

/// A future that completes once the current executor's clock reads
/// `deadline` microseconds.
///
/// # Panics
///
/// As [`current`].
#[must_use]
pub fn sleep_until(deadline: u64) -> Sleep<TimerHandle> {
    current().sleep_until(deadline)
}

/// Runs `future` for at most `duration`: its output, or [`Elapsed`] (and
/// `future` dropped) when the time ran out first. Works for any future,
/// including a pool's [`JoinHandle`](crate::task::JoinHandle).
///
/// # Panics
///
/// As [`current`].
pub fn timeout<F: Future>(
    duration: Duration,
    future: F,
) -> impl Future<Output = Result<F::Output, Elapsed>> {
    current().timeout(duration, future)
}

/// An interval on the current executor's timers: first tick now, then one
/// every `period` (rounded up to whole microseconds, the clock's tick),
/// with `missed` as its rule for ticks it fell behind on (see
/// [`MissedTicks`] for when that is).
///
/// # Errors
///
/// [`ZeroPeriod`] when `period` is under a microsecond (one tick).
///
/// # Panics
///
/// As [`current`].
pub fn interval(
    period: Duration,
    missed: MissedTicks,
) -> Result<Interval<TimerHandle>, ZeroPeriod> {
    current().interval(period, missed)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn timers() -> Arc<HostTimers> {
        let driver = Arc::new(HostDriver::new(crate::primitives::current()));
        Arc::new(HostTimers::new(true, driver, false))
    }

    #[test]
    fn dropped_handles_are_kept_for_the_next_only_while_their_timers_are_current() {
        let (mine, other) = (timers(), timers());
        enter(&mine);
        assert_eq!(Arc::strong_count(&mine), 2, "the current reference");
        let handles: Vec<TimerHandle> = (0..SPARES + 2).map(|_| current()).collect();
        assert_eq!(Arc::strong_count(&mine), 2 + SPARES + 2);
        drop(handles);
        // At most `SPARES` kept; the others let go.
        assert_eq!(Arc::strong_count(&mine), 2 + SPARES);
        let reused = current();
        assert_eq!(
            Arc::strong_count(&mine),
            2 + SPARES,
            "taken from the spares"
        );
        // A handle of other timers is not kept.
        drop(TimerHandle::new(Arc::clone(&other)));
        assert_eq!(Arc::strong_count(&other), 1);
        // Entering other timers lets the spares go; so does leaving.
        enter(&other);
        assert_eq!(Arc::strong_count(&mine), 2, "the test's and `reused`");
        drop(reused);
        assert_eq!(Arc::strong_count(&mine), 1, "not kept: no longer current");
        leave(&other);
        assert_eq!(Arc::strong_count(&other), 1);
        assert!(try_current().is_none());
    }
}
