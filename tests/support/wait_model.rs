//! Reference models of the locks, the oneshot, the watch and the
//! broadcast, and checkers that drive `dinah-std`'s (which run the core's
//! logic) with the same byte-coded operations and compare every outcome,
//! every wake and every value read with the model's. Used by
//! `tests/sync_model.rs` (proptest) and the `sync_ops` fuzz target, beside
//! the channel's and the semaphore's in `sync_model.rs`.

use std::collections::VecDeque;
use std::task::Poll;

use dinah::sync::Refusal;

use super::sync_model::{Polled, Stand};

/// A guard of the lock under test, with what it reads.
enum Held<'a> {
    Read(dinah::sync::SharedReadGuard<'a, u32>),
    Write(dinah::sync::SharedWriteGuard<'a, u32>),
    Mutex(dinah::sync::SharedMutexGuard<'a, u32>),
}

impl Held<'_> {
    fn value(&self) -> u32 {
        match self {
            Self::Read(guard) => **guard,
            Self::Write(guard) => **guard,
            Self::Mutex(guard) => **guard,
        }
    }

    /// A write: adds one.
    fn bump(&mut self) {
        match self {
            Self::Read(_) => {}
            Self::Write(guard) => **guard += 1,
            Self::Mutex(guard) => **guard += 1,
        }
    }
}

/// Drives a `SharedRwLock` (first byte even) or a `SharedMutex` (odd) and
/// the model of either, a first-in, first-out semaphore where a read takes
/// one permit and a write (or a lock) takes them all, with the operations
/// coded in `bytes`: every outcome, every wake, and the value each guard
/// reads (each write adds one) as the model says.
pub(crate) fn check_locks(bytes: &[u8]) {
    let Some((&first, ops)) = bytes.split_first() else {
        return;
    };
    let rwlock = dinah::sync::SharedRwLock::new(0u32);
    let mutex = dinah::sync::SharedMutex::new(0u32);
    let is_mutex = first % 2 == 1;
    // Permits in the model: a read takes one, a write (or a lock) all.
    let all = if is_mutex {
        1
    } else {
        dinah::sync::MAX_READERS
    };
    let mut free = all;
    let mut value = 0u32;
    let mut line: VecDeque<usize> = VecDeque::new();
    let mut wants: Vec<u32> = Vec::new();
    let mut stands: Vec<Stand> = Vec::new();
    let mut waiters: Vec<Option<Polled<'_, Held<'_>>>> = Vec::new();
    let mut held: Vec<(Held<'_>, u32)> = Vec::new();
    let grant =
        |free: &mut u32, line: &mut VecDeque<usize>, stands: &mut [Stand], wants: &[u32]| {
            while let Some(&first) = line.front() {
                if wants[first] > *free {
                    break;
                }
                *free -= wants[first];
                stands[first] = Stand::Granted;
                line.pop_front();
            }
        };
    for pair in ops.chunks(2) {
        let (op, arg) = (pair[0] % 5, pair.get(1).copied().unwrap_or(0));
        let write = is_mutex || arg % 2 == 0;
        let want = if write { all } else { 1 };
        match op {
            0 => {
                let got = match (is_mutex, write) {
                    (true, _) => mutex.try_lock().map(Held::Mutex),
                    (false, true) => rwlock.try_write().map(Held::Write),
                    (false, false) => rwlock.try_read().map(Held::Read),
                };
                let free_now = line.is_empty() && free >= want;
                assert_eq!(got.is_ok(), free_now, "try");
                if let Ok(guard) = got {
                    free -= want;
                    held.push((taken(guard, &mut value, write), want));
                } else {
                    assert_eq!(got.err(), Some(Refusal::WouldWait));
                }
            }
            1 => {
                let mut waiter: Polled<'_, Held<'_>> = match (is_mutex, write) {
                    (true, _) => Polled::new(async { Held::Mutex(mutex.lock().await) }),
                    (false, true) => Polled::new(async { Held::Write(rwlock.write().await) }),
                    (false, false) => Polled::new(async { Held::Read(rwlock.read().await) }),
                };
                let index = waiters.len();
                wants.push(want);
                stands.push(Stand::Waiting);
                if let Poll::Ready(guard) = waiter.poll() {
                    assert!(line.is_empty() && free >= want, "lock out of turn");
                    free -= want;
                    stands[index] = Stand::Closed; // done with
                    held.push((taken(guard, &mut value, write), want));
                    waiters.push(None);
                } else {
                    assert!(!line.is_empty() || free < want, "a free lock waits");
                    line.push_back(index);
                    waiters.push(Some(waiter));
                }
            }
            2 if !waiters.is_empty() => {
                let index = usize::from(arg) % waiters.len();
                if let Some(mut waiter) = waiters[index].take() {
                    match (waiter.poll(), stands[index]) {
                        (Poll::Pending, Stand::Waiting) => waiters[index] = Some(waiter),
                        (Poll::Ready(guard), Stand::Granted) => {
                            let write = wants[index] == all;
                            stands[index] = Stand::Closed;
                            held.push((taken(guard, &mut value, write), wants[index]));
                        }
                        (_, stand) => panic!("waiter {index} ({stand:?}) out of turn"),
                    }
                }
            }
            3 if !waiters.is_empty() => {
                let index = usize::from(arg) % waiters.len();
                if let Some(waiter) = waiters[index].take() {
                    drop(waiter);
                    match stands[index] {
                        Stand::Waiting => line.retain(|&i| i != index),
                        Stand::Granted => free += wants[index],
                        Stand::Closed => {}
                    }
                    stands[index] = Stand::Closed;
                    grant(&mut free, &mut line, &mut stands, &wants);
                }
            }
            4 if !held.is_empty() => {
                let (guard, permits) = held.swap_remove(usize::from(arg) % held.len());
                drop(guard);
                free += permits;
                grant(&mut free, &mut line, &mut stands, &wants);
            }
            _ => {}
        }
        for (index, waiter) in waiters.iter().enumerate() {
            if let Some(waiter) = waiter {
                let expected = usize::from(stands[index] == Stand::Granted);
                assert_eq!(waiter.woken(), expected, "waiter {index} wakes");
            }
        }
    }
    drop((held, waiters));
    let left = if is_mutex {
        mutex.try_lock().map(|guard| *guard)
    } else {
        rwlock.try_read().map(|guard| *guard)
    };
    assert_eq!(left, Ok(value), "every write kept");
}

/// A guard just taken: it reads the value as the model has it, and a write
/// adds one to both.
fn taken<'a>(mut guard: Held<'a>, value: &mut u32, write: bool) -> Held<'a> {
    assert_eq!(guard.value(), *value, "a guard reads the last write");
    if write {
        guard.bump();
        *value += 1;
    }
    guard
}

/// Drives a oneshot channel and its model with the operations coded in
/// `bytes` (poll the receive, send, drop the sender, drop the receive, make
/// a new channel): every outcome and every wake as the model says.
pub(crate) fn check_oneshot(bytes: &[u8]) {
    let (tx, rx) = dinah::sync::oneshot::channel::<u8>();
    let mut tx = Some(tx);
    let mut rx = Some(Polled::new(rx));
    // The model: the value sent and not received, whether the sender is
    // gone, whether the receive waits (polled pending), and whether it
    // ended.
    let mut sent: Option<u8> = None;
    let mut sender_gone = false;
    let mut waiting = false;
    let mut wakes = 0;
    let mut ended = false;
    for &byte in bytes {
        match byte % 5 {
            0 => {
                if let Some(receive) = rx.as_mut().filter(|_| !ended) {
                    let want = match sent.take() {
                        Some(value) => Poll::Ready(Ok(value)),
                        None if sender_gone => Poll::Ready(Err(dinah::sync::oneshot::RecvError)),
                        None => Poll::Pending,
                    };
                    let got = receive.poll();
                    assert_eq!(got, want, "receive");
                    waiting = got.is_pending();
                    ended = got.is_ready();
                }
            }
            1 => {
                if let Some(sender) = tx.take() {
                    let value = byte / 4;
                    let refused = rx.is_none();
                    let got = sender.send(value);
                    assert_eq!(got, if refused { Err(value) } else { Ok(()) }, "send");
                    sender_gone = true;
                    if !refused {
                        sent = Some(value);
                        if waiting {
                            wakes += 1;
                            waiting = false;
                        }
                    }
                }
            }
            2 => {
                if tx.take().is_some() {
                    sender_gone = true;
                    if waiting {
                        wakes += 1;
                        waiting = false;
                    }
                }
            }
            3 => {
                if rx.take().is_some() {
                    sent = None;
                    waiting = false;
                    wakes = 0;
                }
            }
            _ => {
                // A new channel, whose cell may be one an ended channel
                // kept on this thread: it starts as new all the same.
                let (new_tx, new_rx) = dinah::sync::oneshot::channel::<u8>();
                (tx, rx) = (Some(new_tx), Some(Polled::new(new_rx)));
                (sent, sender_gone, waiting, wakes, ended) = (None, false, false, 0, false);
            }
        }
        if let Some(receive) = &rx {
            assert_eq!(receive.woken(), wakes, "receive wakes");
        }
        if let Some(sender) = &tx {
            assert_eq!(
                sender.is_closed(),
                rx.is_none(),
                "sender sees the receiver gone"
            );
        }
    }
}

/// A watch receiver in the model's check: idle, waiting for a change (its
/// wait owns it and hands it back), or gone.
enum Follower {
    Idle(dinah::sync::watch::Receiver<u8>),
    Waiting(Polled<'static, ChangedBack>, bool),
    Gone,
}

/// What a wait on a watch gives back: the outcome and the receiver.
type ChangedBack = (
    Result<(), dinah::sync::watch::RecvError>,
    dinah::sync::watch::Receiver<u8>,
);

/// Drives a watch and its model with the operations coded in `bytes`
/// (subscribe, wait or poll a wait, drop a receiver, send, drop the
/// sender): every outcome, every wake and every value read as the model
/// says.
pub(crate) fn check_watch(bytes: &[u8]) {
    use dinah::sync::watch;
    let (tx, first) = watch::channel(0u8);
    let mut tx = Some(tx);
    let mut version = 0u64;
    let mut latest = 0u8;
    let mut followers = vec![Follower::Idle(first)];
    let mut seen = vec![0u64];
    for pair in bytes.chunks(2) {
        let (op, arg) = (pair[0] % 5, pair.get(1).copied().unwrap_or(0));
        let index = usize::from(arg) % followers.len();
        match op {
            0 => {
                if let Some(sender) = &tx {
                    followers.push(Follower::Idle(sender.subscribe()));
                    seen.push(version);
                }
            }
            1 => {
                let mut wait = match std::mem::replace(&mut followers[index], Follower::Gone) {
                    Follower::Idle(mut rx) => Polled::new(async move {
                        let outcome = rx.changed().await;
                        (outcome, rx)
                    }),
                    Follower::Waiting(wait, _) => wait,
                    Follower::Gone => continue,
                };
                let closed = tx.is_none();
                match wait.poll() {
                    Poll::Ready((outcome, mut rx)) => {
                        if version != seen[index] {
                            assert_eq!(outcome, Ok(()), "a change is seen");
                            seen[index] = version;
                            assert_eq!(*rx.borrow_and_update(), latest, "the latest value");
                        } else {
                            assert!(closed, "no change, yet ready");
                            assert_eq!(outcome, Err(watch::RecvError));
                        }
                        followers[index] = Follower::Idle(rx);
                    }
                    Poll::Pending => {
                        assert!(version == seen[index] && !closed, "a change missed");
                        followers[index] = Follower::Waiting(wait, false);
                    }
                }
            }
            2 => {
                followers[index] = Follower::Gone;
            }
            3 => {
                if let Some(sender) = &tx {
                    let alive = followers.iter().any(|f| !matches!(f, Follower::Gone));
                    let sent = sender.send(arg);
                    assert_eq!(sent.is_ok(), alive, "send with receivers {alive}");
                    if alive {
                        version += 1;
                        latest = arg;
                        for follower in &mut followers {
                            if let Follower::Waiting(_, due) = follower {
                                *due = true;
                            }
                        }
                    }
                }
            }
            _ => {
                if tx.take().is_some() {
                    for follower in &mut followers {
                        if let Follower::Waiting(_, due) = follower {
                            *due = true;
                        }
                    }
                }
            }
        }
        for (index, follower) in followers.iter().enumerate() {
            if let Follower::Waiting(wait, due) = follower {
                assert_eq!(wait.woken(), usize::from(*due), "follower {index} wakes");
            }
        }
    }
}

/// A broadcast receiver in the model's check: idle, waiting (its wait owns
/// it and hands it back), or gone.
enum Reader {
    Idle(dinah::sync::broadcast::Receiver<u8>),
    Waiting(Polled<'static, ReceivedBack>, bool),
    Gone,
}

/// What a receive on a broadcast gives back: the outcome and the receiver.
type ReceivedBack = (
    Result<u8, dinah::sync::broadcast::RecvError>,
    dinah::sync::broadcast::Receiver<u8>,
);

/// Drives a broadcast keeping three values and its model with the
/// operations coded in `bytes` (subscribe, receive or poll a receive, drop
/// a receiver, send, drop the sender): every value, every lag, every end
/// and every wake as the model says.
pub(crate) fn check_broadcast(bytes: &[u8]) {
    use dinah::sync::broadcast::{self, RecvError};
    const KEPT: usize = 3;
    let (tx, first) = broadcast::channel::<u8>(KEPT).expect("a capacity");
    let mut tx = Some(tx);
    let mut sent: Vec<u8> = Vec::new();
    let mut readers = vec![Reader::Idle(first)];
    let mut next = vec![0usize];
    let mut alive = 1usize;
    for pair in bytes.chunks(2) {
        let (op, arg) = (pair[0] % 5, pair.get(1).copied().unwrap_or(0));
        let index = usize::from(arg) % readers.len();
        match op {
            0 => {
                if let Some(sender) = &tx {
                    readers.push(Reader::Idle(sender.subscribe()));
                    next.push(sent.len());
                    alive += 1;
                }
            }
            1 => {
                let mut wait = match std::mem::replace(&mut readers[index], Reader::Gone) {
                    Reader::Idle(mut rx) => Polled::new(async move {
                        let outcome = rx.recv().await;
                        (outcome, rx)
                    }),
                    Reader::Waiting(wait, _) => wait,
                    Reader::Gone => continue,
                };
                let oldest = sent.len().saturating_sub(KEPT);
                let want = if next[index] < oldest {
                    let missed = oldest - next[index];
                    next[index] = oldest;
                    Some(Err(RecvError::Lagged(missed as u64)))
                } else if next[index] < sent.len() {
                    next[index] += 1;
                    Some(Ok(sent[next[index] - 1]))
                } else if tx.is_none() {
                    Some(Err(RecvError::Closed))
                } else {
                    None
                };
                match (wait.poll(), want) {
                    (Poll::Ready((got, rx)), Some(want)) => {
                        assert_eq!(got, want, "reader {index}");
                        readers[index] = Reader::Idle(rx);
                    }
                    (Poll::Pending, None) => readers[index] = Reader::Waiting(wait, false),
                    (got, want) => {
                        panic!("reader {index}: {:?} against {want:?}", got.map(|g| g.0))
                    }
                }
            }
            2 => {
                if !matches!(readers[index], Reader::Gone) {
                    readers[index] = Reader::Gone;
                    alive -= 1;
                }
            }
            3 => {
                if let Some(sender) = &tx {
                    let got = sender.send(arg);
                    if alive == 0 {
                        assert_eq!(got, Err(broadcast::SendError(arg)));
                    } else {
                        assert_eq!(got, Ok(alive), "receivers counted");
                        sent.push(arg);
                        for reader in &mut readers {
                            if let Reader::Waiting(_, due) = reader {
                                *due = true;
                            }
                        }
                    }
                }
            }
            _ => {
                if tx.take().is_some() {
                    for reader in &mut readers {
                        if let Reader::Waiting(_, due) = reader {
                            *due = true;
                        }
                    }
                }
            }
        }
        for (index, reader) in readers.iter().enumerate() {
            if let Reader::Waiting(wait, due) = reader {
                assert_eq!(wait.woken(), usize::from(*due), "reader {index} wakes");
            }
        }
    }
}
