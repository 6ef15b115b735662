//! Running the core executor: [`tick`](AsyncExecutor::tick),
//! [`run`](AsyncExecutor::run) and [`run_until`](AsyncExecutor::run_until)
//! (and their observed forms), over the shared tick loop ([`raw::sched::tick`]) with
//! this executor's storage: its ready list threaded through the queue's
//! cells, its fixed slots, the wake stamps of a timed queue, and the guards
//! that keep a slot consistent when a poll, a destructor or an observer
//! unwinds.
#![forbid(unsafe_code)]

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll};

use super::{AsyncExecutor, Idle, ReadyQueue, TickReport};
use crate::id::TaskId;
use crate::raw;
use crate::raw::KEEPS_POLLED_WAKES;
use crate::raw::sched::{TaskState, Word};
use crate::task::TaskOutput;
use crate::telemetry::{Measure, PollObserver};

/// One tick's view of the executor: the executor, who observes its polls,
/// and the stamp of the entry taken last.
pub(super) struct Ticking<'t, 'a, 'o, const N: usize, O: TaskOutput, M: Measure, W: ?Sized> {
    executor: &'t mut AsyncExecutor<'a, N, O, M>,
    observer: &'o W,
    /// The stamp of the wake (or spawn) that queued the entry taken last,
    /// read while it was still queued.
    stamp: Option<u32>,
    /// The last entry this tick polls (`index + 1`; 0 once it is taken, or
    /// when the list was empty): where the executor queues its polled tasks
    /// itself, they go behind the ready list during the tick and wait for
    /// the next one.
    end: u16,
}

impl<'t, 'a, 'o, const N: usize, O: TaskOutput, M: Measure, W: PollObserver + ?Sized>
    Ticking<'t, 'a, 'o, N, O, M, W>
{
    #[inline(always)]
    pub(super) fn new(executor: &'t mut AsyncExecutor<'a, N, O, M>, observer: &'o W) -> Self {
        Self {
            executor,
            observer,
            stamp: None,
            end: 0,
        }
    }
}

impl<const N: usize, O: TaskOutput, M: Measure, W: PollObserver + ?Sized> raw::sched::Tick
    for Ticking<'_, '_, '_, N, O, M, W>
{
    #[inline(always)]
    fn take_woken(&mut self) {
        let queue = self.executor.queue;
        // Where tasks queue their own wakes, the stack is often empty: a
        // load first spares the swap, a locked operation. Firmware, where
        // every wake pushes, swaps at once.
        if (!KEEPS_POLLED_WAKES || queue.stack().has_woken())
            && let Some((first, last)) = queue.take_woken()
        {
            self.executor.append_ready(first, last);
        }
        self.end = self.executor.ready_tail;
    }

    #[inline(always)]
    fn next_ready(&mut self) -> Option<u32> {
        if !KEEPS_POLLED_WAKES {
            // Nothing joins the ready list during a tick.
            return self.executor.pop_ready().map(|index| index as u32);
        }
        if self.end == 0 {
            return None;
        }
        let index = self.executor.pop_ready()?;
        if index + 1 == usize::from(self.end) {
            self.end = 0;
        }
        Some(index as u32)
    }

    #[inline(always)]
    fn other_entry(&mut self, entry: u32) -> bool {
        // Entries are slots (`< N`) or the main future's (`N`): told apart
        // by `<`, so that the slot's bounds need no second look.
        if (entry as usize) < N {
            return false;
        }
        // The main future's entry: cleared here, where it was taken off,
        // and only polled while `run_until` drives it.
        let queue = self.executor.queue;
        queue.task_cell(N).take_queued();
        self.executor.main_ready = queue.main_is_live();
        true
    }

    #[inline(always)]
    fn take(&mut self, entry: u32) -> Word {
        // The stamp is read while the slot is still queued: a wake after
        // the take queues it anew with a stamp of its own.
        let queue = self.executor.queue;
        if M::STAMPS {
            self.stamp = queue.stamp(entry as usize);
        }
        let cell = queue.task_cell(entry as usize);
        if KEEPS_POLLED_WAKES {
            // One compare-and-swap marks the task `POLLING` (and starts a
            // first poll).
            cell.take_polling()
        } else {
            // `take_queued` then a separate start on a first poll (rare):
            // on targets without compare-and-swap, a fetch-and is cheaper
            // than a loop on every poll.
            cell.take_queued()
        }
    }

    #[inline(always)]
    fn release(&mut self, entry: u32) {
        // A finished task's last waker is gone (or its poll or drop
        // unwound): let go of its storage (unless it asks to run another
        // task) and free the slot, unless a failure waits.
        self.executor.recycle(entry as usize);
    }

    #[inline(always)]
    fn cancel(&mut self, entry: u32) {
        let index = entry as usize;
        let queue = self.executor.queue;
        if let Some(task) = self.executor.task_slot(index).as_mut() {
            // A destructor that panics ends the task `Failed`.
            let unwinding = EndOnUnwind {
                queue,
                index,
                observer: &(),
            };
            task.as_mut().drop_future();
            core::mem::forget(unwinding);
        }
        self.executor.end(index, TaskState::Cancelled);
    }

    #[inline(always)]
    fn poll(&mut self, entry: u32, word: Word, first: bool, self_woken: bool) -> Option<bool> {
        let (index, queue, observer) = (entry as usize, self.executor.queue, self.observer);
        if first && !KEEPS_POLLED_WAKES {
            queue.task_cell(index).set_state(TaskState::Running);
        }
        if let Some(local) = self.executor.counters.get_mut(index) {
            M::polled(local, !first, self_woken);
        }
        // Worked out only for an observer that looks.
        let id = if observer.observes() {
            queue.id_of(index, word)
        } else {
            TaskId::MIN
        };
        // From here to the poll's end, a panic (in the poll, or in the
        // observer or clock around it) ends this task `Failed` on its way to
        // the caller.
        let unwinding = EndOnUnwind {
            queue,
            index,
            observer,
        };
        if M::STAMPS
            && let Some(stamp) = self.stamp
        {
            observer.poll_waited(id, first, M::since(stamp));
        }
        observer.poll_started(id);
        let poll = self.executor.poll_slot(index);
        observer.poll_ended(id);
        core::mem::forget(unwinding);
        match poll {
            Poll::Pending => {
                if KEEPS_POLLED_WAKES && queue.task_cell(index).end_poll() {
                    self.executor.hold(index);
                }
                None
            }
            Poll::Ready(Ok(())) => {
                self.executor.end(index, TaskState::Completed);
                Some(true)
            }
            Poll::Ready(Err(error)) => {
                *self.executor.failure_slot(index) = Some(error);
                self.executor.end(index, TaskState::Failed);
                Some(false)
            }
        }
    }

    #[inline(always)]
    fn stale_wakes(&mut self) -> u32 {
        let stale = self.executor.queue.stale_wakes();
        let since = stale.wrapping_sub(self.executor.stale_seen);
        self.executor.stale_seen = stale;
        since
    }

    #[inline(always)]
    fn has_work(&self) -> bool {
        self.executor.has_work()
    }
}

/// Ends a slot as `Failed` if its poll, or the drop of its future, unwinds
/// (dropped only then: the normal path forgets it), telling the observer of
/// a poll that it ended.
pub(super) struct EndOnUnwind<'o, const N: usize, M: Measure, W: PollObserver + ?Sized> {
    pub(super) queue: &'static ReadyQueue<N, M>,
    pub(super) index: usize,
    /// Who watches the poll.
    pub(super) observer: &'o W,
}

impl<const N: usize, M: Measure, W: PollObserver + ?Sized> Drop for EndOnUnwind<'_, N, M, W> {
    fn drop(&mut self) {
        let (queue, index) = (self.queue, self.index);
        // The task's poll itself unwound (not the observer around it): the
        // observer is to hear that it ended.
        if queue.stack().polling() == index as u32 + 1 {
            queue.stack().set_polling(0);
            self.observer
                .poll_ended(queue.id_of(index, queue.word(index)));
        }
        let cell = queue.task_cell(index);
        let woken_in_poll = if KEEPS_POLLED_WAKES {
            cell.end_polled(TaskState::Failed)
        } else {
            cell.set_state(TaskState::Failed);
            false
        };
        if woken_in_poll {
            // Woken during the poll that unwound: queued on no list, so it
            // goes on the stack for its release.
            queue.push(index);
        } else {
            queue.requeue(index);
        }
    }
}

/// Ends `run_until`'s hold on the main cell when the call returns or
/// unwinds: nothing is marked as polling, an observer hears that a poll
/// that unwound ended, and the main cell is vacant (later wakes of its
/// wakers are stale).
pub(super) struct MainGuard<'o, const N: usize, M: Measure, W: PollObserver + ?Sized> {
    pub(super) queue: &'static ReadyQueue<N, M>,
    pub(super) observer: &'o W,
    pub(super) id: TaskId,
    pub(super) polling: bool,
}

impl<const N: usize, M: Measure, W: PollObserver + ?Sized> Drop for MainGuard<'_, N, M, W> {
    fn drop(&mut self) {
        self.queue.stack().set_polling(0);
        if self.polling {
            self.observer.poll_ended(self.id);
        }
        self.queue.set_main_live(false);
    }
}

impl<const N: usize, O: TaskOutput, M: Measure> AsyncExecutor<'_, N, O, M> {
    /// Polls at most `budget` ready tasks, oldest wake first, and says what
    /// happened. Tasks woken during this tick wait for the next one.
    /// Cancellations and the recycling of finished slots do not count
    /// against the budget.
    ///
    /// On targets with an operating system, a wake that lands while its own
    /// task is being polled counts as made when that poll ends: the task
    /// comes after every task woken before the poll ended, its own poll's
    /// wakes of others included. The executor queues such a task itself,
    /// with no push onto the wake stack, so a task that wakes itself costs
    /// two locked operations per wake and poll instead of four. On firmware
    /// (no operating system) every wake is queued the moment it lands, which
    /// takes less flash.
    pub fn tick(&mut self, budget: usize) -> TickReport {
        self.tick_observed(budget, &())
    }

    /// [`tick`](Self::tick), telling `observer` when each poll begins and
    /// ends (a [`PollWatch`](crate::telemetry::PollWatch) for a stall
    /// watchdog). Cancellations and recycling are not polls and are not
    /// reported.
    #[inline(always)]
    pub fn tick_observed<W: PollObserver + ?Sized>(
        &mut self,
        budget: usize,
        observer: &W,
    ) -> TickReport {
        raw::sched::tick(&mut Ticking::new(self, observer), budget)
    }

    /// Runs forever: ticks with `budget`, and whenever nothing is ready,
    /// lets `idle` sleep until a wake (see [`Idle`]).
    ///
    /// # No lost wakeups
    ///
    /// `idle` sleeps only after it has checked that no task is ready, and
    /// each kind of [`Idle`] makes that check and the sleep safe against a
    /// wake landing between them. A closure is called inside a critical
    /// section, after the check made inside it: on a single-core
    /// microcontroller that section masks interrupts, so no interrupt
    /// handler can wake a task between the check and the sleep; `WFI`
    /// (`cortex_m::asm::wfi`) still returns when an interrupt becomes
    /// pending, the section ends, the handler runs and wakes its task, and
    /// the next tick polls it. A wake from another core or thread is not
    /// held off by the section: for those, and on a host (where a critical
    /// section is one lock for the whole process, which a sleeping thread
    /// must not hold), install a pender ([`ReadyQueue::with_pender`]) and
    /// sleep with [`Pended`](super::Pended), which checks and sleeps holding no lock and
    /// relies on the pender to end the sleep.
    pub fn run(&mut self, budget: usize, idle: impl Idle) -> ! {
        self.run_observed(budget, idle, &())
    }

    /// [`run`](Self::run), telling `observer` about each poll (see
    /// [`tick_observed`](Self::tick_observed)).
    pub fn run_observed<W: PollObserver + ?Sized>(
        &mut self,
        budget: usize,
        mut idle: impl Idle,
        observer: &W,
    ) -> ! {
        loop {
            self.tick_observed(budget, observer);
            self.idle_if_nothing_ready(&mut idle);
        }
    }

    /// Drives `future` to completion on this thread, ticking the spawned
    /// tasks while it waits, and returns its output. `future` is polled at
    /// once, then whenever its waker fires, like a task; `idle` sleeps as in
    /// [`run`](Self::run) when nothing at all is ready.
    ///
    /// Each call starts afresh: whatever an earlier call's future left
    /// behind (a wake that landed during its last poll, a panic) is not
    /// carried into this one. Tasks keep running across calls.
    pub fn run_until<F: Future>(&mut self, future: F, budget: usize, idle: impl Idle) -> F::Output {
        self.run_until_observed(future, budget, idle, &())
    }

    /// [`run_until`](Self::run_until), telling `observer` about each poll of
    /// a task (see [`tick_observed`](Self::tick_observed)) and of `future`
    /// itself, which it names as slot `N`'s task: the id whose
    /// [`slot`](TaskId::slot) is `N`.
    pub fn run_until_observed<F: Future, W: PollObserver + ?Sized>(
        &mut self,
        future: F,
        budget: usize,
        mut idle: impl Idle,
        observer: &W,
    ) -> F::Output {
        let queue = self.queue;
        let mut future = pin!(future);
        queue.set_main_live(true);
        let mut main = MainGuard {
            queue,
            observer,
            id: queue.id_of(N, queue.word(N)),
            polling: false,
        };
        // Polled at once. The main cell's `QUEUED` is cleared only where
        // its entry is taken off the stack (in `tick_observed`): an entry
        // left by an earlier call still comes, and polls the future once
        // more, which a future allows.
        self.main_ready = true;
        loop {
            if self.main_ready {
                self.main_ready = false;
                queue.stack().set_polling(N as u32 + 1);
                observer.poll_started(main.id);
                main.polling = true;
                let poll = queue.with_waker(N, |waker| {
                    future.as_mut().poll(&mut Context::from_waker(waker))
                });
                main.polling = false;
                queue.stack().set_polling(0);
                observer.poll_ended(main.id);
                if let Poll::Ready(output) = poll {
                    return output;
                }
            }
            self.tick_observed(budget, observer);
            self.idle_if_nothing_ready(&mut idle);
        }
    }

    fn idle_if_nothing_ready(&self, idle: &mut impl Idle) {
        idle.idle(|| self.has_work());
    }

    pub(super) fn has_work(&self) -> bool {
        self.ready_head != 0
            || (self.main_ready && self.queue.main_is_live())
            || self.queue.stack().has_woken()
    }
}
