//! [`TimerBook`]: a [`TimerQueue`] with its figures: the one logic behind
//! every dinah timer store (the core's [`Timers`](crate::time::Timers) and
//! the hosted executor's), which differ only in how they lock, where the
//! entries live and the order that suits that storage.
#![forbid(unsafe_code)]

use core::task::{Poll, Waker};

use super::clock::Clock;
use super::divisor::Divisor;
use super::figures::TimerFigures;
use super::queue::{Armed, TimerIndex, TimerKey, TimerQueue, TimerStore};

/// The rate of the clock a [`TimerBook`]'s times are read on, as the book
/// converts lags from ticks to microseconds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rate {
    /// Ticks per second, known at run time: the book works out its
    /// reciprocal on the first lag it records, and again only when the rate
    /// changes.
    PerSecond(u64),
    /// Ready-made, usually a `const`: nothing is worked out at run time, and
    /// a constant one folds into the conversion.
    Divisor(Divisor),
}

impl Rate {
    /// The rate of `clock`: its [`per_second`](Clock::per_second) divisor
    /// when it has one, otherwise its ticks per second.
    #[inline]
    pub fn of(clock: &(impl Clock + ?Sized)) -> Self {
        match clock.per_second() {
            Some(divisor) => Self::Divisor(divisor),
            None => Self::PerSecond(clock.ticks_per_second()),
        }
    }
}

/// A [`TimerQueue`] and the [`TimerFigures`] of the timers it serves.
///
/// It does not lock and does not read a clock: its owner does both and
/// passes the time in. Lag is recorded in microseconds, from ticks of a
/// clock of `ticks_per_second` the owner names on each call.
#[derive(Debug)]
pub struct TimerBook<S: TimerStore<I>, I: TimerIndex> {
    queue: TimerQueue<S, I>,
    figures: TimerFigures,
    /// The clock's ticks per second, for lags in microseconds, when the
    /// owner gives the rate as a number: worked out on the first lag and
    /// again only if the rate changes.
    per_second: Option<Divisor>,
}

impl<S: TimerStore<I>, I: TimerIndex> TimerBook<S, I> {
    /// A book over `store`, with no late threshold (nothing counts as late).
    pub const fn new(store: S) -> Self {
        Self {
            queue: TimerQueue::new(store),
            figures: TimerFigures::new(),
            // `None` rather than a placeholder: a store in a `static` stays
            // all zeros, in `.bss` rather than flash.
            per_second: None,
        }
    }

    /// The queue, to read.
    #[must_use]
    pub fn queue(&self) -> &TimerQueue<S, I> {
        &self.queue
    }

    /// The queue's store, to change (see [`TimerQueue::store_mut`]).
    pub fn store_mut(&mut self) -> &mut S {
        self.queue.store_mut()
    }

    /// See [`TimerQueue::forget_kept_wakers`].
    pub fn forget_kept_wakers(&mut self, each: impl FnMut(Waker)) {
        self.queue.forget_kept_wakers(each);
    }

    /// The figures so far, with the number armed now.
    #[must_use]
    pub fn figures(&self) -> TimerFigures {
        let mut figures = self.figures.clone();
        figures.armed = self.queue.armed() as u64;
        figures
    }

    /// The figures so far, with the number armed now, in place.
    pub fn current_figures(&mut self) -> &TimerFigures {
        self.figures.armed = self.queue.armed() as u64;
        &self.figures
    }

    /// Counts a fire as late when its lag exceeds `micros`.
    pub fn set_late_after(&mut self, micros: u64) {
        self.figures.late_after_micros = Some(micros);
    }

    /// Reserves an entry; a full store is counted as a refusal.
    pub fn reserve(&mut self) -> Option<TimerKey> {
        let key = self.queue.reserve();
        if key.is_none() {
            self.figures.refused = self.figures.refused.wrapping_add(1);
        }
        key
    }

    /// One poll of the timer `key` for `deadline` at time `now`: `Ready`
    /// (and its lag recorded) once `now` or the queue's time reached the
    /// deadline, or once it fired; otherwise armed to wake `waker`. A stale
    /// key is `Ready`, so that a misused future ends rather than hangs.
    #[inline]
    pub fn poll(
        &mut self,
        key: TimerKey,
        deadline: u64,
        now: u64,
        rate: Rate,
        waker: &Waker,
    ) -> Poll<()> {
        if deadline <= now {
            if self.queue.settle(key) == Some(true) {
                self.count_fired(1);
            }
        } else {
            match self.queue.arm(key, deadline, waker) {
                Armed::Waiting => return Poll::Pending,
                Armed::Due => self.count_fired(1),
                Armed::Fired | Armed::Stale => {}
            }
        }
        self.record_lag(now.saturating_sub(deadline), rate);
        Poll::Ready(())
    }

    /// A new timer's first poll, in one step: reserves an entry and arms it
    /// for `deadline` to wake `waker`, or finds it due already, against the
    /// queue's own time (no clock read: a deadline the queue's time has not
    /// reached is armed, and fires at the next [`expire`](Self::expire)).
    /// The key is `None` when the store is full (counted as refused).
    pub fn start(&mut self, deadline: u64, waker: &Waker) -> (Option<TimerKey>, Poll<()>) {
        let Some((key, armed)) = self.queue.start(deadline, waker) else {
            self.figures.refused = self.figures.refused.wrapping_add(1);
            return (None, Poll::Pending);
        };
        match armed {
            Armed::Waiting => (Some(key), Poll::Pending),
            Armed::Due | Armed::Fired | Armed::Stale => {
                self.count_fired(1);
                self.figures.lag_micros.record(0);
                (Some(key), Poll::Ready(()))
            }
        }
    }

    /// Gives `key`'s entry back (an armed timer counts as cancelled);
    /// returns the waker it held, to drop outside any lock.
    pub fn release(&mut self, key: TimerKey) -> Option<Waker> {
        let (was_armed, waker) = self.queue.release(key);
        if was_armed {
            self.figures.cancelled = self.figures.cancelled.wrapping_add(1);
        }
        waker
    }

    /// Fires every timer due at `now`; returns how many fired. Their wakers
    /// wait for [`take_fired`](Self::take_fired).
    pub fn expire(&mut self, now: u64) -> usize {
        let fired = self.queue.expire(now);
        self.count_fired(fired as u64);
        fired
    }

    /// The waker of the oldest fired timer not yet woken.
    pub fn take_fired(&mut self) -> Option<Waker> {
        self.queue.take_fired()
    }

    /// When [`expire`](Self::expire) next has work (see
    /// [`TimerQueue::next_expiry`]).
    #[must_use]
    pub fn next_expiry(&self) -> Option<u64> {
        self.queue.next_expiry()
    }

    /// Counts `fired` fires. The counts wrap rather than saturate (see
    /// [`TimerFigures`]): each moves by at most one per timer event.
    fn count_fired(&mut self, fired: u64) {
        self.figures.fired = self.figures.fired.wrapping_add(fired);
    }

    fn record_lag(&mut self, ticks: u64, rate: Rate) {
        // No division at all for the common case of no lag, and none by a
        // library call otherwise (see `Divisor`).
        let micros = if ticks == 0 {
            0
        } else {
            let divisor = match rate {
                Rate::Divisor(divisor) => divisor,
                Rate::PerSecond(per_second) => {
                    let per_second = per_second.max(1);
                    match self.per_second {
                        Some(divisor) if divisor.get() == per_second => divisor,
                        _ => *self.per_second.insert(Divisor::new(per_second)),
                    }
                }
            };
            micros_of(ticks, divisor)
        };
        self.figures.lag_micros.record(micros);
        if self
            .figures
            .late_after_micros
            .is_some_and(|limit| micros > limit)
        {
            self.figures.late = self.figures.late.wrapping_add(1);
        }
    }
}

/// Whole microseconds in `ticks` of a clock of `per_second` ticks a second.
///
/// A clock of a power-of-two number of ticks per microsecond (16, 32 or
/// 64 MHz, say) takes a shift, exact at any tick count; any other rate
/// takes a multiply-high by the divisor's reciprocal, saturating past
/// `u64::MAX / 1,000,000` ticks. With a `const` divisor the test folds away.
#[inline(always)]
fn micros_of(ticks: u64, per_second: Divisor) -> u64 {
    const MILLION: Divisor = Divisor::new(1_000_000);
    let (per_micro, rest) = MILLION.div_rem(per_second.get());
    if rest == 0 && per_micro.is_power_of_two() {
        return ticks >> per_micro.trailing_zeros();
    }
    per_second.div_rem(ticks.saturating_mul(1_000_000)).0
}

#[cfg(test)]
mod tests {
    use super::{Divisor, micros_of};

    /// The plain formula, in 128 bits: no saturation, no shortcut.
    fn exact(ticks: u64, per_second: u64) -> u64 {
        (u128::from(ticks) * 1_000_000 / u128::from(per_second)) as u64
    }

    #[test]
    fn whole_ticks_per_microsecond_in_a_power_of_two_take_a_shift_and_stay_exact() {
        for hz in [1_000_000, 2_000_000, 16_000_000, 64_000_000, 1 << 20] {
            let divisor = Divisor::new(hz);
            for ticks in [
                1,
                15,
                16,
                17,
                1_000_003,
                1 << 40,
                u64::MAX / 1_000_000,
                u64::MAX,
            ] {
                let expected = if hz % 1_000_000 == 0 {
                    // A shift: exact even where `ticks * 1,000,000`
                    // overflows.
                    exact(ticks, hz)
                } else {
                    // Not whole ticks per microsecond: the general path,
                    // which saturates the product.
                    divisor.div_rem(ticks.saturating_mul(1_000_000)).0
                };
                assert_eq!(
                    micros_of(ticks, divisor),
                    expected,
                    "{ticks} ticks at {hz} Hz"
                );
            }
        }
    }

    #[test]
    fn other_rates_take_the_reciprocal() {
        for hz in [12_000_000, 48_000_000, 32_768, 1_000, 3] {
            let divisor = Divisor::new(hz);
            for ticks in [1, 11, 12, 13, 100, 1_000_003, u64::MAX / 1_000_000] {
                assert_eq!(
                    micros_of(ticks, divisor),
                    exact(ticks, hz),
                    "{ticks} at {hz} Hz"
                );
            }
            // Past the product's range it saturates, as it always has.
            assert_eq!(
                micros_of(u64::MAX, divisor),
                u64::MAX / hz,
                "saturated at {hz} Hz"
            );
        }
    }
}
