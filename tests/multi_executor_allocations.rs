//! The multi-thread `MultiExecutor` allocates once per spawned task: its
//! cell (future, schedule function, metadata and output together). The
//! global queue and the registry of live tasks keep their storage once
//! grown, so a runtime in a steady state allocates nothing else per task.
//!
//! A worker's deque is crossbeam's, which starts at 64 tasks, doubles when
//! full and halves when a quarter full: a burst that fills a deque past 64
//! reallocates its buffer on the way up and again on the way down, a few
//! allocations per burst whatever its size. How many such rounds a run
//! makes depends on how the other worker steals, so the root task here
//! spawns in chunks of [`CHUNK`], yielding between them: its deque never
//! outgrows the first buffer, and what is counted is the cells alone.
//!
//! Counted with an instrumented global allocator, in a binary of its own
//! so that no other test allocates while it counts. What a run makes
//! once (its root task, the count it waits on, `block_on`) is taken out
//! by comparing two runs that differ only in how many tasks they spawn.

use std::alloc::System;
use std::future::poll_fn;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use dinah::executor::{MultiConfig, MultiExecutor, MultiHandle};
use futures_util::task::AtomicWaker;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Tasks left to end, and the waker of whoever waits for none.
struct Countdown {
    left: AtomicUsize,
    waiter: AtomicWaker,
}

impl Countdown {
    fn done_one(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.waiter.wake();
        }
    }
}

/// Spawns a root task makes in a row before it yields: with the root
/// itself, well within a deque's first buffer of 64.
const CHUNK: usize = 32;

/// Allocations made while a task on `executor` spawns `tasks` tasks that
/// do nothing but count themselves, [`CHUNK`] at a time, and all of them
/// end.
fn allocations_of(executor: &MultiExecutor, tasks: usize) -> usize {
    let region = Region::new(GLOBAL);
    let handle: MultiHandle = executor.handle();
    let done = Arc::new(Countdown {
        left: AtomicUsize::new(tasks),
        waiter: AtomicWaker::new(),
    });
    let spawner = handle.clone();
    let counted = Arc::clone(&done);
    let root = handle
        .try_spawn(async move {
            for spawned in 0..tasks {
                if spawned % CHUNK == 0 {
                    dinah::yield_now().await;
                }
                let done = Arc::clone(&counted);
                drop(spawner.try_spawn(async move { done.done_one() }));
            }
        })
        .unwrap_or_else(|_| unreachable!("the executor runs"));
    executor.block_on(async move {
        root.await.expect("the root task ends");
        poll_fn(|cx| {
            done.waiter.register(cx.waker());
            if done.left.load(Ordering::Acquire) == 0 {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    });
    region.change().allocations
}

#[test]
fn multi_executor_allocates_once_per_spawned_task() {
    const FEW: usize = 1_000;
    const MANY: usize = 3_000;
    for workers in [1, 2] {
        let executor = MultiExecutor::with_config(MultiConfig {
            workers: Some(workers),
            ..MultiConfig::default()
        })
        .unwrap();
        // Grows the queues and the registry to what the runs need.
        for _ in 0..3 {
            allocations_of(&executor, MANY);
        }
        // With two workers, how many tasks are queued or live at once
        // varies from run to run, and a run that goes past every earlier
        // one grows a table once: a few pairs are tried, and one without
        // such growth shows the count per task.
        let extras: Vec<usize> = (0..5)
            .map(|_| allocations_of(&executor, MANY) - allocations_of(&executor, FEW))
            .collect();
        assert!(
            extras.contains(&(MANY - FEW)),
            "{workers} worker(s): {extras:?}"
        );
    }
}
