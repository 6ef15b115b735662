//! The channel and semaphore contract, written once for both variants
//! dinah ships (the core's static `Channel` and `Semaphore` behind a
//! critical section, and `dinah-std`'s `mpsc` channel and
//! `SharedSemaphore` behind a mutex).
//!
//! Futures are polled by hand with wakers that count their wakes, so each
//! test states exactly who is woken, when, and how often: a waiter woken
//! before its turn, or twice, fails the test.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use dinah::sync::{
    Channel, ChannelFigures, PermitOverflow, Refusal, SendError, SharedSemaphore, TryRecvError,
    mpsc,
};

mod support;

use support::keep_forever;
use support::sync_model::Polled;

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// One channel variant, holding at most two `Item`s.
trait Family {
    type Tx: Clone;
    type Rx;
    fn make() -> (Self::Tx, Self::Rx);
    fn send(tx: &Self::Tx, value: Item) -> Boxed<'_, Result<(), SendError<Item>>>;
    fn try_send(tx: &Self::Tx, value: Item) -> Result<(), SendError<Item>>;
    fn recv(rx: &mut Self::Rx) -> Boxed<'_, Option<Item>>;
    fn try_recv(rx: &mut Self::Rx) -> Result<Item, TryRecvError>;
    fn close(rx: &mut Self::Rx);
    fn figures(tx: &Self::Tx) -> ChannelFigures;
}

/// A value that counts its drops.
#[derive(Debug)]
struct Item(u32, Arc<AtomicUsize>);

impl Item {
    fn new(value: u32, drops: &Arc<AtomicUsize>) -> Self {
        Self(value, Arc::clone(drops))
    }
}

impl Drop for Item {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

struct Core;

type CoreChannel = Channel<Item, 2, 8>;

impl Family for Core {
    type Tx = dinah::sync::channel::Sender<'static, Item, 2, 8>;
    type Rx = dinah::sync::channel::Receiver<'static, Item, 2, 8>;
    fn make() -> (Self::Tx, Self::Rx) {
        let channel: &'static CoreChannel = keep_forever(Channel::named("contract"));
        channel.split().unwrap()
    }
    fn send(tx: &Self::Tx, value: Item) -> Boxed<'_, Result<(), SendError<Item>>> {
        Box::pin(tx.send(value))
    }
    fn try_send(tx: &Self::Tx, value: Item) -> Result<(), SendError<Item>> {
        tx.try_send(value)
    }
    fn recv(rx: &mut Self::Rx) -> Boxed<'_, Option<Item>> {
        Box::pin(rx.recv())
    }
    fn try_recv(rx: &mut Self::Rx) -> Result<Item, TryRecvError> {
        rx.try_recv()
    }
    fn close(rx: &mut Self::Rx) {
        rx.close();
    }
    fn figures(tx: &Self::Tx) -> ChannelFigures {
        tx.channel().figures()
    }
}

struct Hosted;

impl Family for Hosted {
    type Tx = mpsc::Sender<Item>;
    type Rx = mpsc::Receiver<Item>;
    fn make() -> (Self::Tx, Self::Rx) {
        mpsc::named("contract", 2).unwrap()
    }
    fn send(tx: &Self::Tx, value: Item) -> Boxed<'_, Result<(), SendError<Item>>> {
        Box::pin(tx.send(value))
    }
    fn try_send(tx: &Self::Tx, value: Item) -> Result<(), SendError<Item>> {
        tx.try_send(value)
    }
    fn recv(rx: &mut Self::Rx) -> Boxed<'_, Option<Item>> {
        Box::pin(rx.recv())
    }
    fn try_recv(rx: &mut Self::Rx) -> Result<Item, TryRecvError> {
        rx.try_recv()
    }
    fn close(rx: &mut Self::Rx) {
        rx.close();
    }
    fn figures(tx: &Self::Tx) -> ChannelFigures {
        tx.figures()
    }
}

fn value<T: std::fmt::Debug>(poll: Poll<T>) -> T {
    match poll {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("expected ready"),
    }
}

fn received<F: Family>(rx: &mut F::Rx) -> u32 {
    F::try_recv(rx).map(|item| item.0).unwrap()
}

fn values_arrive_in_order_and_a_full_channel_hands_the_value_back<F: Family>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = F::make();
    F::try_send(&tx, Item::new(1, &drops)).unwrap();
    F::try_send(&tx, Item::new(2, &drops)).unwrap();
    let refused = F::try_send(&tx, Item::new(3, &drops)).unwrap_err();
    assert_eq!(refused.reason(), Refusal::WouldWait);
    assert_eq!(refused.into_inner().0, 3, "the value comes back");
    let figures = F::figures(&tx);
    assert_eq!(
        (figures.name, figures.len, figures.capacity, figures.refused),
        (Some("contract"), 2, 2, 1)
    );
    assert_eq!(received::<F>(&mut rx), 1);
    assert_eq!(received::<F>(&mut rx), 2);
    assert_eq!(F::try_recv(&mut rx).unwrap_err(), TryRecvError::Empty);
    assert_eq!(F::figures(&tx).high_water, 2);
}

fn waiting_senders_are_served_in_order_each_woken_once<F: Family>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = F::make();
    F::try_send(&tx, Item::new(0, &drops)).unwrap();
    F::try_send(&tx, Item::new(1, &drops)).unwrap();
    let mut senders: Vec<_> = (2..5)
        .map(|v| Polled::new(F::send(&tx, Item::new(v, &drops))))
        .collect();
    for sender in &mut senders {
        assert!(sender.poll().is_pending());
    }
    assert_eq!(F::figures(&tx).waiting, 3);
    let mut out = Vec::new();
    for turn in 0..3 {
        out.push(received::<F>(&mut rx));
        let woken: Vec<usize> = senders.iter().map(Polled::woken).collect();
        let mut expected = vec![0; 3];
        for slot in expected.iter_mut().take(turn + 1) {
            *slot = 1;
        }
        assert_eq!(woken, expected, "only the first in line is woken, once");
        value(senders[turn].poll()).unwrap();
    }
    while let Ok(item) = F::try_recv(&mut rx) {
        out.push(item.0);
    }
    assert_eq!(out, [0, 1, 2, 3, 4]);
}

fn try_send_never_jumps_the_line<F: Family>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = F::make();
    F::try_send(&tx, Item::new(0, &drops)).unwrap();
    F::try_send(&tx, Item::new(1, &drops)).unwrap();
    let mut waiting = Polled::new(F::send(&tx, Item::new(2, &drops)));
    assert!(waiting.poll().is_pending());
    assert_eq!(received::<F>(&mut rx), 0);
    // The freed slot is the waiter's, though it has not been polled yet.
    let late = F::try_send(&tx, Item::new(9, &drops)).unwrap_err();
    assert_eq!(late.reason(), Refusal::WouldWait);
    value(waiting.poll()).unwrap();
    assert_eq!(received::<F>(&mut rx), 1);
    assert_eq!(received::<F>(&mut rx), 2);
}

fn a_dropped_send_hands_its_slot_to_the_next_in_line<F: Family>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = F::make();
    F::try_send(&tx, Item::new(0, &drops)).unwrap();
    F::try_send(&tx, Item::new(1, &drops)).unwrap();
    let mut first = Polled::new(F::send(&tx, Item::new(2, &drops)));
    let mut second = Polled::new(F::send(&tx, Item::new(3, &drops)));
    assert!(first.poll().is_pending());
    assert!(second.poll().is_pending());
    assert_eq!(received::<F>(&mut rx), 0);
    assert_eq!((first.woken(), second.woken()), (1, 0));
    let before = drops.load(Ordering::SeqCst);
    drop(first); // granted a slot, then gone: its value is dropped with it
    assert_eq!(drops.load(Ordering::SeqCst), before + 1);
    assert_eq!(second.woken(), 1, "the slot went on to the next in line");
    value(second.poll()).unwrap();
    assert_eq!(received::<F>(&mut rx), 1);
    assert_eq!(received::<F>(&mut rx), 3);
}

fn the_receiver_sees_the_end_after_the_last_value<F: Family>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = F::make();
    let second = tx.clone();
    F::try_send(&tx, Item::new(7, &drops)).unwrap();
    assert_eq!(received::<F>(&mut rx), 7);
    let mut waiting = Polled::new(F::recv(&mut rx));
    assert!(waiting.poll().is_pending());
    drop(tx);
    assert_eq!(waiting.woken(), 0, "one sender is left");
    drop(second);
    assert_eq!(waiting.woken(), 1, "the last sender's going wakes it");
    assert!(value(waiting.poll()).is_none());
}

fn closing_hands_waiting_values_back_and_keeps_what_was_sent<F: Family>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = F::make();
    F::try_send(&tx, Item::new(0, &drops)).unwrap();
    F::try_send(&tx, Item::new(1, &drops)).unwrap();
    let mut waiting = Polled::new(F::send(&tx, Item::new(2, &drops)));
    assert!(waiting.poll().is_pending());
    F::close(&mut rx);
    assert_eq!(waiting.woken(), 1);
    let back = value(waiting.poll()).unwrap_err();
    assert_eq!((back.reason(), back.into_inner().0), (Refusal::Closed, 2));
    let late = F::try_send(&tx, Item::new(3, &drops)).unwrap_err();
    assert_eq!(late.reason(), Refusal::Closed);
    assert_eq!(received::<F>(&mut rx), 0);
    assert_eq!(received::<F>(&mut rx), 1);
    assert_eq!(F::try_recv(&mut rx).unwrap_err(), TryRecvError::Closed);
}

fn a_receiver_gone_returns_senders_values_and_drops_the_rest<F: Family>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = F::make();
    F::try_send(&tx, Item::new(0, &drops)).unwrap();
    F::try_send(&tx, Item::new(1, &drops)).unwrap();
    let mut waiting = Polled::new(F::send(&tx, Item::new(2, &drops)));
    assert!(waiting.poll().is_pending());
    drop(rx);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        2,
        "the values held are dropped"
    );
    let back = value(waiting.poll()).unwrap_err();
    assert_eq!((back.reason(), back.into_inner().0), (Refusal::Closed, 2));
    let mut refused = Polled::new(F::send(&tx, Item::new(4, &drops)));
    let refused = value(refused.poll()).unwrap_err();
    assert_eq!(refused.into_inner().0, 4);
}

support::contract!(
    [core: Core, hosted: Hosted],
    [
        values_arrive_in_order_and_a_full_channel_hands_the_value_back,
        waiting_senders_are_served_in_order_each_woken_once,
        try_send_never_jumps_the_line,
        a_dropped_send_hands_its_slot_to_the_next_in_line,
        the_receiver_sees_the_end_after_the_last_value,
        closing_hands_waiting_values_back_and_keeps_what_was_sent,
        a_receiver_gone_returns_senders_values_and_drops_the_rest,
    ]
);

/// A core channel refuses a send when its line of `W` waiters is full,
/// handing the value back rather than waiting unseen.
#[test]
fn a_full_line_hands_the_value_back() {
    static NARROW: Channel<u8, 1, 1> = Channel::new();
    let (tx, _rx) = NARROW.split().unwrap();
    assert!(NARROW.split().is_none(), "one receiver, once");
    tx.try_send(0).unwrap();
    let mut first = Polled::new(tx.send(1));
    assert!(first.poll().is_pending());
    let mut second = Polled::new(tx.send(2));
    let refused = value(second.poll()).unwrap_err();
    assert_eq!(
        (refused.reason(), refused.into_inner()),
        (Refusal::LineFull, 2)
    );
}

/// One semaphore variant.
trait Permits {
    type Sem;
    type Permit<'a>: std::fmt::Debug
    where
        Self: 'a;
    fn make(permits: u32) -> Self::Sem;
    fn acquire(sem: &Self::Sem, n: u32) -> Boxed<'_, Result<Self::Permit<'_>, Refusal>>;
    fn try_acquire(sem: &Self::Sem, n: u32) -> Result<Self::Permit<'_>, Refusal>;
    fn available(sem: &Self::Sem) -> u32;
    fn close(sem: &Self::Sem);
    fn waiting(sem: &Self::Sem) -> u32;
    fn add(sem: &Self::Sem, n: u32) -> Result<(), PermitOverflow>;
    fn forget(permit: Self::Permit<'_>);
}

struct CoreSem;

impl Permits for CoreSem {
    type Sem = &'static dinah::sync::Semaphore<8>;
    type Permit<'a> = dinah::sync::Permit<'static, 8>;
    fn make(permits: u32) -> Self::Sem {
        keep_forever(dinah::sync::Semaphore::named("contract", permits))
    }
    fn acquire(sem: &Self::Sem, n: u32) -> Boxed<'_, Result<Self::Permit<'_>, Refusal>> {
        Box::pin(sem.acquire_many(n))
    }
    fn try_acquire(sem: &Self::Sem, n: u32) -> Result<Self::Permit<'_>, Refusal> {
        sem.try_acquire_many(n)
    }
    fn available(sem: &Self::Sem) -> u32 {
        sem.available()
    }
    fn close(sem: &Self::Sem) {
        sem.close();
    }
    fn waiting(sem: &Self::Sem) -> u32 {
        sem.figures().waiting
    }
    fn add(sem: &Self::Sem, n: u32) -> Result<(), PermitOverflow> {
        sem.add_permits(n)
    }
    fn forget(permit: Self::Permit<'_>) {
        permit.forget();
    }
}

struct HostedSem;

impl Permits for HostedSem {
    type Sem = SharedSemaphore;
    type Permit<'a> = dinah::sync::SharedPermit<'a>;
    fn make(permits: u32) -> Self::Sem {
        SharedSemaphore::named("contract", permits)
    }
    fn acquire(sem: &Self::Sem, n: u32) -> Boxed<'_, Result<Self::Permit<'_>, Refusal>> {
        Box::pin(sem.acquire_many(n))
    }
    fn try_acquire(sem: &Self::Sem, n: u32) -> Result<Self::Permit<'_>, Refusal> {
        sem.try_acquire_many(n)
    }
    fn available(sem: &Self::Sem) -> u32 {
        sem.available()
    }
    fn close(sem: &Self::Sem) {
        sem.close();
    }
    fn waiting(sem: &Self::Sem) -> u32 {
        sem.figures().waiting
    }
    fn add(sem: &Self::Sem, n: u32) -> Result<(), PermitOverflow> {
        sem.add_permits(n)
    }
    fn forget(permit: Self::Permit<'_>) {
        permit.forget();
    }
}

fn a_large_request_is_not_passed_by_later_small_ones<P: Permits>() {
    let sem = P::make(2);
    let held = P::try_acquire(&sem, 2).unwrap();
    let mut big = Polled::new(P::acquire(&sem, 2));
    let mut small = Polled::new(P::acquire(&sem, 1));
    assert!(big.poll().is_pending());
    assert!(small.poll().is_pending());
    assert_eq!(P::waiting(&sem), 2);
    assert_eq!(P::try_acquire(&sem, 1).unwrap_err(), Refusal::WouldWait);
    drop(held);
    assert_eq!((big.woken(), small.woken()), (1, 0), "first in line first");
    let big_permit = value(big.poll()).unwrap();
    assert_eq!(P::available(&sem), 0);
    drop(big_permit);
    assert_eq!(small.woken(), 1);
    let small_permit = value(small.poll()).unwrap();
    assert_eq!(P::available(&sem), 1);
    drop(small_permit);
    assert_eq!(P::available(&sem), 2, "every permit came back");
}

fn a_granted_acquire_dropped_hands_its_permits_on<P: Permits>() {
    let sem = P::make(1);
    let held = P::try_acquire(&sem, 1).unwrap();
    let mut first = Polled::new(P::acquire(&sem, 1));
    let mut second = Polled::new(P::acquire(&sem, 1));
    assert!(first.poll().is_pending());
    assert!(second.poll().is_pending());
    drop(held);
    assert_eq!((first.woken(), second.woken()), (1, 0));
    drop(first);
    assert_eq!(second.woken(), 1, "the permit went on");
    let permit = value(second.poll()).unwrap();
    drop(permit);
    assert_eq!(P::available(&sem), 1);
}

fn closing_refuses_waiters_and_later_acquires<P: Permits>() {
    let sem = P::make(1);
    let held = P::try_acquire(&sem, 1).unwrap();
    let mut waiting = Polled::new(P::acquire(&sem, 1));
    assert!(waiting.poll().is_pending());
    P::close(&sem);
    assert_eq!(waiting.woken(), 1);
    assert_eq!(value(waiting.poll()).unwrap_err(), Refusal::Closed);
    assert_eq!(P::try_acquire(&sem, 1).unwrap_err(), Refusal::Closed);
    drop(held);
    assert_eq!(
        P::available(&sem),
        1,
        "a permit held stays valid and comes back"
    );
}

fn permits_past_u32_max_are_refused_whole_and_none_is_lost<P: Permits>() {
    let sem = P::make(u32::MAX - 3);
    // Three more fit; four do not, and none of the four is added.
    assert_eq!(P::add(&sem, 4), Err(PermitOverflow { room: 3 }));
    assert_eq!(P::available(&sem), u32::MAX - 3);
    // Permits held count: with ten held, ten fewer can be added.
    let held = P::try_acquire(&sem, 10).unwrap();
    assert_eq!(P::add(&sem, 4), Err(PermitOverflow { room: 3 }));
    P::add(&sem, 3).unwrap();
    assert_eq!(P::add(&sem, 1), Err(PermitOverflow { room: 0 }));
    // So a permit given back always fits: every one is there.
    drop(held);
    assert_eq!(P::available(&sem), u32::MAX);
    // A forgotten permit leaves room for one more.
    let gone = P::try_acquire(&sem, 2).unwrap();
    P::forget(gone);
    assert_eq!(P::add(&sem, 3), Err(PermitOverflow { room: 2 }));
    P::add(&sem, 2).unwrap();
    assert_eq!(P::available(&sem), u32::MAX);
}

mod semaphores {
    use super::*;
    support::contract!(
        [core: CoreSem, hosted: HostedSem],
        [
            permits_past_u32_max_are_refused_whole_and_none_is_lost,
            a_large_request_is_not_passed_by_later_small_ones,
            a_granted_acquire_dropped_hands_its_permits_on,
            closing_refuses_waiters_and_later_acquires,
        ]
    );
}

/// An owned permit moves into another thread and comes back when dropped
/// there.
#[test]
fn an_owned_permit_moves_to_another_thread() {
    let sem = SharedSemaphore::new(1);
    let permit = sem.try_acquire_owned().unwrap();
    assert_eq!(sem.available(), 0);
    std::thread::spawn(move || drop(permit)).join().unwrap();
    assert_eq!(sem.available(), 1);
}

/// A zero capacity is refused with a typed error.
#[test]
fn a_zero_capacity_is_refused() {
    assert_eq!(
        mpsc::channel::<u8>(0).unwrap_err(),
        dinah::queue::CapacityError::Zero
    );
}

/// Polls `future` on this thread, parked between polls.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
        std::thread::park();
    }
}

/// Producers on four threads wait on a small channel that one thread
/// drains: every value arrives once, each producer's in its order, and the
/// last sender's going ends the receiver.
#[test]
fn producers_on_many_threads_each_deliver_in_order() {
    const EACH: u32 = if cfg!(miri) { 20 } else { 2_000 };
    let (tx, mut rx) = mpsc::channel::<(u32, u32)>(2).unwrap();
    let producers: Vec<_> = (0..4)
        .map(|producer| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for n in 0..EACH {
                    block_on(tx.send((producer, n))).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let mut next = [0u32; 4];
    while let Some((producer, n)) = block_on(rx.recv()) {
        assert_eq!(n, next[producer as usize], "in order per producer");
        next[producer as usize] += 1;
    }
    assert_eq!(next, [EACH; 4]);
    for producer in producers {
        producer.join().unwrap();
    }
}

/// The std variants time their lines: the head's wait is known while
/// someone waits, and absent when nobody does (the core's have no clock).
#[test]
fn a_hosted_line_reports_its_head_s_wait() {
    let semaphore = SharedSemaphore::named("timed", 0);
    assert_eq!(semaphore.figures().longest_wait_micros, None);
    let mut waiting = Polled::new(semaphore.acquire());
    assert!(waiting.poll().is_pending());
    let figures = semaphore.figures();
    assert_eq!((figures.waiting, figures.name), (1, Some("timed")));
    assert!(figures.longest_wait_micros.is_some());
    drop(waiting);
    assert_eq!(semaphore.figures().longest_wait_micros, None);

    let (tx, _rx) = mpsc::channel::<u8>(1).unwrap();
    tx.try_send(0).unwrap();
    let mut sending = Polled::new(tx.send(1));
    assert!(sending.poll().is_pending());
    assert!(tx.figures().longest_wait_micros.is_some());
    drop(sending);
    assert_eq!(tx.figures().longest_wait_micros, None);
    let core: &'static Channel<u8, 1> = keep_forever(Channel::new());
    let (core_tx, _core_rx) = core.split().unwrap();
    core_tx.try_send(0).unwrap();
    let mut core_sending = Polled::new(core_tx.send(1));
    assert!(core_sending.poll().is_pending());
    assert_eq!(
        (core.figures().waiting, core.figures().longest_wait_micros),
        (1, None)
    );
}
