//! [`Registry`]: every live task of a multi-thread runtime, by id, with its
//! name and a waker, so that a shutdown can reach each one, and the report
//! of how each task alive at the shutdown ended.
//!
//! It is split in shards by id, each behind its own short lock, so that
//! spawns and ends on different workers seldom meet on one lock; each
//! shard counts its live tasks, so that spawns and ends share no counter. A shard
//! is a slab: a task's entry is found by the place `enter` gave it, with
//! no hashing, and freed places are reused.
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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Duration;

use dinah_core::TaskId;

use super::shared::Apart;
use crate::primitives::lock;
use crate::task::{ChildEnd, ChildKind, ChildReport};

/// One live task: what every task has. Its name and its ready stamp, which
/// only some tasks have, sit beside the places (see [`Shard`]), so that
/// an entry is 24 bytes: written on the core that spawns the task and
/// taken out on the core that ends it, fewer bytes move between cores.
struct Entry {
    id: TaskId,
    waker: Waker,
}

/// A place in a shard: a live task, or the next free place.
enum Place {
    Live(Entry),
    Free(usize),
}

/// No free place.
const NONE: usize = usize::MAX;

/// A slab of places, with the names and ready stamps of the tasks that
/// have them in vectors indexed like the places: each grows only when a
/// named task, or one whose executor measures itself, takes a place
/// beyond it, so a runtime of unnamed, unmeasured tasks never writes them.
struct Shard {
    places: Vec<Place>,
    names: Vec<Option<&'static str>>,
    ready: Vec<Option<Arc<AtomicU64>>>,
    /// The first free place, or `NONE`.
    free: usize,
    /// Live tasks in it.
    live: usize,
    closed: bool,
    ended: Vec<ChildReport>,
}

impl Default for Shard {
    fn default() -> Self {
        Self {
            places: Vec::new(),
            names: Vec::new(),
            ready: Vec::new(),
            free: NONE,
            live: 0,
            closed: false,
            ended: Vec::new(),
        }
    }
}

impl Shard {
    fn insert(&mut self, entry: Entry) -> usize {
        self.live += 1;
        if self.free == NONE {
            self.places.push(Place::Live(entry));
            return self.places.len() - 1;
        }
        let at = self.free;
        match std::mem::replace(&mut self.places[at], Place::Live(entry)) {
            Place::Free(next) => self.free = next,
            Place::Live(_) => unreachable!("the free list names free places"),
        }
        at
    }

    /// Keeps `value` for place `at` in `side`, growing it only when
    /// there is something to keep.
    fn keep<T>(side: &mut Vec<Option<T>>, at: usize, value: Option<T>) {
        match (side.get_mut(at), value) {
            (Some(slot), value) => *slot = value,
            (None, None) => {}
            (None, Some(value)) => {
                side.resize_with(at, || None);
                side.push(Some(value));
            }
        }
    }

    /// The name of the task at place `at`, if it has one.
    fn name_at(&self, at: usize) -> Option<&'static str> {
        self.names.get(at).copied().flatten()
    }

    fn remove(&mut self, at: usize) -> Option<Entry> {
        match std::mem::replace(self.places.get_mut(at)?, Place::Free(self.free)) {
            Place::Live(entry) => {
                self.free = at;
                self.live -= 1;
                if let Some(stamp) = self.ready.get_mut(at) {
                    *stamp = None;
                }
                Some(entry)
            }
            free @ Place::Free(_) => {
                self.places[at] = free;
                None
            }
        }
    }
}

/// Where a task's entry is: its shard and its place there. Two `u32`s:
/// a task's cell carries one, and every byte of a small cell counts (see
/// `Run` in `task.rs`). A shard holding more than `u32::MAX` live tasks
/// would need hundreds of gigabytes of cells; `enter` refuses the task
/// that would need a larger place. [`Key::LEFT`] stands for a task that
/// left already, so that its guard needs no flag beside the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Key {
    shard: u32,
    at: u32,
}

impl Key {
    /// The key of a task that left: no place has it.
    pub(super) const LEFT: Self = Self {
        shard: 0,
        at: u32::MAX,
    };
}

/// Why [`Registry::enter`] took no task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The runtime is shutting down.
    Closed,
    /// The task's shard has no place left that a [`Key`] can name.
    Full,
}

/// What [`Registry::ready_beyond`] found.
pub(super) struct ReadyBeyond {
    pub(super) task: TaskId,
    pub(super) name: Option<&'static str>,
    pub(super) ready_for: Duration,
    pub(super) tasks: usize,
}

/// The live tasks (see the module docs).
pub(super) struct Registry {
    /// Each shard's lock on cache lines of its own: a worker taking one
    /// shard does not pull in the line another worker is writing in the
    /// next.
    shards: Box<[Apart<Mutex<Shard>>]>,
}

impl Registry {
    /// A registry for a runtime of `workers` workers.
    pub(super) fn new(workers: usize) -> Self {
        let count = (workers * 4).next_power_of_two().clamp(4, 256);
        Self {
            shards: (0..count)
                .map(|_| Apart::new(Mutex::new(Shard::default())))
                .collect(),
        }
    }

    fn shard_of(&self, id: TaskId) -> usize {
        // A thread's ids count up, so its consecutive spawns take
        // consecutive shards. The count is a power of two: a mask, not a
        // division.
        let mask = self.shards.len() as u64 - 1;
        usize::try_from(id.get() & mask).unwrap_or(0)
    }

    /// Enters the task `build` makes, with its waker, and says where. Without
    /// calling `build`, refuses it as [`Refusal::Closed`] when the runtime
    /// is shutting down (invariant 2), and as [`Refusal::Full`] when its
    /// shard has no place a [`Key`] can name. `build` runs under the
    /// shard's lock, with the key its task will leave by: it makes the
    /// task, and runs no user code.
    pub(super) fn enter<R>(
        &self,
        id: TaskId,
        name: Option<&'static str>,
        ready: Option<Arc<AtomicU64>>,
        build: impl FnOnce(Key) -> (R, Waker),
    ) -> Result<R, Refusal> {
        let shard = self.shard_of(id);
        let mut places = lock(&self.shards[shard]);
        if places.closed {
            return Err(Refusal::Closed);
        }
        let at = if places.free == NONE {
            places.places.len()
        } else {
            places.free
        };
        let key = match (u32::try_from(shard), u32::try_from(at)) {
            (Ok(shard), Ok(at)) if at != Key::LEFT.at => Key { shard, at },
            _ => return Err(Refusal::Full),
        };
        let (made, waker) = build(key);
        let placed = places.insert(Entry { id, waker });
        debug_assert_eq!(placed, at);
        Shard::keep(&mut places.names, at, name);
        Shard::keep(&mut places.ready, at, ready);
        Ok(made)
    }

    /// Takes a task out as it ends (invariants 1 and 3): its id, unless it
    /// had left already.
    pub(super) fn leave(&self, key: Key, end: ChildEnd) -> Option<TaskId> {
        let entry = {
            let mut shard = lock(&self.shards[key.shard as usize]);
            let at = key.at as usize;
            let name = shard.name_at(at);
            let entry = shard.remove(at);
            if shard.closed
                && let Some(entry) = &entry
            {
                shard.ended.push(ChildReport {
                    id: entry.id,
                    name,
                    kind: ChildKind::Task,
                    end,
                });
            }
            entry
        };
        // Its waker is dropped outside the lock.
        entry.map(|entry| entry.id)
    }

    /// Tasks entered and not yet taken out: each shard's count, read under
    /// its lock, one shard after another (not one snapshot while tasks
    /// come and go; exact once none can come).
    pub(super) fn live(&self) -> usize {
        self.shards.iter().map(|shard| lock(shard).live).sum()
    }

    /// Closes every shard (invariant 2).
    pub(super) fn close(&self) {
        for shard in &*self.shards {
            lock(shard).closed = true;
        }
    }

    /// The name of live task `id`, if it has one.
    pub(super) fn name_of(&self, id: TaskId) -> Option<&'static str> {
        let shard = lock(&self.shards[self.shard_of(id)]);
        let at = shard
            .places
            .iter()
            .position(|place| matches!(place, Place::Live(entry) if entry.id == id))?;
        shard.name_at(at)
    }

    /// The tasks ready for longer than `limit` at `now` (both on the
    /// executor's clock): how many, and the one ready longest, with its
    /// name and since when. Nothing where the executor does not measure
    /// itself.
    pub(super) fn ready_beyond(&self, now: u64, limit: Duration) -> Option<ReadyBeyond> {
        let limit = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
        let mut found: Option<ReadyBeyond> = None;
        for shard in &*self.shards {
            let shard = lock(shard);
            for (at, ready) in shard.ready.iter().enumerate() {
                let (Some(ready), Some(Place::Live(entry))) = (ready, shard.places.get(at)) else {
                    continue;
                };
                let name = shard.name_at(at);
                let since = ready.load(Ordering::Relaxed);
                let ready_for = now.saturating_sub(since);
                if since == 0 || ready_for <= limit {
                    continue;
                }
                let found = found.get_or_insert(ReadyBeyond {
                    task: entry.id,
                    name,
                    ready_for: Duration::ZERO,
                    tasks: 0,
                });
                found.tasks += 1;
                if Duration::from_nanos(ready_for) > found.ready_for {
                    found.task = entry.id;
                    found.name = name;
                    found.ready_for = Duration::from_nanos(ready_for);
                }
            }
        }
        found
    }

    /// A waker for every live task.
    pub(super) fn wakers(&self) -> Vec<Waker> {
        let mut wakers = Vec::new();
        for shard in &*self.shards {
            wakers.extend(lock(shard).places.iter().filter_map(|place| match place {
                Place::Live(entry) => Some(entry.waker.clone()),
                Place::Free(_) => None,
            }));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> TaskId {
        TaskId::new(n).unwrap_or_else(|_| unreachable!())
    }

    fn enter(registry: &Registry, task: TaskId, name: Option<&'static str>) -> Key {
        registry
            .enter(task, name, None, |key| (key, Waker::noop().clone()))
            .unwrap_or_else(|refusal| panic!("refused: {refusal:?}"))
    }

    #[test]
    fn a_place_reused_by_an_unnamed_task_forgets_the_name_of_the_one_before() {
        let registry = Registry::new(1);
        let shards = registry.shards.len() as u64;
        // Same shard, same place: the second task reuses the first's.
        let (named, unnamed) = (id(shards), id(2 * shards));
        let key = enter(&registry, named, Some("uplink"));
        assert_eq!(registry.name_of(named), Some("uplink"));
        assert_eq!(registry.leave(key, ChildEnd::Completed), Some(named));
        let again = enter(&registry, unnamed, None);
        assert_eq!(again, key, "the freed place is reused");
        assert_eq!(registry.name_of(unnamed), None);
        assert_eq!(registry.name_of(named), None, "gone once it left");
        assert_eq!(registry.live(), 1);
    }

    #[test]
    fn a_named_task_beyond_the_names_kept_so_far_is_named_and_reported_by_name() {
        let registry = Registry::new(1);
        let shards = registry.shards.len() as u64;
        // Three unnamed tasks take places 0 to 2 of one shard; a named one
        // the place after them.
        let keys: Vec<_> = (1..=3)
            .map(|n| enter(&registry, id(n * shards), None))
            .collect();
        let named = id(4 * shards);
        let key = enter(&registry, named, Some("late"));
        assert_eq!(registry.name_of(named), Some("late"));
        assert_eq!(registry.name_of(id(shards)), None);
        registry.close();
        registry.leave(key, ChildEnd::Cancelled);
        for key in keys {
            registry.leave(key, ChildEnd::Completed);
        }
        let ended: Vec<_> = registry
            .take_ended()
            .into_iter()
            .map(|report| (report.id, report.name, report.end))
            .collect();
        assert_eq!(
            ended,
            [
                (id(shards), None, ChildEnd::Completed),
                (id(2 * shards), None, ChildEnd::Completed),
                (id(3 * shards), None, ChildEnd::Completed),
                (named, Some("late"), ChildEnd::Cancelled),
            ]
        );
        assert_eq!(registry.live(), 0);
    }
}
