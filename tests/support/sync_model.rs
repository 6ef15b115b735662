//! Reference models of the bounded channel, the semaphore and the locks
//! built on it, and checkers that drive dinah's (`dinah-std`'s `mpsc`,
//! `SharedSemaphore`, `SharedMutex` and `SharedRwLock`, which run the
//! core's logic) with the same byte-coded operations and compare
//! every outcome, and every wake, with the model's. Used by
//! `tests/sync_model.rs` (proptest) and the `sync_ops` fuzz target.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use dinah::sync::{Refusal, SharedSemaphore, TryRecvError, mpsc};

#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A future under test with a waker that counts its wakes.
pub(crate) struct Polled<'a, T> {
    future: Pin<Box<dyn Future<Output = T> + 'a>>,
    wakes: Arc<Counter>,
}

impl<'a, T> Polled<'a, T> {
    pub(crate) fn new(future: impl Future<Output = T> + 'a) -> Self {
        Self {
            future: Box::pin(future),
            wakes: Arc::default(),
        }
    }
    pub(crate) fn poll(&mut self) -> Poll<T> {
        let waker = Waker::from(Arc::clone(&self.wakes));
        self.future.as_mut().poll(&mut Context::from_waker(&waker))
    }
    pub(crate) fn woken(&self) -> usize {
        self.wakes.0.load(Ordering::SeqCst)
    }
}

/// A send under test.
type Sending<'a> = Polled<'a, Result<(), dinah::sync::SendError<u8>>>;

/// An acquire under test.
type Acquiring<'a> = Polled<'a, Result<dinah::sync::SharedPermit<'a>, Refusal>>;

/// A waiter in the model's line.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stand {
    Waiting,
    Granted,
    Closed,
}

/// The channel as the contract describes it.
#[derive(Default)]
struct ChannelModel {
    capacity: usize,
    buffer: VecDeque<u8>,
    reserved: usize,
    closed: bool,
    /// The line, first in first; each waiter by its number.
    line: VecDeque<usize>,
}

impl ChannelModel {
    fn free(&self) -> usize {
        self.capacity - self.buffer.len() - self.reserved
    }

    /// Grants freed slots to the first in line.
    fn grant(&mut self, stands: &mut [Stand]) {
        while self.free() > 0
            && let Some(first) = self.line.pop_front()
        {
            self.reserved += 1;
            stands[first] = Stand::Granted;
        }
    }
}

/// Drives a channel and its model with the operations coded in `bytes`;
/// panics on the first difference.
pub(crate) fn check_channel(bytes: &[u8]) {
    let Some((&first, ops)) = bytes.split_first() else {
        return;
    };
    let capacity = usize::from(first % 3) + 1;
    let (tx, mut rx) = mpsc::channel::<u8>(capacity).unwrap();
    let mut model = ChannelModel {
        capacity,
        ..ChannelModel::default()
    };
    let mut senders: Vec<Option<Sending<'_>>> = Vec::new();
    let mut stands: Vec<Stand> = Vec::new();
    let mut values: Vec<u8> = Vec::new();
    for pair in ops.chunks(2) {
        let (op, arg) = (pair[0] % 6, pair.get(1).copied().unwrap_or(0));
        match op {
            0 => {
                let got = tx.try_send(arg).map_err(|e| e.reason());
                let want = if model.closed {
                    Err(Refusal::Closed)
                } else if model.free() == 0 || !model.line.is_empty() {
                    Err(Refusal::WouldWait)
                } else {
                    model.buffer.push_back(arg);
                    Ok(())
                };
                assert_eq!(got, want, "try_send {arg}");
            }
            1 => {
                let mut send = Polled::new(tx.send(arg));
                let index = senders.len();
                stands.push(Stand::Waiting);
                values.push(arg);
                match send.poll() {
                    Poll::Ready(result) => {
                        let want = if model.closed {
                            Err(Refusal::Closed)
                        } else {
                            assert!(model.free() > 0 && model.line.is_empty(), "sent at once");
                            model.buffer.push_back(arg);
                            Ok(())
                        };
                        assert_eq!(result.map_err(|e| e.reason()), want);
                        senders.push(None);
                    }
                    Poll::Pending => {
                        assert!(
                            !model.closed && (model.free() == 0 || !model.line.is_empty()),
                            "waits only when it must"
                        );
                        model.line.push_back(index);
                        senders.push(Some(send));
                    }
                }
            }
            2 | 3 if !senders.is_empty() => {
                let index = usize::from(arg) % senders.len();
                let Some(mut send) = senders[index].take() else {
                    continue;
                };
                if op == 2 {
                    match send.poll() {
                        Poll::Pending => {
                            assert_eq!(stands[index], Stand::Waiting);
                            senders[index] = Some(send);
                        }
                        Poll::Ready(result) => match stands[index] {
                            Stand::Granted => {
                                assert!(result.is_ok());
                                model.reserved -= 1;
                                model.buffer.push_back(values[index]);
                            }
                            Stand::Closed => {
                                assert_eq!(result.unwrap_err().reason(), Refusal::Closed);
                            }
                            Stand::Waiting => panic!("sender {index} sent out of turn"),
                        },
                    }
                } else {
                    drop(send);
                    match stands[index] {
                        Stand::Waiting => model.line.retain(|&i| i != index),
                        Stand::Granted => {
                            model.reserved -= 1;
                            model.grant(&mut stands);
                        }
                        Stand::Closed => {}
                    }
                }
            }
            4 => {
                let got = rx.try_recv();
                let want = match model.buffer.pop_front() {
                    Some(value) => {
                        model.grant(&mut stands);
                        Ok(value)
                    }
                    None if model.closed && model.reserved == 0 => Err(TryRecvError::Closed),
                    None => Err(TryRecvError::Empty),
                };
                assert_eq!(got, want, "try_recv");
            }
            5 => {
                rx.close();
                model.closed = true;
                for index in model.line.drain(..) {
                    stands[index] = Stand::Closed;
                }
            }
            _ => {}
        }
        // Every waiter is woken once when its turn comes, never before.
        for (index, sender) in senders.iter().enumerate() {
            if let Some(send) = sender {
                let expected = usize::from(stands[index] != Stand::Waiting);
                assert_eq!(send.woken(), expected, "sender {index} wakes");
            }
        }
        let figures = tx.figures();
        assert_eq!(
            (figures.len, figures.waiting as usize),
            (model.buffer.len(), model.line.len())
        );
    }
}

/// Drives a semaphore and its model with the operations coded in `bytes`.
pub(crate) fn check_semaphore(bytes: &[u8]) {
    let Some((&first, ops)) = bytes.split_first() else {
        return;
    };
    let mut free = u32::from(first % 4);
    let semaphore = SharedSemaphore::new(free);
    let mut closed = false;
    let mut line: VecDeque<usize> = VecDeque::new();
    let mut wants: Vec<u32> = Vec::new();
    let mut stands: Vec<Stand> = Vec::new();
    let mut waiters: Vec<Option<Acquiring<'_>>> = Vec::new();
    let mut held: Vec<dinah::sync::SharedPermit<'_>> = Vec::new();
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
        let want = u32::from(arg % 3) + 1;
        match op {
            0 => {
                let got = semaphore.try_acquire_many(want);
                let expected = if closed {
                    Err(Refusal::Closed)
                } else if line.is_empty() && free >= want {
                    free -= want;
                    Ok(())
                } else {
                    Err(Refusal::WouldWait)
                };
                assert_eq!(got.as_ref().map(|_| ()).map_err(|e| *e), expected);
                if let Ok(permit) = got {
                    held.push(permit);
                }
            }
            1 => {
                let mut acquire = Polled::new(semaphore.acquire_many(want));
                let index = waiters.len();
                wants.push(want);
                stands.push(Stand::Waiting);
                match acquire.poll() {
                    Poll::Ready(Ok(permit)) => {
                        assert!(!closed && line.is_empty() && free >= want);
                        free -= want;
                        held.push(permit);
                        waiters.push(None);
                    }
                    Poll::Ready(Err(refusal)) => {
                        assert!(closed);
                        assert_eq!(refusal, Refusal::Closed);
                        waiters.push(None);
                    }
                    Poll::Pending => {
                        assert!(!closed && (!line.is_empty() || free < want));
                        line.push_back(index);
                        waiters.push(Some(acquire));
                    }
                }
            }
            2 if !waiters.is_empty() => {
                let index = usize::from(arg) % waiters.len();
                if let Some(mut acquire) = waiters[index].take() {
                    match (acquire.poll(), stands[index]) {
                        (Poll::Pending, Stand::Waiting) => waiters[index] = Some(acquire),
                        (Poll::Ready(Ok(permit)), Stand::Granted) => held.push(permit),
                        (Poll::Ready(Err(Refusal::Closed)), Stand::Closed) => {}
                        (_, stand) => panic!("waiter {index} ({stand:?}) out of turn"),
                    }
                }
            }
            3 if !waiters.is_empty() => {
                let index = usize::from(arg) % waiters.len();
                if let Some(acquire) = waiters[index].take() {
                    drop(acquire);
                    match stands[index] {
                        // A large request leaving the head lets smaller
                        // ones behind it through.
                        Stand::Waiting => {
                            line.retain(|&i| i != index);
                            grant(&mut free, &mut line, &mut stands, &wants);
                        }
                        Stand::Granted => {
                            free += wants[index];
                            grant(&mut free, &mut line, &mut stands, &wants);
                        }
                        Stand::Closed => {}
                    }
                }
            }
            4 if !held.is_empty() => {
                let permit = held.swap_remove(usize::from(arg) % held.len());
                free += permit.permits();
                drop(permit);
                grant(&mut free, &mut line, &mut stands, &wants);
            }
            4 => {
                semaphore.close();
                closed = true;
                for index in line.drain(..) {
                    stands[index] = Stand::Closed;
                }
            }
            _ => {}
        }
        assert_eq!(semaphore.available(), free, "free permits");
        for (index, waiter) in waiters.iter().enumerate() {
            if let Some(acquire) = waiter {
                let expected = usize::from(stands[index] != Stand::Waiting);
                assert_eq!(acquire.woken(), expected, "waiter {index} wakes");
            }
        }
    }
}

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
/// `bytes` (poll the receive, send, drop the sender, drop the receive):
/// every outcome and every wake as the model says.
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
        match byte % 4 {
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
            _ => {
                if rx.take().is_some() {
                    sent = None;
                    waiting = false;
                    wakes = 0;
                }
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
