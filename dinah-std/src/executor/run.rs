//! The hosted executor's run loop: spawning into its slots, the tick (the
//! shared [`raw::sched::tick`] loop over [`Ticking`]), `block_on` and shutdown,
//! with the guards that keep them consistent when user code unwinds.
#![forbid(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use dinah_core::TaskId;
use dinah_core::executor::{SpawnError, TickReport};
use dinah_core::raw;
use dinah_core::raw::sched::{TaskState, WakeStack};
use dinah_core::task::TaskOutput;
use dinah_core::telemetry::Measure;

use super::config::ExecutorConfig;
use super::header::Header;
use super::hub::Hub;
use super::probe::ExecProbe;
use super::report::ShutdownReport;
use super::resolver::{AbortNote, BoxedTask, wrap};
use super::slots::{Drain, Entered, Slot, SlotTable, TaskPlace, drop_task, task_report};
use super::ticking::Ticking;
use crate::io::IO_INTERVAL;
use crate::pool::ShutdownPolicy;
use crate::primitives::current;
use crate::queue::CapacityError;
use crate::runtime::context::RunningHere;
use crate::runtime::{Driver, context};
use crate::task::{CancelTarget, ChildReport, Join, JoinError, JoinHandle};
use crate::telemetry::hook::Hook;
use crate::telemetry::{TelemetryConfig, resume_hook_panic, run_hooks};
use crate::unwind::panic_text;

/// The cell index of the future `block_on` drives; task indices stay below.
pub(super) const MAIN: u32 = u32::MAX - 1;

pub(super) struct Inner<'a, M: Measure> {
    pub(super) hub: Arc<Hub>,
    /// The future `block_on` drives (entry `MAIN`), its waker, and
    /// whether it is being driven and is ready.
    pub(super) main: Arc<Header<M>>,
    pub(super) main_waker: Waker,
    pub(super) in_block_on: Cell<bool>,
    pub(super) main_ready: Cell<bool>,
    pub(super) table: SlotTable<'a, M>,
    /// Taken off the wake stack or the local list, oldest first; entries
    /// before `next` were handed out. A tick holds it (`Ticking`).
    pub(super) ready: RefCell<Vec<u32>>,
    pub(super) next: Cell<usize>,
    /// The local ready list while the executor does not run.
    pub(super) local: RefCell<Vec<u32>>,
    pub(super) stale_seen: Cell<u32>,
    /// Inside `tick`, `block_on` or `shutdown`: a task is being polled or
    /// dropped, so entering again would be re-entrant.
    pub(super) running: Cell<bool>,
    pub(super) closed: Cell<bool>,
    pub(super) drain: Drain,
    /// Ticks left before the next look at the reactor.
    pub(super) io_countdown: Cell<u32>,
}

/// Tells the telemetry, however the step it guards ends (returning or
/// unwinding), that the thread leaves its polls (see `Inner::unchain`).
pub(super) struct UnchainOnExit<'r, 'a, M: Measure>(pub(super) &'r Inner<'a, M>);

impl<M: Measure> Drop for UnchainOnExit<'_, '_, M> {
    fn drop(&mut self) {
        self.0.unchain();
    }
}

/// Ends `block_on`'s hold on the main cell however the call ends: nothing
/// polls (a monitor hears that an unwound poll ended), no main poll is
/// pending, and the cell is vacant (later wakes are stale; an entry still
/// on a list clears `QUEUED` when taken off).
struct MainGuard<'r, 'a, M: Measure>(&'r Inner<'a, M>);

impl<M: Measure> Drop for MainGuard<'_, '_, M> {
    fn drop(&mut self) {
        let inner = self.0;
        if inner.hub.stack.polling() == MAIN + 1
            && let Some(probe) = inner.probe()
        {
            probe.main_poll_ended();
        }
        inner.hub.stack.set_polling(0);
        inner.unchain();
        inner.in_block_on.set(false);
        inner.main_ready.set(false);
        inner.main.cell.set_state(None);
    }
}

impl<'a, M: Measure> Inner<'a, M> {
    /// Tells the telemetry that the thread leaves its polls for something
    /// else (see `ExecProbe::unchain`); nothing when unmeasured.
    #[inline(always)]
    pub(super) fn unchain(&self) {
        if let Some(probe) = self.probe() {
            probe.unchain();
        }
    }

    /// The executor's probe, when `M` measures: always `None` for an
    /// unmeasured executor, known when compiling, so that none of its
    /// telemetry code is even tested for.
    #[inline(always)]
    pub(super) fn probe(&self) -> Option<&ExecProbe> {
        if M::MEASURED {
            self.hub.probe.get().map(|probe| &**probe)
        } else {
            None
        }
    }

    pub(super) fn new(
        config: ExecutorConfig,
        telemetry: Option<TelemetryConfig>,
    ) -> Result<Self, CapacityError> {
        if config.ingress_capacity == 0 || config.max_tasks == Some(0) {
            return Err(CapacityError::Zero);
        }
        let (_, items) = crate::queue::reserve(config.ingress_capacity)?;
        let measured = telemetry.is_some();
        let probe = Hook::new(telemetry.map(|telemetry| Box::new(ExecProbe::new(telemetry))));
        let driver = Arc::new(Driver::new(
            current(),
            config.start_paused,
            M::MEASURED && measured,
        ));
        context::enter(&driver);
        let hub = Arc::new(Hub::new(driver, config.ingress_capacity, items, probe));
        let main = Header::new(MAIN, &hub, false);
        Ok(Self {
            main_waker: Waker::from(Arc::clone(&main)),
            main,
            in_block_on: Cell::new(false),
            main_ready: Cell::new(false),
            hub,
            table: SlotTable {
                slots: RefCell::new(Vec::new()),
                free: RefCell::new(Vec::new()),
                live: Cell::new(0),
                // Slot indices stay below `MAIN`: the cap is never above it.
                max_tasks: config.max_tasks.unwrap_or(usize::MAX).min(MAIN as usize),
            },
            ready: RefCell::new(Vec::new()),
            next: Cell::new(0),
            local: RefCell::new(Vec::new()),
            stale_seen: Cell::new(0),
            running: Cell::new(false),
            closed: Cell::new(false),
            drain: Drain {
                active: Cell::new(false),
                ended: RefCell::new(None),
                idle_waker: RefCell::new(None),
                watch_real_time: Cell::new(false),
            },
            io_countdown: Cell::new(0),
        })
    }

    pub(super) fn enter(&self, what: &str) -> Entered<'_> {
        assert!(
            !self.running.replace(true),
            "dinah: LocalExecutor::{what} called from inside a task of the same executor; \
             it would wait for that task while that task waits for it (a deadlock)"
        );
        Entered(&self.running)
    }

    pub(super) fn try_spawn<F>(
        &self,
        future: F,
        name: Option<&'static str>,
    ) -> Result<JoinHandle<F::Output>, SpawnError<F>>
    where
        F: Future + 'a,
        F::Output: TaskOutput + 'a,
    {
        let id = self.hub.next_id();
        let closed = self.closed.get() || self.drain.active.get();
        if closed || self.table.live.get() >= self.table.max_tasks {
            if let Some(probe) = self.probe() {
                run_hooks(|| probe.rejected(id, !closed));
            }
            return Err(if closed {
                SpawnError::Shutdown(future)
            } else {
                SpawnError::Full(future)
            });
        }
        let mut at = 0;
        if let Some(probe) = self.probe() {
            // A hook's panic reaches the caller before the task is taken.
            run_hooks(|| at = probe.submitted(id, name));
        }
        let (index, header, generation, note) = self.claim_slot(id, at, name);
        let join = Join::running(
            id,
            Some((header as Arc<dyn CancelTarget>, generation)),
            self.hub.home,
        );
        self.install(index, Box::pin(wrap(future, Arc::clone(&join), note)));
        Ok(JoinHandle::new(join))
    }

    /// Takes a free slot (or adds one), starts a new task in its cell (which
    /// queues it) and returns its index, header, generation and abort note.
    fn claim_slot(
        &self,
        id: TaskId,
        at: u64,
        name: Option<&'static str>,
    ) -> (u32, Arc<Header<M>>, u32, Rc<AbortNote<'a>>) {
        let mut slots = self.table.slots.borrow_mut();
        let index = match self.table.free.borrow_mut().pop() {
            Some(index) => index,
            None => {
                let index = slots.len() as u32;
                slots.push(Slot::new(index, &self.hub));
                index
            }
        };
        let slot = &mut slots[index as usize];
        // A header that something else still holds (a cloned waker, a
        // handle's cancel path) beyond the slot, its place and its place's
        // waker stays with its old task; this task gets a new one. A stale
        // wake through the old one finds its task over.
        if Arc::strong_count(&slot.header) > 3 {
            if let (Some(probe), Some(old)) = (self.probe(), slot.header.probe.get()) {
                probe.forget(old);
            }
            *slot = Slot::new(index, &self.hub);
        }
        slot.task.who.set(Some((id, name)));
        if let (Some(probe), Some(task)) = (self.probe(), slot.header.probe.get()) {
            probe.installed(task, id, at, name);
        }
        // Spawning happens on the executor's thread (it is `!Send`).
        let generation = WakeStack::begin(&slot.header.cell);
        self.hub.queue_started(&slot.header.cell);
        (
            index,
            Arc::clone(&slot.header),
            generation,
            Rc::clone(&slot.task.note),
        )
    }

    fn install(&self, index: u32, task: BoxedTask<'a>) {
        *self.table.slots.borrow()[index as usize]
            .task
            .task
            .borrow_mut() = Some(task);
        self.table.live.set(self.table.live.get() + 1);
    }

    /// Takes in waiting submissions, oldest first, while the cap allows:
    /// once a tick, so the common case (none) is one atomic load, inline.
    #[inline(always)]
    pub(super) fn admit(&self) {
        if self.hub.ingress.has_pending() && !self.closed.get() {
            self.admit_pending();
        }
    }

    #[inline(never)]
    pub(super) fn admit_pending(&self) {
        let room = self.table.max_tasks - self.table.live.get();
        for submission in self.hub.ingress.take(room) {
            let (index, header, generation, note) = self.claim_slot(
                submission.id(),
                submission.submitted_at(),
                submission.name(),
            );
            let (future, join) = submission.admit(note);
            join.attach(header, generation);
            self.install(index, future);
        }
    }

    /// Whether anything is ready, besides `ready`'s entries from `next` on
    /// (the tick's own list). Called only while the executor runs (the
    /// local list is installed).
    pub(super) fn has_work(&self, here: &RunningHere<'_>, ready: &[u32], next: usize) -> bool {
        next < ready.len()
            || here.has_local()
            || self.main_ready.get()
            || self.hub.stack.has_woken()
            || (self.hub.ingress.has_pending() && self.table.live.get() < self.table.max_tasks)
    }

    /// Moves every task woken since the last call onto the ready list: the
    /// local ones first (woken during earlier polls on this thread), then
    /// the wake stack's, in wake order.
    #[inline(always)]
    pub(super) fn take_woken(&self, here: &RunningHere<'_>, ready: &mut Vec<u32>, next: usize) {
        if next == ready.len() {
            // The usual case: everything was handed out, so the local list
            // simply becomes the ready list (and the old one, emptied, the
            // local list): no copy.
            ready.clear();
            here.swap_local(ready);
        } else {
            ready.drain(..next);
            let mut local = Vec::new();
            here.swap_local(&mut local);
            ready.append(&mut local);
        }
        if !self.hub.stack.has_woken() {
            return;
        }
        let slots = self.table.slots.borrow();
        let cell_of = |index: usize| {
            if index == MAIN as usize {
                &self.main.cell
            } else {
                &slots[index].header.cell
            }
        };
        if let Some((first, _)) = self.hub.stack.take(cell_of) {
            let mut entry = first;
            while entry != 0 {
                ready.push(entry - 1);
                entry = cell_of(entry as usize - 1).link();
            }
        }
    }

    /// One tick; the caller has entered the executor (`RunningHere`). The
    /// loop is the scheduling core's ([`raw::sched::tick`]), over this executor's
    /// storage ([`Ticking`]). Inlined into its two callers: `block_on` reads
    /// only `work_remaining`, and the rest of the report then costs nothing.
    #[inline(always)]
    pub(super) fn tick(&self, budget: usize, here: &RunningHere<'_>) -> TickReport {
        self.admit();
        // Timers due by now wake their tasks before the wake stack is read,
        // so they are polled in this tick. One atomic load when none is.
        self.hub.driver.timers().expire_due();
        // Sockets' readiness, every `IO_INTERVAL` ticks once there are
        // sockets: under load the executor never waits in the reactor.
        if self.hub.driver.reactor().is_some() {
            let left = self.io_countdown.get();
            if left == 0 {
                self.io_countdown.set(IO_INTERVAL);
                self.hub.driver.poll_now();
                self.unchain();
            } else {
                self.io_countdown.set(left - 1);
            }
        }
        // The ready list is borrowed once for the whole tick, not once per
        // task.
        let report = raw::sched::tick(
            &mut Ticking {
                ready: self.ready.borrow_mut(),
                next: self.next.get(),
                inner: self,
                here,
                place: None,
            },
            budget,
        );
        if M::MEASURED && self.probe().is_some_and(ExecProbe::runs_user_code) {
            // A telemetry hook that panicked during the tick: its panic
            // reaches the caller now that every task is settled.
            resume_hook_panic();
        }
        report
    }

    /// Polls the task in `place` (slot `index`) once, where it lies, with no
    /// borrow of the slot table held (so it may spawn), catching a panic.
    /// A task that ends is dropped there and then. Returns how it ended.
    #[inline(always)]
    pub(super) fn poll_in_place(&self, index: u32, place: &TaskPlace<'a, M>) -> Option<TaskState> {
        let mut guard = place.task.borrow_mut();
        let task = guard.as_mut()?;
        self.hub.stack.set_polling(index + 1);
        let poll = catch_unwind(AssertUnwindSafe(|| {
            task.as_mut().poll(&mut Context::from_waker(&place.waker))
        }));
        self.hub.stack.set_polling(0);
        let ended = match poll {
            Ok(Poll::Pending) => return None,
            Ok(Poll::Ready(true)) => TaskState::Completed,
            Ok(Poll::Ready(false)) => TaskState::Failed,
            Err(payload) => {
                // The unwind already dropped the future's parts; its
                // resolver left the join in the note.
                let task = guard.take();
                drop(guard);
                drop(task);
                if let Some(join) = place.note.take_orphan() {
                    join.abort(JoinError::Panicked(panic_text(&*payload)));
                }
                return Some(TaskState::Failed);
            }
        };
        // Dropped outside the borrow: a destructor may spawn or wake.
        let task = guard.take();
        drop(guard);
        drop(task);
        Some(ended)
    }

    /// Ends the task in slot `index`; frees the slot unless it is still
    /// queued (then it is freed when taken off).
    pub(super) fn end(&self, index: u32, state: TaskState) {
        let word = {
            let slots = self.table.slots.borrow();
            let slot = &slots[index as usize];
            if let (Some(ended), Some((id, name))) =
                (self.drain.ended.borrow_mut().as_mut(), slot.task.who.get())
            {
                ended.push(task_report(id, name, state));
            }
            slot.header.cell.set_state(state)
        };
        self.table.live.set(self.table.live.get() - 1);
        if self.table.live.get() == 0
            && let Some(idle) = self.drain.idle_waker.borrow_mut().take()
        {
            idle.wake();
        }
        if !word.is_queued() {
            self.table.free.borrow_mut().push(index);
        }
    }

    /// A finished task's entry came off the stack: free its slot.
    pub(super) fn release(&self, index: u32) {
        self.table.free.borrow_mut().push(index);
    }

    pub(super) fn block_on<F: Future>(&self, future: F) -> F::Output {
        let _entered = self.enter("block_on");
        context::enter(&self.hub.driver);
        let here = RunningHere::enter(self.hub.address(), &self.local);
        let mut future = pin!(future);
        // The future is named by an id of its own, so that a monitor can
        // blame it for holding the thread.
        let id = self.hub.next_id();
        self.main.cell.set_state(TaskState::Running);
        self.in_block_on.set(true);
        // Polled at once. The main cell's `QUEUED` is cleared only where
        // its entry is taken off a list (in `tick`): an entry an earlier
        // call left still comes, and polls the future once more, which a
        // future allows.
        self.main_ready.set(true);
        let _main = MainGuard(self);
        loop {
            if self.main_ready.replace(false) {
                self.hub.stack.set_polling(MAIN + 1);
                if let Some(probe) = self.probe() {
                    probe.main_poll_started(id);
                }
                let poll = future
                    .as_mut()
                    .poll(&mut Context::from_waker(&self.main_waker));
                if let Some(probe) = self.probe() {
                    probe.main_poll_ended();
                }
                self.hub.stack.set_polling(0);
                if M::MEASURED && self.probe().is_some_and(ExecProbe::runs_user_code) {
                    resume_hook_panic();
                }
                if let Poll::Ready(output) = poll {
                    return output;
                }
            }
            if self.tick(usize::MAX, &here).work_remaining {
                if self.drain.watch_real_time.get() {
                    self.main_ready.set(true);
                }
            } else {
                self.unchain();
                // Nothing ready: wait (parked, or in the reactor) until a
                // wake, readiness or the next deadline (a paused clock jumps
                // to it instead, and the reactor is only looked at).
                self.hub.driver.park();
                // The reactor was just looked at: the count starts again.
                self.io_countdown.set(IO_INTERVAL);
            }
        }
    }
}

impl<'a, M: Measure> Inner<'a, M> {
    pub(super) fn shutdown(&self) -> ShutdownReport {
        let _entered = self.enter("shutdown");
        self.closed.set(true);
        let submissions = self.hub.ingress.close();
        let cancelled_submissions = submissions.len();
        let mut reports: Vec<ChildReport> = submissions
            .iter()
            .map(|submission| task_report(submission.id(), submission.name(), TaskState::Cancelled))
            .collect();
        if let Some(probe) = self.probe() {
            for submission in &submissions {
                probe.dropped(submission.id());
            }
        }
        // Each submission drops its future, then resolves its handle
        // (`Panicked` if the future's destructor panics).
        drop(submissions);
        let tasks: Vec<(BoxedTask<'a>, TaskPlace<'a, M>, Arc<Header<M>>)> = {
            let mut slots = self.table.slots.borrow_mut();
            slots
                .iter_mut()
                .filter_map(|slot| {
                    let task = slot.task.task.borrow_mut().take()?;
                    if let Some((id, name)) = slot.task.who.get() {
                        reports.push(task_report(id, name, TaskState::Cancelled));
                    }
                    slot.header.cell.set_state(TaskState::Cancelled);
                    if let (Some(probe), Some(slot)) = (self.probe(), slot.task.probe.get()) {
                        probe.cancelled(slot);
                    }
                    Some((task, Rc::clone(&slot.task), Arc::clone(&slot.header)))
                })
                .collect()
        };
        self.table.live.set(0);
        let cancelled_tasks = tasks.len();
        // Dropped one by one with no borrow held: a destructor may spawn
        // (refused now) or wake (ignored), and one that panics resolves its
        // own handle `Panicked` without stopping the others. Each other
        // future's resolver resolves its handle `Cancelled`.
        for (task, place, header) in tasks {
            if drop_task(Some(task), &place.note) == TaskState::Failed {
                header.cell.set_state(TaskState::Failed);
            }
        }
        self.hub.driver.timers().stop_keeping_wakers();
        if M::MEASURED {
            resume_hook_panic();
        }
        reports.sort_by_key(|report| report.id);
        ShutdownReport {
            cancelled_tasks,
            cancelled_submissions,
            tasks: reports,
            blocking: None,
        }
    }

    /// Shuts down under `policy`: `Drain` first refuses new spawns and runs
    /// what was accepted (tasks and waiting submissions) until none is left
    /// or `deadline` passes on the executor's clock (on a paused clock, or
    /// in real time, if sooner); then drops what is left, as `CancelPending`.
    pub(super) fn shutdown_with(
        &self,
        policy: ShutdownPolicy,
        deadline: Duration,
    ) -> ShutdownReport {
        let mut drained = Vec::new();
        if policy == ShutdownPolicy::Drain && !self.closed.get() {
            self.drain.active.set(true);
            self.hub.ingress.seal();
            *self.drain.ended.borrow_mut() = Some(Vec::new());
            let timer = crate::time::TimerHandle::new(Arc::clone(&self.hub.driver));
            // A paused clock moves only when the executor idles, which a
            // task that keeps waking itself never lets it do: there the
            // deadline is counted in real time too, and the drain looks at
            // the real clock after each tick that left work.
            let paused = timer.is_paused();
            let real_end = std::time::Instant::now().checked_add(deadline);
            self.drain.watch_real_time.set(paused);
            let mut out_of_time = pin!(dinah_core::time::TimerDriver::sleep(timer, deadline));
            self.block_on(std::future::poll_fn(|cx| {
                if self.table.live.get() == 0 && !self.hub.ingress.has_pending() {
                    return Poll::Ready(());
                }
                if paused && real_end.is_some_and(|end| std::time::Instant::now() >= end) {
                    return Poll::Ready(());
                }
                *self.drain.idle_waker.borrow_mut() = Some(cx.waker().clone());
                out_of_time.as_mut().poll(cx)
            }));
            self.drain.watch_real_time.set(false);
            self.drain.idle_waker.borrow_mut().take();
            drained = self.drain.ended.borrow_mut().take().unwrap_or_default();
            self.drain.active.set(false);
        }
        let mut report = self.shutdown();
        drained.append(&mut report.tasks);
        drained.sort_by_key(|report| report.id);
        report.tasks = drained;
        report
    }
}
