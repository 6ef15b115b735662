//! One contract, two broadcasts: the core's static `PubSub` and
//! `dinah-std`'s `broadcast` channel run the same logic (`raw::wait::Ring`)
//! and pass the same tests here, each future polled by hand with a waker
//! that counts its wakes; then what each has alone.

use std::task::Poll;

use dinah::sync::{Missed, PubSub, Subscriber, broadcast};

mod support;

use support::keep_forever;
use support::sync_model::Polled;

/// What the contract asks of a broadcast of `u32` keeping four values.
trait Broadcasts {
    type Tx;
    type Rx;
    fn make() -> Self::Tx;
    fn send(tx: &Self::Tx, value: u32);
    fn subscribe(tx: &Self::Tx) -> Self::Rx;
    /// The next value, or how many were missed.
    fn recv(rx: &mut Self::Rx) -> Polled<'_, Result<u32, u64>>;
}

struct Core;

impl Broadcasts for Core {
    type Tx = &'static PubSub<u32, 4, 8>;
    type Rx = Subscriber<'static, u32, 4, 8>;
    fn make() -> Self::Tx {
        keep_forever(PubSub::new())
    }
    fn send(tx: &Self::Tx, value: u32) {
        tx.publish(value);
    }
    fn subscribe(tx: &Self::Tx) -> Self::Rx {
        tx.subscriber()
    }
    fn recv(rx: &mut Self::Rx) -> Polled<'_, Result<u32, u64>> {
        Polled::new(async move {
            rx.next_message().await.map_err(|missed| match missed {
                Missed::Lagged(count) => count,
                other => panic!("{other:?}"),
            })
        })
    }
}

struct Hosted;

impl Broadcasts for Hosted {
    type Tx = broadcast::Sender<u32>;
    type Rx = broadcast::Receiver<u32>;
    fn make() -> Self::Tx {
        broadcast::named("contract", 4).unwrap().0
    }
    fn send(tx: &Self::Tx, value: u32) {
        tx.send(value).expect("a receiver");
    }
    fn subscribe(tx: &Self::Tx) -> Self::Rx {
        tx.subscribe()
    }
    fn recv(rx: &mut Self::Rx) -> Polled<'_, Result<u32, u64>> {
        Polled::new(async move {
            rx.recv().await.map_err(|error| match error {
                broadcast::RecvError::Lagged(count) => count,
                other => panic!("{other:?}"),
            })
        })
    }
}

fn value<T>(poll: Poll<T>) -> T {
    match poll {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("still pending"),
    }
}

fn every_receiver_reads_every_value_in_order<B: Broadcasts>() {
    let tx = B::make();
    let mut first = B::subscribe(&tx);
    B::send(&tx, 1);
    let mut second = B::subscribe(&tx);
    B::send(&tx, 2);
    B::send(&tx, 3);
    for want in [1, 2, 3] {
        assert_eq!(value(B::recv(&mut first).poll()), Ok(want));
    }
    for want in [2, 3] {
        assert_eq!(
            value(B::recv(&mut second).poll()),
            Ok(want),
            "from its subscription on"
        );
    }
    assert!(B::recv(&mut first).poll().is_pending());
}

fn a_receiver_that_falls_behind_is_told_how_many_it_missed<B: Broadcasts>() {
    let tx = B::make();
    let mut rx = B::subscribe(&tx);
    for n in 0..7 {
        B::send(&tx, n); // four kept: 3, 4, 5, 6
    }
    assert_eq!(value(B::recv(&mut rx).poll()), Err(3));
    for want in 3..7 {
        assert_eq!(value(B::recv(&mut rx).poll()), Ok(want));
    }
}

fn each_send_wakes_every_waiting_receiver_once<B: Broadcasts>() {
    let tx = B::make();
    let mut receivers: Vec<B::Rx> = (0..6).map(|_| B::subscribe(&tx)).collect();
    let mut waits: Vec<_> = receivers.iter_mut().map(B::recv).collect();
    for wait in &mut waits {
        assert!(wait.poll().is_pending());
    }
    B::send(&tx, 9);
    B::send(&tx, 10);
    for wait in &mut waits {
        assert_eq!(wait.woken(), 1);
        assert_eq!(value(wait.poll()), Ok(9));
    }
}

fn a_dropped_wait_loses_nothing<B: Broadcasts>() {
    let tx = B::make();
    let mut first = B::subscribe(&tx);
    let mut second = B::subscribe(&tx);
    {
        let mut gone = B::recv(&mut first);
        assert!(gone.poll().is_pending());
    }
    let mut waiting = B::recv(&mut second);
    assert!(waiting.poll().is_pending());
    B::send(&tx, 4);
    assert_eq!(waiting.woken(), 1);
    assert_eq!(value(waiting.poll()), Ok(4));
    assert_eq!(value(B::recv(&mut first).poll()), Ok(4));
}

support::contract!(
    [core: Core, hosted: Hosted],
    [
        every_receiver_reads_every_value_in_order,
        a_receiver_that_falls_behind_is_told_how_many_it_missed,
        each_send_wakes_every_waiting_receiver_once,
        a_dropped_wait_loses_nothing,
    ]
);

/// The core's line is bounded by `W`; `try_next_message` never waits.
#[test]
fn a_full_core_line_refuses_the_next_wait() {
    let pubsub: &'static PubSub<u8, 2, 1> = keep_forever(PubSub::new());
    let (mut first, mut second) = (pubsub.subscriber(), pubsub.subscriber());
    assert_eq!(second.try_next_message(), None);
    let mut waiting = Polled::new(first.next_message());
    assert!(waiting.poll().is_pending());
    assert_eq!(
        value(Polled::new(second.next_message()).poll()),
        Err(Missed::LineFull)
    );
    drop(waiting);
    pubsub.publish(5);
    assert_eq!(second.unread(), 1);
    assert_eq!(second.try_next_message(), Some(Ok(5)));
}

/// Once every sender is gone, a receiver reads what is left, then
/// `Closed`; a waiting one is woken.
#[test]
fn a_hosted_broadcast_ends_with_its_last_sender() {
    let (tx, mut rx) = broadcast::channel::<u8>(4).unwrap();
    let other = tx.clone();
    let mut idle = rx.resubscribe();
    let mut waiting = Polled::new(idle.recv());
    assert!(waiting.poll().is_pending());
    tx.send(1).unwrap();
    drop(tx);
    assert_eq!(value(waiting.poll()), Ok(1));
    assert!(waiting.poll().is_pending(), "a sender is left");
    drop(other);
    assert_eq!(waiting.woken(), 2);
    assert_eq!(value(waiting.poll()), Err(broadcast::RecvError::Closed));
    assert_eq!(rx.len(), 1);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Err(broadcast::TryRecvError::Closed));
}

/// Bad capacities are typed errors; a send with no receiver is handed back.
#[test]
fn a_hosted_broadcast_refuses_what_it_cannot_do() {
    assert_eq!(
        broadcast::channel::<u8>(0).err(),
        Some(dinah::queue::CapacityError::Zero)
    );
    let (tx, rx) = broadcast::channel::<u8>(1).unwrap();
    let mut rx2 = tx.subscribe();
    assert_eq!(rx2.try_recv(), Err(broadcast::TryRecvError::Empty));
    assert_eq!(tx.send(1), Ok(2));
    drop((rx, rx2));
    assert_eq!(tx.send(2), Err(broadcast::SendError(2)));
}
