//! [`Event`]: an interrupt's wake carried to any number of waiting tasks.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use critical_section::Mutex;

use crate::raw;
use crate::raw::wait::{Turn, WaitEntry, WaitKey, WaitList, WakeBatch};
use crate::sync::Refusal;

/// What an [`Event`] holds under its critical section.
struct State<const W: usize> {
    /// Raises so far (wrapping).
    raised: u32,
    /// Raises and closes so far: what a waiter joins the line stamped with.
    epoch: u64,
    closed: bool,
    line: WaitList<[WaitEntry; W]>,
}

/// A source of wakes for up to `W` waiting tasks at once: a `static` with a
/// `const` constructor, raised from interrupt handlers or tasks.
///
/// ```
/// use core::sync::atomic::{AtomicU32, Ordering};
/// use dinah::executor::{AsyncExecutor, ReadyQueue};
/// use dinah::io::Event;
///
/// static RX: Event = Event::new();
/// static BYTES: AtomicU32 = AtomicU32::new(0);
/// static QUEUE: ReadyQueue<1> = ReadyQueue::new();
///
/// // What an interrupt handler does when a byte arrives.
/// fn on_rx_interrupt() {
///     BYTES.fetch_add(1, Ordering::Relaxed);
///     RX.raise();
/// }
///
/// let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
/// let seen = executor.run_until(
///     async {
///         // Take the wait before looking: a raise in between is not missed.
///         let wait = RX.wait();
///         if BYTES.load(Ordering::Relaxed) == 0 {
///             wait.await.unwrap();
///         }
///         BYTES.load(Ordering::Relaxed)
///     },
///     8,
///     on_rx_interrupt, // here the "interrupt" comes when the executor idles
/// );
/// assert_eq!(seen, 1);
/// ```
///
/// # Guarantees
///
/// - A wait completes once the event was raised after the wait was made
///   ([`wait`](Self::wait) notes the count of raises then), however many
///   tasks wait: a raise wakes every task waiting, each once. A raise
///   between making the wait and its first poll is not missed.
/// - The wait's output is how many raises happened since it was made (at
///   least 1; it wraps after `u32::MAX`), so a task that was slow to run
///   knows it missed some.
/// - A task that keeps its own count ([`wait_from`](Self::wait_from))
///   sees every raise, including those made while it was not waiting.
/// - After [`close`](Self::close), every wait ends with
///   [`Refusal::Closed`], once the raises before the close are reported.
/// - [`raise`](Self::raise) takes a critical section for a time that grows
///   with the number of waiters woken (at most `W`), and never allocates;
///   wakers are woken after it ends.
///
/// # What it does not do
///
/// It holds no data and no raise made before a wait: a task checks its
/// condition after making the wait, as in the example. `W` bounds the
/// waiters: a wait that finds `W` tasks waiting ends with
/// [`Refusal::LineFull`].
pub struct Event<const W: usize = 4> {
    state: Mutex<RefCell<State<W>>>,
}

impl<const W: usize> Event<W> {
    /// An event no one waits on yet.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            state: Mutex::new(RefCell::new(State {
                raised: 0,
                epoch: 0,
                closed: false,
                line: WaitList::new([const { WaitEntry::VACANT }; W]),
            })),
        }
    }

    /// Wakes every task waiting now (from an interrupt handler or a task).
    /// Returns how many it woke.
    pub fn raise(&self) -> usize {
        self.settle_all(|state| {
            state.raised = state.raised.wrapping_add(1);
            true
        })
    }

    /// Ends every wait, now and later, with [`Refusal::Closed`]: for a
    /// source that will not raise again (a device shut down). Returns how
    /// many waiting tasks it woke.
    pub fn close(&self) -> usize {
        self.settle_all(|state| {
            state.closed = true;
            false
        })
    }

    /// Changes the state with `change`, then settles the whole line
    /// (served when `change` says so), waking in batches outside the
    /// critical section.
    fn settle_all(&self, change: impl FnOnce(&mut State<W>) -> bool) -> usize {
        let mut change = Some(change);
        let mut grant = true;
        // Only those in line at the change: a task woken by an earlier
        // batch may join again before the next, and waits for the next
        // raise. Each joins stamped with the epoch, so those who joined
        // before the change are the ones stamped below `cutoff` (and, the
        // line being FIFO, they are at its front).
        let mut cutoff = 0;
        let mut woken = 0;
        loop {
            let mut batch = WakeBatch::new();
            raw::wait::critical(&self.state, |state| {
                if let Some(change) = change.take() {
                    grant = change(state);
                    state.epoch += 1;
                    cutoff = state.epoch;
                }
                while batch.has_room() && state.line.oldest_since().is_some_and(|at| at < cutoff) {
                    match state.line.settle_head(grant) {
                        Some(waker) => {
                            batch.push(Some(waker));
                            woken += 1;
                        }
                        None => break,
                    }
                }
            });
            let full = batch.is_full();
            batch.wake();
            if !full {
                return woken;
            }
        }
    }

    /// Raises so far (wrapping).
    #[must_use]
    pub fn raised(&self) -> u32 {
        raw::wait::critical(&self.state, |state| state.raised)
    }

    /// Tasks waiting now.
    #[must_use]
    pub fn waiting(&self) -> u32 {
        raw::wait::critical(&self.state, |state| state.line.waiting())
    }

    /// A future that completes at the next raise after this call: the
    /// number of raises since this call. Make it before checking the
    /// condition it signals (see the type's example).
    pub fn wait(&self) -> EventWait<'_, W> {
        self.wait_from(self.raised())
    }

    /// A future that completes once the count of raises is past `seen` (a
    /// count this task read earlier, from [`raised`](Self::raised) or by
    /// adding up its waits' outputs): the number of raises since `seen`.
    /// A task that keeps its count this way sees every raise, even those
    /// that came while it was busy and not waiting.
    pub fn wait_from(&self, seen: u32) -> EventWait<'_, W> {
        EventWait {
            event: self,
            from: seen,
            key: None,
        }
    }
}

impl<const W: usize> Default for Event<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: usize> fmt::Debug for Event<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        raw::wait::critical(&self.state, |state| {
            f.debug_struct("Event")
                .field("raised", &state.raised)
                .field("waiting", &state.line.waiting())
                .field("closed", &state.closed)
                .finish()
        })
    }
}

/// [`Event::wait`]'s future: the raises since it was made, or why it was
/// refused. Dropped while waiting, it leaves the line.
#[must_use = "a wait does nothing unless awaited"]
pub struct EventWait<'a, const W: usize> {
    event: &'a Event<W>,
    from: u32,
    key: Option<WaitKey>,
}

impl<const W: usize> Future for EventWait<'_, W> {
    type Output = Result<u32, Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let from = this.from;
        let key = &mut this.key;
        raw::wait::critical(&this.event.state, |state| {
            let since = state.raised.wrapping_sub(from);
            match key.take() {
                None if since > 0 => Poll::Ready(Ok(since)),
                None if state.closed => Poll::Ready(Err(Refusal::Closed)),
                None => match state.line.push(cx.waker(), 1, state.epoch) {
                    Some(joined) => {
                        *key = Some(joined);
                        Poll::Pending
                    }
                    None => Poll::Ready(Err(Refusal::LineFull)),
                },
                Some(held) => match state.line.poll(held, cx.waker()) {
                    Turn::Waiting => {
                        *key = Some(held);
                        Poll::Pending
                    }
                    Turn::Granted(_) => Poll::Ready(Ok(since.max(1))),
                    Turn::Closed if since > 0 => Poll::Ready(Ok(since)),
                    Turn::Closed => Poll::Ready(Err(Refusal::Closed)),
                },
            }
        })
    }
}

impl<const W: usize> Drop for EventWait<'_, W> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            raw::wait::critical(&self.event.state, |state| {
                state.line.cancel(key);
            });
        }
    }
}

impl<const W: usize> fmt::Debug for EventWait<'_, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventWait")
            .field("from", &self.from)
            .field("waiting", &self.key.is_some())
            .finish()
    }
}
