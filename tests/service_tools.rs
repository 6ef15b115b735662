//! What shortens a service: a pool job called and awaited with one error
//! (`PoolSpawner::call`), a group's values with nothing to flatten
//! (`TaskGroup::try_join_all`), and one channel receiver shared by many
//! consumers (`mpsc::Receiver::shared`).

use std::error::Error;
use std::task::Poll;

use dinah::pool::{CallError, ShutdownPolicy};
use dinah::sync::{TryRecvError, mpsc};
use dinah::task::JoinError;
use dinah::{CoreConfig, LocalExecutor, WorkerPool};

mod support;

use support::sync_model::Polled;

type BoxError = Box<dyn Error + Send + Sync>;

#[test]
fn a_call_gives_the_value_or_one_error() {
    let pool = WorkerPool::new(CoreConfig::new(1).unwrap(), 1).unwrap();
    let cpu = pool.spawner();
    let executor = LocalExecutor::new();
    let (value, panicked) = executor.block_on(async {
        let value = cpu.call(|| 6 * 7).await;
        let panicked = cpu.call(|| -> u8 { panic!("bad input") }).await;
        (value, panicked)
    });
    assert_eq!(value.unwrap(), 42);
    match panicked {
        Err(CallError::Failed(JoinError::Panicked(message))) => assert_eq!(message, "bad input"),
        other => panic!("{other:?}"),
    }
    drop(pool.shutdown(ShutdownPolicy::Drain));
    let refused = executor.block_on(cpu.call(|| 1));
    assert!(matches!(refused, Err(CallError::Shutdown)), "{refused:?}");
    // It carries into a boxed error with `?`.
    let boxed: Result<u8, BoxError> = executor.block_on(async { Ok(cpu.call(|| 1).await?) });
    assert!(boxed.unwrap_err().to_string().contains("shut down"));
}

#[test]
fn try_join_all_gives_every_value_or_the_first_error() {
    let executor = LocalExecutor::new();
    let spawner = executor.local_spawner();
    let mut group = spawner.group::<Result<u32, BoxError>>();
    for n in 1..=3 {
        group.spawn(async move { Ok(n * 10) }).unwrap();
    }
    assert_eq!(
        executor.block_on(group.try_join_all()).unwrap(),
        [10, 20, 30]
    );

    let mut failing = spawner.group::<Result<u32, BoxError>>();
    failing.spawn(async { Ok(1) }).unwrap();
    failing.spawn(async { Err("no route".into()) }).unwrap();
    failing.spawn(async { Ok(3) }).unwrap();
    let error = executor.block_on(failing.try_join_all()).unwrap_err();
    assert_eq!(error.to_string(), "no route");
    assert_eq!(
        failing.len(),
        1,
        "the child after the error stays in the group"
    );

    let mut cancelled = spawner.group::<Result<u32, BoxError>>();
    let id = cancelled.spawn(std::future::pending()).unwrap();
    cancelled.cancel_all();
    let error = executor.block_on(cancelled.try_join_all()).unwrap_err();
    assert_eq!(
        error.downcast_ref::<JoinError>(),
        Some(&JoinError::Cancelled),
        "child {id:?}: its join error, as the group's error type"
    );
}

#[test]
fn a_shared_receiver_hands_each_value_to_one_consumer_in_turn() {
    let (tx, rx) = mpsc::named::<u32>("jobs", 4).unwrap();
    let rx = rx.shared();
    let other = rx.clone();
    let mut first = Polled::new(rx.recv());
    let mut second = Polled::new(other.recv());
    assert!(first.poll().is_pending() && second.poll().is_pending());
    tx.try_send(1).unwrap();
    assert_eq!((first.woken(), second.woken()), (1, 0));
    assert_eq!(first.poll(), Poll::Ready(Some(1)));
    // The turn passes to the consumer waiting behind.
    assert_eq!(second.woken(), 1);
    assert!(second.poll().is_pending(), "no value yet");
    tx.try_send(2).unwrap();
    drop(second); // its turn given up before it took the value
    assert_eq!(rx.try_recv(), Ok(2), "nothing lost");
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    drop(tx);
    let mut ended = Polled::new(other.recv());
    assert_eq!(
        ended.poll(),
        Poll::Ready(None),
        "every consumer sees the end"
    );
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn shared_consumers_on_threads_each_take_every_value_once() {
    let (tx, rx) = mpsc::channel::<u32>(8).unwrap();
    let rx = rx.shared();
    let consumers: Vec<_> = (0..3)
        .map(|_| {
            let rx = rx.clone();
            std::thread::spawn(move || {
                LocalExecutor::new().block_on(async move {
                    let mut got = Vec::new();
                    while let Some(value) = rx.recv().await {
                        got.push(value);
                    }
                    got
                })
            })
        })
        .collect();
    drop(rx);
    let count = if cfg!(miri) { 20 } else { 2_000 };
    LocalExecutor::new().block_on(async {
        for n in 0..count {
            tx.send(n).await.unwrap();
        }
    });
    drop(tx);
    let mut all: Vec<u32> = consumers
        .into_iter()
        .flat_map(|consumer| consumer.join().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..count).collect::<Vec<_>>());
}
