//! [`Header`]: one task slot's shared part, its cell in the scheduling core
//! and the way back to its executor. Its `Arc` is the task's `std` waker.
#![forbid(unsafe_code)]

use std::marker::PhantomData;
use std::sync::Arc;
use std::task::Wake;

use dinah_core::raw::sched::{Link32, TaskCell};
use dinah_core::telemetry::Measure;

use super::hub::Hub;
use super::probe::ExecProbe;
use super::task_probe::TaskProbe;
use crate::runtime::context as here;
use crate::task::CancelTarget;
use crate::telemetry::HookScope;
use crate::telemetry::hook::Hook;

/// One task slot's shared part. `M` says, in the type, whether the executor
/// measures itself, so that an unmeasured executor's wakes do not even test
/// for a probe.
pub(super) struct Header<M: Measure> {
    pub(super) cell: TaskCell<Link32>,
    hub: Arc<Hub>,
    /// The slot's telemetry, when the executor keeps any.
    pub(super) probe: Hook<Arc<TaskProbe>>,
    measure: PhantomData<fn() -> M>,
}

impl<M: Measure> Header<M> {
    /// A task slot's header; `task` is false for `block_on`'s own future,
    /// which is not a task and is not measured.
    pub(super) fn new(index: u32, hub: &Arc<Hub>, task: bool) -> Arc<Self> {
        let probe = hub
            .probe
            .get()
            .filter(|_| task && M::MEASURED)
            .map(|probe| probe.slot());
        Arc::new(Self {
            cell: TaskCell::new(Link32::new(index)),
            hub: Arc::clone(hub),
            probe: Hook::new(probe),
            measure: PhantomData,
        })
    }

    /// The slot's probe and its executor's, when `M` measures (always
    /// `None` for an unmeasured executor, known when compiling).
    #[inline(always)]
    pub(super) fn probes(&self) -> Option<(&ExecProbe, &Arc<TaskProbe>)> {
        if !M::MEASURED {
            return None;
        }
        Some((&**self.hub.probe.get()?, self.probe.get()?))
    }
}

impl<M: Measure> CancelTarget for Header<M> {
    fn cancel(&self, generation: u32) {
        if let Ok(true) = self.hub.stack.cancel(&self.cell, generation) {
            self.hub.notify();
        }
    }
}

impl<M: Measure> Wake for Header<M> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    /// Sets the cell's `QUEUED` bit (the scheduling core's rules: coalesced
    /// when queued, counted when stale) and queues it: on the executor's
    /// local list when this is the executor's thread and the executor is
    /// running (it will look there before it parks), otherwise on the wake
    /// stack, then unparking the executor's thread. Never polls, never locks.
    fn wake_by_ref(self: &Arc<Self>) {
        let hub = &self.hub;
        let index = self.cell.index();
        // One look at this thread's state: a wake on the executor's own
        // thread while it runs may be a poll's own, and is queued on the
        // local list; from anywhere else (another thread, or this one while
        // its thread-locals are being destroyed) it never is.
        let (here, marked) = here::mark_here(hub.address(), index, |here| {
            hub.stack.mark_at(&self.cell, index, || here)
        });
        // The telemetry sees the wake before the executor can poll the task
        // (its ready stamp must come first); a hook's panic is held until
        // the wake is queued, then reaches the waker's caller.
        // No scope when no hook is the user's code: nothing can panic.
        let hooks = self.probes().map(|(probe, slot)| {
            let scope = probe.runs_user_code().then(HookScope::enter);
            match marked {
                Ok(true) => {
                    let polling = if here { hub.stack.polling() } else { 0 };
                    probe.woken(slot, here, polling == index + 1, polling != 0);
                }
                Ok(false) => {}
                Err(_) => probe.stale(slot),
            }
            scope
        });
        if !here && marked == Ok(true) {
            hub.stack.push_at(&self.cell, index);
            hub.driver.unpark();
        }
        if let Some(Some(scope)) = hooks {
            scope.exit();
        }
    }
}
