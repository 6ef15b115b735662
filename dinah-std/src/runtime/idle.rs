//! [`Idle`]: how many workers are awake and how many of those are
//! searching for work, which of the others sleep, and whom a new task
//! wakes.
//!
//! One word holds both counts, so a spawn decides whether to wake anyone
//! with one load; the list of sleepers is a short lock taken only by a
//! worker going to sleep, by the wake that picks one of them, and by a
//! sleeper that wakes on its own (a timer, a socket).
//!
//! # Invariants
//!
//! 1. `awake` counts the workers not on the sleepers list; `searching`
//!    counts those of them that look for work in other queues; both change
//!    under the sleepers lock, except that a worker starts and stops
//!    searching on its own, with one atomic add or subtract.
//! 2. At most half the workers (rounded up) search at once: a searcher
//!    costs every queue it scans a cache line, and two searchers find each
//!    other's work. With 64 workers, 32 at most scan.
//! 3. A wake for new work goes to a sleeper only when nobody searches (a
//!    searcher will find the work) and somebody sleeps; the woken worker
//!    is counted awake and searching before it runs, so the next spawn
//!    does not wake a second one for the same work.
//! 4. Every worker that goes to sleep, searching or not, looks at every
//!    queue once more after counting itself asleep, and wakes a sleeper
//!    (perhaps itself) if work is there. Work pushed while nobody could be
//!    woken for it (somebody searched, or every worker still counted
//!    itself awake) is not left waiting: the pusher's fence (after its
//!    push, before it reads the counts) and the sleeper's (after it
//!    changes the counts, before it looks) make sure that one of the two
//!    sees the other. Only the last searcher's look would not do: a worker
//!    refused a search (another searched) that goes to sleep while that
//!    searcher takes two tasks, calls for help, finds nobody asleep yet
//!    and is then held by a long poll, would leave the second task in the
//!    held worker's deque until that poll ends.
#![forbid(unsafe_code)]
// Public only for the loom models (`loom_support`).
#![cfg_attr(not(loom), allow(unreachable_pub))]

use crate::primitives::{AtomicUsize, Mutex, Ordering, fence, lock};

/// The searching count's bits: the low half of the word.
const SEARCH_BITS: u32 = usize::BITS / 2;
const SEARCH_MASK: usize = (1 << SEARCH_BITS) - 1;
const ONE_AWAKE: usize = 1 << SEARCH_BITS;

/// The runtime's awake and searching workers, and the sleepers (see the
/// module docs).
pub struct Idle {
    /// `awake << SEARCH_BITS | searching`.
    state: AtomicUsize,
    sleepers: Mutex<Vec<usize>>,
    workers: usize,
}

impl Idle {
    /// Every one of `workers` awake, none searching.
    pub fn new(workers: usize) -> Self {
        Self {
            state: AtomicUsize::new(workers << SEARCH_BITS),
            sleepers: Mutex::new(Vec::with_capacity(workers)),
            workers,
        }
    }

    /// Workers awake, and of those searching.
    pub fn counts(&self) -> (usize, usize) {
        let state = self.state.load(Ordering::SeqCst);
        (state >> SEARCH_BITS, state & SEARCH_MASK)
    }

    /// Workers awake now.
    pub fn awake(&self) -> usize {
        self.counts().0
    }

    /// Whether new work should wake a sleeper (invariant 3).
    fn should_wake(&self) -> bool {
        // Orders the caller's push before this read (invariant 4).
        fence(Ordering::SeqCst);
        let (awake, searching) = self.counts();
        searching == 0 && awake < self.workers
    }

    /// The sleeper to wake for new work, if one should be: already counted
    /// awake and searching.
    pub fn sleeper_to_wake(&self) -> Option<usize> {
        if !self.should_wake() {
            return None;
        }
        let mut sleepers = lock(&self.sleepers);
        if !self.should_wake() {
            return None;
        }
        let worker = sleepers.pop()?;
        self.state.fetch_add(ONE_AWAKE + 1, Ordering::SeqCst);
        Some(worker)
    }

    /// A worker asks to search; refused when half the workers already do
    /// (invariant 2).
    pub fn start_searching(&self) -> bool {
        let (_, searching) = self.counts();
        if 2 * searching >= self.workers.max(2) {
            return false;
        }
        self.state.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// A searching worker stops searching: whether it was the last one
    /// (invariant 4).
    pub fn stop_searching(&self) -> bool {
        let before = self.state.fetch_sub(1, Ordering::SeqCst);
        before & SEARCH_MASK == 1
    }

    /// Worker `worker` goes to sleep (and stops searching if it was):
    /// whether it was the last worker awake. The caller then looks at every
    /// queue (invariant 4).
    pub fn sleep(&self, worker: usize, searching: bool) -> bool {
        let mut sleepers = lock(&self.sleepers);
        let change = ONE_AWAKE + usize::from(searching);
        let before = self.state.fetch_sub(change, Ordering::SeqCst);
        sleepers.push(worker);
        drop(sleepers);
        // Pairs with the fence in `should_wake` (invariant 4): either the
        // pusher sees this worker asleep, or the look at the queues the
        // caller makes next sees the push.
        fence(Ordering::SeqCst);
        before >> SEARCH_BITS == 1
    }

    /// Whether worker `worker` is on the sleepers list (nobody woke it).
    pub fn is_asleep(&self, worker: usize) -> bool {
        lock(&self.sleepers).contains(&worker)
    }

    /// A sleeper that woke on its own (its timers or sockets gave it work)
    /// takes itself off the list: `true` when it was on it (it is now
    /// awake, not searching); `false` when a wake took it off first (it is
    /// awake and searching already).
    pub fn wake_self(&self, worker: usize) -> bool {
        let mut sleepers = lock(&self.sleepers);
        match sleepers.iter().position(|&sleeper| sleeper == worker) {
            Some(at) => {
                sleepers.swap_remove(at);
                self.state.fetch_add(ONE_AWAKE, Ordering::SeqCst);
                true
            }
            None => false,
        }
    }

    /// Every sleeper, for a shutdown to wake; each is counted awake.
    pub fn take_all(&self) -> Vec<usize> {
        let mut sleepers = lock(&self.sleepers);
        self.state
            .fetch_add(ONE_AWAKE * sleepers.len(), Ordering::SeqCst);
        std::mem::take(&mut *sleepers)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_spawn_wakes_one_sleeper_and_only_while_nobody_searches() {
        let idle = Idle::new(4);
        assert_eq!(idle.sleeper_to_wake(), None, "all awake");
        assert!(!idle.sleep(3, false));
        assert!(!idle.sleep(2, false));
        assert_eq!(idle.sleeper_to_wake(), Some(2));
        assert_eq!(idle.counts(), (3, 1));
        assert_eq!(idle.sleeper_to_wake(), None, "one searches already");
        assert!(idle.stop_searching());
        assert_eq!(idle.sleeper_to_wake(), Some(3));
    }

    #[test]
    fn at_most_half_the_workers_search() {
        let idle = Idle::new(4);
        assert!(idle.start_searching() && idle.start_searching());
        assert!(!idle.start_searching());
        assert!(!idle.stop_searching());
        assert!(idle.stop_searching(), "the last searcher says so");
        let single = Idle::new(1);
        assert!(single.start_searching(), "a lone worker may search");
    }

    #[test]
    fn a_sleeper_that_wakes_on_its_own_counts_itself_awake_once() {
        let idle = Idle::new(2);
        assert!(!idle.sleep(0, false));
        assert!(idle.sleep(1, false), "the last awake");
        assert!(idle.is_asleep(1));
        assert!(idle.wake_self(1));
        assert!(!idle.wake_self(1), "already off the list");
        assert_eq!(idle.counts(), (1, 0));
        assert_eq!(idle.take_all(), [0]);
        assert_eq!(idle.awake(), 2);
    }
}
