//! What telemetry is made of: the [`Sink`] that every consumer of task
//! events implements (metrics, the trace ring, defmt, and in `dinah-std` the
//! trace buffer, the timeline recorder and `tracing`), a [`Clock`] that
//! firmware and hosts supply, and the fixed-bucket [`Log2Histogram`] that
//! holds distributions (waits, run times, poll times) without allocating.
//!
//! One event, recorded once, reaches every sink in a tuple:
//!
//! ```
//! use dinah::{RuntimeMetrics, Sink, TaskId, TraceEvent, TraceEventKind, TraceRing};
//!
//! static METRICS: RuntimeMetrics = RuntimeMetrics::new();
//! static TRACE: TraceRing<8> = TraceRing::new();
//!
//! let sinks = (&METRICS, &TRACE);
//! let task = TaskId::new(1).unwrap();
//! sinks.record(TraceEvent::stamped(task, TraceEventKind::Submitted, 10));
//! sinks.record(TraceEvent::stamped(task, TraceEventKind::Rejected, 12));
//!
//! assert_eq!((METRICS.snapshot().submitted, METRICS.snapshot().rejected), (1, 1));
//! assert_eq!(TRACE.drain()[1].at, 12);
//! ```
//!
//! ```
//! use dinah::Log2Histogram;
//!
//! let mut waits: Log2Histogram<16> = Log2Histogram::new();
//! for micros in [0, 1, 3, 3, 700] {
//!     waits.record(micros);
//! }
//! assert_eq!(waits.count(), 5);
//! assert_eq!(waits.bucket(2), 2); // 3 lies in [2, 4)
//! assert_eq!(waits.max(), 700);
//! // Half the samples are at most 3, so the median's bucket ends at 3.
//! assert_eq!(waits.quantile_upper_bound(1, 2), 3);
//! ```
#![forbid(unsafe_code)]

use crate::{RuntimeMetrics, RuntimeMetrics32, TaskId, TraceEvent, TraceRing};

/// A consumer of task events: one [`TraceEvent`] vocabulary for metrics,
/// traces, logs and timelines.
///
/// Every runtime part that emits events (the executors and pools of
/// `dinah-std`, or firmware code) calls [`record`](Sink::record) once per
/// event; a tuple of sinks fans the event out to each of them in order, and
/// `()` is the sink that drops everything.
///
/// # What an implementation promises
///
/// `record` returns promptly, never blocks on anything but a short internal
/// lock or critical section, never calls back into the runtime, and never
/// panics on any event (a full store counts its refusal and drops the event).
/// It may be called from any thread or interrupt handler the emitter runs
/// on, hence `&self`.
///
/// # What it does not promise
///
/// No ordering across sinks beyond the call order, and no delivery beyond
/// what the sink's storage holds.
pub trait Sink {
    /// Consumes one event.
    fn record(&self, event: TraceEvent);
}

impl Sink for () {
    #[inline(always)]
    fn record(&self, _: TraceEvent) {}
}

impl<S: Sink + ?Sized> Sink for &S {
    #[inline]
    fn record(&self, event: TraceEvent) {
        (**self).record(event);
    }
}

impl<A: Sink, B: Sink> Sink for (A, B) {
    #[inline]
    fn record(&self, event: TraceEvent) {
        self.0.record(event);
        self.1.record(event);
    }
}

impl<A: Sink, B: Sink, C: Sink> Sink for (A, B, C) {
    #[inline]
    fn record(&self, event: TraceEvent) {
        self.0.record(event);
        self.1.record(event);
        self.2.record(event);
    }
}

impl<A: Sink, B: Sink, C: Sink, D: Sink> Sink for (A, B, C, D) {
    #[inline]
    fn record(&self, event: TraceEvent) {
        self.0.record(event);
        self.1.record(event);
        self.2.record(event);
        self.3.record(event);
    }
}

impl<const N: usize> Sink for TraceRing<N> {
    /// Records the event; when the ring is full the event is dropped and
    /// the ring counts the refusal ([`TraceRing::rejected`]).
    fn record(&self, event: TraceEvent) {
        let _ = TraceRing::record(self, event);
    }
}

impl Sink for RuntimeMetrics {
    /// Counts the event in its counter (see [`RuntimeMetrics::record_event`]).
    fn record(&self, event: TraceEvent) {
        self.record_event(event.kind);
    }
}

impl Sink for RuntimeMetrics32 {
    /// Counts the event in its counter (see [`RuntimeMetrics32::record_event`]).
    fn record(&self, event: TraceEvent) {
        self.record_event(event.kind);
    }
}

/// Sees each poll an executor makes: what the core
/// [`AsyncExecutor`](crate::AsyncExecutor) calls around every poll when
/// driven with [`tick_observed`](crate::AsyncExecutor::tick_observed) (or
/// [`run_observed`](crate::AsyncExecutor::run_observed),
/// [`run_until_observed`](crate::AsyncExecutor::run_until_observed)).
///
/// `()` observes nothing: `tick` is `tick_observed(budget, &())`, and with
/// `()` the calls compile away, so an executor that is not observed runs
/// exactly the instructions it ran before observers existed.
pub trait PollObserver {
    /// A poll of `task` is about to begin.
    fn poll_started(&self, task: TaskId);
    /// That poll returned (or ended the task).
    fn poll_ended(&self, task: TaskId);
    /// The poll of `task` about to begin waited `ticks` since the wake that
    /// queued it or, when `first`, since the task was spawned: its
    /// ready-queue age. Called just before [`poll_started`](Self::poll_started),
    /// and only by an executor whose queue stamps wakes
    /// ([`Timed`](crate::Timed)); `ticks` are the queue's
    /// [`TickSource`] ticks. Wakes that coalesce into one poll are timed from
    /// the first of them. Does nothing unless implemented.
    #[inline(always)]
    fn poll_waited(&self, task: TaskId, first: bool, ticks: u64) {
        let _ = (task, first, ticks);
    }

    /// Whether it looks at anything: `false` only for `()`, so that an
    /// executor watched by nobody does not even work out the ids it would
    /// pass. An implementation that observes leaves it as it is.
    #[doc(hidden)]
    #[inline(always)]
    fn observes(&self) -> bool {
        true
    }
}

impl PollObserver for () {
    #[inline(always)]
    fn poll_started(&self, _: TaskId) {}
    #[inline(always)]
    fn poll_ended(&self, _: TaskId) {}
    #[inline(always)]
    fn observes(&self) -> bool {
        false
    }
}

impl<T: PollObserver + ?Sized> PollObserver for &T {
    #[inline(always)]
    fn poll_started(&self, task: TaskId) {
        (**self).poll_started(task);
    }
    #[inline(always)]
    fn observes(&self) -> bool {
        (**self).observes()
    }
    #[inline(always)]
    fn poll_waited(&self, task: TaskId, first: bool, ticks: u64) {
        (**self).poll_waited(task, first, ticks);
    }
    #[inline(always)]
    fn poll_ended(&self, task: TaskId) {
        (**self).poll_ended(task);
    }
}

impl<A: PollObserver, B: PollObserver> PollObserver for (A, B) {
    #[inline(always)]
    fn poll_started(&self, task: TaskId) {
        self.0.poll_started(task);
        self.1.poll_started(task);
    }
    #[inline(always)]
    fn poll_ended(&self, task: TaskId) {
        self.1.poll_ended(task);
        self.0.poll_ended(task);
    }
    #[inline(always)]
    fn poll_waited(&self, task: TaskId, first: bool, ticks: u64) {
        self.0.poll_waited(task, first, ticks);
        self.1.poll_waited(task, first, ticks);
    }
}

/// Times one poll at a time with a clock: what the poll-time observers
/// share.
struct Stopwatch<K: Clock> {
    clock: K,
    started: core::cell::Cell<u64>,
}

impl<K: Clock> Stopwatch<K> {
    const fn new(clock: K) -> Self {
        Self {
            clock,
            started: core::cell::Cell::new(0),
        }
    }

    /// A poll begins now.
    fn start(&self) {
        self.started.set(self.clock.now());
    }

    /// The ticks since the last `start` (0 if the clock went back).
    fn stop(&self) -> u64 {
        self.clock.now().saturating_sub(self.started.get())
    }
}

/// A [`PollObserver`] that keeps the core executor's poll figures: the
/// distribution of poll durations and the count of long polls and, on an
/// executor whose queue stamps wakes ([`Timed`](crate::Timed)), the
/// distributions of wake-to-poll delay and first-poll delay.
///
/// It lives with the executor (it is not `Sync`): read it between ticks.
/// Durations are in ticks of `clock`; a poll lasting at least `long_poll`
/// ticks is long. Delays are in ticks of the queue's [`TickSource`]: give
/// `PollTimes` a [`TickClock`] of the same source and every figure is in one
/// unit. Without `Timed`, the two delay histograms stay empty.
///
/// ```
/// use dinah::{Clock, NoClock, PollTimes};
///
/// let times: PollTimes<NoClock, 16> = PollTimes::new(NoClock, 50);
/// assert_eq!(times.poll_time().count(), 0);
/// assert_eq!(times.wake_to_poll().count(), 0);
/// ```
pub struct PollTimes<K: Clock, const B: usize = 24> {
    watch: Stopwatch<K>,
    long_poll: u64,
    long_polls: core::cell::Cell<u64>,
    poll_time: core::cell::RefCell<Log2Histogram<B>>,
    wake_to_poll: core::cell::RefCell<Log2Histogram<B>>,
    first_poll_delay: core::cell::RefCell<Log2Histogram<B>>,
}

impl<K: Clock, const B: usize> PollTimes<K, B> {
    /// Empty figures, measuring with `clock`; `long_poll` in its ticks.
    pub const fn new(clock: K, long_poll: u64) -> Self {
        Self {
            watch: Stopwatch::new(clock),
            long_poll,
            long_polls: core::cell::Cell::new(0),
            poll_time: core::cell::RefCell::new(Log2Histogram::new()),
            wake_to_poll: core::cell::RefCell::new(Log2Histogram::new()),
            first_poll_delay: core::cell::RefCell::new(Log2Histogram::new()),
        }
    }

    /// How long each poll took, in clock ticks.
    #[must_use]
    pub fn poll_time(&self) -> Log2Histogram<B> {
        self.poll_time.borrow().clone()
    }

    /// Polls that lasted at least the long-poll threshold.
    #[must_use]
    pub fn long_polls(&self) -> u64 {
        self.long_polls.get()
    }

    /// How long each poll but a task's first waited after the wake that
    /// queued it (its ready-queue age), in the queue's ticks. Empty unless
    /// the queue is [`Timed`](crate::Timed).
    #[must_use]
    pub fn wake_to_poll(&self) -> Log2Histogram<B> {
        self.wake_to_poll.borrow().clone()
    }

    /// How long each task waited from its spawn to its first poll, in the
    /// queue's ticks. Empty unless the queue is [`Timed`](crate::Timed).
    #[must_use]
    pub fn first_poll_delay(&self) -> Log2Histogram<B> {
        self.first_poll_delay.borrow().clone()
    }
}

impl<K: Clock, const B: usize> PollObserver for PollTimes<K, B> {
    fn poll_started(&self, _: TaskId) {
        self.watch.start();
    }

    fn poll_ended(&self, _: TaskId) {
        let took = self.watch.stop();
        self.poll_time.borrow_mut().record(took);
        if took >= self.long_poll {
            self.long_polls.set(self.long_polls.get().saturating_add(1));
        }
    }

    fn poll_waited(&self, _: TaskId, first: bool, ticks: u64) {
        let figure = if first {
            &self.first_poll_delay
        } else {
            &self.wake_to_poll
        };
        figure.borrow_mut().record(ticks);
    }
}

impl<K: Clock, const B: usize> core::fmt::Debug for PollTimes<K, B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PollTimes")
            .field("long_polls", &self.long_polls.get())
            .field("polls", &self.poll_time.borrow().count())
            .finish_non_exhaustive()
    }
}

/// One task's poll times, as [`TaskTimes`] keeps them; all in ticks.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct TaskTime {
    /// Polls seen.
    pub polls: u32,
    /// Time spent in those polls, in `TaskTimes`' clock ticks (saturating).
    pub busy: u64,
    /// The longest of them, in `TaskTimes`' clock ticks.
    pub longest_poll: u64,
    /// How long its first poll waited after its spawn, in the queue's
    /// ticks; `None` unless the queue is [`Timed`](crate::Timed) and the
    /// first poll was seen.
    pub first_poll_delay: Option<u64>,
    /// The longest a later poll waited after the wake that queued it, in
    /// the queue's ticks; 0 unless the queue is [`Timed`](crate::Timed).
    pub longest_wake_to_poll: u64,
}

/// A [`PollObserver`] that keeps [`TaskTime`]s per task of an
/// [`AsyncExecutor`](crate::AsyncExecutor) with `N` slots: the core
/// executor's per-task poll figures, next to the per-executor ones of
/// [`PollTimes`].
///
/// It keeps one entry per slot, for the slot's latest task: a task's figures
/// are readable by id until another task's poll is seen in its slot. It
/// lives with the executor (it is not `Sync`): read it between ticks. Poll
/// durations are in ticks of `clock`, waits in ticks of the queue's
/// [`TickSource`] (give it a [`TickClock`] of the same source).
///
/// Not kept: anything about a task before its first observed poll, or
/// about tasks of another executor (their ids may collide).
pub struct TaskTimes<K: Clock, const N: usize> {
    watch: Stopwatch<K>,
    /// Per slot: the raw id of its latest observed task (0: none) and its
    /// figures.
    slots: [core::cell::Cell<(u64, TaskTime)>; N],
}

impl<K: Clock, const N: usize> TaskTimes<K, N> {
    /// No figures yet, measuring with `clock`.
    pub const fn new(clock: K) -> Self {
        Self {
            watch: Stopwatch::new(clock),
            slots: [const { core::cell::Cell::new((0, TaskTime::NONE)) }; N],
        }
    }

    /// The figures of task `task`, if it is its slot's latest observed task.
    #[must_use]
    pub fn task(&self, task: TaskId) -> Option<TaskTime> {
        let (id, time) = self.slots.get(crate::waker::slot_index(task)?)?.get();
        (id == task.get()).then_some(time)
    }

    /// Changes the entry of `task`'s slot with `change`, starting it afresh
    /// when the slot last held another task.
    fn update(&self, task: TaskId, change: impl FnOnce(&mut TaskTime)) {
        let Some(slot) = crate::waker::slot_index(task).and_then(|i| self.slots.get(i)) else {
            return;
        };
        let (id, mut time) = slot.get();
        if id != task.get() {
            time = TaskTime::NONE;
        }
        change(&mut time);
        slot.set((task.get(), time));
    }
}

impl TaskTime {
    const NONE: Self = Self {
        polls: 0,
        busy: 0,
        longest_poll: 0,
        first_poll_delay: None,
        longest_wake_to_poll: 0,
    };
}

impl<K: Clock, const N: usize> PollObserver for TaskTimes<K, N> {
    fn poll_started(&self, _: TaskId) {
        self.watch.start();
    }

    fn poll_ended(&self, task: TaskId) {
        let took = self.watch.stop();
        self.update(task, |time| {
            time.polls = time.polls.saturating_add(1);
            time.busy = time.busy.saturating_add(took);
            time.longest_poll = time.longest_poll.max(took);
        });
    }

    fn poll_waited(&self, task: TaskId, first: bool, ticks: u64) {
        self.update(task, |time| {
            if first {
                time.first_poll_delay = Some(ticks);
            } else {
                time.longest_wake_to_poll = time.longest_wake_to_poll.max(ticks);
            }
        });
    }
}

impl<K: Clock, const N: usize> core::fmt::Debug for TaskTimes<K, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TaskTimes")
            .field("slots", &N)
            .finish_non_exhaustive()
    }
}

/// A [`PollObserver`] that turns each poll into the shared event
/// vocabulary: `PollStarted` and `PollEnded`, stamped with `clock`, into
/// `sink` (a `TraceRing`, `RuntimeMetrics`, `DefmtSink`, or a tuple).
#[derive(Debug)]
pub struct PollEvents<S: Sink, K: Clock> {
    /// Where the events go.
    pub sink: S,
    /// What stamps them.
    pub clock: K,
}

impl<S: Sink, K: Clock> PollObserver for PollEvents<S, K> {
    fn poll_started(&self, task: TaskId) {
        self.sink.record(TraceEvent::stamped(
            task,
            crate::TraceEventKind::PollStarted,
            self.clock.now(),
        ));
    }

    fn poll_ended(&self, task: TaskId) {
        self.sink.record(TraceEvent::stamped(
            task,
            crate::TraceEventKind::PollEnded,
            self.clock.now(),
        ));
    }
}

/// A poll that has run too long, as a [`PollWatch`] sees it: the core's
/// `WorkerBlocked` verdict.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Blocked {
    /// The task being polled.
    pub task: TaskId,
    /// How long its poll has run, in ticks of the watch's clock.
    pub running_for: u64,
}

/// The poll an executor is running now, published for readers on other
/// threads, cores or interrupt handlers: which task, and since when.
///
/// One writer (the executor, between and around its polls) and any number
/// of readers, none of which ever waits for the other. It is a sequence
/// lock over the task's id and the start stamp, 64 bits each, kept as
/// 32-bit atomics so that it works on every target (`const fn new`; 20
/// bytes).
///
/// # Guarantees
///
/// - A reader gets `None` between polls, and otherwise the id and stamp of
///   one poll, published together: never the id of one poll with the stamp
///   of another. (The sequence number is odd while a poll runs; a reading
///   is kept only if the number is odd and unchanged after the fields were
///   read, and the writer orders each poll's end before the next poll's
///   fields.)
/// - A poll that never ends is seen by every reading after its start.
///
/// # What it does not promise
///
/// A reading that overlaps a poll's end or start says `None`, even if a poll
/// was running at some moment during it.
pub struct PollStamp {
    /// Even: no poll. Odd: a poll runs, with the fields below.
    sequence: crate::sync::AtomicU32,
    task_low: crate::sync::AtomicU32,
    task_high: crate::sync::AtomicU32,
    at_low: crate::sync::AtomicU32,
    at_high: crate::sync::AtomicU32,
}

impl PollStamp {
    crate::sched::const_unless_loom! {
        /// No poll running.
        #[must_use]
        pub fn new() -> Self {
            Self {
                sequence: crate::sync::AtomicU32::new(0),
                task_low: crate::sync::AtomicU32::new(0),
                task_high: crate::sync::AtomicU32::new(0),
                at_low: crate::sync::AtomicU32::new(0),
                at_high: crate::sync::AtomicU32::new(0),
            }
        }
    }

    /// A poll of `task` began at `at`. The writer only, with no poll
    /// running.
    pub fn start(&self, task: TaskId, at: u64) {
        use crate::sync::{Ordering, fence};
        // Orders the previous poll's end before the stores below: a reader
        // that sees any of them also sees the sequence move past the
        // previous poll.
        fence(Ordering::Release);
        let id = task.get();
        self.task_low.store(id as u32, Ordering::Relaxed);
        self.task_high.store((id >> 32) as u32, Ordering::Relaxed);
        self.at_low.store(at as u32, Ordering::Relaxed);
        self.at_high.store((at >> 32) as u32, Ordering::Relaxed);
        // Odd: the fields above are published.
        self.sequence.fetch_add(1, Ordering::Release);
    }

    /// That poll ended. The writer only.
    pub fn end(&self) {
        self.sequence.fetch_add(1, crate::sync::Ordering::Release);
    }

    /// The poll running now and its start, or `None`. Any thread or
    /// interrupt handler.
    #[must_use]
    pub fn read(&self) -> Option<(TaskId, u64)> {
        use crate::sync::{Ordering, fence};
        let before = self.sequence.load(Ordering::Acquire);
        if before & 1 == 0 {
            return None;
        }
        let task = (u64::from(self.task_high.load(Ordering::Relaxed)) << 32)
            | u64::from(self.task_low.load(Ordering::Relaxed));
        let at = (u64::from(self.at_high.load(Ordering::Relaxed)) << 32)
            | u64::from(self.at_low.load(Ordering::Relaxed));
        // Orders the field loads before the second look at the sequence.
        fence(Ordering::Acquire);
        if self.sequence.load(Ordering::Relaxed) != before {
            return None;
        }
        Some((TaskId::new(task).ok()?, at))
    }

    /// Whether a poll is running now.
    #[must_use]
    pub fn is_polling(&self) -> bool {
        self.sequence.load(crate::sync::Ordering::Relaxed) & 1 == 1
    }
}

impl Default for PollStamp {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for PollStamp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PollStamp")
            .field("polling", &self.is_polling())
            .finish_non_exhaustive()
    }
}

/// The running poll of one executor, published for an interrupt handler or
/// another core to read: the firmware form of a stall watchdog.
///
/// The executor stamps each poll's start with `clock` (as a
/// [`PollObserver`]) in a [`PollStamp`]; [`blocked`](Self::blocked), called
/// from anywhere (a SysTick handler, say), reports a poll that has run at
/// least a threshold. `const fn new`, so it lives in a `static`; it holds
/// the stamp's five 32-bit atomics and the clock.
///
/// # Guarantees
///
/// - Only the executor writes; readers never block it and never see one
///   poll's task with another's stamp (see [`PollStamp`]).
/// - A poll that never returns is seen by every later reading.
///
/// # What it does not promise
///
/// It watches one executor. It does not stop the poll; what to do (log,
/// cancel through the queue, reset) is the reader's choice.
pub struct PollWatch<K: Clock> {
    clock: K,
    stamp: PollStamp,
}

impl<K: Clock> PollWatch<K> {
    crate::sched::const_unless_loom! {
        /// A watch stamping with `clock`, seeing no poll.
        pub fn new(clock: K) -> Self {
            Self {
                clock,
                stamp: PollStamp::new(),
            }
        }
    }

    /// The clock it stamps with.
    pub const fn clock(&self) -> &K {
        &self.clock
    }

    /// The poll that has been running for at least `threshold` ticks, if
    /// any. Any thread or interrupt handler.
    #[must_use]
    pub fn blocked(&self, threshold: u64) -> Option<Blocked> {
        let (task, started) = self.stamp.read()?;
        let running_for = self.clock.now().saturating_sub(started);
        (running_for >= threshold).then_some(Blocked { task, running_for })
    }
}

impl<K: Clock> PollObserver for PollWatch<K> {
    fn poll_started(&self, task: TaskId) {
        self.stamp.start(task, self.clock.now());
    }

    fn poll_ended(&self, _: TaskId) {
        self.stamp.end();
    }
}

impl<K: Clock> core::fmt::Debug for PollWatch<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PollWatch")
            .field("polling", &self.stamp.is_polling())
            .finish_non_exhaustive()
    }
}

/// A monotonic tick source: SysTick, a DWT cycle counter or a timer on
/// firmware, `Instant` on a host.
///
/// Guarantees the implementer makes: [`now`](Clock::now) never decreases,
/// and [`ticks_per_second`](Clock::ticks_per_second) is constant and not
/// zero. Nothing here guarantees a resolution or a starting point; only
/// differences between two readings of one clock mean anything. A tick
/// counter that wraps must be widened to 64 bits by its implementer.
pub trait Clock {
    /// Ticks since the clock's own origin.
    fn now(&self) -> u64;

    /// How many ticks make a second.
    fn ticks_per_second(&self) -> u64;

    /// Converts a number of ticks to whole microseconds, rounding down and
    /// saturating at `u64::MAX`.
    fn ticks_to_micros(&self, ticks: u64) -> u64 {
        let per_second = u128::from(self.ticks_per_second().max(1));
        let micros = u128::from(ticks) * 1_000_000 / per_second;
        u64::try_from(micros).unwrap_or(u64::MAX)
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> u64 {
        (**self).now()
    }

    fn ticks_per_second(&self) -> u64 {
        (**self).ticks_per_second()
    }
}

/// A clock read without an instance: what a [`Timed`](crate::Timed) queue
/// stamps wakes with. A waker carries nothing but a pointer into its queue,
/// so the tick source it reads is a type, not a value.
///
/// Guarantees the implementer makes: as for [`Clock`] (never decreasing, a
/// constant non-zero rate), and [`now`](TickSource::now) is safe and quick
/// from any thread or interrupt handler that can wake a task (a wake calls
/// it). Only the low 32 bits of a stamp are kept, so a wait longer than
/// `2^32` ticks reads as wrapped.
pub trait TickSource: 'static {
    /// Ticks since the source's own origin.
    fn now() -> u64;

    /// How many ticks make a second.
    fn ticks_per_second() -> u64;
}

/// A [`TickSource`] as a [`Clock`], so that a [`PollTimes`] or
/// [`PollWatch`] measures in the same ticks as a `Timed` queue's stamps.
/// Zero-sized; `const fn new`.
pub struct TickClock<T: TickSource>(core::marker::PhantomData<fn() -> T>);

impl<T: TickSource> TickClock<T> {
    /// The clock reading `T`.
    #[must_use]
    pub const fn new() -> Self {
        Self(core::marker::PhantomData)
    }
}

impl<T: TickSource> Default for TickClock<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: TickSource> Clone for TickClock<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: TickSource> Copy for TickClock<T> {}

impl<T: TickSource> core::fmt::Debug for TickClock<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("TickClock")
    }
}

impl<T: TickSource> Clock for TickClock<T> {
    #[inline(always)]
    fn now(&self) -> u64 {
        T::now()
    }

    fn ticks_per_second(&self) -> u64 {
        T::ticks_per_second()
    }
}

/// The clock of a system that has none: it always reads zero, so every
/// duration measured with it is zero while counts still work.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct NoClock;

impl Clock for NoClock {
    fn now(&self) -> u64 {
        0
    }

    fn ticks_per_second(&self) -> u64 {
        1
    }
}

/// A histogram of `u64` samples in `B` power-of-two buckets, with the
/// count, sum and maximum; no allocation, `const fn new`, 8·B + 24 bytes.
///
/// Bucket 0 holds the samples equal to 0. Bucket `i` for `1 <= i < B - 1`
/// holds `[2^(i-1), 2^i)`. The last bucket holds every sample at or above
/// `2^(B-2)`. So `Log2Histogram<16>` resolves 0 to 16,383 and puts the rest
/// together; with microseconds that is up to about 16 ms.
///
/// Counts saturate at `u64::MAX` (the sum too); nothing wraps or panics.
/// The histogram is a value: it does not synchronize, and concurrent
/// recording needs the caller's lock or one histogram per thread, merged
/// later with [`merge`](Self::merge).
///
/// Not promised: exact quantiles. A quantile is answered with the upper edge
/// of the bucket it falls in, which is at most twice the true value (for the
/// last bucket, the largest sample seen).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Log2Histogram<const B: usize> {
    buckets: [u64; B],
    count: u64,
    sum: u64,
    max: u64,
}

impl<const B: usize> Log2Histogram<B> {
    const AT_LEAST_TWO_BUCKETS: () = assert!(B >= 2 && B <= 65, "B is between 2 and 65");

    /// An empty histogram.
    #[must_use]
    pub const fn new() -> Self {
        let () = Self::AT_LEAST_TWO_BUCKETS;
        Self {
            buckets: [0; B],
            count: 0,
            sum: 0,
            max: 0,
        }
    }

    /// The bucket a sample falls in.
    #[must_use]
    pub const fn bucket_of(value: u64) -> usize {
        // 0 -> 0; [2^(i-1), 2^i) -> i; clamped to the last bucket.
        let index = (u64::BITS - value.leading_zeros()) as usize;
        if index < B - 1 { index } else { B - 1 }
    }

    /// The smallest sample bucket `index` holds, and the largest (`None` for
    /// the last bucket, which is open above).
    ///
    /// # Panics
    ///
    /// If `index >= B`.
    #[must_use]
    pub const fn bucket_range(index: usize) -> (u64, Option<u64>) {
        assert!(index < B, "bucket index out of range");
        let low = if index == 0 { 0 } else { 1 << (index - 1) };
        if index == B - 1 {
            (low, None)
        } else if index == 0 {
            (0, Some(0))
        } else {
            (low, Some((1 << index) - 1))
        }
    }

    /// Records one sample.
    pub fn record(&mut self, value: u64) {
        let bucket = &mut self.buckets[Self::bucket_of(value)];
        *bucket = bucket.saturating_add(1);
        self.count = self.count.saturating_add(1);
        self.sum = self.sum.saturating_add(value);
        if value > self.max {
            self.max = value;
        }
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Self) {
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *mine = mine.saturating_add(*theirs);
        }
        self.count = self.count.saturating_add(other.count);
        self.sum = self.sum.saturating_add(other.sum);
        if other.max > self.max {
            self.max = other.max;
        }
    }

    /// Forgets every sample.
    pub fn clear(&mut self) {
        *self = Self::new();
    }

    /// How many samples were recorded.
    #[must_use]
    pub const fn count(&self) -> u64 {
        self.count
    }

    /// The sum of the samples (saturating).
    #[must_use]
    pub const fn sum(&self) -> u64 {
        self.sum
    }

    /// The largest sample, or 0 when empty.
    #[must_use]
    pub const fn max(&self) -> u64 {
        self.max
    }

    /// How many samples bucket `index` holds (0 for an index out of range).
    #[must_use]
    pub const fn bucket(&self, index: usize) -> u64 {
        if index < B { self.buckets[index] } else { 0 }
    }

    /// Every bucket's count, lowest first.
    #[must_use]
    pub const fn buckets(&self) -> &[u64; B] {
        &self.buckets
    }

    /// An upper bound for the `numerator / denominator` quantile: the upper
    /// edge of the bucket holding the sample at that rank (the largest
    /// sample seen if that is smaller, or if the bucket is the last). 0 for
    /// an empty histogram; a fraction above 1 is read as 1, and a zero
    /// denominator as 1.
    #[must_use]
    pub fn quantile_upper_bound(&self, numerator: u64, denominator: u64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let denominator = u128::from(denominator.max(1));
        let numerator = u128::from(numerator).min(denominator);
        // The rank (1-based) of the sample the quantile names.
        let rank = (u128::from(self.count) * numerator)
            .div_ceil(denominator)
            .max(1);
        let mut seen = 0u128;
        for (index, &count) in self.buckets.iter().enumerate() {
            seen += u128::from(count);
            if seen >= rank {
                return match Self::bucket_range(index).1 {
                    Some(high) if high < self.max => high,
                    _ => self.max,
                };
            }
        }
        self.max
    }
}

impl<const B: usize> Default for Log2Histogram<B> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_split_at_powers_of_two() {
        type H = Log2Histogram<8>;
        assert_eq!(H::bucket_of(0), 0);
        assert_eq!(H::bucket_of(1), 1);
        assert_eq!(H::bucket_of(2), 2);
        assert_eq!(H::bucket_of(3), 2);
        assert_eq!(H::bucket_of(4), 3);
        assert_eq!(H::bucket_of(63), 6);
        // 2^(B-2) = 64 and above share the last bucket.
        assert_eq!(H::bucket_of(64), 7);
        assert_eq!(H::bucket_of(u64::MAX), 7);
        assert_eq!(H::bucket_range(0), (0, Some(0)));
        assert_eq!(H::bucket_range(1), (1, Some(1)));
        assert_eq!(H::bucket_range(3), (4, Some(7)));
        assert_eq!(H::bucket_range(7), (64, None));
        for index in 0..8 {
            let (low, high) = H::bucket_range(index);
            assert_eq!(H::bucket_of(low), index);
            if let Some(high) = high {
                assert_eq!(H::bucket_of(high), index);
                assert_eq!(H::bucket_of(high + 1), index + 1);
            }
        }
        assert_eq!(Log2Histogram::<65>::bucket_of(u64::MAX), 64);
        assert_eq!(Log2Histogram::<65>::bucket_range(64), (1 << 63, None));
    }

    #[test]
    fn records_counts_sum_max_and_merges() {
        let mut a: Log2Histogram<6> = Log2Histogram::new();
        for value in [0, 5, 5, 100] {
            a.record(value);
        }
        assert_eq!((a.count(), a.sum(), a.max()), (4, 110, 100));
        assert_eq!(a.buckets(), &[1, 0, 0, 2, 0, 1]);
        let mut b = Log2Histogram::<6>::new();
        b.record(1);
        b.merge(&a);
        assert_eq!((b.count(), b.sum(), b.max()), (5, 111, 100));
        assert_eq!(b.bucket(1), 1);
        assert_eq!(b.bucket(99), 0);
        b.clear();
        assert_eq!(b, Log2Histogram::default());
    }

    #[test]
    fn saturates_instead_of_wrapping() {
        let mut h: Log2Histogram<4> = Log2Histogram::new();
        h.record(u64::MAX);
        h.record(u64::MAX);
        assert_eq!((h.sum(), h.max(), h.count()), (u64::MAX, u64::MAX, 2));
        let mut full = h.clone();
        full.buckets[3] = u64::MAX;
        full.count = u64::MAX;
        full.record(9);
        assert_eq!((full.bucket(3), full.count()), (u64::MAX, u64::MAX));
    }

    #[test]
    fn quantiles_are_bucket_upper_edges_capped_by_the_max() {
        let mut h: Log2Histogram<16> = Log2Histogram::new();
        assert_eq!(h.quantile_upper_bound(1, 2), 0, "empty");
        for value in 1..=100 {
            h.record(value);
        }
        // The median (rank 50) lies in [32, 64).
        assert_eq!(h.quantile_upper_bound(1, 2), 63);
        // The 99th percentile (rank 99) lies in [64, 128), capped at 100.
        assert_eq!(h.quantile_upper_bound(99, 100), 100);
        assert_eq!(h.quantile_upper_bound(0, 100), 1, "the smallest");
        assert_eq!(h.quantile_upper_bound(5, 1), 100, "above 1 reads as 1");
        assert_eq!(
            h.quantile_upper_bound(1, 0),
            100,
            "zero denominator reads as 1"
        );
    }

    #[test]
    fn the_clock_converts_ticks_and_no_clock_reads_zero() {
        struct Cycles;
        impl Clock for Cycles {
            fn now(&self) -> u64 {
                42
            }
            fn ticks_per_second(&self) -> u64 {
                8_000_000
            }
        }
        assert_eq!(Cycles.ticks_to_micros(8), 1);
        assert_eq!(Cycles.ticks_to_micros(7), 0, "rounds down");
        assert_eq!(Cycles.ticks_to_micros(u64::MAX), u64::MAX / 8);
        assert_eq!((NoClock.now(), NoClock.ticks_to_micros(5)), (0, 5_000_000));
    }
}
