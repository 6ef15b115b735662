//! What only the core's fixed store has (a capacity), and the clock helpers.
//! The timer contract both drivers keep is `tests/time_contract.rs`.

use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;

use critical_section::CriticalSection;

use super::*;
use crate::executor::{AsyncExecutor, ReadyQueue};
use crate::telemetry::Clock;

/// A clock in milliseconds that moves only when told to.
#[derive(Debug, Default)]
struct VirtualClock(AtomicU64);

impl Clock for VirtualClock {
    fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    fn ticks_per_second(&self) -> u64 {
        1_000
    }
}

impl VirtualClock {
    fn set(&self, at: u64) {
        self.0.fetch_max(at, Ordering::Relaxed);
    }
}

/// An alarm that is virtual time itself: setting it moves the clock to the
/// alarm's time at once and reports it due, so the loop goes round and
/// fires the timers instead of sleeping.
struct JumpingAlarm(&'static VirtualClock);

impl Alarm for JumpingAlarm {
    fn set(&mut self, at: u64, _: CriticalSection<'_>) -> bool {
        self.0.set(at);
        false
    }
    fn clear(&mut self, _: CriticalSection<'_>) {}
}

fn never_sleeps() {
    panic!("virtual time never sleeps: the alarm moves the clock");
}

#[test]
fn durations_round_up_to_whole_ticks() {
    assert_eq!(ticks_in(Duration::from_micros(1), 1_000), 1);
    assert_eq!(ticks_in(Duration::from_millis(3), 1_000), 3);
    assert_eq!(ticks_in(Duration::from_nanos(1_000_001), 1_000), 2);
    assert_eq!(ticks_in(Duration::ZERO, 1_000), 0);
    assert_eq!(ticks_in(Duration::MAX, 1_000_000_000), u64::MAX);
}

#[test]
fn an_instant_keeps_its_ticks_saturates_and_orders() {
    let at = Instant::from_ticks(40);
    assert_eq!(at.ticks(), 40);
    assert_eq!(at.saturating_add_ticks(2), Instant::from_ticks(42));
    assert_eq!(Instant::MAX.saturating_add_ticks(1), Instant::MAX);
    assert_eq!(at.checked_add_ticks(2), Some(Instant::from_ticks(42)));
    assert_eq!(Instant::MAX.checked_add_ticks(1), None);
    assert_eq!(at.ticks_since(Instant::from_ticks(10)), 30);
    assert_eq!(Instant::from_ticks(10).ticks_since(at), 0);
    assert!(Instant::ZERO < at && at < Instant::MAX);
    assert_eq!(Instant::default(), Instant::ZERO);
}

#[test]
fn a_deadline_after_a_duration_rounds_up_and_saturates() {
    static CLOCK: VirtualClock = VirtualClock(AtomicU64::new(0));
    static TIMERS: Timers<1, &VirtualClock> = Timers::new(&CLOCK);
    CLOCK.set(7);
    let driver = &TIMERS;
    assert_eq!(driver.now(), Instant::from_ticks(7));
    // A millisecond clock: 1.5 ms is 2 ticks, never 1.
    assert_eq!(
        driver.after(Duration::from_micros(1_500)),
        Instant::from_ticks(9)
    );
    assert_eq!(driver.after(Duration::ZERO), Instant::from_ticks(7));
    assert_eq!(driver.after(Duration::MAX), Instant::MAX);
    let sleep = driver.sleep(Duration::from_millis(5));
    assert_eq!(sleep.deadline(), Instant::from_ticks(12));
}

#[test]
fn a_full_store_is_typed_for_try_sleep_and_never_loses_a_sleep() {
    static CLOCK: VirtualClock = VirtualClock(AtomicU64::new(0));
    static TIMERS: Timers<1, &VirtualClock> = Timers::new(&CLOCK);
    static QUEUE: ReadyQueue<2> = ReadyQueue::new();
    let (timers, clock, queue) = (&TIMERS, &CLOCK, &QUEUE);
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(queue).unwrap();
    let held = timers.try_sleep(Duration::from_millis(100)).unwrap();
    assert_eq!(
        timers.try_sleep(Duration::from_millis(1)).err(),
        Some(TimerFull)
    );
    // A plain sleep on the full store still completes, by polling itself.
    executor.run_until(
        async {
            let start = clock.now();
            let mut sleep = core::pin::pin!(timers.sleep(Duration::from_millis(3)));
            while sleep
                .as_mut()
                .poll(&mut Context::from_waker(core::task::Waker::noop()))
                .is_pending()
            {
                clock.set(clock.now() + 1);
                crate::task::yield_now().await;
            }
            assert!(clock.now() >= start + 3, "never early");
        },
        8,
        Tickless::new(timers, JumpingAlarm(clock), never_sleeps),
    );
    assert!(timers.figures().refused >= 3);
    drop(held);
    assert!(
        timers.try_sleep(Duration::from_millis(1)).is_ok(),
        "the entry came back"
    );
}

#[test]
fn the_wide_counter_crosses_the_wrap() {
    let wide = WideCounter::new();
    let mut expected = 0u64;
    let mut raw = 0u32;
    // Steps of varied size, crossing 2^32 three times.
    for step in
        (0..64).map(|i| 0x1000_0000u32.wrapping_mul(3).wrapping_add(i * 7_919) % 0xF000_0000)
    {
        raw = raw.wrapping_add(step);
        expected += u64::from(step);
        assert_eq!(wide.extend(raw), expected);
    }
    assert!(expected > 3 << 32);
    assert_eq!(
        wide.extend(raw),
        expected,
        "the same reading again is no wrap"
    );
}

#[test]
fn durations_become_ticks_exactly_at_any_rate() {
    // Rates that do not divide a second evenly, and round ones.
    for per_second in [1, 3, 1_000, 32_768, 12_000_000, 16_000_000, 1_000_000_007] {
        for nanos in [
            0,
            1,
            30_517,
            30_518,
            999_999,
            1_000_000,
            123_456_789,
            999_999_999,
        ] {
            let duration = Duration::new(7, nanos);
            let exact = (u128::from(duration.as_nanos() as u64) * u128::from(per_second))
                .div_ceil(1_000_000_000);
            assert_eq!(
                u128::from(ticks_in(duration, per_second)),
                exact,
                "{duration:?} at {per_second} Hz"
            );
        }
    }
}

#[test]
fn lags_are_recorded_in_whole_microseconds_at_the_clock_s_rate() {
    use crate::raw::timer::{Rate, TimerBook, TimerEntry};
    let mut book: TimerBook<[TimerEntry<u16>; 2], u16> =
        TimerBook::new([const { TimerEntry::VACANT }; 2]);
    let waker = core::task::Waker::noop();
    // A 32,768 Hz clock: 100 ticks late is 3,051.7 us, recorded as 3,051.
    let key = book.reserve().unwrap();
    assert!(
        book.poll(key, 1_000, 1_100, Rate::PerSecond(32_768), waker)
            .is_ready()
    );
    book.release(key);
    // The same book read at another rate converts at that rate.
    let key = book.reserve().unwrap();
    assert!(
        book.poll(key, 1_000, 1_007, Rate::PerSecond(1_000), waker)
            .is_ready()
    );
    book.release(key);
    // A ready-made divisor converts the same way: 100 ticks of 32,768 Hz.
    let key = book.reserve().unwrap();
    let divisor = Rate::Divisor(Divisor::new(32_768));
    assert!(book.poll(key, 1_000, 1_100, divisor, waker).is_ready());
    book.release(key);
    let figures = book.figures();
    assert_eq!(figures.lag_micros.count(), 3);
    assert_eq!(figures.lag_micros.sum(), 3_051 + 7_000 + 3_051);
    assert_eq!(figures.lag_micros.max(), 7_000);
    assert_eq!(*book.current_figures(), figures, "in place, the same");
}

#[test]
fn a_store_takes_the_clock_s_divisor_when_it_gives_one() {
    use crate::raw::timer::Rate;
    /// A 1 kHz clock that reads 3 and gives its rate ready-made.
    struct Ready;
    impl Clock for Ready {
        fn now(&self) -> u64 {
            3
        }
        fn ticks_per_second(&self) -> u64 {
            1_000
        }
        fn per_second(&self) -> Option<Divisor> {
            const THOUSAND: Divisor = Divisor::new(1_000);
            Some(THOUSAND)
        }
    }
    assert_eq!(Rate::of(&VirtualClock::default()), Rate::PerSecond(1_000));
    assert_eq!(Rate::of(&Ready), Rate::Divisor(Divisor::new(1_000)));
    // A sleep polled 3 ticks after its deadline: 3,000 us late.
    static TIMERS: Timers<1, Ready> = Timers::new(Ready);
    let mut cx = Context::from_waker(core::task::Waker::noop());
    let mut sleep = core::pin::pin!((&TIMERS).sleep_until(Instant::ZERO));
    assert!(sleep.as_mut().poll(&mut cx).is_ready());
    assert_eq!(TIMERS.figures().lag_micros.max(), 3_000);
}

#[test]
fn figures_read_in_place_match_the_copy() {
    static CLOCK: VirtualClock = VirtualClock(AtomicU64::new(0));
    static TIMERS: Timers<2, &VirtualClock> = Timers::new(&CLOCK);
    let armed = TIMERS.try_sleep(Duration::from_millis(5)).unwrap();
    let mut armed = core::pin::pin!(armed);
    let mut cx = Context::from_waker(core::task::Waker::noop());
    assert!(armed.as_mut().poll(&mut cx).is_pending());
    let copy = TIMERS.figures();
    assert_eq!(copy.armed, 1);
    assert_eq!(TIMERS.read_figures(Clone::clone), copy);
    assert_eq!(TIMERS.read_figures(|figures| figures.armed), 1);
}

#[test]
fn expire_wakes_every_waiter_of_timers_due_together() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;
    use std::vec::Vec;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    static CLOCK: VirtualClock = VirtualClock(AtomicU64::new(0));
    static TIMERS: Timers<12, &VirtualClock> = Timers::new(&CLOCK);
    // Twelve sleeps with one deadline, each waiting with a waker of its own.
    let counts: Vec<Arc<Count>> = (0..12)
        .map(|_| Arc::new(Count(AtomicUsize::new(0))))
        .collect();
    let mut sleeps: Vec<_> = (0..12)
        .map(|_| std::boxed::Box::pin(TIMERS.sleep(Duration::from_millis(5))))
        .collect();
    for (sleep, count) in sleeps.iter_mut().zip(&counts) {
        let waker = Arc::clone(count).into();
        assert!(
            sleep
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
    }
    let woken_times = |times| {
        counts
            .iter()
            .all(|count| count.0.load(Ordering::Relaxed) == times)
    };
    CLOCK.set(4);
    assert_eq!(TIMERS.expire(), 0, "not due yet");
    assert!(woken_times(0));
    CLOCK.set(5);
    assert_eq!(TIMERS.expire(), 12);
    // Each waiter woken exactly once: none lost, none twice.
    assert!(woken_times(1));
    assert_eq!(TIMERS.expire(), 0, "nothing left to fire");
    assert!(woken_times(1));
    let figures = TIMERS.figures();
    assert_eq!((figures.fired, figures.armed), (12, 0));
}

#[cfg(feature = "embedded-hal-async")]
#[test]
fn a_delay_on_the_firmware_store_lasts_at_least_its_time_and_at_most_two_ticks_more() {
    use embedded_hal_async::delay::DelayNs;

    static CLOCK: VirtualClock = VirtualClock(AtomicU64::new(0));
    static TIMERS: Timers<1, &VirtualClock> = Timers::new(&CLOCK);
    static QUEUE: ReadyQueue<2> = ReadyQueue::new();
    let (timers, clock) = (&TIMERS, &CLOCK);
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
    executor.run_until(
        async {
            // A driver written against the trait, as the ecosystem's are.
            async fn waits<D: DelayNs>(delay: &mut D, clock: &VirtualClock) -> [u64; 4] {
                let mut took = [0; 4];
                let start = clock.now();
                delay.delay_ns(1).await;
                took[0] = clock.now() - start;
                let start = clock.now();
                delay.delay_us(1_500).await;
                took[1] = clock.now() - start;
                let start = clock.now();
                delay.delay_ms(40).await;
                took[2] = clock.now() - start;
                let start = clock.now();
                delay.delay_ns(0).await;
                took[3] = clock.now() - start;
                took
            }
            let mut delay = Delay::new(timers);
            // Milliseconds: 1 ns is one tick rounded up, 1.5 ms two, and a
            // tick more for the reading's fraction; no time for zero.
            assert_eq!(waits(&mut delay, clock).await, [2, 3, 41, 0]);
        },
        8,
        Tickless::new(timers, JumpingAlarm(clock), never_sleeps),
    );
    assert_eq!(timers.figures().fired, 3, "zero took no timer");
}
