//! One contract, two watches: the core's static `Watch` and `dinah-std`'s
//! `watch` channel run the same logic (`raw::wait::Watched`) and pass the
//! same tests here, each future polled by hand with a waker that counts its
//! wakes; then what each has alone.

use std::task::Poll;

use dinah::sync::{Refusal, Watch, WatchReceiver, watch};

mod support;

use support::keep_forever;
use support::sync_model::Polled;

/// What the contract asks of a watch over a `u32`.
trait Watches {
    type Tx;
    type Rx;
    fn make(value: u32) -> Self::Tx;
    fn send(tx: &Self::Tx, value: u32);
    /// A receiver that has seen the value now.
    fn subscribe(tx: &Self::Tx) -> Self::Rx;
    /// Waits for a change and reads the value then.
    fn changed(rx: &mut Self::Rx) -> Polled<'_, Option<u32>>;
}

struct Core;

impl Watches for Core {
    type Tx = &'static Watch<u32, 8>;
    type Rx = WatchReceiver<'static, u32, 8>;
    fn make(value: u32) -> Self::Tx {
        keep_forever(Watch::new(value))
    }
    fn send(tx: &Self::Tx, value: u32) {
        tx.send(value);
    }
    fn subscribe(tx: &Self::Tx) -> Self::Rx {
        tx.receiver()
    }
    fn changed(rx: &mut Self::Rx) -> Polled<'_, Option<u32>> {
        Polled::new(async move { rx.changed().await.ok() })
    }
}

struct Hosted;

impl Watches for Hosted {
    type Tx = watch::Sender<u32>;
    type Rx = watch::Receiver<u32>;
    fn make(value: u32) -> Self::Tx {
        watch::named("contract", value).0
    }
    fn send(tx: &Self::Tx, value: u32) {
        tx.send_replace(value);
    }
    fn subscribe(tx: &Self::Tx) -> Self::Rx {
        tx.subscribe()
    }
    fn changed(rx: &mut Self::Rx) -> Polled<'_, Option<u32>> {
        Polled::new(async move {
            rx.changed().await.ok()?;
            Some(*rx.borrow())
        })
    }
}

fn value<T>(poll: Poll<T>) -> T {
    match poll {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("still pending"),
    }
}

fn a_change_since_the_last_look_is_seen_at_once_and_merged<W: Watches>() {
    let tx = W::make(0);
    let mut rx = W::subscribe(&tx);
    assert!(W::changed(&mut rx).poll().is_pending(), "nothing new yet");
    W::send(&tx, 1);
    W::send(&tx, 2);
    assert_eq!(value(W::changed(&mut rx).poll()), Some(2), "the latest");
    assert!(
        W::changed(&mut rx).poll().is_pending(),
        "both sends seen at once"
    );
}

fn each_send_wakes_every_waiting_receiver_once<W: Watches>() {
    let tx = W::make(0);
    // More than one batch of wakers (four).
    let mut receivers: Vec<W::Rx> = (0..6).map(|_| W::subscribe(&tx)).collect();
    let mut waits: Vec<_> = receivers.iter_mut().map(W::changed).collect();
    for wait in &mut waits {
        assert!(wait.poll().is_pending());
    }
    W::send(&tx, 5);
    for wait in &mut waits {
        assert_eq!(wait.woken(), 1);
        assert_eq!(value(wait.poll()), Some(5));
    }
}

fn a_dropped_wait_loses_nothing<W: Watches>() {
    let tx = W::make(0);
    let mut first = W::subscribe(&tx);
    let mut second = W::subscribe(&tx);
    {
        let mut gone = W::changed(&mut first);
        assert!(gone.poll().is_pending());
    }
    let mut waiting = W::changed(&mut second);
    assert!(waiting.poll().is_pending());
    W::send(&tx, 7);
    assert_eq!(waiting.woken(), 1);
    assert_eq!(value(waiting.poll()), Some(7));
    assert_eq!(
        value(W::changed(&mut first).poll()),
        Some(7),
        "the change is still new to the receiver whose wait was dropped"
    );
}

support::contract!(
    [core: Core, hosted: Hosted],
    [
        a_change_since_the_last_look_is_seen_at_once_and_merged,
        each_send_wakes_every_waiting_receiver_once,
        a_dropped_wait_loses_nothing,
    ]
);

/// The core watch's line is bounded by `W`.
#[test]
fn a_full_core_line_refuses_the_next_wait() {
    let watch: &'static Watch<u32, 1> = keep_forever(Watch::new(0));
    let (mut first, mut second) = (watch.receiver(), watch.receiver());
    let mut waiting = Polled::new(first.changed());
    assert!(waiting.poll().is_pending());
    assert_eq!(
        value(Polled::new(second.changed()).poll()),
        Err(Refusal::LineFull)
    );
    assert_eq!(watch.get(), 0);
}

/// Once the sender is gone, a waiting receiver is woken; an unseen value
/// is still seen, then `changed` ends. A `Ref` keeps the value it read.
#[test]
fn a_hosted_watch_ends_with_its_sender_and_refs_keep_their_value() {
    let (tx, mut rx) = watch::channel(String::from("a"));
    let read = rx.borrow();
    tx.send(String::from("b")).unwrap();
    assert_eq!(*read, "a");
    let mut other = rx.clone();
    assert_eq!(other.has_changed(), Ok(true));
    assert_eq!(*other.borrow_and_update(), "b");
    let mut waiting = Polled::new(other.changed());
    assert!(waiting.poll().is_pending());
    drop(tx);
    assert_eq!(waiting.woken(), 1);
    assert_eq!(value(waiting.poll()), Err(watch::RecvError));
    assert_eq!(value(Polled::new(rx.changed()).poll()), Ok(()), "b unseen");
    assert_eq!(*rx.borrow(), "b");
    assert_eq!(
        value(Polled::new(rx.changed()).poll()),
        Err(watch::RecvError)
    );
}

/// A send with every receiver gone hands the value back.
#[test]
fn a_hosted_send_with_no_receiver_is_handed_back() {
    let (tx, rx) = watch::channel(0u8);
    assert_eq!(tx.receiver_count(), 1);
    let again = tx.subscribe();
    drop((rx, again));
    assert!(tx.is_closed());
    assert_eq!(tx.send(3), Err(watch::SendError(3)));
    assert_eq!(*tx.borrow(), 0, "not stored");
    assert_eq!(tx.send_replace(4), Some(0));
    assert_eq!(*tx.borrow(), 4);
}
