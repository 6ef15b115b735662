//! One contract, two notifies: the core's static `Notify` and
//! `dinah-std`'s `SharedNotify` run the same logic (`raw::wait::Notice`)
//! and pass the same tests here, each future polled by hand with a waker
//! that counts its wakes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use dinah::sync::{Notify, Refusal, SharedNotify};

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A wait being polled by hand, with its own counting waker.
struct Waiter<'a> {
    future: Pin<Box<dyn Future<Output = ()> + 'a>>,
    wakes: Arc<Count>,
}

impl Waiter<'_> {
    fn poll(&mut self) -> Poll<()> {
        let waker = Waker::from(Arc::clone(&self.wakes));
        self.future.as_mut().poll(&mut Context::from_waker(&waker))
    }

    fn wakes(&self) -> usize {
        self.wakes.0.load(Ordering::SeqCst)
    }
}

/// What the contract asks of a notify.
trait Notifies {
    fn notify_one(&self);
    fn notify_waiters(&self);
    fn waiter(&self) -> Waiter<'_>;
    fn waiting(&self) -> u32;
}

impl<const W: usize> Notifies for Notify<W> {
    fn notify_one(&self) {
        Notify::notify_one(self);
    }
    fn notify_waiters(&self) {
        Notify::notify_waiters(self);
    }
    fn waiter(&self) -> Waiter<'_> {
        let wait = self.notified();
        Waiter {
            future: Box::pin(async move { wait.await.expect("room in the line") }),
            wakes: Arc::default(),
        }
    }
    fn waiting(&self) -> u32 {
        Notify::waiting(self)
    }
}

impl Notifies for SharedNotify {
    fn notify_one(&self) {
        SharedNotify::notify_one(self);
    }
    fn notify_waiters(&self) {
        SharedNotify::notify_waiters(self);
    }
    fn waiter(&self) -> Waiter<'_> {
        Waiter {
            future: Box::pin(self.notified()),
            wakes: Arc::default(),
        }
    }
    fn waiting(&self) -> u32 {
        SharedNotify::waiting(self)
    }
}

fn one_notification_is_kept_for_the_next_wait(notify: &dyn Notifies) {
    notify.notify_one();
    notify.notify_one(); // the same as one
    assert!(notify.waiter().poll().is_ready());
    let mut next = notify.waiter();
    assert!(next.poll().is_pending(), "only one was kept");
    notify.notify_one();
    assert_eq!(next.wakes(), 1);
    assert!(next.poll().is_ready());
}

fn notify_one_wakes_the_longest_waiting_first(notify: &dyn Notifies) {
    let mut waiters: Vec<Waiter<'_>> = (0..3).map(|_| notify.waiter()).collect();
    for waiter in &mut waiters {
        assert!(waiter.poll().is_pending());
    }
    assert_eq!(notify.waiting(), 3);
    for turn in 0..3 {
        notify.notify_one();
        let woken: Vec<usize> = waiters.iter().map(Waiter::wakes).collect();
        assert_eq!(
            woken.iter().filter(|&&w| w > 0).count(),
            turn + 1,
            "{woken:?}"
        );
        assert_eq!(woken[turn], 1, "the next in line, in order: {woken:?}");
        assert!(waiters[turn].poll().is_ready());
    }
    assert_eq!(notify.waiting(), 0);
}

fn notify_waiters_wakes_everyone_waiting_and_keeps_nothing(notify: &dyn Notifies) {
    let mut waiters: Vec<Waiter<'_>> = (0..6).map(|_| notify.waiter()).collect();
    for waiter in &mut waiters {
        assert!(waiter.poll().is_pending());
    }
    notify.notify_waiters();
    for waiter in &mut waiters {
        assert_eq!(waiter.wakes(), 1);
        assert!(waiter.poll().is_ready());
    }
    assert!(notify.waiter().poll().is_pending(), "nothing was kept");
}

fn a_notification_given_to_a_dropped_wait_goes_on(notify: &dyn Notifies) {
    let mut first = notify.waiter();
    let mut second = notify.waiter();
    assert!(first.poll().is_pending() && second.poll().is_pending());
    notify.notify_one();
    assert_eq!((first.wakes(), second.wakes()), (1, 0));
    drop(first); // before it saw the notification
    assert_eq!(second.wakes(), 1, "passed on to the next in line");
    assert!(second.poll().is_ready());
    // With nobody left to take it, it is kept.
    let mut third = notify.waiter();
    assert!(third.poll().is_pending());
    notify.notify_one();
    drop(third);
    assert!(notify.waiter().poll().is_ready(), "kept for the next wait");
}

fn a_wait_given_up_leaves_the_line(notify: &dyn Notifies) {
    let mut waiter = notify.waiter();
    assert!(waiter.poll().is_pending());
    assert_eq!(notify.waiting(), 1);
    drop(waiter);
    assert_eq!(notify.waiting(), 0);
    notify.notify_one();
    assert!(notify.waiter().poll().is_ready(), "nobody took it: kept");
}

macro_rules! contract {
    ($($case:ident),* $(,)?) => {
        mod core_notify {
            $(
                #[test]
                fn $case() {
                    super::$case(&dinah::sync::Notify::<8>::new());
                }
            )*
        }
        mod shared_notify {
            $(
                #[test]
                fn $case() {
                    super::$case(&dinah::sync::SharedNotify::new());
                }
            )*
        }
    };
}

contract!(
    one_notification_is_kept_for_the_next_wait,
    notify_one_wakes_the_longest_waiting_first,
    notify_waiters_wakes_everyone_waiting_and_keeps_nothing,
    a_notification_given_to_a_dropped_wait_goes_on,
    a_wait_given_up_leaves_the_line,
);

#[test]
fn a_full_core_line_refuses_a_wait() {
    let notify = Notify::<2>::new();
    let mut waiters: Vec<Waiter<'_>> = (0..2).map(|_| notify.waiter()).collect();
    for waiter in &mut waiters {
        assert!(waiter.poll().is_pending());
    }
    let mut third = Box::pin(notify.notified());
    let waker = Waker::noop();
    assert_eq!(
        third.as_mut().poll(&mut Context::from_waker(waker)),
        Poll::Ready(Err(Refusal::LineFull))
    );
}

#[test]
fn shared_notify_wakes_tasks_on_other_threads() {
    let notify = Arc::new(SharedNotify::new());
    let (ready, go) = (Arc::new(std::sync::Barrier::new(3)), Arc::clone(&notify));
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let (notify, ready) = (Arc::clone(&notify), Arc::clone(&ready));
            std::thread::spawn(move || {
                let executor = dinah::LocalExecutor::new();
                executor.block_on(async {
                    let mut wait = std::pin::pin!(notify.notified());
                    // Joined the line at the first poll, then say so.
                    std::future::poll_fn(|cx| {
                        let _ = wait.as_mut().poll(cx);
                        Poll::Ready(())
                    })
                    .await;
                    ready.wait();
                    wait.await;
                });
            })
        })
        .collect();
    ready.wait();
    assert_eq!(go.waiting(), 2);
    go.notify_waiters();
    for waiter in waiters {
        waiter.join().unwrap();
    }
}
