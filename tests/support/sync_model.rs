//! Reference models of the bounded channel and the semaphore, and checkers
//! that drive dinah's (`dinah-std`'s `mpsc` and `SharedSemaphore`, which
//! run the core's logic) with the same byte-coded operations and compare
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
pub(crate) enum Stand {
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
