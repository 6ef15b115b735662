//! [`Reactor`]: readiness from the operating system (through `mio`) turned
//! into wakes.
//!
//! Each registered source has a [`ScheduledIo`]: its readiness, every
//! task waiting to read and to write, and a stamp of when readiness came
//! (its wait protocol is numbered in `scheduled.rs`). A source is
//! registered once, for both directions, edge-triggered; it is never
//! re-armed, so the steady state makes no `epoll_ctl` call.
//!
//! # Invariants
//!
//! 1. A token is a slot index and that slot's generation. Freeing a slot
//!    bumps its generation, so an event still in flight for a dropped
//!    source (or one for a slot reused since) matches no live
//!    registration: it is counted as stale and dropped.
//! 2. The readiness and waiters of a source follow `ScheduledIo`'s wait
//!    protocol: no readiness is lost to a `WouldBlock`, and an event wakes
//!    every task waiting in the directions it readies.
//! 3. Wakers are woken after every lock is let go (but the poll's own,
//!    which no waker takes).
//! 4. The reactor's waker is the executor's: a monitor on another thread
//!    that looks at the reactor (without waiting) and takes its wake
//!    sends it again, so a wait the executor enters next still returns.
#![forbid(unsafe_code)]

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use dinah_core::telemetry::Log2Histogram;

use super::scheduled::{
    ERROR, READ_CLOSED, READABLE, ScheduledIo, UNSTAMPED, WRITABLE, WRITE_CLOSED, WaitKey,
};
use super::{Interest, IoFigures};
use crate::primitives::lock_std;
use crate::runtime::park::Blocker;

const WAKE_TOKEN: mio::Token = mio::Token(usize::MAX);
const EVENTS: usize = 256;

/// A live registration: its readiness and waiters, and what it is (for
/// the diagnosis).
type Live = (Arc<ScheduledIo>, Arc<str>);

/// The slab of registrations.
#[derive(Default)]
struct Slots {
    /// Each slot's generation, and its live source.
    slots: Vec<(u32, Option<Live>)>,
    free: Vec<u32>,
}

/// Counters readable from any thread.
#[derive(Default)]
struct Counts {
    registered: AtomicU64,
    deregistered: AtomicU64,
    events: AtomicU64,
    stale: AtomicU64,
    would_block: AtomicU64,
    reactor_wakes: AtomicU64,
    /// Wakes the executor's own waits saw.
    wakes_seen: AtomicU64,
    lag: Mutex<Log2Histogram<24>>,
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

/// The poll, its events, and a buffer for the wakers they take.
type PollState = (mio::Poll, mio::Events, Vec<Waker>);

/// An executor's reactor: a `mio::Poll` it waits in, a waker other
/// threads cut that wait short with, and the registered sources.
pub(crate) struct Reactor {
    /// The poll, its events, and the wakers an event took (kept for its
    /// capacity).
    poll: Mutex<PollState>,
    registry: mio::Registry,
    waker: mio::Waker,
    slots: Mutex<Slots>,
    counts: Counts,
    base: Instant,
    /// Whether readiness is stamped and its use timed (a measuring
    /// executor's reactor): two clock reads per readiness used.
    measured: bool,
}

impl Reactor {
    pub(crate) fn new(measured: bool) -> io::Result<Self> {
        let poll = mio::Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = mio::Waker::new(poll.registry(), WAKE_TOKEN)?;
        Ok(Self {
            poll: Mutex::new((poll, mio::Events::with_capacity(EVENTS), Vec::new())),
            registry,
            waker,
            slots: Mutex::new(Slots::default()),
            counts: Counts::default(),
            base: Instant::now(),
            measured,
        })
    }

    fn micros(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_micros()).unwrap_or(u64::MAX - 1)
    }

    /// Registers `source` for both directions, edge-triggered.
    pub(crate) fn register(
        &self,
        source: &mut impl mio::event::Source,
        label: Arc<str>,
    ) -> io::Result<(mio::Token, Arc<ScheduledIo>)> {
        let io = Arc::new(ScheduledIo::new());
        let token = {
            let mut slots = lock_std(&self.slots);
            let index = match slots.free.pop() {
                Some(index) => index,
                None => {
                    // The all-ones index is left out, so no token is
                    // `WAKE_TOKEN`.
                    let index = u32::try_from(slots.slots.len())
                        .ok()
                        .filter(|&index| (index as usize) < LOW)
                        .ok_or_else(|| io::Error::other("dinah: too many registrations"))?;
                    slots.slots.push((0, None));
                    index
                }
            };
            let entry = &mut slots.slots[index as usize];
            entry.1 = Some((Arc::clone(&io), label));
            token(index, entry.0)
        };
        if let Err(error) = self.registry.register(
            source,
            token,
            mio::Interest::READABLE | mio::Interest::WRITABLE,
        ) {
            self.free(token);
            return Err(error);
        }
        add(&self.counts.registered, 1);
        Ok((token, io))
    }

    /// Deregisters `source` and frees its slot (invariant 1). Wakers left
    /// in it are dropped.
    pub(crate) fn deregister(&self, source: &mut impl mio::event::Source, token: mio::Token) {
        // A source the OS already forgot (closed elsewhere) still frees its
        // slot.
        let _ = self.registry.deregister(source);
        self.free(token);
        add(&self.counts.deregistered, 1);
    }

    fn free(&self, token: mio::Token) {
        let (index, generation) = split(token);
        let gone = {
            let mut slots = lock_std(&self.slots);
            match slots.slots.get_mut(index as usize) {
                Some(entry) if entry.0 == generation => {
                    entry.0 = u32::try_from(entry.0.wrapping_add(1) as usize & LOW).unwrap_or(0);
                    let gone = entry.1.take();
                    slots.free.push(index);
                    gone
                }
                _ => None,
            }
        };
        drop(gone);
    }

    /// Hands out the readiness there is now, without waiting, unless the
    /// executor's thread is in the reactor (then it hands it out itself).
    /// For a monitor on another thread.
    pub(crate) fn turn_if_free(&self) {
        match self.poll.try_lock() {
            Ok(guard) => self.turn_locked(guard, Some(Duration::ZERO), true),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => {
                self.turn_locked(poisoned.into_inner(), Some(Duration::ZERO), true);
            }
            Err(std::sync::TryLockError::WouldBlock) => {}
        }
    }

    /// Hands out readiness for up to `timeout`.
    fn turn(&self, timeout: Option<Duration>) {
        self.turn_locked(lock_std(&self.poll), timeout, false);
    }

    /// [`turn`](Self::turn) under the poll's lock; `for_monitor` when
    /// another thread than the executor's looks.
    fn turn_locked(
        &self,
        mut guard: MutexGuard<'_, PollState>,
        timeout: Option<Duration>,
        for_monitor: bool,
    ) {
        let (poll, events, woken) = &mut *guard;
        {
            match poll.poll(events, timeout) {
                Ok(()) => {}
                // A signal cut the wait short; the executor looks again.
                Err(error) if error.kind() == io::ErrorKind::Interrupted => return,
                Err(error) => panic!("dinah: the reactor's poll failed: {error}"),
            }
            if events.is_empty() {
                return;
            }
            let now = if self.measured {
                self.micros()
            } else {
                UNSTAMPED
            };
            let slots = lock_std(&self.slots);
            for event in events.iter() {
                let token = event.token();
                if token == WAKE_TOKEN {
                    // A wake meant for the executor's wait (invariant 4):
                    // a monitor that took it sends it on, or the executor,
                    // about to wait, would miss it.
                    if !for_monitor {
                        add(&self.counts.wakes_seen, 1);
                    } else if let Err(error) = self.waker.wake() {
                        panic!("dinah: the reactor's waker failed: {error}");
                    }
                    continue;
                }
                add(&self.counts.events, 1);
                let (index, generation) = split(token);
                let io = match slots.slots.get(index as usize) {
                    Some((live, Some((io, _)))) if *live == generation => io,
                    _ => {
                        add(&self.counts.stale, 1);
                        continue;
                    }
                };
                let mut flags = 0;
                if event.is_readable() {
                    flags |= READABLE;
                }
                if event.is_writable() {
                    flags |= WRITABLE;
                }
                if event.is_read_closed() {
                    flags |= READ_CLOSED;
                }
                if event.is_write_closed() {
                    flags |= WRITE_CLOSED;
                }
                if event.is_error() {
                    flags |= ERROR;
                }
                io.set_ready(flags, now, woken);
            }
        }
        // Outside the slots' lock; the poll's lock is held, but waking
        // only queues tasks (and `unblock` does not take it).
        for waker in woken.drain(..) {
            waker.wake();
        }
    }

    /// The label of `token`'s registration, if it is live.
    pub(crate) fn label(&self, token: mio::Token) -> Option<Arc<str>> {
        let (index, generation) = split(token);
        let slots = lock_std(&self.slots);
        match slots.slots.get(index as usize) {
            Some((live, Some((_, label)))) if *live == generation => Some(Arc::clone(label)),
            _ => None,
        }
    }

    /// Notes that an operation found its source not ready after all.
    pub(crate) fn would_block(&self) {
        add(&self.counts.would_block, 1);
    }

    /// Notes that an operation used readiness stamped at `at`.
    fn used(&self, at: u64) {
        let lag = self.micros().saturating_sub(at);
        lock_std(&self.counts.lag).record(lag);
    }

    pub(crate) fn figures(&self) -> IoFigures {
        let registered = self.counts.registered.load(Ordering::Relaxed);
        let deregistered = self.counts.deregistered.load(Ordering::Relaxed);
        IoFigures {
            registered,
            deregistered,
            live: registered.saturating_sub(deregistered),
            events: self.counts.events.load(Ordering::Relaxed),
            stale_events: self.counts.stale.load(Ordering::Relaxed),
            would_block: self.counts.would_block.load(Ordering::Relaxed),
            reactor_wakes: self.counts.reactor_wakes.load(Ordering::Relaxed),
            ready_to_poll_micros: lock_std(&self.counts.lag).clone(),
        }
    }
}

impl Blocker for Reactor {
    fn block(&self, timeout: Option<Duration>) {
        self.turn(timeout);
    }

    fn unblock(&self) {
        add(&self.counts.reactor_wakes, 1);
        if let Err(error) = self.waker.wake() {
            panic!("dinah: the reactor's waker failed: {error}");
        }
    }
}

/// A registered source's end of the reactor: the operations' loop.
pub(crate) struct Registration {
    pub(crate) reactor: Arc<Reactor>,
    pub(crate) io: Arc<ScheduledIo>,
    pub(crate) token: mio::Token,
}

impl Registration {
    /// Runs `op` when `interest` is ready, as often as it reports
    /// `WouldBlock` and readiness comes again; while it waits, `cx`'s
    /// waker is `key`'s waiter (see `ScheduledIo`'s invariant 4). The
    /// caller notes a pending wait in the runtime context.
    ///
    /// Where the OS reports readiness by edges (epoll, kqueue), a result
    /// that `drained` says emptied the socket's buffer (a stream read or
    /// write that moved less than it was given) clears the readiness it
    /// used, as a `WouldBlock` would, without the system call that would
    /// return it: the next operation waits for the next edge. It clears
    /// only if no event came meanwhile (`ScheduledIo`'s invariant 1).
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        interest: Interest,
        key: &mut WaitKey,
        mut op: impl FnMut() -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        // A task whose socket is always ready still yields once its poll
        // has spent its executor's budget.
        if !crate::runtime::context::spend_budget() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        loop {
            let Poll::Ready(seen) = self.io.poll_ready(interest, key, cx) else {
                return Poll::Pending;
            };
            match op() {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    self.reactor.would_block();
                    self.io.clear(seen, interest);
                }
                done => {
                    if EDGE_TRIGGERED && done.as_ref().is_ok_and(&drained) {
                        self.io.clear(seen, interest);
                    }
                    // Stamped only by a measuring executor's reactor.
                    if self.io.ready_at.load(Ordering::Relaxed) != UNSTAMPED {
                        let at = self.io.ready_at.swap(UNSTAMPED, Ordering::Relaxed);
                        if at != UNSTAMPED {
                            self.reactor.used(at);
                        }
                    }
                    return Poll::Ready(done);
                }
            }
        }
    }
}

/// Whether mio reports readiness by edges here (epoll and kqueue do): then
/// a stream operation that moved less than it was given emptied the
/// socket's buffer, and the readiness it used may be cleared at once.
const EDGE_TRIGGERED: bool = cfg!(any(
    target_os = "linux",
    target_os = "android",
    target_os = "illumos",
    target_os = "macos",
    target_os = "ios",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd",
    target_os = "dragonfly",
));

/// A token's low half is the slot's index, its high half the slot's
/// generation (which wraps within the half).
const HALF: u32 = usize::BITS / 2;
const LOW: usize = (1 << HALF) - 1;

fn token(index: u32, generation: u32) -> mio::Token {
    mio::Token(((generation as usize & LOW) << HALF) | index as usize)
}

fn split(token: mio::Token) -> (u32, u32) {
    // Both halves fit in a `u32`: `HALF` is at most 32.
    let index = u32::try_from(token.0 & LOW).unwrap_or(u32::MAX);
    let generation = u32::try_from(token.0 >> HALF).unwrap_or(u32::MAX);
    (index, generation)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn listener() -> mio::net::TcpListener {
        mio::net::TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap()
    }

    /// Makes `listener` readable: a connection waits in its backlog.
    fn knock(listener: &mio::net::TcpListener) -> std::net::TcpStream {
        std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap()
    }

    #[test]
    fn an_event_for_a_freed_or_reused_slot_is_counted_stale_and_wakes_nothing() {
        let reactor = Reactor::new(true).unwrap();
        let mut old = listener();
        let (old_token, old_io) = reactor.register(&mut old, "old".into()).unwrap();
        // The slot is freed while the OS still reports for the source (as
        // when its descriptor lives on in a duplicate): its events now
        // carry a dead token.
        reactor.free(old_token);
        let mut new = listener();
        let (new_token, new_io) = reactor.register(&mut new, "new".into()).unwrap();
        assert_eq!(split(new_token).0, split(old_token).0, "the slot is reused");
        assert_ne!(new_token, old_token, "under a new generation");
        let _knocks = (knock(&old), knock(&new));
        for _ in 0..20 {
            let figures = reactor.figures();
            if figures.stale_events >= 1 && figures.events >= 2 {
                break;
            }
            reactor.turn(Some(Duration::from_secs(1)));
        }
        let figures = reactor.figures();
        assert!(figures.stale_events >= 1, "{figures:?}");
        assert_eq!(figures.events - figures.stale_events, 1, "{figures:?}");
        assert_eq!(old_io.events(), 0, "untouched");
        assert!(new_io.events() > 0, "its own event");
        reactor.deregister(&mut new, new_token);
        reactor.registry.deregister(&mut old).unwrap();
    }

    #[test]
    fn a_wake_a_monitor_took_still_ends_the_executors_next_wait() {
        let reactor = Reactor::new(true).unwrap();
        // Another thread cuts the executor's wait short...
        reactor.unblock();
        // ...and a monitor looks at the reactor first, taking the wake.
        reactor.turn_if_free();
        // The executor's wait still sees it (without it, this would wait
        // out its limit and see nothing).
        reactor.turn(Some(Duration::from_secs(30)));
        assert_eq!(reactor.counts.wakes_seen.load(Ordering::Relaxed), 1);
    }
}
