//! [`Registry`]: every live task of a multi-thread runtime, by id, with its
//! name and a waker, so that a shutdown can reach each one, and the report
//! of how each task alive at the shutdown ended.
//!
//! It is split in shards by id, each behind its own short lock, so that
//! spawns and ends on different workers seldom meet on one lock.
//!
//! # Invariants
//!
//! 1. A task is entered before its first poll can be scheduled and taken
//!    out exactly once, when its future is gone.
//! 2. Once a shard is closed it takes no new task: a spawn that finds it
//!    closed hands its future back. Closing every shard happens before a
//!    shutdown collects the live tasks, so none is missed.
//! 3. From its closing on, a shard records how each of its tasks ended,
//!    under the same lock that takes the task out.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::sync::Mutex;
use std::task::Waker;

use dinah_core::TaskId;

use crate::primitives::lock;
use crate::task::{ChildEnd, ChildKind, ChildReport};

/// One live task.
struct Entry {
    name: Option<&'static str>,
    waker: Waker,
}

#[derive(Default)]
struct Shard {
    live: HashMap<u64, Entry>,
    closed: bool,
    ended: Vec<ChildReport>,
}

/// The live tasks (see the module docs).
pub(super) struct Registry {
    shards: Box<[Mutex<Shard>]>,
}

impl Registry {
    /// A registry for a runtime of `workers` workers.
    pub(super) fn new(workers: usize) -> Self {
        let count = (workers * 4).next_power_of_two().clamp(4, 256);
        Self {
            shards: (0..count).map(|_| Mutex::new(Shard::default())).collect(),
        }
    }

    fn shard(&self, id: TaskId) -> &Mutex<Shard> {
        // Ids count up, so consecutive spawns take consecutive shards.
        let index = usize::try_from(id.get() % self.shards.len() as u64).unwrap_or(0);
        &self.shards[index]
    }

    /// Enters the task `build` makes, with its waker; `None`, without
    /// calling `build`, when the runtime is shutting down (invariant 2).
    /// `build` runs under the shard's lock: it makes the task, and runs no
    /// user code.
    pub(super) fn enter<R>(
        &self,
        id: TaskId,
        name: Option<&'static str>,
        build: impl FnOnce() -> (R, Waker),
    ) -> Option<R> {
        let mut shard = lock(self.shard(id));
        if shard.closed {
            return None;
        }
        let (made, waker) = build();
        shard.live.insert(id.get(), Entry { name, waker });
        Some(made)
    }

    /// Takes a task out as it ends (invariants 1 and 3).
    pub(super) fn leave(&self, id: TaskId, end: ChildEnd) {
        let entry = {
            let mut shard = lock(self.shard(id));
            let entry = shard.live.remove(&id.get());
            if shard.closed
                && let Some(entry) = &entry
            {
                shard.ended.push(ChildReport {
                    id,
                    name: entry.name,
                    kind: ChildKind::Task,
                    end,
                });
            }
            entry
        };
        // Its waker is dropped outside the lock.
        drop(entry);
    }

    /// Closes every shard (invariant 2).
    pub(super) fn close(&self) {
        for shard in &*self.shards {
            lock(shard).closed = true;
        }
    }

    /// A waker for every live task.
    pub(super) fn wakers(&self) -> Vec<Waker> {
        let mut wakers = Vec::new();
        for shard in &*self.shards {
            wakers.extend(lock(shard).live.values().map(|entry| entry.waker.clone()));
        }
        wakers
    }

    /// How each task ended since the shards closed, in id order, taken
    /// once.
    pub(super) fn take_ended(&self) -> Vec<ChildReport> {
        let mut ended = Vec::new();
        for shard in &*self.shards {
            ended.append(&mut lock(shard).ended);
        }
        ended.sort_by_key(|report| report.id);
        ended
    }
}
