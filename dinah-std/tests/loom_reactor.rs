//! Loom models of the reactor's wait protocol (`ScheduledIo`): several
//! tasks waiting one way on one source against the event that readies it,
//! and a wait given up against that event. Each task is a thread that
//! parks between polls; a lost wake shows as a deadlock, a lost item as a
//! failed assertion. The main thread only raises events and joins: loom's
//! join shares the thread's park token, so a thread that joins must not
//! be one a late wake can still unpark.
#![cfg(loom)]

use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use dinah_std::loom_support::ModelSource;
use loom::thread;

/// Wakes by unparking the thread that polls.
struct Unpark(thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Takes one item from `source`, parking between polls; then drops its
/// wait, as an `async` operation's future is dropped once it completes.
fn take(source: &ModelSource) {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut key = ModelSource::fresh_key();
    while source.poll_take(&mut key, &mut cx).is_pending() {
        thread::park();
    }
    source.forget(key);
}

/// Two tasks take an item each while `arrivals` bring two items in all,
/// an event per entry; each must be woken to take its item.
fn two_waiters_served_by(arrivals: &'static [u64]) {
    loom::model(move || {
        let source = Arc::new(ModelSource::new());
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let source = Arc::clone(&source);
                thread::spawn(move || take(&source))
            })
            .collect();
        for &items in arrivals {
            source.arrive(items);
        }
        for waiter in waiters {
            waiter.join().unwrap();
        }
    });
}

#[test]
fn two_tasks_waiting_one_way_are_each_woken_by_the_event() {
    two_waiters_served_by(&[2]);
}

#[test]
fn two_events_one_item_each_serve_both_waiters() {
    two_waiters_served_by(&[1, 1]);
}

#[test]
fn a_wait_given_up_against_the_event_leaves_the_other_waiter_woken() {
    loom::model(|| {
        let source = Arc::new(ModelSource::new());
        let waiter = {
            let source = Arc::clone(&source);
            thread::spawn(move || take(&source))
        };
        // This task waits once, then gives up (a select that lost) while
        // the event may already be on its way.
        let quitter = {
            let source = Arc::clone(&source);
            thread::spawn(move || {
                let waker = Waker::from(Arc::new(Unpark(thread::current())));
                let mut cx = Context::from_waker(&waker);
                let mut key = ModelSource::fresh_key();
                let took = source.poll_take(&mut key, &mut cx) == Poll::Ready(());
                source.forget(key);
                took
            })
        };
        source.arrive(1);
        let quitter_took = quitter.join().unwrap();
        if quitter_took {
            // The one item went to the quitter: the waiter needs another.
            source.arrive(1);
        }
        waiter.join().unwrap();
        assert_eq!(source.waiting(), 0, "no waiter is left behind");
    });
}
