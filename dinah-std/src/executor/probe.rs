//! The executor's telemetry: the executor-wide [`ExecProbe`], which keeps
//! one [`TaskProbe`] per slot, fills the core's figure records and tells
//! the configured poll observer about each poll. Its diagnosis is in
//! `diagnosis.rs`.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dinah_core::TaskId;
use dinah_core::telemetry::{ExecutorFigures, PollStamp, TaskFigures, TaskPhase, TraceEventKind};

use super::histograms::PollHistograms;
use super::task_probe::{MICROS_PER_SECOND, PackedWait, TaskProbe, Waited, add, add_single_writer};
use crate::io::IoWait;
use crate::primitives::lock_std;
use crate::runtime::context;
use crate::telemetry::TelemetryConfig;
use crate::telemetry::cpu::CpuWatch;
use crate::telemetry::hook::{Probe, Stamp, micros};

/// A poll's start, from `poll_started` to `poll_ended`: two words.
#[derive(Clone, Copy)]
pub(crate) struct PollStart {
    at: u64,
    waited: PackedWait,
}

/// The executor-wide telemetry.
pub(crate) struct ExecProbe {
    pub(super) probe: Probe,
    /// The poll running now (a task's, or `block_on`'s future's): its task
    /// and start, published together.
    pub(super) polling: PollStamp,
    /// The time the executor's thread last read, while it polls tasks one
    /// after another: a poll starts when the one before it ended, so each
    /// poll reads the clock once, at its end. Cleared when the thread does
    /// something else between polls (it waits, looks at its reactor, or
    /// polls `block_on`'s own future). Written by the executor's thread only.
    pub(super) last: Stamp,
    /// Every slot's probe, for the monitor.
    pub(super) slots: Mutex<Vec<Arc<TaskProbe>>>,
    /// The histograms, recorded once per poll without a lock (the
    /// executor's thread is their one writer; see `PollHistograms`).
    pub(super) hist: PollHistograms,
    pub(super) spawned: AtomicU64,
    pub(super) rejected: AtomicU64,
    pub(super) rejected_full: AtomicU64,
    pub(super) last_full: Stamp,
    pub(super) polls: AtomicU64,
    pub(super) long_polls: AtomicU64,
    /// As `TaskProbe`'s: wakes from other threads, other wakes from the
    /// executor's thread (one writer), self-wakes (one writer).
    pub(super) wakes: AtomicU64,
    pub(super) local_wakes: AtomicU64,
    pub(super) self_wakes: AtomicU64,
    pub(super) stale_wakes: AtomicU64,
    /// The executor's thread's account with the scheduler (made on that
    /// thread; only with the host's clock), so that a thread starved of
    /// CPU is not taken for a blocked or slow executor.
    pub(super) cpu: Option<CpuWatch>,
}

impl ExecProbe {
    /// Made on the executor's thread.
    pub(crate) fn new(config: TelemetryConfig) -> Self {
        let probe = Probe::new(config);
        Self {
            cpu: CpuWatch::for_probe(&probe),
            probe,
            polling: PollStamp::new(),
            last: Stamp::new(),
            slots: Mutex::new(Vec::new()),
            hist: PollHistograms::new(),
            spawned: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            rejected_full: AtomicU64::new(0),
            last_full: Stamp::new(),
            polls: AtomicU64::new(0),
            long_polls: AtomicU64::new(0),
            wakes: AtomicU64::new(0),
            local_wakes: AtomicU64::new(0),
            self_wakes: AtomicU64::new(0),
            stale_wakes: AtomicU64::new(0),
        }
    }

    /// A probe for a new slot.
    pub(crate) fn slot(&self) -> Arc<TaskProbe> {
        let slot = Arc::new(TaskProbe::new());
        lock_std(&self.slots).push(Arc::clone(&slot));
        slot
    }

    /// Forgets a slot whose header was replaced.
    pub(crate) fn forget(&self, slot: &Arc<TaskProbe>) {
        lock_std(&self.slots).retain(|s| !Arc::ptr_eq(s, slot));
    }

    /// A submission was accepted (stamped now); returns the stamp.
    #[inline(never)]
    pub(crate) fn submitted(&self, task: TaskId, name: Option<&'static str>) -> u64 {
        let now = self.probe.now();
        add(&self.spawned, 1);
        if let Some(name) = name {
            self.probe.name_task(task, name);
        }
        self.probe.emit(task, TraceEventKind::Submitted, now);
        now
    }

    /// A spawn or submission was refused.
    #[inline(never)]
    pub(crate) fn rejected(&self, task: TaskId, full: bool) {
        let now = self.probe.now();
        add(&self.rejected, 1);
        if full {
            add(&self.rejected_full, 1);
            self.last_full.set(now);
        }
        self.probe.emit(task, TraceEventKind::Rejected, now);
    }

    /// Task `task`, submitted at `at`, takes `slot` and is queued.
    #[inline(never)]
    pub(crate) fn installed(
        &self,
        slot: &TaskProbe,
        task: TaskId,
        at: u64,
        name: Option<&'static str>,
    ) {
        *lock_std(&slot.name) = name;
        for counter in [
            &slot.polls,
            &slot.wakes,
            &slot.local_wakes,
            &slot.self_wakes,
            &slot.stale_wakes,
            &slot.busy,
            &slot.longest,
            &slot.longest_wait,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        slot.waiting.clear();
        slot.first_poll_delay.clear();
        slot.spawned.set(at);
        slot.ready.reset(at);
        slot.task.store(task.get(), Ordering::Relaxed);
        slot.live.store(true, Ordering::Relaxed);
    }

    /// Whether a hook runs the user's code (see
    /// [`Probe::runs_user_code`](crate::telemetry::Probe)).
    pub(crate) fn runs_user_code(&self) -> bool {
        self.probe.runs_user_code()
    }

    /// A wake queued the slot's task (any thread). `here`: the wake comes
    /// from the executor's own thread while it runs (so its counts and
    /// stamp need no read-modify-write). `during_poll`: it comes from a poll
    /// there. Then no clock is read: a task that woke itself is ready when
    /// its poll ends (stamped there), and another task is stamped with the
    /// running poll's start (so its wait may count up to the rest of that
    /// poll, which it could not have run before anyway).
    #[inline]
    pub(crate) fn woken(&self, slot: &TaskProbe, here: bool, self_wake: bool, during_poll: bool) {
        if self_wake {
            // From the task's own poll (so on the executor's thread, and
            // the task is not waiting: its poll's start cleared that).
            // Stamped and traced when its poll ends (the task's word says it
            // woke itself), when it is ready to run again.
            add_single_writer(&slot.self_wakes, 1);
            add_single_writer(&self.self_wakes, 1);
            return;
        }
        slot.waiting.clear();
        if here {
            add_single_writer(&slot.local_wakes, 1);
            add_single_writer(&self.local_wakes, 1);
        } else {
            add(&slot.wakes, 1);
            add(&self.wakes, 1);
        }
        let now = match (during_poll, self.last.get()) {
            (true, Some(last)) => last,
            _ => self.probe.now(),
        };
        if here {
            slot.ready.set_here(now);
        } else {
            slot.ready.set_elsewhere(now);
        }
        if self.probe.listens()
            && let Some(task) = slot.id()
        {
            self.probe.emit(task, TraceEventKind::Woken, now);
        }
    }

    /// A wake found the slot's task over (any thread).
    #[inline(never)]
    pub(crate) fn stale(&self, slot: &TaskProbe) {
        add(&self.stale_wakes, 1);
        add(&slot.stale_wakes, 1);
        if let Some(task) = slot.id() {
            self.probe
                .emit(task, TraceEventKind::StaleWake, self.probe.now());
        }
    }

    /// A poll of the slot's task begins; returns its start.
    #[inline(never)]
    pub(crate) fn poll_started(&self, slot: &TaskProbe, first: bool) -> PollStart {
        // The end of the poll before, when this one follows it directly.
        let now = self.last.get().unwrap_or_else(|| {
            let now = self.probe.now();
            self.last.set(now);
            now
        });
        let ready = slot.ready.take();
        slot.waiting.clear();
        slot.timer_due.clear();
        // What earlier polls on this thread noted they wait on: forgotten.
        context::take_notes();
        let task = slot.id();
        let waited = if first {
            Waited::FirstPoll(now.saturating_sub(slot.spawned.get().unwrap_or(now)))
        } else {
            ready.map_or(Waited::Unknown, |ready| {
                Waited::Woken(now.saturating_sub(ready))
            })
        };
        match waited {
            Waited::FirstPoll(nanos) => slot.first_poll_delay.set(nanos),
            Waited::Woken(nanos) => {
                if nanos > slot.longest_wait.load(Ordering::Relaxed) {
                    slot.longest_wait.store(nanos, Ordering::Relaxed);
                }
            }
            Waited::Unknown => {}
        }
        if let Some(task) = task {
            self.polling.start(task, now);
        }
        if self.probe.listens()
            && let Some(task) = task
        {
            if first {
                self.probe.emit(task, TraceEventKind::Started, now);
            }
            self.probe.emit(task, TraceEventKind::PollStarted, now);
            let waited = match waited {
                Waited::FirstPoll(nanos) => Some((true, nanos)),
                Waited::Woken(nanos) => Some((false, nanos)),
                Waited::Unknown => None,
            };
            self.probe.observe_start(task, waited);
        }
        PollStart {
            at: now,
            waited: waited.pack(),
        }
    }

    /// The poll that began at `start` returned. `queued`: the task was
    /// woken meanwhile; `woke_itself`: by itself (the task's word says
    /// both). `ended`: it finished, and how.
    #[inline(never)]
    pub(crate) fn poll_ended(
        &self,
        slot: &TaskProbe,
        start: PollStart,
        (queued, woke_itself): (bool, bool),
        ended: Option<TraceEventKind>,
    ) {
        if self.polling.is_polling() {
            self.polling.end();
        }
        let now = self.probe.now();
        self.last.set(now);
        let took = now.saturating_sub(start.at);
        // Written by the executor's thread only (polls run there).
        add_single_writer(&self.polls, 1);
        add_single_writer(&slot.polls, 1);
        add_single_writer(&slot.busy, took);
        if took > slot.longest.load(Ordering::Relaxed) {
            slot.longest.store(took, Ordering::Relaxed);
        }
        if self.probe.is_long(took) {
            add_single_writer(&self.long_polls, 1);
        }
        // No lock: the executor's thread is the histograms' one writer.
        self.hist.record(start.waited, took);
        // The task's id names its events; with nobody to hear them, it is
        // not even read.
        let task = if self.probe.listens() {
            slot.id()
        } else {
            None
        };
        if woke_itself && ended.is_none() {
            slot.ready.set_here(now);
            if let Some(task) = task {
                self.probe.emit(task, TraceEventKind::SelfWoken, now);
            }
        }
        if let Some(task) = task {
            self.probe.observe_end(task);
            self.probe.emit(task, TraceEventKind::PollEnded, now);
        }
        match ended {
            Some(kind) => {
                if let Some(task) = task {
                    self.probe.emit(task, kind, now);
                }
                self.clear(slot);
            }
            None if queued => slot.ready.set_here(now),
            None => {
                slot.waiting.set(now);
                let notes = context::take_notes();
                match notes.line {
                    Some(wait) => {
                        let mut line = lock_std(&slot.line);
                        // A receive waits anew from each poll (something
                        // woke it); a send or an acquire from joining.
                        if wait.joined || wait.receive || line.is_none() {
                            *line = Some((wait.name, now, wait.receive));
                        }
                        slot.in_line.store(true, Ordering::Relaxed);
                    }
                    None => Self::leave_line(slot),
                }
                let io_wait = notes.io_wait();
                if io_wait.is_some()
                    && let Some(task) = task
                {
                    self.probe.emit(task, TraceEventKind::IoWait, now);
                }
                Self::note_io_wait(slot, io_wait);
                if let Some(due_in) = notes.armed {
                    slot.timer_due
                        .set(now.saturating_add(due_in.saturating_mul(1_000)));
                    if let Some(task) = task {
                        self.probe.emit(task, TraceEventKind::TimerWait, now);
                    }
                }
            }
        }
    }

    /// The executor's thread turns to something other than its next poll
    /// (it waits, or looks at its reactor): the next poll reads the clock
    /// at its start.
    pub(crate) fn unchain(&self) {
        self.last.clear();
    }

    /// A poll of `block_on`'s own future, named `task`, begins: stamped, so
    /// that a poll holding the thread is seen, but not counted as a task's.
    pub(crate) fn main_poll_started(&self, task: TaskId) {
        self.last.clear();
        let now = self.probe.now();
        self.polling.start(task, now);
        self.probe.observe_start(task, None);
    }

    /// That poll returned (or unwound).
    pub(crate) fn main_poll_ended(&self) {
        if let Some((task, _)) = self.polling.read() {
            self.polling.end();
            self.probe.observe_end(task);
        }
    }

    /// The slot's task was dropped unfinished (cancelled, or shut down).
    #[inline(never)]
    pub(crate) fn cancelled(&self, slot: &TaskProbe) {
        if let Some(task) = slot.id() {
            self.probe.emit(
                task,
                TraceEventKind::CancellationAcknowledged,
                self.probe.now(),
            );
        }
        self.clear(slot);
    }

    /// A submission that never reached a slot was dropped at shutdown.
    #[inline(never)]
    pub(crate) fn dropped(&self, task: TaskId) {
        self.probe.emit(
            task,
            TraceEventKind::CancellationAcknowledged,
            self.probe.now(),
        );
    }

    /// Forgets the line the slot's task waited in, if any. The flag has
    /// one writer (the executor's thread): a load and a store, no
    /// read-modify-write.
    fn leave_line(slot: &TaskProbe) {
        if slot.in_line.load(Ordering::Relaxed) {
            slot.in_line.store(false, Ordering::Relaxed);
            *lock_std(&slot.line) = None;
        }
    }

    /// Keeps the socket the slot's task now waits on (or none), locking
    /// only when there is one to keep or one to forget: a task that waits
    /// on no socket costs a load. The flag has one writer, as above.
    fn note_io_wait(slot: &TaskProbe, io_wait: Option<IoWait>) {
        let waits = io_wait.is_some();
        if waits || slot.on_io.load(Ordering::Relaxed) {
            *lock_std(&slot.io_wait) = io_wait;
            slot.on_io.store(waits, Ordering::Relaxed);
        }
    }

    fn clear(&self, slot: &TaskProbe) {
        slot.ready.clear();
        slot.waiting.clear();
        slot.timer_due.clear();
        Self::leave_line(slot);
        Self::note_io_wait(slot, None);
        slot.live.store(false, Ordering::Relaxed);
    }

    pub(super) fn figures(&self) -> ExecutorFigures {
        let mut figures = ExecutorFigures::new(MICROS_PER_SECOND);
        self.hist.read_into(&mut figures);
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        figures.spawned = load(&self.spawned);
        figures.rejected = load(&self.rejected);
        figures.polls = load(&self.polls);
        figures.long_polls = load(&self.long_polls);
        figures.self_wakes = load(&self.self_wakes);
        figures.wakes = load(&self.wakes)
            .wrapping_add(load(&self.local_wakes))
            .wrapping_add(figures.self_wakes);
        figures.stale_wakes = load(&self.stale_wakes);
        figures
    }

    pub(super) fn tasks(&self) -> Vec<TaskFigures> {
        let now = self.probe.now();
        let polling = self.polling.read();
        let since = |at: u64| micros(now.saturating_sub(at));
        let slots = lock_std(&self.slots);
        let mut tasks: Vec<TaskFigures> = slots
            .iter()
            .filter_map(|slot| {
                let task = slot.live()?;
                let phase = if let Some((_, start)) = polling.filter(|&(busy, _)| busy == task) {
                    TaskPhase::Polling {
                        for_ticks: since(start),
                    }
                } else if let Some(ready) = slot.ready.get() {
                    TaskPhase::Ready {
                        for_ticks: since(ready),
                    }
                } else {
                    TaskPhase::Waiting {
                        for_ticks: slot.waiting.get().map_or(0, since),
                    }
                };
                let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
                let mut figures = TaskFigures::new(task, MICROS_PER_SECOND);
                figures.name = slot.name();
                figures.polls = load(&slot.polls);
                figures.self_wakes = load(&slot.self_wakes);
                figures.wakes = load(&slot.wakes)
                    .wrapping_add(load(&slot.local_wakes))
                    .wrapping_add(figures.self_wakes);
                figures.stale_wakes = load(&slot.stale_wakes);
                figures.busy = micros(load(&slot.busy));
                figures.longest_poll = micros(load(&slot.longest));
                figures.first_poll_delay = slot.first_poll_delay.get().map(micros);
                figures.longest_wake_to_poll = micros(load(&slot.longest_wait));
                figures.phase = Some(phase);
                Some(figures)
            })
            .collect();
        tasks.sort_by_key(|t| t.task);
        tasks
    }
}
