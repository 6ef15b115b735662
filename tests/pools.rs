//! The pools' contract, run against both `WorkerPool` and `BlockingPool`
//! where they promise the same thing, then each pool's own promises.
//!
//! Overlap is proven with barriers and order with sequences; a task that
//! must still be running when something happens waits on a channel that the
//! test releases afterwards.

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use dinah::pool::{
    AdmissionBound, BlockingConfig, PoolError, PoolReport, PoolSpawner, PoolStats, ShutdownPolicy,
};
use dinah::task::TaskFailureKind;
use dinah::{
    BlockingPool, BoundedQueue, CoreConfig, JoinError, JoinHandle, LocalExecutor, SpawnError,
    WorkerPool,
};

mod support;

const BOOM: &str = "pool task panicked on purpose";

/// What both pools offer, so one test covers both.
trait Pool: Sized {
    const NAME: &'static str;
    /// A pool with `threads` threads and room for `capacity` queued tasks.
    fn build(threads: usize, capacity: usize) -> Self;
    fn spawn<F, R>(&self, f: F) -> Result<JoinHandle<R>, SpawnError<F, std::io::Error>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static;
    fn spawner(&self) -> PoolSpawner;
    fn stats(&self) -> PoolStats;
    fn shutdown(self, policy: ShutdownPolicy) -> PoolReport;
    fn shutdown_with_deadline(self, policy: ShutdownPolicy, deadline: Duration) -> PoolReport;
}

impl Pool for WorkerPool {
    const NAME: &'static str = "dinah-worker";
    fn build(threads: usize, capacity: usize) -> Self {
        WorkerPool::new(CoreConfig::new(threads).unwrap(), capacity).unwrap()
    }
    fn spawn<F, R>(&self, f: F) -> Result<JoinHandle<R>, SpawnError<F, std::io::Error>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.try_spawn(f)
    }
    fn spawner(&self) -> PoolSpawner {
        WorkerPool::spawner(self)
    }
    fn stats(&self) -> PoolStats {
        WorkerPool::stats(self)
    }
    fn shutdown(self, policy: ShutdownPolicy) -> PoolReport {
        WorkerPool::shutdown(self, policy)
    }
    fn shutdown_with_deadline(self, policy: ShutdownPolicy, deadline: Duration) -> PoolReport {
        WorkerPool::shutdown_with_deadline(self, policy, deadline)
    }
}

impl Pool for BlockingPool {
    const NAME: &'static str = "dinah-blocking";
    fn build(threads: usize, capacity: usize) -> Self {
        BlockingPool::new(BlockingConfig::new(threads, capacity)).unwrap()
    }
    fn spawn<F, R>(&self, f: F) -> Result<JoinHandle<R>, SpawnError<F, std::io::Error>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.try_spawn(f)
    }
    fn spawner(&self) -> PoolSpawner {
        BlockingPool::spawner(self)
    }
    fn stats(&self) -> PoolStats {
        BlockingPool::stats(self)
    }
    fn shutdown(self, policy: ShutdownPolicy) -> PoolReport {
        BlockingPool::shutdown(self, policy)
    }
    fn shutdown_with_deadline(self, policy: ShutdownPolicy, deadline: Duration) -> PoolReport {
        BlockingPool::shutdown_with_deadline(self, policy, deadline)
    }
}

/// A task that says it started, then waits for its release and returns 7.
fn gate() -> (
    Sender<()>,
    Receiver<()>,
    impl FnOnce() -> u32 + Send + 'static,
) {
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let task = move || {
        started_tx.send(()).unwrap();
        release_rx.recv().unwrap();
        7
    };
    (release_tx, started_rx, task)
}

/// Occupies every one of `threads` threads with a gated task and waits
/// until all have started. Returns the releases and handles.
fn occupy<P: Pool>(pool: &P, threads: usize) -> (Vec<Sender<()>>, Vec<JoinHandle<u32>>) {
    let mut releases = Vec::new();
    let mut handles = Vec::new();
    for _ in 0..threads {
        let (release, started, task) = gate();
        handles.push(
            pool.spawn(task)
                .unwrap_or_else(|_| panic!("room for the gate")),
        );
        // One at a time, so each has left the queue before the next comes.
        started.recv().unwrap();
        releases.push(release);
    }
    (releases, handles)
}

/// Counts its drops.
#[derive(Debug)]
struct DropProbe(Arc<AtomicUsize>);

impl Drop for DropProbe {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn submit_join_and_ids<P: Pool>() {
    let pool = P::build(2, 8);
    let handles: Vec<_> = (0..4u64)
        .map(|n| pool.spawn(move || n * n).unwrap_or_else(|_| unreachable!()))
        .collect();
    let ids: HashSet<u64> = handles.iter().map(|h| h.id().get()).collect();
    assert_eq!(ids.len(), 4, "{}: every task has its own id", P::NAME);
    let values: Vec<_> = handles.into_iter().map(JoinHandle::join).collect();
    assert_eq!(values, [Ok(0), Ok(1), Ok(4), Ok(9)]);
    let report = pool.shutdown(ShutdownPolicy::Drain);
    assert_eq!(
        (report.completed, report.panicked, report.cancelled),
        (4, 0, 0)
    );
}

fn threads_are_named_and_overlap<P: Pool>() {
    let pool = P::build(2, 8);
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            pool.spawn(move || {
                // Both tasks must run at once to pass the barrier.
                barrier.wait();
                thread::current().name().map(str::to_owned)
            })
            .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    let names: HashSet<String> = handles
        .into_iter()
        .map(|h| h.join().unwrap().expect("named threads"))
        .collect();
    let wanted: HashSet<String> = [1, 2].map(|id| format!("{}-{id}", P::NAME)).into();
    assert_eq!(names, wanted);
    let report = pool.shutdown(ShutdownPolicy::Drain);
    let ids: Vec<u64> = report.workers.iter().map(|w| w.id.get()).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&1) && ids.contains(&2), "{ids:?}");
    assert_eq!(report.workers.iter().map(|w| w.completed).sum::<u64>(), 2);
}

fn full_hands_the_task_back<P: Pool>() {
    let pool = P::build(1, 1);
    let (releases, gates) = occupy(&pool, 1);
    let queued = pool
        .spawn(|| 1u32)
        .unwrap_or_else(|_| panic!("one queued fits"));
    let Err(SpawnError::Full(task)) = pool.spawn(|| 2u32) else {
        panic!("{}: the second queued task must be refused", P::NAME);
    };
    assert_eq!(task(), 2, "handed back intact");
    let stats = pool.stats();
    assert_eq!(
        (stats.queued, stats.active, stats.accepted, stats.rejected),
        (1, 1, 2, 1)
    );
    releases.iter().for_each(|r| r.send(()).unwrap());
    assert_eq!(queued.join(), Ok(1));
    assert!(gates.into_iter().all(|g| g.join() == Ok(7)));
    let report = pool.shutdown(ShutdownPolicy::Drain);
    assert_eq!(report.completed, 2);
}

fn panic_is_the_tasks_failure<P: Pool>() {
    support::quiet_panics_containing(&[BOOM]);
    let pool = P::build(1, 4);
    let failing = pool
        .spawn(|| -> u32 { panic!("{BOOM}") })
        .unwrap_or_else(|_| unreachable!());
    let after = pool.spawn(|| 5u32).unwrap_or_else(|_| unreachable!());
    let failure = failing.join().unwrap_err();
    assert_eq!(failure, JoinError::Panicked(BOOM.to_owned()));
    assert_eq!(failure.kind(), TaskFailureKind::Panicked);
    assert_eq!(after.join(), Ok(5), "{}: the thread carried on", P::NAME);
    let stats = pool.stats();
    assert_eq!((stats.completed, stats.panicked), (1, 1));
    let report = pool.shutdown(ShutdownPolicy::Drain);
    assert_eq!((report.completed, report.panicked), (1, 1));
    assert_eq!(report.workers.iter().map(|w| w.panicked).sum::<u64>(), 1);
}

fn cancel_before_start_never_runs<P: Pool>() {
    let pool = P::build(1, 4);
    let (releases, gates) = occupy(&pool, 1);
    let ran = Arc::new(AtomicUsize::new(0));
    let drops = Arc::new(AtomicUsize::new(0));
    let (ran2, probe) = (Arc::clone(&ran), DropProbe(Arc::clone(&drops)));
    let handle = pool
        .spawn(move || {
            let _probe = probe;
            ran2.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap_or_else(|_| unreachable!());
    assert!(handle.cancel(), "not started, so cancelled");
    assert!(!handle.cancel(), "only once");
    assert!(handle.is_finished());
    // A started task cannot be cancelled.
    assert!(!gates[0].cancel());
    releases.iter().for_each(|r| r.send(()).unwrap());
    assert_eq!(handle.join(), Err(JoinError::Cancelled));
    assert!(gates.into_iter().all(|g| g.join() == Ok(7)));
    let report = pool.shutdown(ShutdownPolicy::Drain);
    assert_eq!(ran.load(Ordering::SeqCst), 0, "{}: never ran", P::NAME);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "its closure was dropped once"
    );
    assert_eq!((report.completed, report.cancelled), (1, 1));
    assert!(report.handed_back.is_empty());
}

fn drain_runs_everything_accepted<P: Pool>() {
    let pool = P::build(2, 64);
    let ran = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..64)
        .map(|_| {
            let ran = Arc::clone(&ran);
            pool.spawn(move || ran.fetch_add(1, Ordering::SeqCst))
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    let spawner = pool.spawner();
    let report = pool.shutdown(ShutdownPolicy::Drain);
    assert_eq!(ran.load(Ordering::SeqCst), 64);
    assert_eq!(report.completed, 64);
    assert!(report.unfinished.is_none() && report.handed_back.is_empty());
    assert!(handles.into_iter().all(|h| h.is_finished()));
    // Closed for good.
    assert!(spawner.is_shut_down());
    let Err(SpawnError::Shutdown(task)) = spawner.try_spawn(|| 3) else {
        panic!("{}: a shut-down pool refuses", P::NAME);
    };
    assert_eq!(task(), 3);
    let stats = spawner.stats();
    assert_eq!((stats.accepted, stats.rejected, stats.threads), (64, 1, 0));
}

fn cancel_pending_hands_back_in_order<P: Pool>() {
    let pool = P::build(1, 8);
    let spawner = pool.spawner();
    // The gate waits until the shutdown has begun, so nothing queued starts.
    let (started_tx, started_rx) = mpsc::channel();
    let watcher = spawner.clone();
    let gate = pool
        .spawn(move || {
            started_tx.send(()).unwrap();
            while !watcher.is_shut_down() {
                thread::yield_now();
            }
            "gate"
        })
        .unwrap_or_else(|_| unreachable!());
    started_rx.recv().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let queued: Vec<_> = (0..3u32)
        .map(|n| {
            let ran = Arc::clone(&ran);
            pool.spawn(move || {
                ran.fetch_add(1, Ordering::SeqCst);
                n
            })
            .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    let cancelled = pool.spawn(|| 99).unwrap_or_else(|_| unreachable!());
    assert!(cancelled.cancel());
    let report = pool.shutdown(ShutdownPolicy::CancelPending);
    assert_eq!(gate.join(), Ok("gate"), "the running task finished");
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "{}: nothing queued ran",
        P::NAME
    );
    let ids: Vec<_> = report
        .handed_back
        .iter()
        .map(dinah::pool::Unstarted::id)
        .collect();
    assert_eq!(ids, queued.iter().map(JoinHandle::id).collect::<Vec<_>>());
    assert_eq!((report.completed, report.cancelled), (1, 4));
    let mut handed_back = report.handed_back.into_iter();
    // Run the first by hand; drop the rest.
    assert!(handed_back.next().unwrap().run());
    drop(handed_back);
    let outcomes: Vec<_> = queued.into_iter().map(JoinHandle::join).collect();
    assert_eq!(
        outcomes,
        [Ok(0), Err(JoinError::Cancelled), Err(JoinError::Cancelled)]
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(cancelled.join(), Err(JoinError::Cancelled));
}

fn deadline_reports_what_still_runs<P: Pool>() {
    let pool = P::build(1, 4);
    let (releases, gates) = occupy(&pool, 1);
    let queued = pool.spawn(|| 8u32).unwrap_or_else(|_| unreachable!());
    let gate_id = gates[0].id();
    let report = pool.shutdown_with_deadline(ShutdownPolicy::Drain, Duration::ZERO);
    let unfinished = report.unfinished.expect("the gate is still running");
    assert_eq!(unfinished.running.len(), 1);
    assert_eq!(unfinished.running[0].1, gate_id);
    assert_eq!(unfinished.queued, 1);
    // The detached thread finishes the running task and drains the queue.
    releases.iter().for_each(|r| r.send(()).unwrap());
    assert!(gates.into_iter().all(|g| g.join() == Ok(7)));
    assert_eq!(
        queued.join(),
        Ok(8),
        "{}: drained after the deadline",
        P::NAME
    );
}

fn drop_drains<P: Pool>() {
    let ran = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_>;
    {
        let pool = P::build(1, 16);
        handles = (0..16)
            .map(|_| {
                let ran = Arc::clone(&ran);
                pool.spawn(move || ran.fetch_add(1, Ordering::SeqCst))
                    .unwrap_or_else(|_| unreachable!())
            })
            .collect();
    }
    assert_eq!(
        ran.load(Ordering::SeqCst),
        16,
        "{}: dropping drained",
        P::NAME
    );
    assert!(handles.into_iter().all(|h| h.join().is_ok()));
}

fn handle_is_a_future<P: Pool>() {
    let pool = P::build(2, 8);
    let (releases, gates) = occupy(&pool, 1);
    let executor = LocalExecutor::new();
    let quick = pool.spawn(|| "quick").unwrap_or_else(|_| unreachable!());
    let release = releases.into_iter().next().unwrap();
    let gate = gates.into_iter().next().unwrap();
    // The executor parks while the gate runs; the pool thread that finishes
    // it wakes the awaiting task.
    let (a, b) = executor.block_on(async move {
        let a = quick.await;
        release.send(()).unwrap();
        (a, gate.await)
    });
    assert_eq!((a, b), (Ok("quick"), Ok(7)));
    drop(pool);
}

fn submit_from_many_threads_counts_add_up<P: Pool>() {
    let pool = P::build(2, 16);
    let spawner = pool.spawner();
    let accepted = AtomicUsize::new(0);
    let joined = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..4 {
            let (spawner, accepted, joined) = (spawner.clone(), &accepted, &joined);
            s.spawn(move || {
                for n in 0..50u32 {
                    if let Ok(handle) = spawner.try_spawn(move || n) {
                        accepted.fetch_add(1, Ordering::SeqCst);
                        assert_eq!(handle.join(), Ok(n));
                        joined.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    let report = pool.shutdown(ShutdownPolicy::Drain);
    let stats = spawner.stats();
    assert_eq!(stats.accepted, accepted.load(Ordering::SeqCst) as u64);
    assert_eq!(stats.accepted + stats.rejected, 200);
    assert_eq!(report.completed, stats.accepted);
    assert_eq!(
        joined.load(Ordering::SeqCst),
        accepted.load(Ordering::SeqCst)
    );
}

/// A value whose destructor panics.
struct ExplodesOnDrop;

impl Drop for ExplodesOnDrop {
    fn drop(&mut self) {
        panic!("{}", BOOM);
    }
}

fn a_detached_result_whose_destructor_panics_costs_no_thread<P: Pool>() {
    support::quiet_panics_containing(&[BOOM]);
    let pool = P::build(1, 4);
    // Its handle is dropped before it ends (the job waits for that): the
    // result is dropped by the pool, and its destructor's panic must not
    // take the thread with it. (Dropped after it ended, the handle would
    // drop the result itself, on this thread.)
    let (dropped, handle_gone) = mpsc::channel::<()>();
    let handle = pool
        .spawn(move || {
            handle_gone.recv().unwrap();
            ExplodesOnDrop
        })
        .unwrap();
    drop(handle);
    dropped.send(()).unwrap();
    let next = pool.spawn(|| 5).unwrap_or_else(|_| panic!("room"));
    assert_eq!(next.join(), Ok(5), "{}: the thread still serves", P::NAME);
    let report = pool.shutdown(ShutdownPolicy::Drain);
    assert_eq!((report.completed, report.panicked), (2, 0), "{}", P::NAME);
}

fn dropping_the_last_owner_from_its_own_task_returns<P: Pool + Send + 'static>() {
    // Two threads: the other one leaves while this task's thread waits for
    // nothing but itself.
    let owner: Arc<Mutex<Option<P>>> = Arc::new(Mutex::new(Some(P::build(2, 4))));
    let (done_tx, done_rx) = mpsc::channel();
    let task = {
        let owner = Arc::clone(&owner);
        move || {
            let pool = owner.lock().unwrap().take();
            drop(pool);
            done_tx.send(()).unwrap();
        }
    };
    let handle = owner
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .spawn(task)
        .unwrap_or_else(|_| panic!("room"));
    done_rx.recv().expect("the drop returned inside the task");
    assert_eq!(handle.join(), Ok(()), "{}", P::NAME);
}

fn a_handle_resolves_after_its_place_and_counts_are_settled<P: Pool>() {
    let pool = P::build(1, 1);
    for round in 0..20 {
        let handle = pool.spawn(move || round).unwrap_or_else(|_| panic!("room"));
        assert_eq!(handle.join(), Ok(round));
        // Everything about the job is settled before its handle resolves.
        let stats = pool.stats();
        assert_eq!(
            (stats.queued, stats.active, stats.completed),
            (0, 0, round + 1),
            "{}",
            P::NAME
        );
    }
    drop(pool);
}

macro_rules! contract {
    ($($fact:ident),* $(,)?) => {
        mod worker_pool {
            $(#[test] fn $fact() { super::$fact::<dinah::WorkerPool>(); })*
        }
        mod blocking_pool {
            $(#[test] fn $fact() { super::$fact::<dinah::BlockingPool>(); })*
        }
    };
}

/// A waker that reports its wakes on a channel, tagged, so a test can wait
/// for the wake that a pool thread sends.
struct Tagged(Mutex<Sender<u32>>, u32);

impl std::task::Wake for Tagged {
    fn wake(self: Arc<Self>) {
        let _ = self.0.lock().unwrap().send(self.1);
    }
}

fn poll_tagged<F: std::future::Future + Unpin>(
    future: &mut F,
    woke: &Sender<u32>,
    tag: u32,
) -> std::task::Poll<F::Output> {
    let waker = std::task::Waker::from(Arc::new(Tagged(Mutex::new(woke.clone()), tag)));
    std::pin::Pin::new(future).poll(&mut std::task::Context::from_waker(&waker))
}

/// A full pool, the releases of its two gates, their handles, and the
/// second gate's start signal.
type FullPool<P> = (P, Vec<Sender<()>>, Vec<JoinHandle<u32>>, Receiver<()>);

/// A pool whose one thread runs a gated task and whose one queue slot is
/// taken by a second gated task: full until the first gate opens.
fn full_pool<P: Pool>() -> FullPool<P> {
    let pool = P::build(1, 1);
    let (mut releases, mut gates) = occupy(&pool, 1);
    let (release, started, task) = gate();
    gates.push(
        pool.spawn(task)
            .unwrap_or_else(|_| panic!("one queued fits")),
    );
    releases.push(release);
    (pool, releases, gates, started)
}

fn waiting_spawns_get_room_in_order_and_no_try_spawn_takes_it<P: Pool>() {
    let (pool, releases, gates, second_started) = full_pool::<P>();
    let spawner = pool.spawner();
    let (woke, wakes) = mpsc::channel();
    let mut first = spawner.spawn(|| 1u32);
    let mut second = spawner.spawn(|| 2u32);
    assert!(poll_tagged(&mut first, &woke, 1).is_pending());
    assert!(poll_tagged(&mut second, &woke, 2).is_pending());
    releases[0].send(()).unwrap();
    // The first gate ends, the second leaves the queue: its slot is the
    // first waiter's.
    assert_eq!(wakes.recv().unwrap(), 1);
    second_started.recv().unwrap();
    assert!(
        matches!(pool.spawn(|| 9u32), Err(SpawnError::Full(_))),
        "{}: the freed slot is reserved for the first in line",
        P::NAME
    );
    let std::task::Poll::Ready(Ok(one)) = poll_tagged(&mut first, &woke, 1) else {
        panic!("{}: the first waiter is admitted", P::NAME);
    };
    assert!(poll_tagged(&mut second, &woke, 2).is_pending());
    releases[1].send(()).unwrap();
    assert_eq!(wakes.recv().unwrap(), 2, "then the second");
    let std::task::Poll::Ready(Ok(two)) = poll_tagged(&mut second, &woke, 2) else {
        panic!("{}: the second waiter is admitted", P::NAME);
    };
    assert_eq!((one.join(), two.join()), (Ok(1), Ok(2)));
    assert!(gates.into_iter().all(|g| g.join() == Ok(7)));
    let report = pool.shutdown(ShutdownPolicy::Drain);
    assert_eq!(report.completed, 4);
}

fn a_waiting_spawn_dropped_hands_its_room_on<P: Pool>() {
    let (pool, releases, gates, _second_started) = full_pool::<P>();
    let spawner = pool.spawner();
    let (woke, wakes) = mpsc::channel();
    let drops = Arc::new(AtomicUsize::new(0));
    let probe = DropProbe(Arc::clone(&drops));
    let mut first = spawner.spawn(move || drop(probe));
    let mut second = spawner.spawn(|| ());
    assert!(poll_tagged(&mut first, &woke, 1).is_pending());
    assert!(poll_tagged(&mut second, &woke, 2).is_pending());
    releases[0].send(()).unwrap();
    assert_eq!(wakes.recv().unwrap(), 1);
    drop(first);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "its task is dropped unrun");
    assert_eq!(wakes.recv().unwrap(), 2, "its room went on to the next");
    let std::task::Poll::Ready(Ok(admitted)) = poll_tagged(&mut second, &woke, 2) else {
        panic!("{}: the next waiter is admitted", P::NAME);
    };
    releases[1].send(()).unwrap();
    assert_eq!(admitted.join(), Ok(()));
    assert!(gates.into_iter().all(|g| g.join() == Ok(7)));
}

fn shutdown_turns_waiting_spawns_away_with_their_tasks<P: Pool + Send + 'static>() {
    let (pool, releases, gates, _second_started) = full_pool::<P>();
    let spawner = pool.spawner();
    let (woke, wakes) = mpsc::channel();
    let mut waiting = spawner.spawn(|| 3u32);
    assert!(poll_tagged(&mut waiting, &woke, 1).is_pending());
    let shutdown = thread::spawn(move || pool.shutdown(ShutdownPolicy::Drain));
    assert_eq!(wakes.recv().unwrap(), 1, "shutdown wakes the line");
    let std::task::Poll::Ready(Err(SpawnError::Shutdown(task))) =
        poll_tagged(&mut waiting, &woke, 1)
    else {
        panic!("{}: a waiter is turned away at shutdown", P::NAME);
    };
    assert_eq!(task(), 3, "handed back intact");
    releases.iter().for_each(|r| r.send(()).unwrap());
    assert_eq!(shutdown.join().unwrap().completed, 2);
    assert!(gates.into_iter().all(|g| g.join() == Ok(7)));
}

fn blocking_spawn_waits_for_room_on_a_thread<P: Pool>() {
    let (pool, releases, gates, _second_started) = full_pool::<P>();
    let spawner = pool.spawner();
    let waiter = thread::spawn(move || {
        spawner
            .blocking_spawn(|| 5u32)
            .unwrap_or_else(|_| panic!("it waits instead of refusing"))
            .join()
    });
    releases.iter().for_each(|r| r.send(()).unwrap());
    assert_eq!(waiter.join().unwrap(), Ok(5));
    assert!(gates.into_iter().all(|g| g.join() == Ok(7)));
}

contract!(
    waiting_spawns_get_room_in_order_and_no_try_spawn_takes_it,
    a_waiting_spawn_dropped_hands_its_room_on,
    shutdown_turns_waiting_spawns_away_with_their_tasks,
    blocking_spawn_waits_for_room_on_a_thread,
    submit_join_and_ids,
    threads_are_named_and_overlap,
    full_hands_the_task_back,
    panic_is_the_tasks_failure,
    cancel_before_start_never_runs,
    drain_runs_everything_accepted,
    cancel_pending_hands_back_in_order,
    deadline_reports_what_still_runs,
    drop_drains,
    handle_is_a_future,
    submit_from_many_threads_counts_add_up,
    a_detached_result_whose_destructor_panics_costs_no_thread,
    dropping_the_last_owner_from_its_own_task_returns,
    a_handle_resolves_after_its_place_and_counts_are_settled,
);

// ---- WorkerPool only ----

#[test]
fn worker_pool_rejects_a_zero_capacity() {
    let error = WorkerPool::new(CoreConfig::new(2).unwrap(), 0).unwrap_err();
    assert!(matches!(error, PoolError::ZeroQueueCapacity));
    assert_eq!(error.to_string(), "queue capacity must be at least 1");
}

#[test]
fn worker_pool_starts_every_worker_up_front() {
    let pool = WorkerPool::new(CoreConfig::new(3).unwrap(), 4).unwrap();
    assert_eq!(pool.workers(), 3);
    assert_eq!(pool.stats().threads, 3);
    assert_eq!(pool.shutdown(ShutdownPolicy::Drain).workers.len(), 3);
}

fn queue_of<R: Send + 'static>(
    tasks: impl IntoIterator<Item = Box<dyn FnOnce() -> R + Send>>,
) -> BoundedQueue<Box<dyn FnOnce() -> R + Send>> {
    let tasks: Vec<_> = tasks.into_iter().collect();
    let mut queue = BoundedQueue::new(tasks.len().max(1)).unwrap();
    for task in tasks {
        queue.try_push(task).unwrap_or_else(|_| unreachable!());
    }
    queue
}

#[test]
fn batch_results_are_fifo_and_counted() {
    let pool = WorkerPool::new(CoreConfig::new(2).unwrap(), 4).unwrap();
    for size in [0usize, 1, 2, 3, 17, 256] {
        let mut queue = queue_of(
            (0..size).map(|n| Box::new(move || n * 3) as Box<dyn FnOnce() -> usize + Send>),
        );
        assert_eq!(
            pool.run(&mut queue),
            (0..size).map(|n| n * 3).collect::<Vec<_>>()
        );
        assert!(queue.is_empty());
    }
    let total = (1 + 2 + 3 + 17 + 256) as u64;
    let stats = pool.stats();
    assert_eq!((stats.accepted, stats.completed), (total, total));
    let report = pool.shutdown(ShutdownPolicy::Drain);
    assert_eq!(
        report.workers.iter().map(|w| w.completed).sum::<u64>(),
        total
    );
}

#[test]
fn batch_overlaps_on_every_worker() {
    let pool = WorkerPool::new(CoreConfig::new(2).unwrap(), 4).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let mut queue = queue_of((0..2).map(|_| {
        let barrier = Arc::clone(&barrier);
        Box::new(move || barrier.wait().is_leader()) as Box<dyn FnOnce() -> bool + Send>
    }));
    let leaders = pool.run(&mut queue);
    assert_eq!(leaders.iter().filter(|&&l| l).count(), 1);
}

#[test]
fn batch_panic_follows_the_run_parallel_contract() {
    support::quiet_panics_containing(&[BOOM]);
    // One worker: the panic at index 2 stops the batch at once.
    let pool = WorkerPool::new(CoreConfig::new(1).unwrap(), 4).unwrap();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let drops = Arc::new(AtomicUsize::new(0));
    let mut queue = queue_of((0..8usize).map(|n| {
        let (ran, probe) = (Arc::clone(&ran), DropProbe(Arc::clone(&drops)));
        Box::new(move || {
            ran.lock().unwrap().push(n);
            assert!(n != 2, "{BOOM} at {n}");
            probe
        }) as Box<dyn FnOnce() -> DropProbe + Send>
    }));
    let payload = catch_unwind(AssertUnwindSafe(|| pool.run(&mut queue))).unwrap_err();
    assert_eq!(
        support::panic_message(&*payload),
        Some(format!("{BOOM} at 2").as_str())
    );
    assert_eq!(*ran.lock().unwrap(), [0, 1, 2]);
    // Two finished results, and the probe the panicking task held.
    assert_eq!(drops.load(Ordering::SeqCst), 3, "finished results dropped");
    // Every task that did not start is back, in FIFO order.
    assert_eq!(queue.len(), 5);
    let rest = pool.run(&mut queue);
    assert_eq!(*ran.lock().unwrap(), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(rest.len(), 5);
    let stats = pool.stats();
    assert_eq!(
        (stats.completed, stats.panicked, stats.cancelled),
        (7, 1, 5)
    );
    drop(rest);
}

#[test]
fn batch_panic_on_two_workers_loses_nothing() {
    support::quiet_panics_containing(&[BOOM]);
    let pool = WorkerPool::new(CoreConfig::new(2).unwrap(), 4).unwrap();
    for panicking in [0usize, 5, 31] {
        let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..32).map(|_| AtomicUsize::new(0)).collect());
        let mut queue = queue_of((0..32usize).map(|n| {
            let runs = Arc::clone(&runs);
            Box::new(move || {
                runs[n].fetch_add(1, Ordering::SeqCst);
                assert!(n != panicking, "{BOOM} at {n}");
                n
            }) as Box<dyn FnOnce() -> usize + Send>
        }));
        let payload = catch_unwind(AssertUnwindSafe(|| pool.run(&mut queue))).unwrap_err();
        assert_eq!(
            support::panic_message(&*payload),
            Some(format!("{BOOM} at {panicking}").as_str())
        );
        // The rest is queued in FIFO order and runs exactly once now.
        let mut rest = Vec::new();
        while let Some(task) = queue.pop() {
            rest.push(task());
        }
        assert!(rest.windows(2).all(|w| w[0] < w[1]), "{rest:?}");
        assert!(runs.iter().all(|r| r.load(Ordering::SeqCst) == 1));
    }
}

#[test]
fn batch_from_inside_a_worker_does_not_wait_on_itself() {
    // One worker, which runs a batch of its own pool from inside a task:
    // it must take a share itself rather than wait for itself.
    let pool = Arc::new(WorkerPool::new(CoreConfig::new(1).unwrap(), 4).unwrap());
    let inner = Arc::clone(&pool);
    let handle = pool
        .try_spawn(move || {
            let mut queue = queue_of(
                (0..5u32).map(|n| Box::new(move || n + 1) as Box<dyn FnOnce() -> u32 + Send>),
            );
            inner.run(&mut queue)
        })
        .unwrap_or_else(|_| unreachable!());
    assert_eq!(handle.join(), Ok(vec![1, 2, 3, 4, 5]));
}

// ---- BlockingPool only ----

#[test]
fn blocking_pool_rejects_zero_limits() {
    assert!(matches!(
        BlockingPool::new(BlockingConfig::new(0, 4)),
        Err(PoolError::ZeroMaxThreads)
    ));
    assert!(matches!(
        BlockingPool::new(BlockingConfig::new(4, 0)),
        Err(PoolError::ZeroQueueCapacity)
    ));
}

#[test]
fn blocking_threads_start_on_demand_up_to_the_limit() {
    let pool = BlockingPool::new(BlockingConfig::new(3, 8)).unwrap();
    assert_eq!(pool.stats().threads, 0, "no thread before the first job");
    let barrier = Arc::new(Barrier::new(3));
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            pool.try_spawn(move || barrier.wait().is_leader())
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    // Three jobs pass the barrier only if three threads run them at once.
    let leaders = handles.into_iter().map(|h| h.join().unwrap());
    assert_eq!(leaders.filter(|&leader| leader).count(), 1);
    assert_eq!(pool.stats().threads, 3);
    let report = pool.shutdown(ShutdownPolicy::Drain);
    assert_eq!(report.completed, 3);
    assert_eq!(report.workers.len(), 3);
}

#[test]
fn queued_bound_admits_capacity_beyond_the_running_jobs() {
    let pool = BlockingPool::new(BlockingConfig::new(2, 1)).unwrap();
    let (releases, gates) = occupy(&pool, 2);
    let queued = pool.try_spawn(|| 1u32).unwrap_or_else(|_| unreachable!());
    assert!(matches!(pool.try_spawn(|| 2u32), Err(SpawnError::Full(_))));
    releases.iter().for_each(|r| r.send(()).unwrap());
    assert_eq!(queued.join(), Ok(1));
    assert!(gates.into_iter().all(|g| g.join() == Ok(7)));
}

#[test]
fn in_flight_bound_counts_running_jobs() {
    let config = BlockingConfig::new(2, 2).bound(AdmissionBound::InFlight);
    let pool = BlockingPool::new(config).unwrap();
    let (releases, gates) = occupy(&pool, 2);
    let stats = pool.stats();
    assert_eq!((stats.queued, stats.active), (0, 2));
    // Two running fill the limit although the queue is empty.
    let Err(SpawnError::Full(task)) = pool.try_spawn(|| 3u32) else {
        panic!("in-flight limit reached");
    };
    releases.iter().for_each(|r| r.send(()).unwrap());
    assert!(gates.into_iter().all(|g| g.join() == Ok(7)));
    // Room again once a job finished.
    let mut task = task;
    let handle = loop {
        match pool.try_spawn(task) {
            Ok(handle) => break handle,
            Err(refused) => {
                task = refused.into_inner();
                thread::yield_now();
            }
        }
    };
    assert_eq!(handle.join(), Ok(3));
}

#[test]
fn an_in_flight_place_is_free_when_the_handle_resolves() {
    let pool =
        BlockingPool::new(BlockingConfig::new(1, 1).bound(AdmissionBound::InFlight)).unwrap();
    for round in 0..20 {
        let handle = pool
            .try_spawn(move || round)
            .unwrap_or_else(|_| panic!("round {round}: the place of the last job is free"));
        assert_eq!(handle.join(), Ok(round));
    }
    // And from the waker the pool calls: a task awaiting a job submits the
    // next one as soon as it is woken.
    let executor = LocalExecutor::new();
    let spawner = pool.spawner();
    let chained = executor.block_on(async move {
        let mut last = 0;
        for round in 0..5u32 {
            let handle = spawner
                .try_spawn(move || round)
                .unwrap_or_else(|_| panic!("round {round}: refused"));
            last = handle.await.unwrap();
        }
        last
    });
    assert_eq!(chained, 4);
}

#[test]
fn keep_alive_zero_lets_threads_leave_and_new_ones_start() {
    let config = BlockingConfig::new(2, 4).keep_alive(Duration::ZERO);
    let pool = BlockingPool::new(config).unwrap();
    let name = |pool: &BlockingPool| {
        pool.try_spawn(|| thread::current().name().map(str::to_owned))
            .unwrap_or_else(|_| unreachable!())
            .join()
            .unwrap()
            .unwrap()
    };
    assert_eq!(name(&pool), "dinah-blocking-1");
    // The thread leaves as soon as it finds no job.
    while pool.stats().threads != 0 {
        thread::yield_now();
    }
    assert_eq!(name(&pool), "dinah-blocking-2", "a new thread started");
    while pool.stats().threads != 0 {
        thread::yield_now();
    }
    let report = pool.shutdown(ShutdownPolicy::Drain);
    assert_eq!(report.completed, 2, "counts of threads that left are kept");
    assert!(report.workers.is_empty());
}

#[test]
fn full_pool_refusal_leaves_the_queue_unchanged() {
    let pool = BlockingPool::new(BlockingConfig::new(1, 2)).unwrap();
    let (releases, gates) = occupy(&pool, 1);
    let a = pool.try_spawn(|| 'a').unwrap_or_else(|_| unreachable!());
    let b = pool.try_spawn(|| 'b').unwrap_or_else(|_| unreachable!());
    for _ in 0..100 {
        assert!(matches!(pool.try_spawn(|| 'x'), Err(SpawnError::Full(_))));
    }
    let stats = pool.stats();
    assert_eq!((stats.queued, stats.rejected, stats.accepted), (2, 100, 3));
    releases.iter().for_each(|r| r.send(()).unwrap());
    assert_eq!((a.join(), b.join()), (Ok('a'), Ok('b')));
    assert!(gates.into_iter().all(|g| g.join() == Ok(7)));
}

// ---- Against the model ----

#[test]
fn random_submit_cancel_release_shutdown_sequences_match_the_model() {
    support::for_random_bytes(256, 64, support::models::check_pool);
}
