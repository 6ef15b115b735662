//! Loom models of how a multi-thread executor's workers go to sleep and are
//! woken (`runtime::Idle` and `runtime::Parker`): work pushed from another
//! thread is never left with every worker asleep, whichever order the push,
//! the wake, the search and the sleep come in; a shutdown that wakes every
//! worker ends them all; and a worker woken for work and a worker waking
//! itself agree on who is awake.
//!
//! The queues are counters here (the global queue, and each worker's
//! deque): what the models check is the protocol around them, which
//! `multi/worker.rs` follows step for step: look in its own queue, search
//! (if fewer than half the workers do) other deques and the global queue,
//! go to sleep (every worker that goes to sleep looks at every queue once
//! more and wakes someone if work is there), sleep until woken or until
//! its own work comes.
#![cfg(loom)]

use dinah_std::loom_support::{Idle, Parker};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

struct Runtime {
    idle: Idle,
    parkers: Vec<Parker>,
    /// Work in the global queue.
    queued: AtomicUsize,
    /// Work in each worker's deque, which the others may steal.
    deques: Vec<AtomicUsize>,
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
            deques: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            taken: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
        })
    }

    /// Takes one piece of work from `queue`, if it holds any.
    fn take_from(&self, queue: &AtomicUsize) -> bool {
        let mut queued = queue.load(Ordering::SeqCst);
        while queued > 0 {
            match queue.compare_exchange(queued, queued - 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    self.taken.fetch_add(1, Ordering::SeqCst);
                    return true;
                }
                Err(now) => queued = now,
            }
        }
        false
    }

    /// Worker `index` looks in its own deque, then the global queue.
    fn take(&self, index: usize) -> bool {
        self.take_from(&self.deques[index]) || self.take_from(&self.queued)
    }

    /// Worker `index` searches: the other deques, then the global queue.
    fn steal(&self, index: usize) -> bool {
        (0..self.deques.len())
            .filter(|&victim| victim != index)
            .any(|victim| self.take_from(&self.deques[victim]))
            || self.take_from(&self.queued)
    }

    /// Whether any queue a sleeper could take from holds work.
    fn has_queued_work(&self) -> bool {
        self.queued.load(Ordering::SeqCst) > 0
            || self
                .deques
                .iter()
                .any(|deque| deque.load(Ordering::SeqCst) > 0)
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
            if self.take(index) {
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
            if searching && self.steal(index) {
                searching = false;
                if self.idle.stop_searching() {
                    self.wake_one();
                }
                continue;
            }
            // Sleep, as `WorkerHere::sleep` does.
            // (It wakes searching, or not at all: a model worker has no
            // timers of its own to wake it.)
            self.idle.sleep(index, searching);
            if self.has_queued_work() {
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

/// Worker `index` on a thread of its own, working until `tasks` were taken
/// in all (see `Runtime::work`).
fn spawn_worker(runtime: &Arc<Runtime>, index: usize, tasks: usize) -> thread::JoinHandle<()> {
    let runtime = Arc::clone(runtime);
    thread::spawn(move || runtime.work(index, tasks))
}

#[test]
fn work_pushed_from_outside_reaches_a_sleeping_worker() {
    loom::model(|| {
        let runtime = Runtime::new(1);
        let worker = spawn_worker(&runtime, 0, 1);
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
            .map(|index| spawn_worker(&runtime, index, 1))
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
        assert!(!idle.sleep(0, false));
        assert!(idle.sleep(1, false));
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

/// A worker that took two tasks from the global queue at once (one to
/// poll, one into its deque) and is then held by that poll for good: the
/// other worker takes the one in its deque, even when it was on its way to
/// sleep, not searching (the held one searched), at the moment the held
/// one called for help and found nobody asleep to call.
#[test]
fn work_left_in_a_held_worker_s_deque_reaches_the_other_worker() {
    loom::model(|| {
        let runtime = Runtime::new(2);
        // Both were spawned while worker 0 searched: nobody was woken.
        assert!(runtime.idle.start_searching());
        runtime.queued.store(2, Ordering::SeqCst);
        both_tasks_taken_beside_worker_1(&runtime, |runtime| {
            // Its share of the global queue: one to poll, the rest into
            // its deque, then the call for help a searcher that found work
            // makes; then the poll that does not return.
            let mut queued = runtime.queued.swap(0, Ordering::SeqCst);
            if queued > 0 {
                runtime.taken.fetch_add(1, Ordering::SeqCst);
                queued -= 1;
            }
            runtime.deques[0].fetch_add(queued, Ordering::SeqCst);
            if runtime.idle.stop_searching() {
                runtime.wake_one();
            }
        });
    });
}

/// Runs `held` as worker 0, held for good by a poll after it, on a thread
/// of its own while worker 1 works, and checks that both of the model's
/// two tasks were taken.
fn both_tasks_taken_beside_worker_1(
    runtime: &Arc<Runtime>,
    held: impl FnOnce(&Runtime) + Send + 'static,
) {
    let worker_0 = {
        let runtime = Arc::clone(runtime);
        thread::spawn(move || held(&runtime))
    };
    let worker_1 = spawn_worker(runtime, 1, 2);
    worker_0.join().unwrap();
    worker_1.join().unwrap();
    assert_eq!(runtime.taken.load(Ordering::SeqCst), 2);
}

/// A worker held by a long poll pushes a second task into its deque while
/// the other worker steals the first: the thief may empty the deque between
/// the owner's look and its push, search, find nothing and go to sleep.
/// The owner's push calls `wake_one` whatever the deque held before (the
/// runtime's rule), so the second task is still taken. With the earlier
/// rule (look at the length, push, call only if the look found the deque
/// empty), loom finds the deadlock: the thief asleep, the owner gone.
#[test]
fn a_push_into_a_deque_a_thief_just_emptied_still_reaches_it() {
    loom::model(|| {
        let runtime = Runtime::new(2);
        // Worker 0 polls the task that pushed the first one; worker 1 is
        // awake and looking.
        runtime.deques[0].store(1, Ordering::SeqCst);
        both_tasks_taken_beside_worker_1(&runtime, |runtime| {
            runtime.deques[0].fetch_add(1, Ordering::SeqCst);
            runtime.wake_one();
        });
    });
}
