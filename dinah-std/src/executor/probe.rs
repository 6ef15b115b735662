//! The executor's telemetry: one [`TaskProbe`] per slot (atomics any thread
//! may read) and the executor-wide [`ExecProbe`], which fill the core's
//! figure records and tell the configured poll observer about each poll.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dinah_core::TaskId;
use dinah_core::telemetry::{ExecutorFigures, PollStamp, TaskFigures, TaskPhase, TraceEventKind};

use super::histograms::PollHistograms;
use crate::io::IoWait;
use crate::primitives::lock_std;
use crate::runtime::context;
use crate::telemetry::cpu::CpuWatch;
use crate::telemetry::hook::{Probe, Stamp, micros, stamped};
use crate::telemetry::{TelemetryConfig, Thresholds, Verdict};

/// The figures' ticks: microseconds.
const MICROS_PER_SECOND: u64 = 1_000_000;

/// One slot's figures. Reset when a new task takes the slot.
///
/// Laid out in declaration order from a cache line's start, with what
/// every poll and wake touches first, together: with hundreds of tasks, a
/// poll reaches two of the probe's cache lines instead of all of them.
#[repr(C, align(64))]
pub(crate) struct TaskProbe {
    /// The slot's latest task's id (kept after it ends, for stale wakes),
    /// or 0.
    task: AtomicU64,
    /// Since when it has been ready (spawned or woken), if it is.
    ready: ReadyStamp,
    /// Since when it has been pending after a poll with no wake, if it is.
    waiting: Stamp,
    /// While it waits: when the timer its last poll armed is due, if that
    /// poll armed one (then a wait up to then is no lost wake).
    timer_due: Stamp,
    polls: AtomicU64,
    busy: AtomicU64,
    longest: AtomicU64,
    longest_wait: AtomicU64,
    /// Wakes from the executor's own thread while it runs, self-wakes
    /// apart: one writer, so a load and a store, no read-modify-write.
    /// Readers add `wakes`, this and `self_wakes`.
    local_wakes: AtomicU64,
    /// Only ever counted on the executor's thread (a self-wake is made
    /// by the task's own poll): one writer. Not in `local_wakes`, so a
    /// self-wake moves one counter, not two.
    self_wakes: AtomicU64,
    /// `line` is set (read without the lock).
    in_line: AtomicBool,
    /// `io_wait` is set (read without the lock).
    on_io: AtomicBool,
    /// That task has not ended.
    live: AtomicBool,
    /// Wakes from other threads (any writer).
    wakes: AtomicU64,
    stale_wakes: AtomicU64,
    /// When it was submitted, for its first-poll delay.
    spawned: Stamp,
    /// How long its first poll waited after its submission.
    first_poll_delay: Stamp,
    /// That task's name, if it was given one.
    name: Mutex<Option<&'static str>>,
    /// While it waits in the line of a channel or semaphore: the name of
    /// what it waits on (if any) and since when (a known wake path: the
    /// other side).
    line: Mutex<Option<(Option<&'static str>, u64)>>,
    /// While it waits on a socket: which, and which way.
    io_wait: Mutex<Option<IoWait>>,
}

impl TaskProbe {
    fn new() -> Self {
        Self {
            task: AtomicU64::new(0),
            live: AtomicBool::new(false),
            name: Mutex::new(None),
            ready: ReadyStamp::new(),
            waiting: Stamp::new(),
            timer_due: Stamp::new(),
            line: Mutex::new(None),
            in_line: AtomicBool::new(false),
            on_io: AtomicBool::new(false),
            io_wait: Mutex::new(None),
            spawned: Stamp::new(),
            first_poll_delay: Stamp::new(),
            polls: AtomicU64::new(0),
            wakes: AtomicU64::new(0),
            local_wakes: AtomicU64::new(0),
            self_wakes: AtomicU64::new(0),
            stale_wakes: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            longest: AtomicU64::new(0),
            longest_wait: AtomicU64::new(0),
        }
    }

    /// The slot's latest task, live or not.
    fn id(&self) -> Option<TaskId> {
        TaskId::from_raw(self.task.load(Ordering::Relaxed)).ok()
    }

    /// The slot's task's name.
    fn name(&self) -> Option<&'static str> {
        *lock_std(&self.name)
    }

    /// The slot's task, if it has not ended.
    fn live(&self) -> Option<TaskId> {
        if self.live.load(Ordering::Relaxed) {
            self.id()
        } else {
            None
        }
    }
}

/// Since when a task has been ready: stamped by the executor's thread (its
/// spawns, its polls' wakes, a poll's end) in one stamp that only it writes,
/// with plain stores; and by wakes from other threads in another, with a
/// compare-and-swap. The earlier of the two counts. So a task that the
/// executor's own thread makes ready costs no locked operation.
///
/// Each is a time stored as a [`Stamp`] stores it, 0 being "not ready".
struct ReadyStamp {
    here: AtomicU64,
    elsewhere: AtomicU64,
}

impl ReadyStamp {
    const fn new() -> Self {
        Self {
            here: AtomicU64::new(0),
            elsewhere: AtomicU64::new(0),
        }
    }

    /// Ready since `at` (the executor's thread), unless already ready.
    fn set_here(&self, at: u64) {
        if self.here.load(Ordering::Relaxed) == 0 {
            self.here.store(stamped(at), Ordering::Relaxed);
        }
    }

    /// Ready since `at` (any thread), unless already ready.
    fn set_elsewhere(&self, at: u64) {
        if self.elsewhere.load(Ordering::Relaxed) == 0 {
            let _ = self.elsewhere.compare_exchange(
                0,
                stamped(at),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// Since when, if ready. Any thread.
    fn get(&self) -> Option<u64> {
        earlier(
            self.here.load(Ordering::Relaxed),
            self.elsewhere.load(Ordering::Relaxed),
        )
    }

    /// Takes the stamp, leaving it unset: the executor's thread. A wake
    /// from elsewhere that lands after this look stays for the next take.
    fn take(&self) -> Option<u64> {
        let here = self.here.load(Ordering::Relaxed);
        self.here.store(0, Ordering::Relaxed);
        let mut elsewhere = self.elsewhere.load(Ordering::Relaxed);
        if elsewhere != 0 {
            elsewhere = self.elsewhere.swap(0, Ordering::Relaxed);
        }
        earlier(here, elsewhere)
    }

    /// Ready since `at` and nothing earlier: a new task (the executor's
    /// thread).
    fn reset(&self, at: u64) {
        self.here.store(stamped(at), Ordering::Relaxed);
        self.elsewhere.store(0, Ordering::Relaxed);
    }

    /// Not ready: the task ended (the executor's thread).
    fn clear(&self) {
        self.here.store(0, Ordering::Relaxed);
        self.elsewhere.store(0, Ordering::Relaxed);
    }
}

/// The earlier of two stored stamps (`!t`, 0 for none): the complement of
/// 0 is `u64::MAX`, so the smaller complement is the one set.
fn earlier(a: u64, b: u64) -> Option<u64> {
    let earlier = (!a).min(!b);
    (earlier != u64::MAX).then_some(earlier)
}

fn add(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// [`add`] for a counter that only the executor's thread writes: a load
/// and a store, no read-modify-write (readers on other threads still see
/// whole values).
#[inline(always)]
fn add_single_writer(counter: &AtomicU64, by: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

/// What a poll waited for before it began.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Waited {
    /// Its task's first poll, this long after the submission.
    FirstPoll(u64),
    /// This long after the wake that made it ready.
    Woken(u64),
    /// No stamp (a wake raced the previous poll's end).
    Unknown,
}

impl Waited {
    /// The longest wait kept: 2^62 - 1 ns (146 years); longer ones are
    /// kept as this.
    const MOST: u64 = (1 << 62) - 1;
    /// Bit 63: a first poll's delay.
    const FIRST: u64 = 1 << 63;
    /// Bit 62 alone: no stamp.
    const UNKNOWN: u64 = 1 << 62;

    /// One word for it, so that a [`PollStart`] is two words: returned
    /// in registers, not through memory the caller then reads back whole
    /// (a stall on every poll when it was three).
    pub(super) fn pack(self) -> PackedWait {
        PackedWait(match self {
            Self::FirstPoll(nanos) => Self::FIRST | nanos.min(Self::MOST),
            Self::Woken(nanos) => nanos.min(Self::MOST),
            Self::Unknown => Self::UNKNOWN,
        })
    }
}

/// A [`Waited`] in one word: a wake's wait with both top bits clear, a
/// first poll's with bit 63 set, none as bit 62 alone. Read back by
/// testing the top bits, with no enum in between.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct PackedWait(u64);

impl PackedWait {
    /// The wait after a wake, if that is what it is.
    #[inline]
    pub(super) fn woken(self) -> Option<u64> {
        (self.0 & (Waited::FIRST | Waited::UNKNOWN) == 0).then_some(self.0)
    }

    /// The first poll's delay, if that is what it is.
    #[inline]
    pub(super) fn first_poll(self) -> Option<u64> {
        (self.0 & Waited::FIRST != 0).then_some(self.0 & Waited::MOST)
    }

    /// The [`Waited`] it holds.
    #[cfg(all(test, not(loom)))]
    fn unpack(self) -> Waited {
        match (self.woken(), self.first_poll()) {
            (Some(nanos), _) => Waited::Woken(nanos),
            (_, Some(nanos)) => Waited::FirstPoll(nanos),
            _ => Waited::Unknown,
        }
    }
}

/// A poll's start, from `poll_started` to `poll_ended`: two words.
#[derive(Clone, Copy)]
pub(crate) struct PollStart {
    at: u64,
    waited: PackedWait,
}

/// The executor-wide telemetry.
pub(crate) struct ExecProbe {
    probe: Probe,
    /// The poll running now (a task's, or `block_on`'s future's): its task
    /// and start, published together.
    polling: PollStamp,
    /// The time the executor's thread last read, while it polls tasks one
    /// after another: a poll starts when the one before it ended, so each
    /// poll reads the clock once, at its end. Cleared when the thread does
    /// something else between polls (it waits, looks at its reactor, or
    /// polls `block_on`'s own future). Written by the executor's thread only.
    last: Stamp,
    /// Every slot's probe, for the monitor.
    slots: Mutex<Vec<Arc<TaskProbe>>>,
    /// The histograms, recorded once per poll without a lock (the
    /// executor's thread is their one writer; see `PollHistograms`).
    hist: PollHistograms,
    spawned: AtomicU64,
    rejected: AtomicU64,
    rejected_full: AtomicU64,
    last_full: Stamp,
    polls: AtomicU64,
    long_polls: AtomicU64,
    /// As `TaskProbe`'s: wakes from other threads, other wakes from the
    /// executor's thread (one writer), self-wakes (one writer).
    wakes: AtomicU64,
    local_wakes: AtomicU64,
    self_wakes: AtomicU64,
    stale_wakes: AtomicU64,
    /// The executor's thread's account with the scheduler (made on that
    /// thread; only with the host's clock), so that a thread starved of
    /// CPU is not taken for a blocked or slow executor.
    cpu: Option<CpuWatch>,
}

impl ExecProbe {
    /// Made on the executor's thread.
    pub(crate) fn new(config: TelemetryConfig) -> Self {
        let probe = Probe::new(config);
        let cpu = (probe.config.clock.is_none() && !cfg!(miri))
            .then(|| CpuWatch::this_thread(probe.now()));
        Self {
            cpu,
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
                        if wait.joined || line.is_none() {
                            *line = Some((wait.name, now));
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

    pub(super) fn diagnose(
        &self,
        thresholds: &Thresholds,
        ingress: (usize, usize),
    ) -> Vec<Verdict> {
        let now = self.probe.now();
        let age = |at: u64| now.saturating_sub(at);
        let over = |at: u64, limit: Duration| age(at) > Thresholds::nanos(limit);
        let polling = self.polling.read();
        let blocked = polling.filter(|&(_, start)| over(start, thresholds.blocked));
        let mut verdicts = Vec::new();
        let mut ready: Vec<(u64, TaskId, Option<&'static str>)> = Vec::new();
        let mut blocked_name = None;
        let mut lines: Vec<(Option<&'static str>, usize, u64)> = Vec::new();
        // A poll running longer than `ready_delay` explains the tasks ready
        // behind it: they are its evidence once it counts as blocked, and
        // not a verdict of their own before.
        let long_poll = polling.is_some_and(|(_, start)| over(start, thresholds.ready_delay));
        for slot in lock_std(&self.slots).iter() {
            let Some(task) = slot.live() else { continue };
            if blocked.is_some_and(|(busy, _)| busy == task) {
                blocked_name = slot.name();
            }
            if let Some(at) = slot.ready.get() {
                if over(at, thresholds.ready_delay) {
                    ready.push((at, task, slot.name()));
                }
            } else if let Some(due) = slot.timer_due.get() {
                // Waiting on a timer: a known wake path, not a lost wake.
                // Past its deadline by more than `ready_delay`, the timer
                // should have fired and the task run: it is as good as
                // ready, and the executor is not getting to it.
                if over(due, thresholds.ready_delay) {
                    ready.push((due, task, slot.name()));
                }
            } else if let Some((name, since)) = *lock_std(&slot.line) {
                // Waiting in a channel's or semaphore's line: the other
                // side wakes it. Long waits there are the application's
                // capacity at work, not a lost wake.
                if over(since, thresholds.no_wake) {
                    match lines.iter_mut().find(|(on, ..)| *on == name) {
                        Some((_, waiting, oldest)) => {
                            *waiting += 1;
                            *oldest = (*oldest).min(since);
                        }
                        None => lines.push((name, 1, since)),
                    }
                }
            } else if let Some(at) = slot.waiting.get()
                && over(at, thresholds.no_wake)
                && blocked.is_none_or(|(busy, _)| busy != task)
            {
                verdicts.push(Verdict::NoWake {
                    task,
                    name: slot.name(),
                    waiting: Duration::from_nanos(age(at)),
                    polls: slot.polls.load(Ordering::Relaxed),
                    waits_on: lock_std(&slot.io_wait).clone(),
                });
            }
        }
        ready.sort();
        // Looked at on every call, so that the window is the time since
        // the previous one.
        let look = self
            .cpu
            .as_ref()
            .and_then(|cpu| Some((cpu, cpu.look(now)?)));
        let starved = |task, name, delayed, limit| {
            let (cpu, look) = look?;
            cpu.fared(look, delayed)?
                .verdict(task, name, None, delayed, limit)
        };
        if let Some((task, start)) = blocked {
            let running_for = Duration::from_nanos(age(start));
            verdicts.push(
                starved(task, blocked_name, running_for, thresholds.blocked).unwrap_or(
                    Verdict::WorkerBlocked {
                        task,
                        name: blocked_name,
                        worker: None,
                        running_for,
                        ready_behind: ready.len(),
                    },
                ),
            );
        } else if !long_poll && let Some(&(at, task, name)) = ready.first() {
            let ready_for = Duration::from_nanos(age(at));
            verdicts.push(
                starved(task, name, ready_for, thresholds.ready_delay).unwrap_or(
                    Verdict::ReadyButDelayed {
                        task,
                        name,
                        ready_for,
                        ready_tasks: ready.len(),
                    },
                ),
            );
        }
        for (on, waiting, since) in lines {
            verdicts.push(Verdict::Backpressure {
                on,
                waiting,
                longest: Duration::from_nanos(age(since)),
            });
        }
        if let Some(at) = self.last_full.get()
            && !over(at, thresholds.admission_window)
        {
            verdicts.push(Verdict::AdmissionFull {
                rejected_full: self.rejected_full.load(Ordering::Relaxed),
                since_last: Duration::from_nanos(age(at)),
                queued: ingress.0,
                capacity: ingress.1,
            });
        }
        verdicts
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{ReadyStamp, Stamp, Waited};

    #[test]
    fn a_packed_wait_unpacks_to_itself_and_the_longest_are_clamped() {
        for nanos in [0, 1, 999, 1 << 40, Waited::MOST] {
            for waited in [Waited::FirstPoll(nanos), Waited::Woken(nanos)] {
                assert_eq!(waited.pack().unpack(), waited);
            }
        }
        assert_eq!(Waited::Unknown.pack().unpack(), Waited::Unknown);
        assert_eq!(
            Waited::Woken(u64::MAX).pack().unpack(),
            Waited::Woken(Waited::MOST)
        );
        assert_eq!(
            Waited::FirstPoll(u64::MAX).pack().unpack(),
            Waited::FirstPoll(Waited::MOST)
        );
    }

    #[test]
    fn the_earlier_of_the_two_stamps_counts_and_a_take_clears_both() {
        let ready = ReadyStamp::new();
        assert_eq!(ready.get(), None);
        assert_eq!(ready.take(), None);
        ready.set_elsewhere(10);
        ready.set_here(20);
        assert_eq!(ready.get(), Some(10), "woken elsewhere first");
        ready.set_elsewhere(5);
        ready.set_here(1);
        assert_eq!(ready.get(), Some(10), "each keeps its first stamp");
        assert_eq!(ready.take(), Some(10));
        assert_eq!(ready.get(), None);
        ready.set_here(7);
        ready.set_elsewhere(9);
        assert_eq!(ready.take(), Some(7), "woken here first");
        ready.set_here(0);
        assert_eq!(ready.get(), Some(0), "time zero is a time");
        ready.reset(3);
        assert_eq!(ready.get(), Some(3));
        ready.clear();
        assert_eq!(ready.get(), None);
    }

    #[test]
    fn a_stamp_is_unset_only_when_cleared() {
        let stamp = Stamp::new();
        assert_eq!(stamp.get(), None);
        for at in [0, 1, 1_000, u64::MAX / 2, u64::MAX - 1] {
            stamp.set(at);
            assert_eq!(stamp.get(), Some(at));
        }
        stamp.clear();
        assert_eq!(stamp.get(), None);
        // A time that saturated (a timer due `Duration::MAX` from now) is
        // kept as the farthest time there is, never as none.
        stamp.set(u64::MAX);
        assert_eq!(stamp.get(), Some(u64::MAX - 1));
        let ready = ReadyStamp::new();
        ready.set_elsewhere(u64::MAX);
        assert_eq!(ready.get(), Some(u64::MAX - 1));
        ready.clear();
        ready.set_here(u64::MAX);
        assert_eq!(ready.take(), Some(u64::MAX - 1));
    }
}
