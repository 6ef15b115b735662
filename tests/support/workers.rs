//! Helpers of the multi-thread executor's test suites: an executor that
//! measures itself, a task that holds its worker, and a parent task whose
//! children only a steal can run.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use dinah::executor::{MultiConfig, MultiExecutor};
use dinah::yield_now;

/// Sets its flag when dropped: releases a task that holds a worker, even
/// when the test fails before it would.
pub(crate) struct SetOnDrop(pub(crate) Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Spawns a task that waits at `started`, then holds its worker without
/// yielding until `release` is set.
pub(crate) fn hold_a_worker(
    handle: &dinah::executor::MultiHandle,
    started: &Arc<Barrier>,
    release: &Arc<AtomicBool>,
) -> dinah::JoinHandle<()> {
    let (started, release) = (Arc::clone(started), Arc::clone(release));
    handle
        .try_spawn(async move {
            started.wait();
            while !release.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
        })
        .unwrap_or_else(|_| unreachable!())
}

/// An executor of `workers` workers that counts its figures.
pub(crate) fn measured(workers: usize) -> MultiExecutor {
    MultiExecutor::with_config(MultiConfig {
        workers: Some(workers),
        measure: true,
        ..MultiConfig::default()
    })
    .unwrap()
}

/// Children spawned by one task, its "parent", which then holds its worker
/// until all but one of them are done.
pub(crate) const CHILDREN: usize = 10;

/// Runs a parent task that spawns [`CHILDREN`] children and then holds its
/// worker until all but one are done: only the other worker, stealing them
/// from the parent's deque, can run them (the last one waits in the
/// parent's next-task slot, which is not stolen). Returns when every child
/// is done.
pub(crate) fn steal_from_a_held_worker(executor: &MultiExecutor) {
    let handle = executor.handle();
    let done = Arc::new(AtomicUsize::new(0));
    let parent = {
        let (handle, done) = (handle.clone(), Arc::clone(&done));
        handle
            .clone()
            .try_spawn_named("parent", async move {
                for _ in 0..CHILDREN {
                    let done = Arc::clone(&done);
                    drop(
                        handle
                            .try_spawn_named("child", async move {
                                done.fetch_add(1, Ordering::SeqCst);
                            })
                            .unwrap_or_else(|_| unreachable!()),
                    );
                }
                while done.load(Ordering::SeqCst) < CHILDREN - 1 {
                    std::thread::yield_now();
                }
            })
            .unwrap_or_else(|_| unreachable!())
    };
    executor.block_on(parent).unwrap();
    executor.block_on(async {
        while done.load(Ordering::SeqCst) < CHILDREN {
            yield_now().await;
        }
    });
}
