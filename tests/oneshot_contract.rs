//! One value for one waiting task: the core's static `Signal` and
//! `dinah-std`'s `oneshot` channel run the same logic (`raw::wait::Mailbox`)
//! and share the contract checked here (a value before the wait completes
//! it at once; a pending wait is woken once by the value; a value never
//! taken is dropped exactly once), then each its own: a signal keeps the
//! latest value, a oneshot ends with its sender.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use dinah::sync::{Signal, TryRecvError, oneshot};

mod support;

use support::keep_forever;
use support::sync_model::Polled;

/// A value that counts its drops.
#[derive(Debug)]
struct Item(u32, Arc<AtomicUsize>);

impl Drop for Item {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

/// One use of the mailbox: the end that puts the value and the end that
/// waits for it.
trait Mailbox {
    type Tx;
    type Rx;
    /// Whether a value not taken outlives both ends (a static signal's).
    const STATIC: bool;
    fn make() -> (Self::Tx, Self::Rx);
    /// Puts `item`; `false` if it was refused (handed back).
    fn put(tx: &mut Self::Tx, item: Item) -> bool;
    fn wait(rx: &mut Self::Rx) -> Polled<'_, Option<Item>>;
}

struct SignalBox;

impl Mailbox for SignalBox {
    type Tx = &'static Signal<Item>;
    type Rx = &'static Signal<Item>;
    const STATIC: bool = true;
    fn make() -> (Self::Tx, Self::Rx) {
        let signal = keep_forever(Signal::new());
        (signal, signal)
    }
    fn put(tx: &mut Self::Tx, item: Item) -> bool {
        tx.signal(item);
        true
    }
    fn wait(rx: &mut Self::Rx) -> Polled<'_, Option<Item>> {
        let wait = rx.wait();
        Polled::new(async move { Some(wait.await) })
    }
}

struct OneShot;

impl Mailbox for OneShot {
    type Tx = Option<oneshot::Sender<Item>>;
    type Rx = oneshot::Receiver<Item>;
    const STATIC: bool = false;
    fn make() -> (Self::Tx, Self::Rx) {
        let (tx, rx) = oneshot::named("contract");
        (Some(tx), rx)
    }
    fn put(tx: &mut Self::Tx, item: Item) -> bool {
        tx.take().expect("sent once").send(item).is_ok()
    }
    fn wait(rx: &mut Self::Rx) -> Polled<'_, Option<Item>> {
        Polled::new(async move { rx.await.ok() })
    }
}

fn value<T>(poll: Poll<T>) -> T {
    match poll {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("still pending"),
    }
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

fn dropped(drops: &Arc<AtomicUsize>) -> usize {
    drops.load(Ordering::SeqCst)
}

fn a_value_before_the_wait_completes_it_at_once<M: Mailbox>() {
    let drops = counter();
    let (mut tx, mut rx) = M::make();
    assert!(M::put(&mut tx, Item(7, Arc::clone(&drops))));
    let got = value(M::wait(&mut rx).poll()).unwrap();
    assert_eq!((got.0, dropped(&drops)), (7, 0));
    drop(got);
    assert_eq!(dropped(&drops), 1);
}

fn a_pending_wait_is_woken_once_by_the_value<M: Mailbox>() {
    let drops = counter();
    let (mut tx, mut rx) = M::make();
    let mut wait = M::wait(&mut rx);
    assert!(wait.poll().is_pending());
    assert_eq!(wait.woken(), 0);
    assert!(M::put(&mut tx, Item(3, Arc::clone(&drops))));
    assert_eq!(wait.woken(), 1);
    assert_eq!(value(wait.poll()).map(|item| item.0), Some(3));
    assert_eq!(dropped(&drops), 1);
}

fn a_value_never_taken_is_dropped_once<M: Mailbox>() {
    let drops = counter();
    let (mut tx, rx) = M::make();
    assert!(M::put(&mut tx, Item(1, Arc::clone(&drops))));
    assert_eq!(dropped(&drops), 0);
    drop((tx, rx));
    // A static signal's value stays until taken or replaced.
    assert_eq!(dropped(&drops), usize::from(!M::STATIC));
}

support::contract!(
    [signal: SignalBox, one_shot: OneShot],
    [
        a_value_before_the_wait_completes_it_at_once,
        a_pending_wait_is_woken_once_by_the_value,
        a_value_never_taken_is_dropped_once,
    ]
);

/// A signal keeps only the latest value: the one it replaces is dropped.
#[test]
fn a_signal_keeps_the_latest_value() {
    let drops = counter();
    let signal: &'static Signal<Item> = keep_forever(Signal::new());
    signal.signal(Item(1, Arc::clone(&drops)));
    signal.signal(Item(2, Arc::clone(&drops)));
    assert_eq!(dropped(&drops), 1, "the first, replaced");
    assert!(signal.signaled());
    assert_eq!(signal.try_take().map(|item| item.0), Some(2));
    assert!(!signal.signaled());
    signal.signal(Item(3, Arc::clone(&drops)));
    signal.reset();
    assert_eq!(dropped(&drops), 3);
    assert!(signal.try_take().is_none());
}

/// A oneshot whose sender is dropped without sending ends its receiver.
#[test]
fn a_oneshot_ends_when_its_sender_goes_unsent() {
    let (tx, mut rx) = oneshot::channel::<u8>();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    let mut wait = Polled::new(&mut rx);
    assert!(wait.poll().is_pending());
    drop(tx);
    assert_eq!(wait.woken(), 1);
    assert_eq!(value(wait.poll()), Err(oneshot::RecvError));
    drop(wait);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

/// A send after the receiver closed or went is handed back; a value sent
/// before the close is still received.
#[test]
fn a_closed_oneshot_refuses_later_sends_and_keeps_an_earlier_one() {
    let (tx, rx) = oneshot::channel::<u8>();
    assert!(!tx.is_closed());
    drop(rx);
    assert!(tx.is_closed());
    assert_eq!(tx.send(5), Err(5));

    let (tx, mut rx) = oneshot::channel::<u8>();
    tx.send(6).unwrap();
    rx.close();
    assert_eq!(rx.try_recv(), Ok(6));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed), "received once");

    let (tx, mut rx) = oneshot::channel::<u8>();
    rx.close();
    assert_eq!(tx.send(7), Err(7));
}

/// The value crosses threads.
#[test]
fn a_oneshot_sends_from_another_thread() {
    let (tx, rx) = oneshot::channel::<String>();
    let sender = std::thread::spawn(move || tx.send(String::from("done")).unwrap());
    let got = dinah::LocalExecutor::new().block_on(rx);
    sender.join().unwrap();
    assert_eq!(got.as_deref(), Ok("done"));
}

/// A channel made on a thread where earlier ones of its type ended (received
/// after a wait, received after a close, ended unsent) starts as new,
/// whichever cell it is given: not closed, not ended, empty, and its wait is
/// woken by its own send only.
#[test]
fn a_oneshot_made_after_ended_ones_starts_new() {
    for (n, how) in ["waited", "closed", "unsent", "try_recv"]
        .into_iter()
        .enumerate()
    {
        let sent = u16::try_from(n).unwrap();
        let (tx, mut rx) = oneshot::channel::<u16>();
        let mut old = Polled::new(&mut rx);
        match how {
            "waited" => {
                assert!(old.poll().is_pending());
                tx.send(sent).unwrap();
                assert_eq!(old.woken(), 1);
                assert_eq!(value(old.poll()), Ok(sent));
            }
            "closed" => {
                drop(old);
                tx.send(sent).unwrap();
                rx.close();
                assert_eq!(rx.try_recv(), Ok(sent));
                old = Polled::new(&mut rx);
            }
            "unsent" => {
                assert!(old.poll().is_pending());
                drop(tx);
                assert_eq!(value(old.poll()), Err(oneshot::RecvError));
            }
            _ => {
                drop(old);
                tx.send(sent).unwrap();
                assert_eq!(rx.try_recv(), Ok(sent));
                old = Polled::new(&mut rx);
            }
        }
        let woken_before = old.woken();

        let (tx, mut rx) = oneshot::channel::<u16>();
        assert!(!tx.is_closed(), "after {how}");
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "after {how}");
        let mut wait = Polled::new(&mut rx);
        assert!(wait.poll().is_pending(), "after {how}");
        tx.send(100 + sent).unwrap();
        assert_eq!(wait.woken(), 1, "after {how}");
        assert_eq!(old.woken(), woken_before, "after {how}: an old wait woken");
        assert_eq!(value(wait.poll()), Ok(100 + sent), "after {how}");
        drop(wait);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed), "after {how}");
    }
}
