//! dinah writes no `join` or `select`: the ecosystem's work with its
//! handles, channels and timers. `futures-util`'s `join`, `select` and
//! `FuturesUnordered`, and `embassy-futures`' `join` and `select`, on both
//! executors: the hosted `LocalExecutor` (paused clock) and the core
//! `AsyncExecutor` (static channel, timers on virtual time).

use std::pin::pin;
use std::time::Duration;

use embassy_futures::select::Either as EmbassyEither;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use futures_util::stream::FuturesUnordered;

use dinah::LocalExecutor;
use dinah::executor::{AsyncExecutor, ExecutorConfig, ReadyQueue};
use dinah::sync::{Channel, SharedSemaphore, mpsc};
use dinah::time::{Tickless, TimerDriver, Timers};

mod support;

use support::keep_forever;
use support::virtual_time::{JumpingAlarm, VirtualClock};

fn paused() -> LocalExecutor<'static> {
    LocalExecutor::with_config(ExecutorConfig {
        start_paused: true,
        ..ExecutorConfig::default()
    })
    .unwrap()
}

#[test]
fn futures_util_joins_handles_and_selects_a_channel_against_a_timer() {
    let executor = paused();
    let a = executor.try_spawn(async { Ok::<u32, ()>(1) }).unwrap();
    let b = executor
        .try_spawn(async {
            dinah::time::sleep(Duration::from_millis(5)).await;
            Ok::<u32, ()>(2)
        })
        .unwrap();
    let (a, b) = executor.block_on(future::join(a, b));
    assert_eq!((a.unwrap(), b.unwrap()), (Ok(1), Ok(2)));

    let (tx, mut rx) = mpsc::channel::<u32>(1).unwrap();
    let sender = executor
        .try_spawn(async move {
            dinah::time::sleep(Duration::from_millis(10)).await;
            tx.send(7).await.map_err(drop)
        })
        .unwrap();
    let first = executor.block_on(async {
        let recv = pin!(rx.recv());
        let sleep = pin!(dinah::time::sleep(Duration::from_millis(3)));
        match future::select(recv, sleep).await {
            Either::Left((value, _)) => Err(value),
            Either::Right(((), _)) => Ok(dinah::time::now()),
        }
    });
    assert!(first.is_ok(), "the 3 ms timer wins over the 10 ms send");
    let value = executor.block_on(async {
        let recv = pin!(rx.recv());
        let sleep = pin!(dinah::time::sleep(Duration::from_secs(1)));
        match future::select(recv, sleep).await {
            Either::Left((value, _)) => value,
            Either::Right(_) => None,
        }
    });
    assert_eq!(value, Some(7), "then the send wins over the 1 s timer");
    assert_eq!(executor.block_on(sender).unwrap(), Ok(()));
}

#[test]
fn futures_unordered_yields_handles_as_they_finish() {
    let executor = paused();
    let gate = SharedSemaphore::new(0);
    let mut handles = FuturesUnordered::new();
    for ms in [30u64, 10, 20] {
        let gate = gate.clone();
        handles.push(
            executor
                .try_spawn(async move {
                    dinah::time::sleep(Duration::from_millis(ms)).await;
                    let _ = gate.acquire().await.map(|permit| permit.forget());
                    Ok::<u64, ()>(ms)
                })
                .unwrap(),
        );
    }
    gate.add_permits(3).unwrap();
    let order: Vec<u64> = executor.block_on(async {
        let mut order = Vec::new();
        while let Some(done) = handles.next().await {
            order.push(done.unwrap().unwrap());
        }
        order
    });
    assert_eq!(order, [10, 20, 30]);
}

#[test]
fn embassy_futures_join_and_select_on_the_hosted_executor() {
    let executor = paused();
    let (tx, mut rx) = mpsc::channel::<u32>(1).unwrap();
    let (sent, received) = executor.block_on(embassy_futures::join::join(
        async {
            for value in 0..4 {
                tx.send(value).await.unwrap();
            }
            drop(tx);
        },
        async {
            let mut sum = 0;
            while let Some(value) = rx.recv().await {
                sum += value;
            }
            sum
        },
    ));
    assert_eq!((sent, received), ((), 6));
    let outcome = executor.block_on(embassy_futures::select::select(
        dinah::time::sleep(Duration::from_millis(2)),
        dinah::time::sleep(Duration::from_millis(1)),
    ));
    assert!(matches!(outcome, EmbassyEither::Second(())));
}

/// The core executor on virtual time: a static channel and static timers.
#[test]
fn both_crates_combinators_on_the_core_executor() {
    let clock: &'static VirtualClock = keep_forever(VirtualClock::default());
    let timers: &'static Timers<8, &'static VirtualClock> = keep_forever(Timers::new(clock));
    let queue: &'static ReadyQueue<2> = keep_forever(ReadyQueue::new());
    let channel: &'static Channel<u32, 2> = keep_forever(Channel::new());
    let (tx, mut rx) = channel.split().unwrap();
    let idle = || Tickless::new(timers, JumpingAlarm(clock), || panic!("virtual time"));

    let mut producer = pin!(Some(async move {
        for value in 1..=3 {
            timers.sleep(Duration::from_millis(4)).await;
            tx.send(value).await.unwrap();
        }
    }));
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(queue).unwrap();
    executor.try_spawn(producer.as_mut()).unwrap();
    let (first, raced) = executor.run_until(
        async {
            // futures-util: a receive against a 1 ms timer; the timer wins.
            let raced = match future::select(
                pin!(rx.recv()),
                pin!(timers.sleep(Duration::from_millis(1))),
            )
            .await
            {
                Either::Left(_) => "channel",
                Either::Right(_) => "timer",
            };
            // embassy-futures: a receive against a 1 s timer; the value wins.
            let first = match embassy_futures::select::select(
                rx.recv(),
                timers.sleep(Duration::from_secs(1)),
            )
            .await
            {
                EmbassyEither::First(value) => value,
                EmbassyEither::Second(()) => None,
            };
            (first, raced)
        },
        16,
        idle(),
    );
    assert_eq!((first, raced), (Some(1), "timer"));
    let rest = executor.run_until(
        async {
            let (a, b) = future::join(rx.recv(), async {
                timers.sleep(Duration::from_millis(1)).await
            })
            .await;
            let c = embassy_futures::join::join(rx.recv(), async {}).await.0;
            (a, b, c, rx.recv().await)
        },
        16,
        idle(),
    );
    assert_eq!(rest, (Some(2), (), Some(3), None));
}
