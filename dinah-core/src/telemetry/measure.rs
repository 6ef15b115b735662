//! How much an executor measures: the one switch, [`Measure`], with its
//! settings [`Unmeasured`], [`Counted`] and [`Timed`].
//!
//! The setting is part of the executor's type, so that "not measured" costs
//! nothing at all: an [`Unmeasured`] executor runs exactly the instructions
//! of one built before telemetry existed. The core
//! [`AsyncExecutor`](crate::executor::AsyncExecutor) takes every setting;
//! `dinah-std`'s `LocalExecutor` is `Unmeasured` unless built with
//! telemetry, when it is `Timed` with the clock of its telemetry
//! configuration (its `Measured`).
#![forbid(unsafe_code)]

use core::fmt;
use core::marker::PhantomData;

use super::Clock;
use crate::atomic::Ordering;

mod sealed {
    pub trait Sealed {}
}

/// How much an executor measures: [`Unmeasured`] (the default: no RAM, no
/// instructions), [`Counted`] (per-task counts of polls and wakes) or
/// [`Timed`] (the counts, and every wake stamped with a clock, so that each
/// poll's wait is known).
///
/// Sealed: the executors rely on exactly these. Its items are the
/// executors' business.
pub trait Measure: sealed::Sealed + 'static {
    /// Whether anything at all is measured.
    const MEASURED: bool;
    /// What each slot's queue cell keeps for it (written by wakers).
    #[doc(hidden)]
    type Shared: Sync;
    #[doc(hidden)]
    const SHARED: Self::Shared;
    /// What the executor keeps for each slot (its own thread only).
    #[doc(hidden)]
    type Local;
    #[doc(hidden)]
    const LOCAL: Self::Local;
    #[doc(hidden)]
    fn stale(shared: &Self::Shared);
    #[doc(hidden)]
    fn reset(shared: &Self::Shared, local: &mut Self::Local);
    #[doc(hidden)]
    fn polled(local: &mut Self::Local, woken: bool, self_woken: bool);
    /// Where the slot keeps its task's name, if it keeps one (only a
    /// measuring executor does).
    #[doc(hidden)]
    #[inline(always)]
    fn name_slot(local: &mut Self::Local) -> Option<&mut Option<&'static str>> {
        let _ = local;
        None
    }
    /// Whether wakes are stamped ([`queued`](Self::queued) reads a clock).
    #[doc(hidden)]
    const STAMPS: bool = false;
    /// Stamps the moment a cell became queued. Called only by the party
    /// that set `QUEUED`, before it queues the cell.
    #[doc(hidden)]
    #[inline(always)]
    fn queued(shared: &Self::Shared) {
        let _ = shared;
    }
    /// The stamp of the wake (or spawn) that queued the cell, if stamps are
    /// kept. Read by the consumer while the cell is still `QUEUED`.
    #[doc(hidden)]
    #[inline(always)]
    fn stamp(shared: &Self::Shared) -> Option<u32> {
        let _ = shared;
        None
    }
    /// Ticks from `stamp` to now.
    #[doc(hidden)]
    #[inline(always)]
    fn since(stamp: u32) -> u64 {
        let _ = stamp;
        0
    }
    /// The counts kept for a slot's task, if counts are kept.
    #[doc(hidden)]
    #[inline(always)]
    fn counts(shared: &Self::Shared, local: &Self::Local) -> Option<Counts> {
        let _ = (shared, local);
        None
    }
    /// The rate of the stamps' ticks (0 without stamps).
    #[doc(hidden)]
    #[inline(always)]
    fn ticks_per_second() -> u64 {
        0
    }
}

/// Measure nothing (the default).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Unmeasured;

/// Count each task's polls, wakes, self-wakes and stale wakes: 16 bytes per
/// slot in the core executor and 4 in its queue (the stale-wake count,
/// which wakers update from any context).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Counted;

/// Count as [`Counted`] does, and stamp every wake that queues a task, and
/// every spawn, with clock `K`: 16 bytes per slot in the core executor and
/// 8 in its queue.
///
/// An executor over a `Timed` queue tells its
/// [`PollObserver`](super::PollObserver) how long each poll waited, since the
/// wake that queued it or, for a first poll, since the spawn
/// ([`poll_waited`](super::PollObserver::poll_waited));
/// [`PollTimes`](super::PollTimes) keeps those as its `wake_to_poll` and
/// `first_poll_delay` histograms. Each wake that queues a task reads the
/// clock once; a wake that coalesces with a queued one, or comes too late,
/// does not.
///
/// On the core executor `K` is read where no instance can be carried (a
/// waker holds only a pointer), so it is a zero-sized clock over one source
/// (`K::default()` reads it): see [`Clock`]. Only the low 32 bits of a stamp
/// are kept, so a wait longer than 2<sup>32</sup> ticks reads as wrapped.
pub struct Timed<K: Clock>(PhantomData<fn() -> K>);

impl<K: Clock> Clone for Timed<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Clock> Copy for Timed<K> {}

impl<K: Clock> Default for Timed<K> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<K: Clock> fmt::Debug for Timed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Timed")
    }
}

impl sealed::Sealed for Unmeasured {}
impl sealed::Sealed for Counted {}
impl<K: Clock> sealed::Sealed for Timed<K> {}

/// What a measured executor keeps per task slot: its counts.
#[doc(hidden)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Counts {
    /// Times the task was polled.
    pub polls: u32,
    /// Polls caused by a wake.
    pub wakes: u32,
    /// Of those, wakes during its own poll (without a context function,
    /// from any thread or interrupt; see [`ReadyQueue`](crate::ReadyQueue)'s
    /// "Telling a task's own wakes apart").
    pub self_wakes: u32,
    /// Wakes after it was over.
    pub stale_wakes: u32,
    /// The task's name, if it was spawned with one.
    pub name: Option<&'static str>,
}

const NO_COUNTS: Counts = Counts {
    polls: 0,
    wakes: 0,
    self_wakes: 0,
    stale_wakes: 0,
    name: None,
};

/// Counts a poll.
fn count_poll(local: &mut Counts, woken: bool, self_woken: bool) {
    local.polls = local.polls.wrapping_add(1);
    if woken {
        local.wakes = local.wakes.wrapping_add(1);
    }
    if self_woken {
        local.self_wakes = local.self_wakes.wrapping_add(1);
    }
}

impl Measure for Unmeasured {
    const MEASURED: bool = false;
    type Shared = ();
    const SHARED: () = ();
    type Local = ();
    const LOCAL: () = ();
    #[inline(always)]
    fn stale(_: &()) {}
    #[inline(always)]
    fn reset(_: &(), _: &mut ()) {}
    #[inline(always)]
    fn polled(_: &mut (), _: bool, _: bool) {}
}

/// The stale-wake count a waker bumps. Plain `portable-atomic` even under
/// loom: a statistic, not part of the wake protocol.
#[doc(hidden)]
pub struct StaleCount(portable_atomic::AtomicU32);

impl StaleCount {
    const fn new() -> Self {
        Self(portable_atomic::AtomicU32::new(0))
    }
}

impl Measure for Counted {
    const MEASURED: bool = true;
    type Shared = StaleCount;
    #[allow(clippy::declare_interior_mutable_const)]
    const SHARED: StaleCount = StaleCount::new();
    type Local = Counts;
    const LOCAL: Counts = NO_COUNTS;
    fn stale(shared: &StaleCount) {
        shared.0.fetch_add(1, Ordering::Relaxed);
    }
    fn reset(shared: &StaleCount, local: &mut Counts) {
        shared.0.store(0, Ordering::Relaxed);
        *local = NO_COUNTS;
    }
    fn polled(local: &mut Counts, woken: bool, self_woken: bool) {
        count_poll(local, woken, self_woken);
    }
    fn name_slot(local: &mut Counts) -> Option<&mut Option<&'static str>> {
        Some(&mut local.name)
    }
    fn counts(shared: &StaleCount, local: &Counts) -> Option<Counts> {
        Some(Counts {
            stale_wakes: shared.0.load(Ordering::Relaxed),
            ..*local
        })
    }
}

/// A [`Timed`] cell's share: the stale-wake count and the low 32 bits of the
/// tick at which the cell was last queued. Plain `portable-atomic`, as
/// [`StaleCount`]: the stamp is written before the push that publishes the
/// cell and read after the take that receives it, so the wake stack's own
/// ordering carries it.
#[doc(hidden)]
pub struct WakeStamp {
    stale: StaleCount,
    queued_at: portable_atomic::AtomicU32,
}

impl<K: Clock + Default + 'static> Measure for Timed<K> {
    const MEASURED: bool = true;
    const STAMPS: bool = true;
    type Shared = WakeStamp;
    #[allow(clippy::declare_interior_mutable_const)]
    const SHARED: WakeStamp = WakeStamp {
        stale: StaleCount::new(),
        queued_at: portable_atomic::AtomicU32::new(0),
    };
    type Local = Counts;
    const LOCAL: Counts = NO_COUNTS;
    fn stale(shared: &WakeStamp) {
        Counted::stale(&shared.stale);
    }
    fn reset(shared: &WakeStamp, local: &mut Counts) {
        Counted::reset(&shared.stale, local);
    }
    fn polled(local: &mut Counts, woken: bool, self_woken: bool) {
        count_poll(local, woken, self_woken);
    }
    fn name_slot(local: &mut Counts) -> Option<&mut Option<&'static str>> {
        Some(&mut local.name)
    }
    fn queued(shared: &WakeStamp) {
        // The low 32 bits: waits are wrapping differences of them.
        shared
            .queued_at
            .store(K::default().now() as u32, Ordering::Relaxed);
    }
    fn stamp(shared: &WakeStamp) -> Option<u32> {
        Some(shared.queued_at.load(Ordering::Relaxed))
    }
    fn since(stamp: u32) -> u64 {
        u64::from((K::default().now() as u32).wrapping_sub(stamp))
    }
    fn counts(shared: &WakeStamp, local: &Counts) -> Option<Counts> {
        Counted::counts(&shared.stale, local)
    }
    fn ticks_per_second() -> u64 {
        K::default().ticks_per_second()
    }
}
