//! The timer queue's tests: both orders (heap and wheel) against a sorted
//! model, fired wakers in deadline order, kept and replaced wakers, and how
//! far a store grows.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Wake;
use std::vec::Vec;

use proptest::prelude::*;

use super::super::{TimerHeap, Wheel};
use super::*;

struct Count(AtomicUsize);
impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn waker() -> (Waker, Arc<Count>) {
    let count = Arc::new(Count(AtomicUsize::new(0)));
    (Waker::from(Arc::clone(&count)), count)
}

/// Entries in each store below.
const CAP: usize = 16;
/// Ticks the wheel's six levels span; later deadlines wait on its
/// overflow list.
const SPAN: u64 = 1 << 36;

/// A fixed store: a heap orders it.
fn fixed() -> TimerQueue<[TimerEntry<u16>; CAP], u16> {
    TimerQueue::new([const { TimerEntry::VACANT }; CAP])
}

/// A store that grows up to `limit` entries, ordered by `O`.
struct Growing<O> {
    entries: Vec<TimerEntry<u16>>,
    limit: usize,
    order: core::marker::PhantomData<O>,
}
impl<O: TimerOrder<u16>> TimerStore<u16> for Growing<O> {
    type Order = O;
    fn entries(&self) -> &[TimerEntry<u16>] {
        &self.entries
    }
    fn entries_mut(&mut self) -> &mut [TimerEntry<u16>] {
        &mut self.entries
    }
    fn grow(&mut self) -> bool {
        self.entries.len() < self.limit && {
            self.entries.push(TimerEntry::VACANT);
            true
        }
    }
}

fn growing<O: TimerOrder<u16>>(limit: usize) -> TimerQueue<Growing<O>, u16> {
    TimerQueue::new(Growing {
        entries: Vec::new(),
        limit,
        order: core::marker::PhantomData,
    })
}

#[derive(Clone, Debug)]
enum Op {
    Arm(u64),
    Release(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        // Deadlines from the next tick to beyond the wheel's span.
        4 => prop_oneof![1u64..70, 1u64..5_000, 1u64..300_000, 1u64..(SPAN * 3)].prop_map(Op::Arm),
        1 => (0usize..CAP).prop_map(Op::Release),
        3 => prop_oneof![0u64..70, 0u64..5_000, 0u64..400_000, 0u64..(SPAN * 2)].prop_map(Op::Advance),
    ]
}

/// The contract every order keeps, against a model that keeps deadlines
/// in a sorted map: after every advance, exactly the timers due by then
/// have fired, none early, and the next expiry is never after the
/// earliest armed deadline (with `exact`, it is that deadline).
fn fires_exactly_what_is_due<S: TimerStore<u16>>(
    mut queue: TimerQueue<S, u16>,
    ops: Vec<Op>,
    exact: bool,
) -> Result<(), TestCaseError> {
    let (waker, _) = waker();
    let mut armed: BTreeMap<usize, (TimerKey, u64)> = BTreeMap::new();
    let mut held: Vec<TimerKey> = Vec::new();
    let mut now = 0u64;
    for op in ops {
        match op {
            Op::Arm(after) => {
                if let Some(key) = queue.reserve() {
                    let deadline = now + after;
                    prop_assert_eq!(queue.arm(key, deadline, &waker), Armed::Waiting);
                    armed.insert(key.index as usize, (key, deadline));
                    held.push(key);
                } else {
                    prop_assert_eq!(held.len(), CAP, "only a full store refuses");
                }
            }
            Op::Release(i) => {
                if !held.is_empty() {
                    let key = held.swap_remove(i % held.len());
                    let was_armed = armed.remove(&(key.index as usize)).is_some();
                    prop_assert_eq!(queue.release(key).0, was_armed);
                    prop_assert!(matches!(queue.release(key), (false, None)), "stale");
                }
            }
            Op::Advance(by) => {
                now += by;
                let due: Vec<usize> = armed
                    .iter()
                    .filter(|(_, (_, d))| *d <= now)
                    .map(|(i, _)| *i)
                    .collect();
                prop_assert_eq!(queue.expire(now), due.len());
                let mut woken = 0;
                while queue.take_fired().is_some() {
                    woken += 1;
                }
                prop_assert_eq!(woken, due.len());
                for index in due {
                    let (key, _) = armed.remove(&index).unwrap();
                    prop_assert!(!queue.is_armed(key));
                    prop_assert_eq!(queue.arm(key, 0, &waker), Armed::Fired);
                }
            }
        }
        prop_assert_eq!(queue.armed(), armed.len());
        prop_assert_eq!(queue.held(), held.len());
        let earliest = armed.values().map(|(_, d)| *d).min();
        match (queue.next_expiry(), earliest) {
            (None, None) => {}
            (Some(next), Some(earliest)) => {
                prop_assert!(next <= earliest && next > now);
                prop_assert!(!exact || next == earliest, "{} for {}", next, earliest);
            }
            (next, earliest) => {
                prop_assert!(false, "next {:?}, earliest {:?}", next, earliest)
            }
        }
    }
    Ok(())
}

/// Interpreted by Miri, a few short cases cover every path.
fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..if cfg!(miri) { 40 } else { 120 })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 1 } else { 256 }))]

    #[test]
    fn a_heap_fires_exactly_what_is_due_and_names_the_earliest_deadline(ops in ops()) {
        fires_exactly_what_is_due(fixed(), ops, true)?;
    }

    #[test]
    fn a_wheel_fires_exactly_what_is_due(ops in ops()) {
        fires_exactly_what_is_due(growing::<Wheel<u16>>(CAP), ops, false)?;
    }
}

fn deadline_order_and_rearming<S: TimerStore<u16>>(mut queue: TimerQueue<S, u16>) {
    let wakers: Vec<_> = (0..3).map(|_| waker()).collect();
    let keys: Vec<_> = (0..3).map(|_| queue.reserve().unwrap()).collect();
    for (i, deadline) in [300u64, 100, 200].into_iter().enumerate() {
        assert_eq!(queue.arm(keys[i], deadline, &wakers[i].0), Armed::Waiting);
    }
    // Moved from 300 to 50: fires first.
    assert_eq!(queue.arm(keys[0], 50, &wakers[0].0), Armed::Waiting);
    assert_eq!(queue.next_expiry(), Some(50));
    assert_eq!(queue.expire(150), 2);
    assert_eq!(queue.armed(), 1);
    let mut order = Vec::new();
    while let Some(w) = queue.take_fired() {
        order.push(w.data());
        w.wake();
    }
    assert_eq!(
        order,
        [wakers[0].0.data(), wakers[1].0.data()],
        "oldest first"
    );
    let woken: Vec<_> = wakers
        .iter()
        .map(|(_, c)| c.0.load(Ordering::Relaxed))
        .collect();
    assert_eq!(woken, [1, 1, 0]);
    assert_eq!(queue.arm(keys[0], 400, &wakers[0].0), Armed::Fired);
    assert_eq!(
        queue.arm(keys[0], 100, &wakers[0].0),
        Armed::Due,
        "behind the queue's time"
    );
    assert!(queue.release(keys[2]).0, "cancelled while armed");
    assert_eq!(queue.next_expiry(), None);
}

#[test]
fn fired_wakers_come_in_deadline_order_and_rearming_moves_a_timer() {
    deadline_order_and_rearming(fixed());
    deadline_order_and_rearming(growing::<Wheel<u16>>(CAP));
}

/// A store of 4 entries that keeps wakers while `keep` says so, and
/// keeps the replaced one for the test.
struct Keeping {
    entries: [TimerEntry<u16>; 4],
    keep: bool,
    replaced: Option<Waker>,
}

impl TimerStore<u16> for Keeping {
    type Order = TimerHeap<u16, 4>;
    fn entries(&self) -> &[TimerEntry<u16>] {
        &self.entries
    }
    fn entries_mut(&mut self) -> &mut [TimerEntry<u16>] {
        &mut self.entries
    }
    fn grow(&mut self) -> bool {
        false
    }
    fn keeps_wakers(&self) -> bool {
        self.keep
    }
    fn replaced(&mut self, waker: Waker) {
        assert!(self.replaced.replace(waker).is_none(), "taken each time");
    }
}

#[test]
fn a_store_that_keeps_wakers_gets_them_reused_and_replaced_ones_handed_over() {
    let mut queue = TimerQueue::new(Keeping {
        entries: [const { TimerEntry::VACANT }; 4],
        keep: true,
        replaced: None,
    });
    let ((mine, my_count), (other, _)) = (waker(), waker());
    // One strong count for `my_count`, one for `mine`, one per clone.
    let clones = || Arc::strong_count(&my_count) - 2;
    let (key, armed) = queue.start(100, &mine).unwrap();
    assert_eq!(armed, Armed::Waiting);
    assert_eq!(clones(), 1);
    assert!(
        matches!(queue.release(key), (true, None)),
        "the entry keeps it"
    );
    assert_eq!(clones(), 1);
    // The same task again: the entry it reuses still holds its waker,
    // so nothing was cloned or replaced, as far as `will_wake` can tell
    // (it compares vtable addresses, which need not be unique: under
    // Miri two clones of one waker may differ, and then the kept one is
    // replaced by a new clone, and handed to the store).
    let (key, _) = queue.start(200, &mine).unwrap();
    if let Some(replaced) = queue.store_mut().replaced.take() {
        assert_eq!(replaced.data(), mine.data(), "the same task's");
        #[cfg(not(miri))]
        panic!("a native `will_wake` knows a clone of the same waker");
    }
    assert_eq!(clones(), 1, "one clone in the entry, not two");
    assert!(matches!(queue.release(key), (true, None)));
    // Another task: the kept waker goes to the store, not dropped.
    let (key, _) = queue.start(300, &other).unwrap();
    let replaced = queue.store_mut().replaced.take().expect("handed over");
    assert_eq!(replaced.data(), mine.data(), "the kept one");
    drop(replaced);
    assert_eq!(clones(), 0);
    let _ = queue.release(key);
    let mut forgotten = Vec::new();
    queue.forget_kept_wakers(|w| forgotten.push(w));
    assert_eq!(forgotten.len(), 1);
    assert_eq!(forgotten[0].data(), other.data());
    // Not keeping: a release hands the waker back at once.
    queue.store_mut().keep = false;
    let (key, _) = queue.start(400, &mine).unwrap();
    assert!(
        queue
            .release(key)
            .1
            .is_some_and(|w| w.data() == mine.data())
    );
    let mut none = 0;
    queue.forget_kept_wakers(|_| none += 1);
    assert_eq!(none, 0);
}

#[test]
fn a_growing_store_grows_until_its_index_type_is_full() {
    let mut queue = growing::<Wheel<u16>>(usize::MAX);
    for _ in 0..3 {
        assert!(queue.reserve().is_some(), "it grows");
    }
    assert_eq!(queue.store.entries.len(), 3);
    // The last index a u16 names is 65,534 (stored as 65,535; 0 is
    // none): past it, the store refuses rather than wrap.
    assert_eq!(<u16 as TimerIndex>::of(65_534).get(), Some(65_534));
    assert_eq!(<u16 as TimerIndex>::NONE.get(), None);
    queue.fresh = <u16 as TimerIndex>::LIMIT;
    assert_eq!(queue.reserve(), None, "no index left");
    assert_eq!(queue.store.entries.len(), 3, "and it did not grow");
}

#[test]
fn a_growing_store_ordered_by_a_heap_stops_at_the_heaps_capacity() {
    let mut queue = growing::<TimerHeap<u16, 2>>(usize::MAX);
    let (waker, _) = waker();
    for deadline in [20, 10] {
        assert!(matches!(
            queue.start(deadline, &waker),
            Some((_, Armed::Waiting))
        ));
    }
    assert_eq!(queue.reserve(), None, "the heap holds two");
    assert_eq!(queue.store.entries.len(), 2, "and the store did not grow");
    assert_eq!(queue.expire(20), 2);
}
