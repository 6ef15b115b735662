//! A million tasks through the multi-thread executor: spawned from four
//! outside threads and from inside tasks (children queued on the spawning
//! worker, for the other to steal), each woken once more by a yield, each
//! counted as it ends. Every task must end exactly once, and nothing may
//! be left live. No assertion is made about which worker polls what.
//!
//! `DINAH_STRESS_DIVISOR` divides the sizes (ThreadSanitizer's run sets it);
//! Miri runs a few hundred tasks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::thread;

use dinah::executor::{MultiConfig, MultiExecutor, MultiHandle};
use dinah::yield_now;

const OUTSIDE_THREADS: usize = 4;
const CHILDREN: usize = 4;

/// Roots each outside thread spawns: 4 × 50,000 roots and their 4
/// children each make a million tasks.
fn roots_per_thread() -> usize {
    if cfg!(miri) {
        return 10;
    }
    50_000 / divisor()
}

/// `DINAH_STRESS_DIVISOR`, or 1.
fn divisor() -> usize {
    std::env::var("DINAH_STRESS_DIVISOR")
        .ok()
        .and_then(|value| value.parse::<usize>().ok())
        .filter(|&divisor| divisor > 0)
        .unwrap_or(1)
}

struct Tally {
    /// How many times each task ended.
    ends: Vec<AtomicU8>,
    left: AtomicUsize,
    done: std::sync::Mutex<Option<thread::Thread>>,
}

impl Tally {
    fn end(&self, index: usize) {
        self.ends[index].fetch_add(1, Ordering::Relaxed);
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1
            && let Some(waiter) = self.done.lock().unwrap().as_ref()
        {
            waiter.unpark();
        }
    }
}

fn root(handle: MultiHandle, tally: Arc<Tally>, index: usize) {
    let inner = handle.clone();
    drop(
        handle
            .try_spawn(async move {
                for child in 0..CHILDREN {
                    let tally = Arc::clone(&tally);
                    let child_index = index * (CHILDREN + 1) + 1 + child;
                    drop(
                        inner
                            .try_spawn(async move {
                                yield_now().await;
                                tally.end(child_index);
                            })
                            .unwrap_or_else(|_| panic!("refused")),
                    );
                }
                yield_now().await;
                tally.end(index * (CHILDREN + 1));
            })
            .unwrap_or_else(|_| panic!("refused")),
    );
}

#[test]
fn multi_executor_ends_every_task_of_a_million_exactly_once() {
    let roots = roots_per_thread();
    let total = OUTSIDE_THREADS * roots * (CHILDREN + 1);
    let executor = MultiExecutor::with_config(MultiConfig {
        workers: Some(2),
        ..MultiConfig::default()
    })
    .unwrap();
    let tally = Arc::new(Tally {
        ends: (0..total).map(|_| AtomicU8::new(0)).collect(),
        left: AtomicUsize::new(total),
        done: std::sync::Mutex::new(Some(thread::current())),
    });
    thread::scope(|scope| {
        for spawner in 0..OUTSIDE_THREADS {
            let (handle, tally) = (executor.handle(), Arc::clone(&tally));
            scope.spawn(move || {
                for n in 0..roots {
                    root(handle.clone(), Arc::clone(&tally), spawner * roots + n);
                }
            });
        }
    });
    while tally.left.load(Ordering::Acquire) > 0 {
        thread::park();
    }
    let twice: Vec<usize> = (0..total)
        .filter(|&index| tally.ends[index].load(Ordering::Relaxed) != 1)
        .collect();
    assert!(twice.is_empty(), "tasks not ended exactly once: {twice:?}");
    // Each task has left the executor by the time its handle's drop and its
    // end are both done; the count reaches zero right after the last end.
    let report = executor.shutdown();
    assert_eq!(report.left(), 0, "{report:?}");
    assert_eq!(executor.live_tasks(), 0);
}

/// A cancellation that lands while a worker is taking the task up for its
/// poll still reaches it: every handle of a task that would never end by
/// itself resolves `Cancelled`, and nothing is left live.
#[test]
fn multi_executor_cancellation_racing_a_poll_is_never_lost() {
    let tasks = if cfg!(miri) { 50 } else { 20_000 / divisor() };
    let executor = MultiExecutor::with_config(MultiConfig {
        workers: Some(2),
        ..MultiConfig::default()
    })
    .unwrap();
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let handle = executor
                .handle()
                .try_spawn(std::future::pending::<()>())
                .unwrap_or_else(|_| panic!("refused"));
            handle.cancel();
            handle
        })
        .collect();
    for handle in handles {
        assert_eq!(executor.block_on(handle), Err(dinah::JoinError::Cancelled));
    }
    let report = executor.shutdown();
    assert_eq!(report.left(), 0, "{report:?}");
}
