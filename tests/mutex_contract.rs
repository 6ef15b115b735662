//! One contract, two async mutexes: the core's static `Mutex` and
//! `dinah-std`'s `SharedMutex` run the same logic (a semaphore of one
//! permit and a value lent out of its cell, `raw::wait::Lent`) and pass the
//! same tests here, each future polled by hand with a waker that counts
//! its wakes. `SharedRwLock` and `SharedOnceCell`, std only, follow.

use std::future::Future;
use std::ops::DerefMut;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::Poll;

use dinah::sync::{Mutex, Refusal, SharedMutex, SharedOnceCell, SharedRwLock};

mod support;

use support::keep_forever;
use support::sync_model::Polled;

type Guard<'a> = Box<dyn DerefMut<Target = Vec<u32>> + Send + 'a>;
type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// What the contract asks of a mutex over a `Vec<u32>`.
trait Mutexes: Sync + 'static {
    fn make() -> &'static Self;
    fn lock(&self) -> Boxed<'_, Guard<'_>>;
    fn try_lock(&self) -> Result<Guard<'_>, Refusal>;
    fn is_locked(&self) -> bool;
}

impl Mutexes for Mutex<Vec<u32>, 4> {
    fn make() -> &'static Self {
        keep_forever(Mutex::named("contract", Vec::new()))
    }
    fn lock(&self) -> Boxed<'_, Guard<'_>> {
        let locking = Mutex::lock(self);
        Box::pin(async move { Box::new(locking.await.expect("room in the line")) as Guard<'_> })
    }
    fn try_lock(&self) -> Result<Guard<'_>, Refusal> {
        Mutex::try_lock(self).map(|guard| Box::new(guard) as Guard<'_>)
    }
    fn is_locked(&self) -> bool {
        Mutex::is_locked(self)
    }
}

impl Mutexes for SharedMutex<Vec<u32>> {
    fn make() -> &'static Self {
        keep_forever(SharedMutex::named("contract", Vec::new()))
    }
    fn lock(&self) -> Boxed<'_, Guard<'_>> {
        let locking = SharedMutex::lock(self);
        Box::pin(async move { Box::new(locking.await) as Guard<'_> })
    }
    fn try_lock(&self) -> Result<Guard<'_>, Refusal> {
        SharedMutex::try_lock(self).map(|guard| Box::new(guard) as Guard<'_>)
    }
    fn is_locked(&self) -> bool {
        SharedMutex::is_locked(self)
    }
}

/// The refusal, if it was one.
fn refusal<T>(outcome: Result<T, Refusal>) -> Option<Refusal> {
    outcome.err()
}

fn ready<T>(poll: Poll<T>) -> T {
    match poll {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("still pending"),
    }
}

fn a_guard_holds_the_value_alone_and_gives_it_back<M: Mutexes>() {
    let mutex = M::make();
    let mut guard = ready(Polled::new(mutex.lock()).poll());
    guard.push(1);
    assert!(mutex.is_locked());
    assert_eq!(refusal(mutex.try_lock()), Some(Refusal::WouldWait));
    drop(guard);
    assert!(!mutex.is_locked());
    let mut again = mutex.try_lock().unwrap();
    again.push(2);
    drop(again);
    assert_eq!(**ready(Polled::new(mutex.lock()).poll()), [1, 2]);
}

fn waiters_are_served_in_order_each_woken_once<M: Mutexes>() {
    let mutex = M::make();
    let holder = mutex.try_lock().unwrap();
    let mut waiters: Vec<_> = (0..3).map(|_| Polled::new(mutex.lock())).collect();
    for waiter in &mut waiters {
        assert!(waiter.poll().is_pending());
    }
    drop(holder);
    for turn in 0..3 {
        let woken: Vec<usize> = waiters.iter().map(Polled::woken).collect();
        assert_eq!(woken[turn], 1, "the next in line, once: {woken:?}");
        assert!(woken[turn + 1..].iter().all(|&w| w == 0), "{woken:?}");
        let mut guard = ready(waiters[turn].poll());
        guard.push(u32::try_from(turn).unwrap());
    }
    assert_eq!(**mutex.try_lock().unwrap(), [0, 1, 2]);
}

fn try_lock_never_jumps_the_line<M: Mutexes>() {
    let mutex = M::make();
    let holder = mutex.try_lock().unwrap();
    let mut waiter = Polled::new(mutex.lock());
    assert!(waiter.poll().is_pending());
    drop(holder);
    assert_eq!(waiter.woken(), 1);
    assert_eq!(
        refusal(mutex.try_lock()),
        Some(Refusal::WouldWait),
        "the woken waiter holds its turn"
    );
    assert!(waiter.poll().is_ready());
}

fn a_granted_lock_dropped_passes_the_lock_on<M: Mutexes>() {
    let mutex = M::make();
    let holder = mutex.try_lock().unwrap();
    let mut first = Polled::new(mutex.lock());
    let mut second = Polled::new(mutex.lock());
    assert!(first.poll().is_pending() && second.poll().is_pending());
    drop(holder);
    assert_eq!((first.woken(), second.woken()), (1, 0));
    drop(first); // granted, never seen
    assert_eq!(second.woken(), 1);
    ready(second.poll()).push(9);
    assert_eq!(**mutex.try_lock().unwrap(), [9]);
}

fn a_guard_moves_to_another_thread_and_the_value_comes_back<M: Mutexes>() {
    let mutex = M::make();
    let mut guard = mutex.try_lock().unwrap();
    guard.push(3);
    std::thread::scope(|s| {
        s.spawn(move || guard.push(4));
    });
    assert_eq!(**mutex.try_lock().unwrap(), [3, 4]);
}

fn a_guard_dropped_while_unwinding_puts_the_value_back_as_it_is<M: Mutexes>() {
    let mutex = M::make();
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        let mut guard = mutex.try_lock().unwrap();
        guard.push(5);
        panic!("while holding the lock");
    }));
    assert!(unwound.is_err());
    assert!(!mutex.is_locked(), "no poisoning");
    assert_eq!(**mutex.try_lock().unwrap(), [5]);
}

support::contract!(
    [core: Mutex<Vec<u32>, 4>, hosted: SharedMutex<Vec<u32>>],
    [
        a_guard_holds_the_value_alone_and_gives_it_back,
        waiters_are_served_in_order_each_woken_once,
        try_lock_never_jumps_the_line,
        a_granted_lock_dropped_passes_the_lock_on,
        a_guard_moves_to_another_thread_and_the_value_comes_back,
        a_guard_dropped_while_unwinding_puts_the_value_back_as_it_is,
    ]
);

/// The core mutex's line is bounded by `W`: the next lock is refused.
#[test]
fn a_full_line_refuses_the_next_lock() {
    let mutex: &'static Mutex<u8, 1> = keep_forever(Mutex::new(0));
    let _holder = mutex.try_lock().unwrap();
    let mut waiter = Polled::new(mutex.lock());
    assert!(waiter.poll().is_pending());
    let refused = ready(Polled::new(mutex.lock()).poll());
    assert_eq!(refusal(refused), Some(Refusal::LineFull));
}

/// A shared mutex's waits are named in its figures.
#[test]
fn a_shared_mutex_names_its_line() {
    let mutex = SharedMutex::named("sessions", 0u8);
    let _holder = mutex.try_lock().unwrap();
    let mut waiter = Polled::new(mutex.lock());
    assert!(waiter.poll().is_pending());
    let figures = mutex.figures();
    assert_eq!(figures.name, Some("sessions"));
    assert_eq!(figures.waiting, 1);
}

/// Readers share the value; a writer waits for them, and readers that come
/// after a waiting writer wait behind it.
#[test]
fn a_waiting_writer_is_not_passed_by_later_readers() {
    let lock = SharedRwLock::new(vec![1u32]);
    let first = ready(Polled::new(lock.read()).poll());
    let second = lock.try_read().unwrap();
    assert_eq!(first.len() + second.len(), 2);
    let mut writer = Polled::new(lock.write());
    assert!(writer.poll().is_pending());
    assert_eq!(refusal(lock.try_read()), Some(Refusal::WouldWait));
    let mut late_reader = Polled::new(lock.read());
    assert!(late_reader.poll().is_pending());
    drop(first);
    assert_eq!(writer.woken(), 0, "a reader still reads");
    drop(second);
    assert_eq!((writer.woken(), late_reader.woken()), (1, 0));
    let mut write = ready(writer.poll());
    write.push(2);
    drop(write);
    assert_eq!(late_reader.woken(), 1);
    assert_eq!(*ready(late_reader.poll()), [1, 2]);
    drop((writer, late_reader));
    assert_eq!(lock.into_inner(), Some(vec![1, 2]));
}

/// A writer holds the value alone; a granted write dropped unseen passes
/// the turn on to the readers behind it.
#[test]
fn a_write_excludes_everyone_and_a_dropped_one_passes_on() {
    let lock = SharedRwLock::new(0u32);
    let write = lock.try_write().unwrap();
    assert_eq!(refusal(lock.try_read()), Some(Refusal::WouldWait));
    assert_eq!(refusal(lock.try_write()), Some(Refusal::WouldWait));
    let mut second_writer = Polled::new(lock.write());
    let mut reader = Polled::new(lock.read());
    assert!(second_writer.poll().is_pending() && reader.poll().is_pending());
    drop(write);
    assert_eq!((second_writer.woken(), reader.woken()), (1, 0));
    drop(second_writer);
    assert_eq!(reader.woken(), 1);
    assert_eq!(*ready(reader.poll()), 0);
}

/// One initializer runs; a caller behind it reads what it set. A failed
/// initializer sets nothing and the next runs its own.
#[test]
fn a_once_cell_runs_one_initializer_at_a_time() {
    let cell: SharedOnceCell<u32> = SharedOnceCell::new();
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let gate = std::sync::Mutex::new(gate_rx);
    let runs = std::sync::atomic::AtomicUsize::new(0);
    let mut failing = Polled::new(cell.get_or_try_init(|| async { Err::<u32, _>("no config") }));
    assert_eq!(ready(failing.poll()), Err("no config"));
    assert!(!cell.initialized());
    let slow_init = || async {
        runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::future::poll_fn(|_| {
            if gate.lock().unwrap().try_recv().is_ok() {
                Poll::Ready(7)
            } else {
                Poll::Pending
            }
        })
        .await
    };
    let mut first = Polled::new(cell.get_or_init(slow_init));
    let mut second = Polled::new(cell.get_or_init(|| async { 8 }));
    assert!(first.poll().is_pending());
    assert!(second.poll().is_pending(), "waits for the first to finish");
    assert_eq!(cell.set(9), Err(9), "an initializer runs");
    gate_tx.send(()).unwrap();
    assert_eq!(*ready(first.poll()), 7);
    assert_eq!(second.woken(), 1);
    assert_eq!(*ready(second.poll()), 7, "read, not run");
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(cell.get(), Some(&7));
}
