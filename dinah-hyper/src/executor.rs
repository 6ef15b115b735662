//! hyper's executor over dinah's spawners.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use dinah_std::executor::{MultiHandle, Spawner};

/// Where spawned futures go.
#[derive(Clone, Debug)]
enum Door {
    Local(Spawner),
    Multi(MultiHandle),
}

/// A dinah executor as hyper's [`Executor`](hyper::rt::Executor): where
/// hyper runs the background work of a connection (HTTP/2's connection
/// and stream tasks; HTTP/1 needs none).
///
/// Made from a `LocalExecutor`'s [`Spawner`] (the futures run on that
/// executor's thread) or a `MultiExecutor`'s [`MultiHandle`] (on its
/// workers). Each future is spawned as a detached task.
///
/// hyper's `execute` cannot be refused, but a dinah executor can refuse a
/// spawn: its ingress or live-task cap is full, or it shut down. Then the
/// future is dropped at once (hyper sees that work end, and fails the
/// connection it belonged to), and [`refused`](Self::refused) counts it.
/// No future is queued anywhere else or retried.
#[derive(Clone, Debug)]
pub struct HyperExecutor {
    door: Door,
    refused: Arc<AtomicU64>,
}

impl HyperExecutor {
    /// Spawns on the `LocalExecutor` that `spawner` belongs to.
    #[must_use]
    pub fn local(spawner: Spawner) -> Self {
        Self::with(Door::Local(spawner))
    }

    /// Spawns on the `MultiExecutor` that `handle` belongs to.
    #[must_use]
    pub fn multi(handle: MultiHandle) -> Self {
        Self::with(Door::Multi(handle))
    }

    fn with(door: Door) -> Self {
        Self {
            door,
            refused: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Futures the executor refused (and that were dropped), over this
    /// executor and its clones.
    #[must_use]
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

impl From<Spawner> for HyperExecutor {
    fn from(spawner: Spawner) -> Self {
        Self::local(spawner)
    }
}

impl From<MultiHandle> for HyperExecutor {
    fn from(handle: MultiHandle) -> Self {
        Self::multi(handle)
    }
}

impl<F> hyper::rt::Executor<F> for HyperExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        // The output is dropped with the task: hyper's futures return `()`.
        let task = async move {
            drop(future.await);
        };
        let accepted = match &self.door {
            Door::Local(spawner) => spawner.try_spawn(task).is_ok(),
            Door::Multi(handle) => handle.try_spawn(task).is_ok(),
        };
        if !accepted {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
    }
}
