//! [`ScheduledIo`]: one registered source's readiness and the tasks
//! waiting on it, in each direction.
//!
//! # The wait protocol
//!
//! 1. A readiness word is its flags (low byte) and a count of the events
//!    that set them. An operation clears the flags it found wanting
//!    (`WouldBlock`) only if the count is still the one it read: readiness
//!    that came in between is never lost.
//! 2. Each direction keeps a list of waiters, not one: every task that
//!    waits the same way is in it. A waiter is stored before the task
//!    looks at the readiness a last time, and an event sets readiness
//!    before it takes the waiters; so either the task sees the readiness
//!    or the event sees the waiter.
//! 3. An event takes every waiter of each direction it makes ready (as
//!    tokio's `ScheduledIo` does): each task retries its operation, those
//!    that find `WouldBlock` wait again. Nobody is woken in a waiter's
//!    place and nobody is dropped.
//! 4. A waiter is keyed: an `async` operation's future keeps its key and
//!    takes its waiter back out when dropped, so a future given up (a
//!    `select` that lost) leaves nothing behind. A `poll_*` call has no
//!    future to keep a key in: its waiter (one per task, found by
//!    `Waker::will_wake`) stays until the next event in its direction or
//!    the source's drop.
//! 5. Wakers are woken after the waiters' lock is let go.
//!
//! `tests/loom_reactor.rs` model-checks 2 and 3: two tasks waiting one
//! way against the event that readies it, and a waiter given up against
//! the event.
#![forbid(unsafe_code)]

use std::task::{Context, Poll, Waker};

use super::Interest;
use crate::primitives::{AtomicU64, Mutex, Ordering, lock};

pub(crate) const READABLE: u64 = 1;
pub(crate) const WRITABLE: u64 = 1 << 1;
pub(crate) const READ_CLOSED: u64 = 1 << 2;
pub(crate) const WRITE_CLOSED: u64 = 1 << 3;
pub(crate) const ERROR: u64 = 1 << 4;
const FLAGS: u64 = 0xff;
const TICK: u64 = 1 << 8;

/// The flags that make an operation in `interest` worth trying.
const fn wanted(interest: Interest) -> u64 {
    match interest {
        Interest::Read => READABLE | READ_CLOSED | ERROR,
        Interest::Write => WRITABLE | WRITE_CLOSED | ERROR,
    }
}

/// No readiness stamp waiting to be measured.
pub(crate) const UNSTAMPED: u64 = u64::MAX;

/// Which waiter an operation is (invariant 4): `ANONYMOUS` for a `poll_*`
/// call, a key of its own for an `async` operation's future.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct WaitKey(u64);

impl WaitKey {
    /// A `poll_*` call's: no key, found by its waker.
    pub(crate) const ANONYMOUS: Self = Self(0);
    /// An `async` operation's before it first waits: it is given a key of
    /// its own then, so an operation that never waits takes no lock for it.
    pub(crate) const FRESH: Self = Self(u64::MAX);

    /// Whether this waiter has a key of its own in a list.
    const fn is_keyed(self) -> bool {
        self.0 != Self::ANONYMOUS.0 && self.0 != Self::FRESH.0
    }
}

/// One registered source's readiness and waiters.
#[derive(Debug)]
pub(crate) struct ScheduledIo {
    /// Flags and an event count (invariant 1). A new source is taken as
    /// ready both ways: the first operation tries, and a `WouldBlock`
    /// clears the flag.
    readiness: AtomicU64,
    waiters: Mutex<Waiters>,
    /// When (µs on the reactor's clock) readiness last came that no
    /// operation has used yet.
    pub(crate) ready_at: AtomicU64,
}

#[derive(Debug, Default)]
struct Waiters {
    read: Vec<(WaitKey, Waker)>,
    write: Vec<(WaitKey, Waker)>,
    /// The last key handed out.
    keys: u64,
}

impl Waiters {
    fn list(&mut self, interest: Interest) -> &mut Vec<(WaitKey, Waker)> {
        match interest {
            Interest::Read => &mut self.read,
            Interest::Write => &mut self.write,
        }
    }

    /// Stores `waker` as `key`'s waiter (handing out a key to a keyed
    /// operation that has none yet).
    fn store(&mut self, interest: Interest, key: &mut WaitKey, waker: &Waker) {
        if *key == WaitKey::FRESH {
            self.keys += 1;
            *key = WaitKey(self.keys);
        }
        if key.is_keyed() {
            let list = self.list(interest);
            match list.iter_mut().find(|(held, _)| held == key) {
                Some((_, held)) => {
                    if !held.will_wake(waker) {
                        held.clone_from(waker);
                    }
                }
                None => list.push((*key, waker.clone())),
            }
            return;
        }
        let list = self.list(interest);
        if !list.iter().any(|(_, held)| held.will_wake(waker)) {
            list.push((WaitKey::ANONYMOUS, waker.clone()));
        }
    }
}

impl ScheduledIo {
    /// A source ready both ways, with no waiter.
    pub(crate) fn new() -> Self {
        Self {
            readiness: AtomicU64::new(READABLE | WRITABLE),
            waiters: Mutex::new(Waiters::default()),
            ready_at: AtomicU64::new(UNSTAMPED),
        }
    }

    /// An event's flags (invariants 1 and 3): set, counted, and every
    /// waiter of the directions they concern taken into `woken`.
    pub(crate) fn set_ready(&self, flags: u64, now: u64, woken: &mut Vec<Waker>) {
        let mut word = self.readiness.load(Ordering::Acquire);
        loop {
            let next = ((word & !FLAGS).wrapping_add(TICK)) | (word & FLAGS) | flags;
            match self.readiness.compare_exchange_weak(
                word,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(seen) => word = seen,
            }
        }
        self.ready_at.store(now, Ordering::Relaxed);
        let mut waiters = lock(&self.waiters);
        for interest in [Interest::Read, Interest::Write] {
            if flags & wanted(interest) != 0 {
                woken.extend(waiters.list(interest).drain(..).map(|(_, waker)| waker));
            }
        }
    }

    /// The readiness word if it says `interest` may go ahead; otherwise
    /// stores `cx`'s waker as `key`'s waiter (invariant 2) and returns
    /// `Pending`.
    pub(crate) fn poll_ready(
        &self,
        interest: Interest,
        key: &mut WaitKey,
        cx: &mut Context<'_>,
    ) -> Poll<u64> {
        let word = self.readiness.load(Ordering::Acquire);
        if word & wanted(interest) != 0 {
            return Poll::Ready(word);
        }
        lock(&self.waiters).store(interest, key, cx.waker());
        let word = self.readiness.load(Ordering::Acquire);
        if word & wanted(interest) != 0 {
            Poll::Ready(word)
        } else {
            Poll::Pending
        }
    }

    /// Takes `key`'s waiter back out, if it is still waiting (a future
    /// dropped before its operation completed).
    pub(crate) fn forget(&self, interest: Interest, key: WaitKey) {
        if !key.is_keyed() {
            return;
        }
        let gone = {
            let mut waiters = lock(&self.waiters);
            let list = waiters.list(interest);
            list.iter()
                .position(|(held, _)| *held == key)
                .map(|at| list.swap_remove(at))
        };
        drop(gone);
    }

    /// Clears `interest`'s readiness flags, if no event came since `seen`
    /// was read (invariant 1). Closed and error flags stay: they are final.
    pub(crate) fn clear(&self, seen: u64, interest: Interest) {
        let clear = match interest {
            Interest::Read => READABLE,
            Interest::Write => WRITABLE,
        };
        let _ = self.readiness.compare_exchange(
            seen,
            seen & !clear,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// How many events set readiness so far (wrapping).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn events(&self) -> u64 {
        self.readiness.load(Ordering::Relaxed) >> 8
    }

    /// Whether `interest`'s own flag is set.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_ready(&self, interest: Interest) -> bool {
        let flag = match interest {
            Interest::Read => READABLE,
            Interest::Write => WRITABLE,
        };
        self.readiness.load(Ordering::Acquire) & flag != 0
    }

    /// The waiters in `interest`'s list now.
    #[cfg(any(test, loom))]
    pub(crate) fn waiting(&self, interest: Interest) -> usize {
        lock(&self.waiters).list(interest).len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn waker() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (Arc::clone(&count), Waker::from(count))
    }

    fn wakes(count: &Count) -> usize {
        count.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A source with `interest` found wanting once.
    fn not_ready(interest: Interest) -> ScheduledIo {
        let io = ScheduledIo::new();
        io.clear(io.readiness.load(Ordering::Acquire), interest);
        io
    }

    #[test]
    fn an_event_wakes_every_waiter_of_its_direction_in_both_directions() {
        for interest in [Interest::Read, Interest::Write] {
            let io = not_ready(interest);
            let tasks: Vec<_> = (0..3).map(|_| waker()).collect();
            for (n, (_, waker)) in tasks.iter().enumerate() {
                // Keyed and anonymous waiters alike.
                let mut key = if n == 0 {
                    WaitKey::FRESH
                } else {
                    WaitKey::ANONYMOUS
                };
                let mut cx = Context::from_waker(waker);
                assert!(io.poll_ready(interest, &mut key, &mut cx).is_pending());
            }
            assert_eq!(io.waiting(interest), 3);
            let mut woken = Vec::new();
            let flag = match interest {
                Interest::Read => READABLE,
                Interest::Write => WRITABLE,
            };
            io.set_ready(flag, UNSTAMPED, &mut woken);
            woken.drain(..).for_each(Waker::wake);
            for (count, _) in &tasks {
                assert_eq!(wakes(count), 1, "{interest}: each waiter woken once");
            }
            assert_eq!(io.waiting(interest), 0);
        }
    }

    #[test]
    fn an_event_of_one_direction_leaves_the_others_waiters() {
        let io = not_ready(Interest::Read);
        io.clear(io.readiness.load(Ordering::Acquire), Interest::Write);
        let (reader, read_waker) = waker();
        let (writer, write_waker) = waker();
        let mut key = WaitKey::ANONYMOUS;
        assert!(
            io.poll_ready(
                Interest::Read,
                &mut key,
                &mut Context::from_waker(&read_waker)
            )
            .is_pending()
        );
        assert!(
            io.poll_ready(
                Interest::Write,
                &mut key,
                &mut Context::from_waker(&write_waker)
            )
            .is_pending()
        );
        let mut woken = Vec::new();
        io.set_ready(WRITABLE, UNSTAMPED, &mut woken);
        woken.drain(..).for_each(Waker::wake);
        assert_eq!((wakes(&reader), wakes(&writer)), (0, 1));
        assert_eq!(io.waiting(Interest::Read), 1);
        // An error concerns both ways.
        io.set_ready(ERROR, UNSTAMPED, &mut woken);
        woken.drain(..).for_each(Waker::wake);
        assert_eq!(wakes(&reader), 1);
    }

    #[test]
    fn one_task_waiting_again_is_one_waiter_and_a_forgotten_key_leaves() {
        let io = not_ready(Interest::Read);
        let (_, task) = waker();
        let mut cx = Context::from_waker(&task);
        let mut anonymous = WaitKey::ANONYMOUS;
        for _ in 0..3 {
            assert!(
                io.poll_ready(Interest::Read, &mut anonymous, &mut cx)
                    .is_pending()
            );
        }
        // `will_wake` is best-effort: Miri gives a vtable a fresh address at
        // each use, so there the same task may be kept more than once (each
        // copy is woken: a spurious wake, never a lost one).
        let anonymous = io.waiting(Interest::Read);
        if cfg!(miri) {
            assert!((1..=3).contains(&anonymous), "{anonymous}");
        } else {
            assert_eq!(anonymous, 1, "found by will_wake");
        }
        let mut key = WaitKey::FRESH;
        for _ in 0..3 {
            assert!(
                io.poll_ready(Interest::Read, &mut key, &mut cx)
                    .is_pending()
            );
        }
        assert_eq!(
            io.waiting(Interest::Read),
            anonymous + 1,
            "a keyed waiter is its own"
        );
        io.forget(Interest::Read, key);
        assert_eq!(io.waiting(Interest::Read), anonymous);
        // Forgetting twice, or a key never stored, changes nothing.
        io.forget(Interest::Read, key);
        io.forget(Interest::Read, WaitKey::FRESH);
        io.forget(Interest::Read, WaitKey::ANONYMOUS);
        assert_eq!(io.waiting(Interest::Read), anonymous);
    }

    #[test]
    fn a_keyed_waiter_that_moves_to_another_task_keeps_one_entry() {
        let io = not_ready(Interest::Read);
        let (first, first_waker) = waker();
        let (second, second_waker) = waker();
        let mut key = WaitKey::FRESH;
        let _ = io.poll_ready(
            Interest::Read,
            &mut key,
            &mut Context::from_waker(&first_waker),
        );
        let _ = io.poll_ready(
            Interest::Read,
            &mut key,
            &mut Context::from_waker(&second_waker),
        );
        assert_eq!(io.waiting(Interest::Read), 1);
        let mut woken = Vec::new();
        io.set_ready(READABLE, UNSTAMPED, &mut woken);
        woken.drain(..).for_each(Waker::wake);
        assert_eq!(
            (wakes(&first), wakes(&second)),
            (0, 1),
            "the last poll's waker"
        );
    }

    #[test]
    fn readiness_that_comes_during_an_operation_is_not_cleared_by_its_would_block() {
        let io = ScheduledIo::new();
        let seen = io.readiness.load(Ordering::Acquire);
        // An event lands between the read of the word and the clear.
        io.set_ready(READABLE, 0, &mut Vec::new());
        io.clear(seen, Interest::Read);
        assert!(io.is_ready(Interest::Read));
        // With no event in between, the clear holds.
        let seen = io.readiness.load(Ordering::Acquire);
        io.clear(seen, Interest::Read);
        assert!(!io.is_ready(Interest::Read));
        assert_eq!(io.events(), 1);
    }
}

/// The wait protocol as a loom model drives it: a source's readable
/// direction, with an operation that takes one of a count of items (a
/// listener's backlog) or finds `WouldBlock`.
#[cfg(loom)]
#[derive(Debug)]
pub struct ModelSource {
    io: ScheduledIo,
    items: AtomicU64,
}

#[cfg(loom)]
impl ModelSource {
    /// A source found not readable once, with nothing in it.
    #[must_use]
    pub fn new() -> Self {
        let io = ScheduledIo::new();
        io.clear(io.readiness.load(Ordering::Acquire), Interest::Read);
        Self {
            io,
            items: AtomicU64::new(0),
        }
    }

    /// A fresh `async` operation's key.
    #[must_use]
    pub fn fresh_key() -> u64 {
        WaitKey::FRESH.0
    }

    /// One poll of a read operation waiting under `key`: `Ready` once it
    /// took an item, as the reactor's operation loop does.
    pub fn poll_take(&self, key: &mut u64, cx: &mut Context<'_>) -> Poll<()> {
        let mut wait = WaitKey(*key);
        let poll = loop {
            let Poll::Ready(seen) = self.io.poll_ready(Interest::Read, &mut wait, cx) else {
                break Poll::Pending;
            };
            let items = self.items.load(Ordering::Acquire);
            if items > 0
                && self
                    .items
                    .compare_exchange(items, items - 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            {
                break Poll::Ready(());
            }
            if items > 0 {
                continue;
            }
            self.io.clear(seen, Interest::Read);
        };
        *key = wait.0;
        poll
    }

    /// Takes back the waiter under `key` (the operation was dropped).
    pub fn forget(&self, key: u64) {
        self.io.forget(Interest::Read, WaitKey(key));
    }

    /// Adds `n` items and delivers the readiness event for them, waking
    /// the waiters it takes.
    pub fn arrive(&self, n: u64) {
        self.items.fetch_add(n, Ordering::AcqRel);
        let mut woken = Vec::new();
        self.io.set_ready(READABLE, UNSTAMPED, &mut woken);
        woken.into_iter().for_each(Waker::wake);
    }

    /// Waiters in the list now.
    #[must_use]
    pub fn waiting(&self) -> usize {
        self.io.waiting(Interest::Read)
    }
}

#[cfg(loom)]
impl Default for ModelSource {
    fn default() -> Self {
        Self::new()
    }
}
