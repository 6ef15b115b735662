//! `io::Event`, the core's event source: an interrupt's wake carried to
//! any number of waiting tasks. Polled by hand with counting wakers, so
//! every wake is counted, and once from another thread standing in for an
//! interrupt.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use dinah::io::Event;
use dinah::sync::Refusal;

#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (Arc<Counter>, Waker) {
    let counter = Arc::new(Counter::default());
    (Arc::clone(&counter), Waker::from(counter))
}

fn poll<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

#[test]
fn a_raise_wakes_every_waiter_once_and_each_sees_it() {
    let event: Event<8> = Event::new();
    // More waiters than one wake batch holds.
    let mut waits: Vec<_> = (0..6).map(|_| (event.wait(), counting())).collect();
    for (wait, (_, waker)) in &mut waits {
        assert_eq!(poll(wait, waker), Poll::Pending);
    }
    assert_eq!(event.waiting(), 6);
    assert_eq!(event.raise(), 6);
    assert_eq!(event.waiting(), 0);
    for (wait, (counter, waker)) in &mut waits {
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "woken once");
        assert_eq!(poll(wait, waker), Poll::Ready(Ok(1)));
    }
    // Nobody waits: a raise wakes no one and is only counted.
    assert_eq!(event.raise(), 0);
    assert_eq!(event.raised(), 2);
}

#[test]
fn a_raise_after_the_wait_was_made_is_not_missed_and_missed_raises_are_counted() {
    let event: Event = Event::new();
    let (counter, waker) = counting();
    let mut wait = event.wait();
    event.raise();
    // Raised before the first poll: ready at once, without joining.
    assert_eq!(poll(&mut wait, &waker), Poll::Ready(Ok(1)));
    let mut slow = event.wait();
    assert_eq!(poll(&mut slow, &waker), Poll::Pending);
    event.raise();
    event.raise();
    event.raise();
    assert_eq!(poll(&mut slow, &waker), Poll::Ready(Ok(3)));
    assert_eq!(counter.0.load(Ordering::SeqCst), 1);
}

#[test]
fn a_raise_before_the_wait_was_made_is_not_seen() {
    let event: Event = Event::new();
    event.raise();
    let (_, waker) = counting();
    let mut wait = event.wait();
    assert_eq!(poll(&mut wait, &waker), Poll::Pending);
    event.raise();
    assert_eq!(poll(&mut wait, &waker), Poll::Ready(Ok(1)));
}

#[test]
fn a_dropped_wait_leaves_the_line_and_is_not_woken() {
    let event: Event<2> = Event::new();
    let (left, left_waker) = counting();
    let (stays, stays_waker) = counting();
    let mut leaving = event.wait();
    let mut staying = event.wait();
    assert_eq!(poll(&mut leaving, &left_waker), Poll::Pending);
    assert_eq!(poll(&mut staying, &stays_waker), Poll::Pending);
    drop(leaving);
    assert_eq!(event.waiting(), 1);
    assert_eq!(event.raise(), 1);
    assert_eq!(left.0.load(Ordering::SeqCst), 0);
    assert_eq!(stays.0.load(Ordering::SeqCst), 1);
    assert_eq!(poll(&mut staying, &stays_waker), Poll::Ready(Ok(1)));
}

#[test]
fn a_full_line_refuses_and_a_closed_event_ends_every_wait() {
    let event: Event<2> = Event::new();
    let (counter, waker) = counting();
    let mut first = event.wait();
    let mut second = event.wait();
    let mut third = event.wait();
    assert_eq!(poll(&mut first, &waker), Poll::Pending);
    assert_eq!(poll(&mut second, &waker), Poll::Pending);
    assert_eq!(
        poll(&mut third, &waker),
        Poll::Ready(Err(Refusal::LineFull))
    );
    assert_eq!(event.close(), 2);
    assert_eq!(counter.0.load(Ordering::SeqCst), 2);
    assert_eq!(poll(&mut first, &waker), Poll::Ready(Err(Refusal::Closed)));
    assert_eq!(poll(&mut second, &waker), Poll::Ready(Err(Refusal::Closed)));
    let mut later = event.wait();
    assert_eq!(poll(&mut later, &waker), Poll::Ready(Err(Refusal::Closed)));
}

#[test]
fn raises_from_another_thread_reach_a_task_that_checks_after_making_its_wait() {
    static EVENT: Event = Event::new();
    static DONE: AtomicU32 = AtomicU32::new(0);
    const RAISES: u32 = if cfg!(miri) { 20 } else { 2_000 };
    let executor = dinah::LocalExecutor::new();
    let raiser = std::thread::spawn(|| {
        for _ in 0..RAISES {
            DONE.fetch_add(1, Ordering::Release);
            EVENT.raise();
        }
    });
    let waits = executor.block_on(async {
        let mut waits = 0u32;
        loop {
            let wait = EVENT.wait();
            if DONE.load(Ordering::Acquire) == RAISES {
                return waits;
            }
            waits += 1;
            wait.await.unwrap();
        }
    });
    raiser.join().unwrap();
    assert!(waits <= RAISES);
}

#[test]
fn a_task_that_keeps_its_count_sees_raises_made_while_it_was_not_waiting() {
    let event: Event = Event::new();
    let (_, waker) = counting();
    let mut seen = event.raised();
    event.raise();
    event.raise();
    // Busy, not waiting: its count says two came.
    let mut wait = event.wait_from(seen);
    let Poll::Ready(Ok(raises)) = poll(&mut wait, &waker) else {
        panic!("two raises are past its count");
    };
    assert_eq!(raises, 2);
    seen += raises;
    event.raise();
    event.close();
    // Raises before the close are reported before the end.
    assert_eq!(poll(&mut event.wait_from(seen), &waker), Poll::Ready(Ok(1)));
    assert_eq!(
        poll(&mut event.wait_from(seen + 1), &waker),
        Poll::Ready(Err(Refusal::Closed))
    );
}

#[test]
fn a_waiter_that_joins_again_while_a_raise_wakes_the_line_waits_for_the_next_raise() {
    // More waiters than one batch of wakes: the raise settles the line in
    // batches, and between them a woken waker (run at once here) joins
    // again. It joined after the raise, so it waits for the next.
    static EVENT: Event<8> = Event::new();
    type Again = Pin<Box<dyn Future<Output = Result<u32, Refusal>> + Send>>;
    struct Rejoin(std::sync::Mutex<Option<Again>>);
    impl Wake for Rejoin {
        fn wake(self: Arc<Self>) {
            let waker = Waker::from(Arc::clone(&self));
            let mut again = Box::pin(EVENT.wait());
            assert_eq!(
                again.as_mut().poll(&mut Context::from_waker(&waker)),
                Poll::Pending
            );
            // Kept (not dropped), so it stays in line.
            *self.0.lock().unwrap() = Some(again);
        }
    }
    let rejoin = Arc::new(Rejoin(std::sync::Mutex::new(None)));
    let rejoin_waker = Waker::from(Arc::clone(&rejoin));
    let mut first = EVENT.wait();
    assert_eq!(poll(&mut first, &rejoin_waker), Poll::Pending);
    let mut others: Vec<_> = (0..5).map(|_| (EVENT.wait(), counting())).collect();
    for (wait, (_, waker)) in &mut others {
        assert_eq!(poll(wait, waker), Poll::Pending);
    }
    assert_eq!(
        EVENT.raise(),
        6,
        "the six in line at the raise, not the rejoined"
    );
    assert_eq!(EVENT.waiting(), 1, "the rejoined wait is in line");
    for (wait, (counter, waker)) in &mut others {
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(wait, waker), Poll::Ready(Ok(1)));
    }
    let mut again = rejoin.0.lock().unwrap().take().unwrap();
    let noop = Waker::noop();
    assert_eq!(
        again.as_mut().poll(&mut Context::from_waker(noop)),
        Poll::Pending
    );
    assert_eq!(EVENT.raise(), 1);
}
