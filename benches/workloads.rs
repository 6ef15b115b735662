//! The work every benchmark runs, whatever the contender: a task that
//! yields, two tasks passing a token through one-slot mailboxes, and the
//! CPU-bound integer mix. Shared by the benches in `benches/`.
#![allow(dead_code)]

use std::cell::Cell;
use std::future::poll_fn;
use std::hint::black_box;
use std::task::{Poll, Waker};

use dinah::yield_now;

/// Iterations of integer mixing in one CPU-bound task.
pub(crate) const CPU_ITERATIONS: u32 = 1_000_000;

/// A deterministic integer mix: the CPU-bound task.
pub(crate) fn mix(seed: u64, iterations: u32) -> u64 {
    let mut x = black_box(seed) ^ 0x9E37_79B9_7F4A_7C15;
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// Round trips of `ping_pong`.
pub(crate) const ROUND_TRIPS: u32 = 1_000;

/// Yields `times` times.
pub(crate) async fn yielder(times: usize) {
    for _ in 0..times {
        yield_now().await;
    }
}

/// `yield_now` written out in the benchmarks' own crate, for instruction
/// counts where the yielding future is certainly inlined into the measuring
/// loop, whoever's executor runs it (`dinah::yield_now` may be inlined
/// across crates; a peer's own would be another future).
pub(crate) struct YieldHere(bool);

impl std::future::Future for YieldHere {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// [`yielder`] over [`YieldHere`].
pub(crate) async fn yielder_here(times: usize) {
    for _ in 0..times {
        YieldHere(false).await;
    }
}

/// A one-slot mailbox for tasks of one thread.
#[derive(Default)]
pub(crate) struct Mailbox {
    slot: Cell<Option<u32>>,
    receiver: Cell<Option<Waker>>,
    sender: Cell<Option<Waker>>,
}

/// Keeps `waker` in `cell` (cloning only when it would wake another task).
pub(crate) fn park(cell: &Cell<Option<Waker>>, waker: &Waker) {
    let current = cell.take();
    match current {
        Some(kept) if kept.will_wake(waker) => cell.set(Some(kept)),
        _ => cell.set(Some(waker.clone())),
    }
}

impl Mailbox {
    pub(crate) async fn send(&self, value: u32) {
        poll_fn(|cx| {
            if self.slot.get().is_some() {
                park(&self.sender, cx.waker());
                return Poll::Pending;
            }
            self.slot.set(Some(value));
            if let Some(waker) = self.receiver.take() {
                waker.wake();
            }
            Poll::Ready(())
        })
        .await;
    }

    pub(crate) async fn recv(&self) -> u32 {
        poll_fn(|cx| match self.slot.take() {
            Some(value) => {
                if let Some(waker) = self.sender.take() {
                    waker.wake();
                }
                Poll::Ready(value)
            }
            None => {
                park(&self.receiver, cx.waker());
                Poll::Pending
            }
        })
        .await
    }
}

pub(crate) async fn ping(to_pong: &Mailbox, to_ping: &Mailbox) {
    for token in 0..ROUND_TRIPS {
        to_pong.send(token).await;
        let back = to_ping.recv().await;
        assert_eq!(back, token);
    }
}

pub(crate) async fn pong(to_pong: &Mailbox, to_ping: &Mailbox) {
    for _ in 0..ROUND_TRIPS {
        let token = to_pong.recv().await;
        to_ping.send(token).await;
    }
}
