//! Loom models of the channel's and the semaphore's wait protocol (the
//! core's `WaitList`, `ChannelState` and `Permits` behind `dinah-std`'s
//! mutex): a send waiting on a full channel against the receive that frees
//! its slot, the last sender leaving against a waiting receive, a release
//! against an acquire joining the line, and an acquire given up against
//! the grant that reaches it; and the cancellation handle's: a request
//! against a task starting to await it, and against a child being made;
//! and the notify's: a `notify_one` against a wait joining the line, and a
//! wait given up against the `notify_one` that reaches it; and the
//! mutex's and the read-write lock's: two lockers on two threads, and a
//! writer against a reader (each a value lent out of its cell); and the
//! oneshot's: a send, and a sender dropped unsent, against the receive;
//! and the watch's: a send, then the sender's drop, against a receiver
//! joining the line; and the broadcast's: a send and the last sender's
//! drop against a receiver joining the line; two consumers sharing one
//! receiver; and the once cell's: two initializers racing for its turn. A
//! lost wake shows as a deadlock, a lost value, permit or cancellation as a
//! failed assertion.
#![cfg(loom)]

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use dinah_std::sync::{
    CancellationHandle, SharedMutex, SharedNotify, SharedOnceCell, SharedRwLock, SharedSemaphore,
    broadcast, mpsc, oneshot, watch,
};
use loom::thread;

/// Wakes by unparking the thread that polls.
struct Unpark(thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `future` on this thread, parking between polls.
fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
        thread::park();
    }
}

#[test]
fn a_send_waiting_on_a_full_channel_is_woken_by_the_receive() {
    loom::model(|| {
        let (tx, mut rx) = mpsc::channel::<u32>(1).unwrap();
        let producer = thread::spawn(move || {
            block_on(tx.send(1)).unwrap();
            block_on(tx.send(2)).unwrap();
        });
        assert_eq!(block_on(rx.recv()), Some(1));
        assert_eq!(block_on(rx.recv()), Some(2));
        assert_eq!(block_on(rx.recv()), None, "the sender is gone");
        producer.join().unwrap();
    });
}

#[test]
fn two_senders_waiting_each_get_their_turn() {
    loom::model(|| {
        let (tx, mut rx) = mpsc::channel::<u32>(1).unwrap();
        tx.try_send(0).unwrap();
        let other = tx.clone();
        let a = thread::spawn(move || block_on(tx.send(1)).unwrap());
        let b = thread::spawn(move || block_on(other.send(2)).unwrap());
        let mut got = Vec::new();
        while let Some(value) = block_on(rx.recv()) {
            got.push(value);
        }
        a.join().unwrap();
        b.join().unwrap();
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2]);
    });
}

#[test]
fn a_release_reaches_an_acquire_joining_the_line() {
    loom::model(|| {
        let semaphore = SharedSemaphore::new(1);
        let held = semaphore.try_acquire_owned().unwrap();
        let releaser = thread::spawn(move || drop(held));
        let permit = block_on(semaphore.acquire()).unwrap();
        drop(permit);
        releaser.join().unwrap();
        assert_eq!(semaphore.available(), 1);
    });
}

#[test]
fn an_acquire_given_up_while_granted_passes_the_permit_on() {
    loom::model(|| {
        let semaphore = SharedSemaphore::new(1);
        let held = semaphore.try_acquire_owned().unwrap();
        let waiter = {
            let semaphore = semaphore.clone();
            thread::spawn(move || {
                // Joins the line, then gives up whether or not it was
                // granted in the meantime.
                let mut acquire = pin!(semaphore.acquire());
                let mut cx = Context::from_waker(Waker::noop());
                let _ = acquire.as_mut().poll(&mut cx);
            })
        };
        drop(held);
        waiter.join().unwrap();
        assert_eq!(semaphore.available(), 1, "the permit is not lost");
    });
}

#[test]
fn a_cancellation_racing_a_task_that_starts_to_await_it_wakes_the_task() {
    loom::model(|| {
        let root = CancellationHandle::new();
        let child = root.child();
        let waiter = thread::spawn(move || block_on(child.cancelled()));
        assert!(root.request_cancellation());
        waiter.join().unwrap();
    });
}

#[test]
fn a_child_made_while_its_parent_is_cancelled_is_cancelled() {
    loom::model(|| {
        let root = CancellationHandle::new();
        let parent = root.clone();
        let maker = thread::spawn(move || parent.child());
        assert!(root.request_cancellation());
        let child = maker.join().unwrap();
        assert!(child.is_cancellation_requested());
        // And a waiter of it is not left behind.
        block_on(child.cancelled());
    });
}

#[test]
fn a_notify_one_racing_a_wait_joining_the_line_is_never_lost() {
    loom::model(|| {
        let notify = Arc::new(SharedNotify::new());
        let waiter = {
            let notify = Arc::clone(&notify);
            thread::spawn(move || block_on(notify.notified()))
        };
        notify.notify_one();
        waiter.join().unwrap();
    });
}

#[test]
fn a_wait_given_up_as_a_notify_one_reaches_it_passes_it_on() {
    loom::model(|| {
        let notify = Arc::new(SharedNotify::new());
        // One wait in line first, given up on another thread while the
        // notification comes.
        let waker = Waker::noop();
        let mut first = Box::pin(notify.notified());
        assert!(
            first
                .as_mut()
                .poll(&mut Context::from_waker(waker))
                .is_pending()
        );
        let notifier = {
            let notify = Arc::clone(&notify);
            thread::spawn(move || notify.notify_one())
        };
        drop(first);
        notifier.join().unwrap();
        // Either it was kept (nobody waited) or passed on from the dropped
        // wait: the next wait completes at once, without waiting.
        let mut next = Box::pin(notify.notified());
        assert!(
            next.as_mut()
                .poll(&mut Context::from_waker(waker))
                .is_ready()
        );
    });
}

#[test]
fn two_tasks_locking_a_mutex_each_see_the_other_s_write() {
    loom::model(|| {
        let mutex = Arc::new(SharedMutex::new(0u32));
        let other = Arc::clone(&mutex);
        let writer = thread::spawn(move || *block_on(other.lock()) += 1);
        *block_on(mutex.lock()) += 1;
        writer.join().unwrap();
        assert_eq!(Arc::try_unwrap(mutex).ok().unwrap().into_inner(), Some(2));
    });
}

#[test]
fn a_writer_waits_for_a_reader_on_another_thread() {
    loom::model(|| {
        let lock = Arc::new(SharedRwLock::new(0u32));
        let other = Arc::clone(&lock);
        let reader = thread::spawn(move || *block_on(other.read()));
        *block_on(lock.write()) += 1;
        let seen = reader.join().unwrap();
        assert!(seen <= 1);
        assert_eq!(*block_on(lock.read()), 1);
    });
}

#[test]
fn a_oneshot_send_racing_the_receive_is_never_lost() {
    loom::model(|| {
        let (tx, rx) = oneshot::channel::<u32>();
        let sender = thread::spawn(move || tx.send(5));
        assert_eq!(block_on(rx), Ok(5));
        assert_eq!(sender.join().unwrap(), Ok(()));
    });
}

#[test]
fn a_oneshot_sender_dropped_unsent_ends_a_waiting_receive() {
    loom::model(|| {
        let (tx, rx) = oneshot::channel::<u32>();
        let sender = thread::spawn(move || drop(tx));
        assert_eq!(block_on(rx), Err(oneshot::RecvError));
        sender.join().unwrap();
    });
}

#[test]
fn a_watch_send_racing_a_receiver_joining_the_line_is_never_lost() {
    loom::model(|| {
        let (tx, mut rx) = watch::channel(0u32);
        let sender = thread::spawn(move || {
            tx.send(1).unwrap();
            drop(tx);
        });
        assert_eq!(block_on(rx.changed()), Ok(()), "the last value, unseen");
        assert_eq!(*rx.borrow(), 1);
        assert_eq!(block_on(rx.changed()), Err(watch::RecvError));
        sender.join().unwrap();
    });
}

#[test]
fn a_broadcast_reaches_a_receiver_joining_the_line_and_then_ends() {
    loom::model(|| {
        let (tx, mut rx) = broadcast::channel::<u32>(2).unwrap();
        let sender = thread::spawn(move || {
            tx.send(1).unwrap();
            drop(tx);
        });
        assert_eq!(block_on(rx.recv()), Ok(1));
        assert_eq!(block_on(rx.recv()), Err(broadcast::RecvError::Closed));
        sender.join().unwrap();
    });
}

#[test]
fn two_consumers_sharing_a_receiver_take_each_value_once() {
    loom::model(|| {
        let (tx, rx) = mpsc::channel::<u32>(1).unwrap();
        let rx = rx.shared();
        let other = rx.clone();
        let consumer = thread::spawn(move || block_on(other.recv()));
        tx.try_send(1).unwrap();
        drop(tx);
        let mut got: Vec<u32> = block_on(rx.recv()).into_iter().collect();
        got.extend(consumer.join().unwrap());
        assert_eq!(got, [1], "one consumer takes it, the other sees the end");
    });
}

#[test]
fn two_initializers_racing_for_a_once_cell_run_one_and_read_its_value() {
    loom::model(|| {
        let cell = Arc::new(SharedOnceCell::new());
        let runs = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let init = |cell: &SharedOnceCell<usize>, runs: &loom::sync::atomic::AtomicUsize, id| {
            *block_on(cell.get_or_init(|| async move {
                runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                id
            }))
        };
        let other = thread::spawn({
            let (cell, runs) = (Arc::clone(&cell), Arc::clone(&runs));
            move || init(&cell, &runs, 2)
        });
        let mine = init(&cell, &runs, 1);
        assert_eq!(other.join().unwrap(), mine, "both read the one value");
        assert_eq!(
            runs.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "one initializer ran"
        );
    });
}
