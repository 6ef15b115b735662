//! Loom models of the executor's wait (`runtime::Park`): a wake from another
//! thread is never lost, whether the executor parks its thread or waits in
//! its reactor, and whichever comes first: the wake, the decision to wait,
//! or the wait itself. The reactor stands in as a blocker with a sticky
//! token, as the real one's waker is (an eventfd's count stays until read).
#![cfg(loom)]

use std::time::Duration;

use dinah_std::loom_support::{Blocker, Park};
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

/// A reactor with a sticky wake token; counts the wakes it was sent.
#[derive(Default)]
struct Reactor {
    token: Mutex<bool>,
    ready: Condvar,
    wakes: AtomicUsize,
}

impl Blocker for Reactor {
    fn block(&self, timeout: Option<Duration>) {
        let mut token = self.token.lock().unwrap();
        if timeout == Some(Duration::ZERO) {
            *token = false;
            return;
        }
        while !*token {
            token = self.ready.wait(token).unwrap();
        }
        *token = false;
    }

    fn unblock(&self) {
        self.wakes.fetch_add(1, Ordering::Relaxed);
        *self.token.lock().unwrap() = true;
        self.ready.notify_one();
    }
}

/// The executor's loop: look for work, wait when there is none.
fn run_until(driver: &Park<Reactor>, work: &AtomicBool) {
    while !work.load(Ordering::Acquire) {
        driver.park(None);
    }
}

fn wake_from_another_thread(with_reactor: bool) {
    loom::model(move || {
        let driver = Arc::new(Park::new(thread::current()));
        if with_reactor {
            driver.install(|| Ok::<_, ()>(Reactor::default())).unwrap();
        }
        let work = Arc::new(AtomicBool::new(false));
        let waker = {
            let (driver, work) = (Arc::clone(&driver), Arc::clone(&work));
            thread::spawn(move || {
                work.store(true, Ordering::Release);
                driver.unpark();
            })
        };
        run_until(&driver, &work);
        waker.join().unwrap();
    });
}

#[test]
fn a_wake_is_never_lost_while_the_thread_parks() {
    wake_from_another_thread(false);
}

#[test]
fn a_wake_is_never_lost_while_the_executor_waits_in_its_reactor() {
    wake_from_another_thread(true);
}

#[test]
fn two_wakers_and_two_rounds_of_work_are_all_seen() {
    loom::model(|| {
        let driver = Arc::new(Park::new(thread::current()));
        driver.install(|| Ok::<_, ()>(Reactor::default())).unwrap();
        let firsts = Arc::new(AtomicBool::new(false));
        let seconds = Arc::new(AtomicBool::new(false));
        let wakers: Vec<_> = [Arc::clone(&firsts), Arc::clone(&seconds)]
            .into_iter()
            .map(|work| {
                let driver = Arc::clone(&driver);
                thread::spawn(move || {
                    work.store(true, Ordering::Release);
                    driver.unpark();
                })
            })
            .collect();
        run_until(&driver, &firsts);
        run_until(&driver, &seconds);
        for waker in wakers {
            waker.join().unwrap();
        }
    });
}

#[test]
fn a_running_executor_costs_its_wakers_no_reactor_wake() {
    loom::model(|| {
        let driver = Arc::new(Park::new(thread::current()));
        let reactor =
            std::sync::Arc::clone(driver.install(|| Ok::<_, ()>(Reactor::default())).unwrap());
        // Nobody waits: the wake is one swap, and the next wait returns at
        // once without sleeping.
        driver.unpark();
        driver.unpark();
        assert_eq!(reactor.wakes.load(Ordering::Relaxed), 0);
        driver.park(None);
        assert_eq!(reactor.wakes.load(Ordering::Relaxed), 0);
    });
}
