//! [`Timers`]: a fixed store of `T` timers behind a critical section, the
//! firmware's timer driver.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::task::{Context, Poll};

use critical_section::{CriticalSection, Mutex};

use super::{Instant, TimerDriver, TimerFigures};
use crate::raw::timer::{Rate, TimerBook, TimerEntry, TimerKey};
use crate::telemetry::Clock;

type Book<const T: usize> = TimerBook<[TimerEntry<u16>; T], u16>;

/// A store of at most `T` timers in static storage, read against the clock
/// `C`: no heap, a `const` constructor, safe from interrupt handlers.
///
/// `&Timers` is a [`TimerDriver`]: `TIMERS.sleep(duration)`,
/// `TIMERS.timeout(duration, future)` and `TIMERS.interval(period, rule)`
/// make the timer futures. Something must fire the timers: the run loop's
/// [`Tickless`](super::Tickless) idle does, through
/// [`expire`](Self::expire), and sets the binary's alarm for the next one.
///
/// ```
/// use core::time::Duration;
/// use dinah::executor::{AsyncExecutor, ReadyQueue};
/// use dinah::time::{TimerDriver, Timers};
/// use dinah::telemetry::Clock;
///
/// /// A clock that moves a millisecond per read (a test's stand-in for a
/// /// hardware counter).
/// #[derive(Default)]
/// struct Stepping(core::sync::atomic::AtomicU64);
/// impl Clock for Stepping {
///     fn now(&self) -> u64 {
///         self.0.fetch_add(1, core::sync::atomic::Ordering::Relaxed)
///     }
///     fn ticks_per_second(&self) -> u64 {
///         1_000
///     }
/// }
///
/// static TIMERS: Timers<4, Stepping> = Timers::new(Stepping(core::sync::atomic::AtomicU64::new(0)));
/// static QUEUE: ReadyQueue<2> = ReadyQueue::new();
/// let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
/// let waited = executor.run_until(
///     async {
///         let start = TIMERS.clock().now();
///         TIMERS.sleep(Duration::from_millis(5)).await;
///         TIMERS.clock().now() - start
///     },
///     8,
///     || {
///         TIMERS.expire();
///     },
/// );
/// assert!(waited >= 5);
/// ```
///
/// # Guarantees
///
/// The armed timers are kept in a binary heap of the `T` entries (see
/// [`raw::timer::TimerHeap`](crate::raw::timer::TimerHeap)): arming and cancelling are
/// O(log T), firing is O(log T) per timer that fires, and
/// [`next_expiry`](Self::next_expiry) is the earliest armed deadline, so a
/// tickless alarm is set for deadlines only. The store's RAM is its `T`
/// entries and `T` heap indices. A full store is
/// counted and handled as [`Sleep`](super::Sleep) documents; no wake is
/// lost. Wakers are woken outside any critical section: `expire` fires the
/// due timers in one, then takes each fired timer's waker in one of its
/// own, so interrupts stay masked for one take at a time.
///
/// # What it does not do
///
/// It does not read the clock by itself nor raise an interrupt: time moves
/// for the timers only when `expire` is called, and a sleep polled at or
/// after its deadline completes whether or not `expire` saw it.
pub struct Timers<const T: usize, C: Clock> {
    clock: C,
    book: Mutex<RefCell<Book<T>>>,
}

impl<const T: usize, C: Clock> Timers<T, C> {
    const FITS: () = assert!(T < u16::MAX as usize, "at most 65,534 timers per store");

    /// An empty store read against `clock`, with no late threshold.
    #[must_use]
    pub const fn new(clock: C) -> Self {
        let () = Self::FITS;
        Self {
            clock,
            book: Mutex::new(RefCell::new(TimerBook::new(
                [const { TimerEntry::VACANT }; T],
            ))),
        }
    }

    /// The clock deadlines are read against.
    #[must_use]
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Reads the clock, fires every timer due by then and wakes their
    /// tasks (each waker taken in a critical section of its own and woken
    /// after it); returns how many fired.
    pub fn expire(&self) -> usize {
        let now = self.clock.now();
        let fired = self.with(|book| book.expire(now));
        while let Some(waker) = self.with(TimerBook::take_fired) {
            waker.wake();
        }
        fired
    }

    /// When [`expire`](Self::expire) next has work: the earliest armed
    /// deadline. `None` when no timer is armed.
    #[must_use]
    pub fn next_expiry(&self) -> Option<Instant> {
        critical_section::with(|cs| self.next_expiry_in(cs))
    }

    /// [`next_expiry`](Self::next_expiry) inside the critical section `cs`
    /// the caller holds already.
    #[must_use]
    pub fn next_expiry_in(&self, cs: CriticalSection<'_>) -> Option<Instant> {
        crate::raw::wait::critical_in(cs, &self.book, |book| book.next_expiry())
            .map(Instant::from_ticks)
    }

    /// The store's figures.
    ///
    /// A copy: [`read_figures`](Self::read_figures) reads them in place.
    #[must_use]
    pub fn figures(&self) -> TimerFigures {
        self.with(|book| book.figures())
    }

    /// Runs `read` on the store's figures in place and returns what it
    /// returns.
    ///
    /// [`TimerFigures`] holds a histogram of a few hundred bytes; reading
    /// the few numbers wanted here copies nothing else, and on a core whose
    /// copies of that size call `memcpy` it links no copy routine. `read`
    /// runs inside the store's critical section, so it should be short:
    /// take the numbers out, and log or send them after.
    pub fn read_figures<R>(&self, read: impl FnOnce(&TimerFigures) -> R) -> R {
        self.with(|book| read(book.current_figures()))
    }

    /// Counts a completion as late in [`TimerFigures::late`] when its lag
    /// exceeds `micros`.
    pub fn set_late_after(&self, micros: u64) {
        self.with(|book| book.set_late_after(micros));
    }

    /// One poll of `key`'s timer in `book` at `now`. The one call of the
    /// book's poll for this store, kept out of line so that it is compiled
    /// once, with the clock's rate folded in when the clock gives a
    /// constant one ([`Clock::per_second`]).
    #[inline(never)]
    fn poll_book(
        &self,
        book: &mut Book<T>,
        key: TimerKey,
        deadline: u64,
        now: u64,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        book.poll(key, deadline, now, Rate::of(&self.clock), cx.waker())
    }

    fn with<R>(&self, f: impl FnOnce(&mut Book<T>) -> R) -> R {
        crate::raw::wait::critical(&self.book, f)
    }
}

impl<const T: usize, C: Clock> TimerDriver for &Timers<T, C> {
    fn now(&self) -> Instant {
        Instant::from_ticks(self.clock.now())
    }

    fn ticks_per_second(&self) -> u64 {
        self.clock.ticks_per_second()
    }

    fn reserve(&self) -> Option<TimerKey> {
        self.with(TimerBook::reserve)
    }

    fn poll_timer(
        &self,
        key: Option<TimerKey>,
        deadline: Instant,
        cx: &mut Context<'_>,
    ) -> (Option<TimerKey>, Poll<()>) {
        let deadline = deadline.ticks();
        // One critical section for the entry and the poll.
        let now = self.clock.now();
        self.with(|book| match key.or_else(|| book.reserve()) {
            Some(key) => (Some(key), self.poll_book(book, key, deadline, now, cx)),
            None => (None, Poll::Pending),
        })
    }

    fn release(&self, key: TimerKey) {
        let waker = self.with(|book| book.release(key));
        drop(waker);
    }
}

impl<const T: usize, C: Clock> fmt::Debug for Timers<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timers")
            .field("capacity", &T)
            .finish_non_exhaustive()
    }
}
