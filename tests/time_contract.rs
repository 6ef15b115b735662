//! The timer contract, written once for both timer drivers dinah ships (the
//! firmware's `Timers` under the core `AsyncExecutor` with a tickless idle,
//! and the hosted `LocalExecutor`'s timers), on virtual time: the clock
//! moves only when the executor would sleep, straight to the next deadline,
//! so each test takes no real time and runs the same way every time.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use dinah::executor::{AsyncExecutor, ExecutorConfig};
use dinah::time::{
    Elapsed, Instant, MissedTicks, Tickless, TimerDriver, TimerFigures, TimerHandle, Timers,
    ZeroPeriod,
};
use dinah::{LocalExecutor, ReadyQueue};

mod support;

use support::keep_forever;
use support::virtual_time::{JumpingAlarm, VirtualClock};

/// A timer driver on virtual time, with an executor to run futures on it.
trait Harness {
    type Driver: TimerDriver;
    fn new() -> Self;
    fn driver(&self) -> Self::Driver;
    /// Something that does a chunk of work taking the given virtual time.
    fn worker(&self) -> Box<dyn Fn(Duration)>;
    fn block_on<F: Future>(&mut self, future: F) -> F::Output;
    fn figures(&self) -> TimerFigures;
}

struct Core {
    timers: &'static Timers<8, &'static VirtualClock>,
    clock: &'static VirtualClock,
    executor: AsyncExecutor<'static, 2>,
}

impl Harness for Core {
    type Driver = &'static Timers<8, &'static VirtualClock>;
    fn new() -> Self {
        let clock: &'static VirtualClock = keep_forever(VirtualClock::default());
        let queue: &'static ReadyQueue<2> = keep_forever(ReadyQueue::new());
        Self {
            timers: keep_forever(Timers::new(clock)),
            clock,
            executor: AsyncExecutor::new(queue).unwrap(),
        }
    }
    fn driver(&self) -> Self::Driver {
        self.timers
    }
    fn worker(&self) -> Box<dyn Fn(Duration)> {
        let clock = self.clock;
        Box::new(move |by| {
            clock.0.fetch_add(by.as_millis() as u64, Ordering::Relaxed);
        })
    }
    fn block_on<F: Future>(&mut self, future: F) -> F::Output {
        let idle = Tickless::new(self.timers, JumpingAlarm(self.clock), || {
            panic!("virtual time never sleeps")
        });
        self.executor.run_until(future, 8, idle)
    }
    fn figures(&self) -> TimerFigures {
        self.timers.figures()
    }
}

struct Hosted(LocalExecutor<'static>);

impl Harness for Hosted {
    type Driver = TimerHandle;
    fn new() -> Self {
        Self(
            LocalExecutor::with_config(ExecutorConfig {
                start_paused: true,
                ..ExecutorConfig::default()
            })
            .unwrap(),
        )
    }
    fn driver(&self) -> TimerHandle {
        self.0.timer()
    }
    fn worker(&self) -> Box<dyn Fn(Duration)> {
        let timer = self.0.timer();
        Box::new(move |by| timer.advance(by).unwrap())
    }
    fn block_on<F: Future>(&mut self, future: F) -> F::Output {
        self.0.block_on(future)
    }
    fn figures(&self) -> TimerFigures {
        self.0.timer().figures()
    }
}

/// Milliseconds from `start` to now on `driver`'s clock.
fn millis_since<D: TimerDriver>(driver: &D, start: Instant) -> u64 {
    driver.now().ticks_since(start) * 1_000 / driver.ticks_per_second()
}

/// Polls every future until all are done (each is polled until it is).
async fn join_all<F: Future<Output = ()>>(futures: Vec<F>) {
    let mut futures: Vec<_> = futures.into_iter().map(|f| Some(Box::pin(f))).collect();
    poll_fn(|cx| {
        for slot in &mut futures {
            if let Some(future) = slot
                && future.as_mut().poll(cx).is_ready()
            {
                *slot = None;
            }
        }
        if futures.iter().all(Option::is_none) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}

fn sleeps_complete_in_deadline_order_at_their_deadlines<H: Harness>() {
    let mut harness = H::new();
    let driver = harness.driver();
    let start = driver.now();
    let log = RefCell::new(Vec::new());
    let sleeper = |ms: u64| {
        let (driver, log) = (driver.clone(), &log);
        async move {
            driver.clone().sleep(Duration::from_millis(ms)).await;
            log.borrow_mut().push((ms, millis_since(&driver, start)));
        }
    };
    harness.block_on(join_all(vec![
        sleeper(30),
        sleeper(10),
        sleeper(20),
        sleeper(0),
    ]));
    assert_eq!(*log.borrow(), [(0, 0), (10, 10), (20, 20), (30, 30)]);
    let figures = harness.figures();
    assert_eq!((figures.fired, figures.cancelled, figures.armed), (4, 0, 0));
    assert_eq!(figures.lag_micros.max(), 0, "virtual time has no lag");
    assert_eq!(figures.late, 0);
}

/// A store full of timers with one deadline: one expiry fires them all,
/// and every waiter completes then.
fn timers_due_together_all_fire_at_once<H: Harness>() {
    let mut harness = H::new();
    let driver = harness.driver();
    let start = driver.now();
    let done = RefCell::new(Vec::new());
    let sleepers = (0..8)
        .map(|n| {
            let (driver, done) = (driver.clone(), &done);
            async move {
                driver.clone().sleep(Duration::from_millis(5)).await;
                done.borrow_mut().push((n, millis_since(&driver, start)));
            }
        })
        .collect();
    harness.block_on(join_all(sleepers));
    let done = done.into_inner();
    assert_eq!(done, (0..8).map(|n| (n, 5)).collect::<Vec<_>>());
    let figures = harness.figures();
    assert_eq!((figures.fired, figures.cancelled, figures.armed), (8, 0, 0));
}

fn a_timeout_elapses_or_returns_the_output<H: Harness>() {
    let mut harness = H::new();
    let driver = harness.driver();
    let start = driver.now();
    let late = harness.block_on(driver.clone().timeout(
        Duration::from_millis(5),
        driver.clone().sleep(Duration::from_millis(50)),
    ));
    assert_eq!(late, Err(Elapsed));
    assert_eq!(millis_since(&driver, start), 5);
    let inner = driver.clone();
    let quick = harness.block_on(
        driver
            .clone()
            .timeout(Duration::from_millis(50), async move {
                inner.sleep(Duration::from_millis(5)).await;
                7
            }),
    );
    assert_eq!(quick, Ok(7));
    assert_eq!(millis_since(&driver, start), 10);
    let figures = harness.figures();
    // Fired: the first timeout and the inner sleep; cancelled: the sleep
    // the timeout dropped and the second timeout.
    assert_eq!((figures.fired, figures.cancelled, figures.armed), (2, 2, 0));
}

/// `timeout_at` races a future against a deadline in ticks: the deadline
/// wins when it comes first, and the output when the future ends first; a
/// deadline already passed ends a future that is not ready at its first
/// poll.
fn a_timeout_at_a_deadline_elapses_or_returns_the_output<H: Harness>() {
    let mut harness = H::new();
    let driver = harness.driver();
    let start = driver.now();
    let ms = |n: u64| n * driver.ticks_per_second() / 1_000;
    let late = harness.block_on(
        driver.clone().timeout_at(
            start.saturating_add_ticks(ms(5)),
            driver
                .clone()
                .sleep_until(start.saturating_add_ticks(ms(50))),
        ),
    );
    assert_eq!(late, Err(Elapsed));
    assert_eq!(millis_since(&driver, start), 5);
    let quick = harness.block_on(
        driver.clone().timeout_at(
            start.saturating_add_ticks(ms(60)),
            driver
                .clone()
                .sleep_until(start.saturating_add_ticks(ms(10))),
        ),
    );
    assert_eq!(quick, Ok(()));
    assert_eq!(millis_since(&driver, start), 10);
    let passed = harness.block_on(
        driver.clone().timeout_at(
            start,
            driver
                .clone()
                .sleep_until(start.saturating_add_ticks(ms(20))),
        ),
    );
    assert_eq!(passed, Err(Elapsed));
    assert_eq!(
        millis_since(&driver, start),
        10,
        "no wait for a passed deadline"
    );
    let figures = harness.figures();
    // Fired: the first deadline, the second sleep and the passed deadline
    // (due at its first poll); cancelled: the sleeps the deadlines dropped
    // and the second deadline.
    assert_eq!((figures.fired, figures.cancelled, figures.armed), (3, 3, 0));
}

/// The first five ticks of a 10 ms interval under `rule`, in ms from its
/// start, when the task works `work` after the second.
fn five_ticks<H: Harness>(rule: MissedTicks, work: Duration) -> Vec<u64> {
    let mut harness = H::new();
    let driver = harness.driver();
    let start = driver.now();
    let worker = harness.worker();
    harness.block_on(async {
        let mut interval = driver
            .clone()
            .interval(Duration::from_millis(10), rule)
            .unwrap();
        let mut seen = Vec::new();
        for round in 0..5 {
            let tick = interval.tick().await;
            seen.push(tick.ticks_since(start) * 1_000 / driver.ticks_per_second());
            if round == 1 {
                worker(work);
            }
        }
        seen
    })
}

fn intervals_follow_their_missed_tick_rule<H: Harness>() {
    // Period 10 ms. After its second tick the task works 25 ms, so the
    // tick due at 20 completes late, at 35, under every rule; the rule says
    // what comes after it.
    let expect = [
        (MissedTicks::Burst, [0, 10, 20, 30, 40]),
        (MissedTicks::Delay, [0, 10, 20, 45, 55]),
        (MissedTicks::Skip, [0, 10, 20, 40, 50]),
    ];
    for (rule, due) in expect {
        let seen = five_ticks::<H>(rule, Duration::from_millis(25));
        assert_eq!(seen, due, "{rule:?}");
    }
}

fn a_tick_exactly_one_period_late_keeps_the_schedule_under_every_rule<H: Harness>() {
    // Period 10 ms; after the tick at 10 the task works 20 ms, so the tick
    // due at 20 completes at 30, exactly one period late: the tick after
    // it is due that instant, so nothing is behind and no rule applies.
    for rule in [MissedTicks::Burst, MissedTicks::Delay, MissedTicks::Skip] {
        let seen = five_ticks::<H>(rule, Duration::from_millis(20));
        assert_eq!(seen, [0, 10, 20, 30, 40], "{rule:?}");
    }
}

fn a_period_under_one_tick_is_refused_and_others_round_up<H: Harness>() {
    let mut harness = H::new();
    let driver = harness.driver();
    let per_second = driver.ticks_per_second();
    let tick = 1_000_000_000 / per_second;
    harness.block_on(async {
        for nanos in [1, tick / 2, tick - 1] {
            let refused = driver
                .clone()
                .interval(Duration::from_nanos(nanos), MissedTicks::Burst);
            assert_eq!(refused.err(), Some(ZeroPeriod), "{nanos} ns");
        }
        let one = driver
            .clone()
            .interval(Duration::from_nanos(tick), MissedTicks::Burst)
            .unwrap();
        assert_eq!(one.period(), 1);
        let more = driver
            .clone()
            .interval(Duration::from_nanos(tick + tick / 2), MissedTicks::Burst)
            .unwrap();
        assert_eq!(more.period(), 2, "rounded up, as a sleep is");
    });
}

fn dropping_a_sleep_cancels_its_timer<H: Harness>() {
    let mut harness = H::new();
    let driver = harness.driver();
    harness.block_on(async {
        let mut sleep = driver.clone().sleep(Duration::from_secs(3_600));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(pin!(&mut sleep).poll(&mut cx).is_pending());
    });
    let figures = harness.figures();
    assert_eq!((figures.armed, figures.cancelled, figures.fired), (0, 1, 0));
    // Nothing left armed: the executor is idle with no deadline to wait for.
    let start = driver.now();
    harness.block_on(async {});
    assert_eq!(driver.now(), start, "no jump: no timer was left");
}

support::contract!(
    [core_timers: Core, hosted_timers: Hosted],
    [
        sleeps_complete_in_deadline_order_at_their_deadlines,
        timers_due_together_all_fire_at_once,
        a_timeout_elapses_or_returns_the_output,
        a_timeout_at_a_deadline_elapses_or_returns_the_output,
        intervals_follow_their_missed_tick_rule,
        a_tick_exactly_one_period_late_keeps_the_schedule_under_every_rule,
        a_period_under_one_tick_is_refused_and_others_round_up,
        dropping_a_sleep_cancels_its_timer,
    ]
);
