//! [`Ticking`]: one tick's view of a hosted executor, the storage the
//! shared tick loop ([`raw::sched::tick`]) works on.
#![forbid(unsafe_code)]

use std::cell::RefMut;
use std::rc::Rc;

use dinah_core::raw;
use dinah_core::raw::sched::{TaskState, Word};
use dinah_core::telemetry::{Measure, TraceEventKind};

use super::run::{Inner, MAIN};
use super::slots::TaskPlace;
use super::slots::drop_task;
use crate::runtime::context::RunningHere;

/// One tick's view of a hosted executor: the storage the shared tick loop
/// ([`raw::sched::tick`]) works on. `place` is the task taken off the ready list
/// last, held between [`take`](raw::sched::Tick::take) and its step.
pub(super) struct Ticking<'t, 'r, 'a, M: Measure> {
    pub(super) inner: &'t Inner<'a, M>,
    pub(super) here: &'t RunningHere<'r>,
    pub(super) place: Option<TaskPlace<'a, M>>,
    /// The executor's ready list, borrowed for the whole tick (nothing
    /// else reads it): entries before `next` have been handed out.
    pub(super) ready: RefMut<'t, Vec<u32>>,
    pub(super) next: usize,
}

impl<M: Measure> Drop for Ticking<'_, '_, '_, M> {
    /// Keeps the tick's place in the ready list for the next one.
    fn drop(&mut self) {
        self.inner.next.set(self.next);
    }
}

impl<M: Measure> raw::sched::Tick for Ticking<'_, '_, '_, M> {
    #[inline(always)]
    fn take_woken(&mut self) {
        let next = std::mem::replace(&mut self.next, 0);
        self.inner.take_woken(self.here, &mut self.ready, next);
    }

    #[inline(always)]
    fn next_ready(&mut self) -> Option<u32> {
        let index = *self.ready.get(self.next)?;
        self.next += 1;
        Some(index)
    }

    #[inline(always)]
    fn other_entry(&mut self, entry: u32) -> bool {
        if entry != MAIN {
            return false;
        }
        // The main future's entry: cleared here, where it was taken off
        // (rule 2), and polled only while `block_on` drives a future.
        let inner = self.inner;
        inner.main.cell.take_queued();
        if inner.in_block_on.get() {
            inner.main_ready.set(true);
        }
        true
    }

    #[inline(always)]
    fn take(&mut self, entry: u32) -> Word {
        // One borrow of the table: the task's word (its first poll started
        // in the same step) and its place.
        let slots = self.inner.table.slots.borrow();
        let slot = &slots[entry as usize];
        self.place = Some(Rc::clone(&slot.task));
        slot.header.cell.take_for_poll()
    }

    #[inline(always)]
    fn release(&mut self, entry: u32) {
        self.place = None;
        self.inner.release(entry);
    }

    #[inline(always)]
    fn cancel(&mut self, entry: u32) {
        let inner = self.inner;
        let Some(place) = self.place.take() else {
            return;
        };
        // Dropping the future resolves its handle `Cancelled`, or
        // `Panicked` if its destructor panics.
        let task = place.task.borrow_mut().take();
        let life = drop_task(task, &place.note);
        if let (Some(probe), Some(slot)) = (inner.probe(), place.probe.get()) {
            probe.cancelled(slot);
        }
        inner.end(entry, life);
    }

    #[inline(always)]
    fn poll(&mut self, entry: u32, _: Word, first: bool, _: bool) -> Option<bool> {
        let inner = self.inner;
        let place = self.place.take()?;
        let watched = match (inner.probe(), place.probe.get()) {
            (Some(probe), Some(slot)) => Some((probe, slot, probe.poll_started(slot, first))),
            _ => None,
        };
        let ended = inner.poll_in_place(entry, &place);
        if let Some((probe, slot, start)) = watched {
            let word = place.header.cell.word();
            let kind = ended.map(|life| {
                if life == TaskState::Completed {
                    TraceEventKind::Completed
                } else {
                    TraceEventKind::Failed
                }
            });
            probe.poll_ended(slot, start, (word.is_queued(), word.is_self_woken()), kind);
        }
        let ended = ended?;
        inner.end(entry, ended);
        Some(ended == TaskState::Completed)
    }

    #[inline(always)]
    fn stale_wakes(&mut self) -> u32 {
        let stale = self.inner.hub.stack.stale_wakes();
        stale.wrapping_sub(self.inner.stale_seen.replace(stale))
    }

    #[inline(always)]
    fn has_work(&self) -> bool {
        self.inner.has_work(self.here, &self.ready, self.next)
    }
}
