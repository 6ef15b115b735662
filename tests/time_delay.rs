//! `embedded_hal_async::delay::DelayNs` on the hosted executors' timers
//! (`time::Delay`): a driver written against the trait waits at least what
//! it asks for, and at most two ticks more on a paused clock (where no lag
//! adds to it), on both hosted executors. The firmware store's side is in
//! `dinah-core/src/time/tests.rs`.

use dinah::LocalExecutor;
use dinah::executor::{ExecutorConfig, MultiConfig, MultiExecutor};
use dinah::time::{self, Delay, TimerDriver};
use embedded_hal_async::delay::DelayNs;

/// One call a driver makes.
#[derive(Clone, Copy, Debug)]
enum Call {
    Ns(u32),
    Us(u32),
    Ms(u32),
}

impl Call {
    /// The least it may take, in the timer handle's ticks of a
    /// microsecond (a nanosecond rounds up to one).
    fn floor(self) -> u64 {
        match self {
            Call::Ns(ns) => u64::from(ns).div_ceil(1_000),
            Call::Us(us) => u64::from(us),
            Call::Ms(ms) => u64::from(ms) * 1_000,
        }
    }
}

const CALLS: [Call; 5] = [
    Call::Ns(1),
    Call::Ns(0),
    Call::Us(10),
    Call::Ms(3),
    // The longest delay_ms: 49.7 days.
    Call::Ms(u32::MAX),
];

/// A driver written against the trait, as the ecosystem's are: how long
/// each of its calls took.
async fn a_driver<D: DelayNs>(delay: &mut D) -> Vec<(Call, u64)> {
    let mut took = Vec::new();
    for call in CALLS {
        let start = time::now();
        match call {
            Call::Ns(ns) => delay.delay_ns(ns).await,
            Call::Us(us) => delay.delay_us(us).await,
            Call::Ms(ms) => delay.delay_ms(ms).await,
        }
        took.push((call, time::now().ticks_since(start)));
    }
    took
}

fn check(took: &[(Call, u64)]) {
    for &(call, took) in took {
        let floor = call.floor();
        assert!(took >= floor, "{took} µs for {call:?}");
        assert!(took <= floor + 2, "{took} µs for {call:?}");
    }
    assert_eq!(took[1].1, 0, "no time for a zero delay");
}

#[test]
fn a_driver_on_the_local_executor_s_timers_waits_at_least_what_it_asks() {
    let executor = LocalExecutor::with_config(ExecutorConfig {
        start_paused: true,
        ..ExecutorConfig::default()
    })
    .unwrap();
    let mut delay = Delay::new(executor.timer());
    let took = executor.block_on(a_driver(&mut delay));
    check(&took);
    let figures = executor.timer().figures();
    assert_eq!((figures.fired, figures.armed), (4, 0), "zero took no timer");
}

#[test]
fn a_driver_on_the_multi_executor_s_timers_waits_at_least_what_it_asks() {
    let executor = MultiExecutor::with_config(MultiConfig {
        workers: Some(2),
        start_paused: true,
        ..MultiConfig::default()
    })
    .unwrap();
    let handle = executor.handle();
    let task = handle
        .try_spawn(async move {
            let mut delay = Delay::new(time::current());
            Ok::<_, ()>(a_driver(&mut delay).await)
        })
        .unwrap_or_else(|_| unreachable!("the executor runs"));
    let took = executor.block_on(task).unwrap().unwrap();
    check(&took);
}

#[test]
fn a_delay_reports_its_driver() {
    let executor = LocalExecutor::new();
    let delay = Delay::new(executor.timer());
    assert_eq!(delay.driver().ticks_per_second(), 1_000_000);
    assert!(format!("{delay:?}").starts_with("Delay"));
}
