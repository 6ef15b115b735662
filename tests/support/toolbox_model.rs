//! Reference models of the notify, the cancellation flags, the shared
//! receiver and the once cell, and checkers that drive `dinah-std`'s with
//! byte-coded operations and compare every outcome and every wake with the
//! model's. Used by `tests/sync_model.rs` (proptest) and the `sync_ops`
//! fuzz target, beside the other primitives' in `sync_model.rs` and
//! `wait_model.rs`.

use std::cell::Cell;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use dinah::sync::{CancellationHandle, SharedNotify, SharedOnceCell, TryRecvError, mpsc};

use super::sync_model::Polled;

/// How many futures of one kind a checker drives at once.
const WAITERS: usize = 3;

/// A wait on the notify under test, and where the model has it.
type Wait<'a> = Option<(Polled<'a, ()>, Notice)>;

/// A receive on the shared receiver under test, and where the model has it.
type Receive<'a> = Option<(Polled<'a, Option<u8>>, Turn)>;

/// A caller of the once cell under test, and where the model has it.
type Initializing<'a> = Option<(Polled<'a, Result<&'a u8, ()>>, Caller)>;

/// A waiter of the notify in the model.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Notice {
    /// Made, not polled yet: not in line.
    Fresh,
    /// In line since the `notify_waiters` count `epoch`.
    Waiting { epoch: u32 },
    /// Given a notification: by `notify_one` (passed on if dropped unseen,
    /// unless a `notify_waiters` came since it joined) or by
    /// `notify_waiters`.
    Notified { epoch: u32, by_one: bool },
}

/// Drives a `SharedNotify` and its model with the operations coded in
/// `bytes`: waits made, polled and dropped, `notify_one`, `notify_waiters`.
pub(crate) fn check_notify(bytes: &[u8]) {
    let notify = SharedNotify::new();
    let mut waits: Vec<Wait<'_>> = (0..WAITERS).map(|_| None).collect();
    let mut wakes = [0usize; WAITERS];
    let mut kept = false;
    let mut epoch = 0u32;
    let mut line: VecDeque<usize> = VecDeque::new();
    for &byte in bytes {
        let index = usize::from(byte / 8) % WAITERS;
        match byte % 4 {
            0 => match waits[index].as_mut() {
                None => {
                    waits[index] = Some((Polled::new(notify.notified()), Notice::Fresh));
                    wakes[index] = 0;
                }
                Some((wait, stand)) => {
                    let got = wait.poll();
                    let want = match *stand {
                        Notice::Fresh if kept => {
                            kept = false;
                            Poll::Ready(())
                        }
                        Notice::Fresh => {
                            line.push_back(index);
                            *stand = Notice::Waiting { epoch };
                            Poll::Pending
                        }
                        Notice::Waiting { .. } => Poll::Pending,
                        Notice::Notified { .. } => Poll::Ready(()),
                    };
                    assert_eq!(got, want, "wait {index} polled");
                    if got.is_ready() {
                        waits[index] = None;
                    }
                }
            },
            1 => {
                let Some((wait, stand)) = waits[index].take() else {
                    continue;
                };
                drop(wait);
                match stand {
                    Notice::Waiting { .. } => line.retain(|&i| i != index),
                    Notice::Notified {
                        epoch: joined,
                        by_one: true,
                    } if joined == epoch => {
                        notify_one(&mut line, &mut waits, &mut wakes, &mut kept)
                    }
                    _ => {}
                }
            }
            2 => {
                notify.notify_one();
                notify_one(&mut line, &mut waits, &mut wakes, &mut kept);
            }
            _ => {
                notify.notify_waiters();
                epoch = epoch.wrapping_add(1);
                for waiter in line.drain(..) {
                    if let Some((_, stand)) = waits[waiter].as_mut()
                        && let Notice::Waiting { epoch: joined } = *stand
                    {
                        *stand = Notice::Notified {
                            epoch: joined,
                            by_one: false,
                        };
                        wakes[waiter] += 1;
                    }
                }
            }
        }
        assert_eq!(notify.waiting() as usize, line.len(), "waiting");
        for (index, wait) in waits.iter().enumerate() {
            if let Some((wait, _)) = wait {
                assert_eq!(wait.woken(), wakes[index], "wait {index} wakes");
            }
        }
    }
}

/// The model's `notify_one`: the first in line is notified, or one
/// notification is kept.
fn notify_one(
    line: &mut VecDeque<usize>,
    waits: &mut [Wait<'_>],
    wakes: &mut [usize],
    kept: &mut bool,
) {
    match line.pop_front() {
        Some(first) => {
            if let Some((_, stand)) = waits[first].as_mut()
                && let Notice::Waiting { epoch } = *stand
            {
                *stand = Notice::Notified {
                    epoch,
                    by_one: true,
                };
                wakes[first] += 1;
            }
        }
        None => *kept = true,
    }
}

/// Drives a tree of cancellation flags (a root, its child, the child's
/// child, and a child of any of them made later) and their waits with the
/// operations coded in `bytes`: each flag's cancellation reaches its
/// descendants, each wait completes once its flag is cancelled and is woken
/// once for it.
pub(crate) fn check_cancel(bytes: &[u8]) {
    let root = CancellationHandle::new();
    let child = root.child();
    let grandchild = child.child();
    let mut flags = vec![root, child, grandchild];
    let mut parents: Vec<Option<usize>> = vec![None, Some(0), Some(1)];
    let mut cancelled = vec![false; 3];
    let mut waits: Vec<Option<Polled<'static, ()>>> = (0..3).map(|_| None).collect();
    let mut waiting = vec![false; 3];
    let mut wakes = vec![0usize; 3];
    for &byte in bytes {
        let index = usize::from(byte / 4) % flags.len();
        match byte % 4 {
            0 => {
                let changed = flags[index].request_cancellation();
                assert_eq!(changed, !cancelled[index], "request on flag {index}");
                for flag in 0..flags.len() {
                    let mut at = Some(flag);
                    while let Some(node) = at {
                        if node == index && !cancelled[flag] {
                            cancelled[flag] = true;
                            if waiting[flag] {
                                wakes[flag] += 1;
                            }
                        }
                        at = parents[node];
                    }
                }
            }
            1 => match waits[index].as_mut() {
                None => {
                    waits[index] = Some(Polled::new(flags[index].cancelled()));
                    waiting[index] = false;
                    wakes[index] = 0;
                }
                Some(wait) => {
                    let got = wait.poll();
                    assert_eq!(got.is_ready(), cancelled[index], "wait on flag {index}");
                    waiting[index] = got.is_pending();
                    if got.is_ready() {
                        waits[index] = None;
                    }
                }
            },
            2 => waits[index] = None,
            _ if flags.len() < 6 => {
                let made = flags[index].child();
                assert_eq!(
                    made.is_cancellation_requested(),
                    cancelled[index],
                    "a child of flag {index}"
                );
                flags.push(made);
                parents.push(Some(index));
                cancelled.push(cancelled[index]);
                waits.push(None);
                waiting.push(false);
                wakes.push(0);
            }
            _ => {}
        }
        for (flag, handle) in flags.iter().enumerate() {
            assert_eq!(
                handle.is_cancellation_requested(),
                cancelled[flag],
                "flag {flag}"
            );
            if let Some(wait) = &waits[flag] {
                assert_eq!(wait.woken(), wakes[flag], "wait on flag {flag} wakes");
            }
        }
    }
}

/// A consumer's receive in the model.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Turn {
    /// Made, not polled yet.
    Fresh,
    /// In line for the turn.
    Waiting,
    /// Holding the turn, waiting for a value.
    Holding,
}

/// Drives a channel of capacity 2 whose receiver three consumers share,
/// and its model, with the operations coded in `bytes`: values sent,
/// receives made, polled and dropped, `try_recv`, the sender dropped. Each
/// value goes to one consumer, in order: the one holding the turn, then
/// the next in line.
pub(crate) fn check_shared_receiver(bytes: &[u8]) {
    let (tx, rx) = mpsc::channel::<u8>(2).expect("a capacity");
    let rx = rx.shared();
    let consumers = [rx.clone(), rx.clone(), rx];
    let mut tx = Some(tx);
    let mut buffer: VecDeque<u8> = VecDeque::new();
    let mut ended = false;
    let mut receives: Vec<Receive<'_>> = (0..WAITERS).map(|_| None).collect();
    let mut wakes = [0usize; WAITERS];
    let mut holder: Option<usize> = None;
    let mut line: VecDeque<usize> = VecDeque::new();
    // The receive whose waker the channel keeps (the holder's last pending
    // poll): a send or the end wakes it once. `None` also when the one
    // kept belongs to a receive since dropped.
    let mut registered: Option<usize> = None;
    let mut next = 0u8;
    for &byte in bytes {
        let index = usize::from(byte / 8) % WAITERS;
        match byte % 5 {
            0 => {
                let Some(sender) = &tx else { continue };
                let got = sender.try_send(next).is_ok();
                assert_eq!(got, buffer.len() < 2, "send {next}");
                if got {
                    buffer.push_back(next);
                    next = next.wrapping_add(1);
                    if let Some(woken) = registered.take() {
                        wakes[woken] += 1;
                    }
                }
            }
            1 => match receives[index].as_mut() {
                None => {
                    receives[index] = Some((Polled::new(consumers[index].recv()), Turn::Fresh));
                    wakes[index] = 0;
                }
                Some((receive, turn)) => {
                    let got = receive.poll();
                    let mine = match *turn {
                        Turn::Fresh => holder.is_none(),
                        Turn::Waiting => false,
                        Turn::Holding => true,
                    };
                    let want = if mine && let Some(value) = buffer.pop_front() {
                        Poll::Ready(Some(value))
                    } else if mine && ended {
                        Poll::Ready(None)
                    } else {
                        Poll::Pending
                    };
                    assert_eq!(got, want, "receive {index}");
                    match (got.is_ready(), *turn) {
                        (true, _) => {
                            receives[index] = None;
                            pass_turn(
                                &mut holder,
                                &mut line,
                                &mut receives,
                                &mut wakes,
                                Turn::Holding,
                            );
                        }
                        (false, Turn::Fresh) if mine => {
                            holder = Some(index);
                            *turn = Turn::Holding;
                            registered = Some(index);
                        }
                        (false, Turn::Fresh) => {
                            line.push_back(index);
                            *turn = Turn::Waiting;
                        }
                        (false, Turn::Holding) => registered = Some(index),
                        (false, Turn::Waiting) => {}
                    }
                }
            },
            2 => {
                let Some((receive, turn)) = receives[index].take() else {
                    continue;
                };
                drop(receive);
                if registered == Some(index) {
                    registered = None;
                }
                match turn {
                    Turn::Holding => pass_turn(
                        &mut holder,
                        &mut line,
                        &mut receives,
                        &mut wakes,
                        Turn::Holding,
                    ),
                    Turn::Waiting => line.retain(|&i| i != index),
                    Turn::Fresh => {}
                }
            }
            3 => {
                let got = consumers[index].try_recv();
                let want = if holder.is_some() {
                    Err(TryRecvError::Empty)
                } else if let Some(value) = buffer.pop_front() {
                    Ok(value)
                } else if ended {
                    Err(TryRecvError::Closed)
                } else {
                    Err(TryRecvError::Empty)
                };
                assert_eq!(got, want, "try_recv on consumer {index}");
            }
            _ => {
                if tx.take().is_some() {
                    ended = true;
                    if let Some(woken) = registered.take() {
                        wakes[woken] += 1;
                    }
                }
            }
        }
        for (index, receive) in receives.iter().enumerate() {
            if let Some((receive, _)) = receive {
                assert_eq!(receive.woken(), wakes[index], "receive {index} wakes");
            }
        }
    }
}

/// A turn (to receive, to initialize) goes to the next in line, which is
/// woken for it and now holds it (`holding`).
fn pass_turn<P, S: Copy>(
    holder: &mut Option<usize>,
    line: &mut VecDeque<usize>,
    waiters: &mut [Option<(P, S)>],
    wakes: &mut [usize],
    holding: S,
) {
    *holder = line.pop_front();
    if let Some(next) = *holder {
        if let Some((_, stand)) = waiters[next].as_mut() {
            *stand = holding;
        }
        wakes[next] += 1;
    }
}

/// A caller of the once cell in the model.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Caller {
    /// Made, not polled yet.
    Fresh,
    /// In line for the turn to initialize.
    Waiting,
    /// Holding the turn (given it, or running its initializer).
    Holding,
}

/// What an initializer under test will give: nothing yet, a value, or an
/// error.
type Outcome = Rc<Cell<Option<Result<u8, ()>>>>;

/// Drives a `SharedOnceCell` and its model with the operations coded in
/// `bytes`: callers of `get_or_try_init` made, polled and dropped, their
/// initializers finished with a value or an error, and `set`. One caller at
/// a time holds the turn, first come first served; the value, once set,
/// never changes.
pub(crate) fn check_once_cell(bytes: &[u8]) {
    let cell = SharedOnceCell::<u8>::new();
    let outcomes: Vec<Outcome> = (0..WAITERS).map(|_| Rc::default()).collect();
    let mut callers: Vec<Initializing<'_>> = (0..WAITERS).map(|_| None).collect();
    let mut wakes = [0usize; WAITERS];
    let mut value: Option<u8> = None;
    let mut holder: Option<usize> = None;
    let mut line: VecDeque<usize> = VecDeque::new();
    for &byte in bytes {
        let index = usize::from(byte / 8) % WAITERS;
        let arg = byte / 32;
        match byte % 5 {
            0 => match callers[index].as_mut() {
                None => {
                    let outcome = Rc::clone(&outcomes[index]);
                    outcome.set(None);
                    let init =
                        move || poll_fn(move |_| outcome.get().map_or(Poll::Pending, Poll::Ready));
                    callers[index] = Some((Polled::new(cell.get_or_try_init(init)), Caller::Fresh));
                    wakes[index] = 0;
                }
                Some((caller, stand)) => {
                    let got = caller.poll().map(|result| result.copied());
                    if *stand == Caller::Fresh {
                        if value.is_none() && holder.is_none() {
                            holder = Some(index);
                            *stand = Caller::Holding;
                        } else if value.is_none() {
                            line.push_back(index);
                            *stand = Caller::Waiting;
                        }
                    }
                    let want = match (value, *stand) {
                        (Some(set), Caller::Fresh | Caller::Holding) => Poll::Ready(Ok(set)),
                        (None, Caller::Holding) => match outcomes[index].get() {
                            Some(Ok(made)) => {
                                value = Some(made);
                                Poll::Ready(Ok(made))
                            }
                            Some(Err(())) => Poll::Ready(Err(())),
                            None => Poll::Pending,
                        },
                        _ => Poll::Pending,
                    };
                    assert_eq!(got, want, "caller {index}");
                    if got.is_ready() {
                        let stand = *stand;
                        callers[index] = None;
                        if stand == Caller::Holding {
                            pass_turn(
                                &mut holder,
                                &mut line,
                                &mut callers,
                                &mut wakes,
                                Caller::Holding,
                            );
                        }
                    }
                }
            },
            1 => outcomes[index].set(Some(Ok(arg))),
            2 => outcomes[index].set(Some(Err(()))),
            3 => {
                let Some((caller, stand)) = callers[index].take() else {
                    continue;
                };
                drop(caller);
                match stand {
                    Caller::Holding => pass_turn(
                        &mut holder,
                        &mut line,
                        &mut callers,
                        &mut wakes,
                        Caller::Holding,
                    ),
                    Caller::Waiting => line.retain(|&i| i != index),
                    Caller::Fresh => {}
                }
            }
            _ => {
                let got = cell.set(100 + arg);
                let want = if holder.is_none() && value.is_none() {
                    value = Some(100 + arg);
                    Ok(())
                } else {
                    Err(100 + arg)
                };
                assert_eq!(got, want, "set");
            }
        }
        assert_eq!(cell.get().copied(), value, "the value");
        for (index, caller) in callers.iter().enumerate() {
            if let Some((caller, _)) = caller {
                assert_eq!(caller.woken(), wakes[index], "caller {index} wakes");
            }
        }
    }
}
