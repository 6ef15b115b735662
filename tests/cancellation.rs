//! Cancellation races on the owned, clonable handle.

use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use dinah::sync::CancellationHandle;

#[test]
fn one_requester_and_16_cloned_observers() {
    const OBSERVERS: usize = 16;
    for _ in 0..8 {
        let handle = CancellationHandle::new();
        let start = Barrier::new(OBSERVERS + 1);
        let observed = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..OBSERVERS {
                let (mine, start, observed) = (handle.clone(), &start, &observed);
                s.spawn(move || {
                    start.wait();
                    while !mine.is_cancellation_requested() {
                        thread::yield_now();
                    }
                    observed.fetch_add(1, Ordering::Relaxed);
                });
            }
            let requester = handle.clone();
            let start = &start;
            s.spawn(move || {
                start.wait();
                assert!(requester.request_cancellation(), "the only requester wins");
            });
        });
        assert_eq!(observed.load(Ordering::Relaxed), OBSERVERS);
        assert!(!handle.request_cancellation());
    }
}

#[test]
fn racing_clones_have_exactly_one_winner() {
    const REQUESTERS: usize = 16;
    for _ in 0..8 {
        let handle = CancellationHandle::new();
        let start = Barrier::new(REQUESTERS);
        let winners = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..REQUESTERS {
                let (mine, start, winners) = (handle.clone(), &start, &winners);
                s.spawn(move || {
                    start.wait();
                    if mine.request_cancellation() {
                        winners.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(winners.load(Ordering::Relaxed), 1);
    }
}

#[test]
fn handles_move_into_static_threads() {
    let handle = CancellationHandle::new();
    let remote = handle.clone();
    let worker = thread::spawn(move || {
        remote.request_cancellation();
        remote
    });
    let remote = worker.join().unwrap();
    assert!(handle.is_cancellation_requested() && remote.same_flag(&handle));
}
