//! [`Idle`]: how a run loop sleeps when nothing is ready, and [`Pended`],
//! the way to sleep holding no lock.
#![forbid(unsafe_code)]

/// How a run loop ([`AsyncExecutor::run`](super::AsyncExecutor::run), [`AsyncExecutor::run_until`](super::AsyncExecutor::run_until))
/// waits when no task is ready: it checks for work and sleeps until a wake,
/// without losing a wake that lands between the two.
///
/// Two ways are provided:
///
/// - a closure (`FnMut()`): the firmware way. The check and the call run
///   inside one critical section; on a single core that masks interrupts,
///   so the closure can sleep with `WFI`, which returns when an interrupt is
///   pending. Do not block in it on a host: there a critical section is one
///   lock for the whole process (`critical-section/std`), held while it
///   sleeps.
/// - [`Pended`]: the host (or multi-core) way. The check runs with no lock
///   held and the closure sleeps only if it found nothing; the queue's
///   pender ([`ReadyQueue::with_pender`](super::ReadyQueue::with_pender)) must end the sleep, and a pend that
///   comes between the check and the sleep must end it at once (what
///   `thread::park` and `unpark` do, and `WFE` and `SEV`).
pub trait Idle {
    /// Sleeps until a wake, unless `ready()` says a task is ready now.
    fn idle(&mut self, ready: impl Fn() -> bool);
}

impl<F: FnMut()> Idle for F {
    /// Calls `self` inside a critical section, if `ready()`, checked inside
    /// the same section, is false.
    fn idle(&mut self, ready: impl Fn() -> bool) {
        critical_section::with(|_| {
            if !ready() {
                self();
            }
        });
    }
}

/// An [`Idle`] that checks for work and sleeps with its closure holding no
/// lock: for a host thread that parks, or a core that waits for an event,
/// until the queue's pender wakes it.
///
/// ```
/// use std::sync::OnceLock;
/// use std::thread::{self, Thread};
/// use dinah::executor::{AsyncExecutor, Pended, ReadyQueue};
///
/// static EXECUTOR_THREAD: OnceLock<Thread> = OnceLock::new();
/// fn pend() {
///     if let Some(thread) = EXECUTOR_THREAD.get() {
///         thread.unpark();
///     }
/// }
/// static QUEUE: ReadyQueue<4> = ReadyQueue::with_pender(pend);
///
/// EXECUTOR_THREAD.set(thread::current()).unwrap();
/// let mut executor: AsyncExecutor<'_, 4> = AsyncExecutor::new(&QUEUE).unwrap();
/// let (tx, rx) = std::sync::mpsc::channel();
/// let waker_thread = thread::spawn(move || {
///     let waker: std::task::Waker = rx.recv().unwrap();
///     waker.wake();
/// });
/// let mut sent = Some(tx);
/// executor.run_until(
///     std::future::poll_fn(|cx| match sent.take() {
///         Some(tx) => {
///             tx.send(cx.waker().clone()).unwrap();
///             std::task::Poll::Pending
///         }
///         None => std::task::Poll::Ready(()),
///     }),
///     8,
///     Pended(thread::park),
/// );
/// waker_thread.join().unwrap();
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Pended<F>(pub F);

impl<F: FnMut()> Idle for Pended<F> {
    /// Calls the closure, holding no lock, if `ready()` is false.
    fn idle(&mut self, ready: impl Fn() -> bool) {
        if !ready() {
            (self.0)();
        }
    }
}
