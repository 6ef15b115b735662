//! Loom models of how a multi-thread executor's workers go to sleep and are
//! woken (`runtime::Idle` and `runtime::Parker`): work pushed from another
//! thread is never left with every worker asleep, whichever order the push,
//! the wake, the search and the sleep come in; a shutdown that wakes every
//! worker ends them all; and a worker woken for work and a worker waking
//! itself agree on who is awake.
//!
//! The queue is a counter here: what the models check is the protocol
//! around it, which `multi/worker.rs` follows step for step: look, search
//! (if fewer than half the workers do), look again, go to sleep (the last
//! searcher to stop looks once more and wakes someone if work came), sleep
//! until woken or until its own work comes.
#![cfg(loom)]

use dinah_std::loom_support::{Idle, Parker};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

struct Runtime {
    idle: Idle,
    parkers: Vec<Parker>,
    /// Work queued and not taken.
    queued: AtomicUsize,
    /// Work taken.
    taken: AtomicUsize,
    stopping: AtomicBool,
}

impl Runtime {
    fn new(workers: usize) -> Arc<Self> {
        Arc::new(Self {
            idle: Idle::new(workers),
            parkers: (0..workers).map(|_| Parker::new()).collect(),
            queued: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
        })
    }

    fn take(&self) -> bool {
        let mut queued = self.queued.load(Ordering::SeqCst);
        while queued > 0 {
            match self.queued.compare_exchange(
                queued,
                queued - 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    self.taken.fetch_add(1, Ordering::SeqCst);
                    return true;
                }
                Err(now) => queued = now,
            }
        }
        false
    }

    /// A spawn from outside the workers: push, then wake one if needed.
    fn push(&self) {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.wake_one();
    }

    fn wake_one(&self) {
        if let Some(worker) = self.idle.sleeper_to_wake() {
            self.parkers[worker].wake(|| {});
        }
    }

    fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.idle.take_all();
        for parker in &self.parkers {
            parker.wake(|| {});
        }
    }

    /// A worker's loop, until it has taken `goal` in all (with the others)
    /// or the runtime stops.
    fn work(&self, index: usize, goal: usize) {
        self.parkers[index].bind();
        let mut searching = false;
        loop {
            if self.stopping.load(Ordering::SeqCst) || self.taken.load(Ordering::SeqCst) >= goal {
                return;
            }
            if self.take() {
                if searching {
                    searching = false;
                    if self.idle.stop_searching() {
                        self.wake_one();
                    }
                }
                continue;
            }
            if !searching && self.idle.start_searching() {
                searching = true;
            }
            if searching && self.take() {
                searching = false;
                if self.idle.stop_searching() {
                    self.wake_one();
                }
                continue;
            }
            // Sleep, as `WorkerHere::sleep` does.
            // (It wakes searching, or not at all: a model worker has no
            // timers of its own to wake it.)
            let (last_searcher, _) = self.idle.sleep(index, searching);
            if last_searcher && self.queued.load(Ordering::SeqCst) > 0 {
                self.wake_one();
            }
            loop {
                if self.stopping.load(Ordering::SeqCst) {
                    return;
                }
                if self.taken.load(Ordering::SeqCst) >= goal {
                    // Another worker took the last of it: this one is done.
                    return;
                }
                self.parkers[index].sleep(None);
                if !self.idle.is_asleep(index) {
                    searching = true;
                    break;
                }
            }
        }
    }
}

#[test]
fn work_pushed_from_outside_reaches_a_sleeping_worker() {
    loom::model(|| {
        let runtime = Runtime::new(1);
        let worker = {
            let runtime = Arc::clone(&runtime);
            thread::spawn(move || runtime.work(0, 1))
        };
        runtime.push();
        worker.join().unwrap();
        assert_eq!(runtime.taken.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn one_push_with_two_workers_is_taken_once_and_nobody_is_left_asleep_by_a_stop() {
    loom::model(|| {
        let runtime = Runtime::new(2);
        let workers: Vec<_> = (0..2)
            .map(|index| {
                let runtime = Arc::clone(&runtime);
                thread::spawn(move || runtime.work(index, 1))
            })
            .collect();
        runtime.push();
        // Whoever took it, the other may be asleep: a stop ends it.
        while runtime.taken.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        runtime.stop();
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(runtime.taken.load(Ordering::SeqCst), 1);
        assert_eq!(runtime.queued.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn a_worker_that_wakes_on_its_own_and_a_wake_for_it_count_it_awake_once() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(2));
        assert_eq!(idle.sleep(0, false), (false, false));
        assert_eq!(idle.sleep(1, false), (false, true));
        let waker = {
            let idle = Arc::clone(&idle);
            thread::spawn(move || idle.sleeper_to_wake())
        };
        // Worker 1 wakes on its own meanwhile (its timer fired).
        let woke_itself = idle.wake_self(1);
        let woken = waker.join().unwrap();
        let (awake, searching) = idle.counts();
        // Each worker is awake at most once, and the count says so.
        let expected_awake = usize::from(woke_itself) + usize::from(woken.is_some());
        assert_eq!(awake, expected_awake);
        assert_eq!(searching, usize::from(woken.is_some()));
        if woke_itself {
            assert_ne!(woken, Some(1), "a worker off the list is not woken again");
        }
    });
}
