//! [`Event`]: an interrupt's wake carried to any number of waiting tasks.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use critical_section::Mutex;

use crate::raw;
use crate::raw::wait::WakeBatch;
use crate::sync::Refusal;

/// Where a waiter's slot stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Vacant,
    /// Holds a waker to wake at the next raise or close.
    Waiting,
    /// Its waker was taken and woken; the slot stays its waiter's until
    /// the waiter polls or drops, so a slot is never reused under it.
    Woken,
}

/// One waiter's slot: 16 B on a 32-bit core.
struct Slot {
    waker: Option<Waker>,
    /// The count of raises when the waiter joined: a raise since then is
    /// one it waits for, and a waiter who joined after a raise (between
    /// two batches of its wakes) is not woken by it.
    from: u32,
    stage: Stage,
}

impl Slot {
    const VACANT: Self = Self {
        waker: None,
        from: 0,
        stage: Stage::Vacant,
    };
}

/// What an [`Event`] holds under its critical section: 8 B and the
/// slots, on a 32-bit core.
///
/// Invariants:
/// 1. A slot is `Waiting` exactly while its waiter's future holds its
///    index and no raise or close since it joined has woken it; its waker
///    is then `Some`.
/// 2. Only the waiter frees its slot (`Vacant`), when it completes or is
///    dropped: an index held by a future always names that future's slot.
/// 3. A raise or close wakes each `Waiting` slot at most once, and only
///    those that joined before it.
struct State<const W: usize> {
    /// Raises so far (wrapping).
    raised: u32,
    closed: bool,
    slots: [Slot; W],
}

impl<const W: usize> State<W> {
    fn waiting(&self) -> u32 {
        self.slots
            .iter()
            .filter(|slot| slot.stage == Stage::Waiting)
            .count() as u32
    }
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
/// - [`raise`](Self::raise) looks at the `W` slots in critical sections
///   that each end once a few wakers are taken, and never allocates;
///   wakers are woken outside them. A task that waits again between two
///   of them is not woken by the raise it has seen.
/// - Its size on a 32-bit core: 12 bytes and 16 per waiter's slot (the
///   QEMU events firmware checks and logs it).
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
                closed: false,
                slots: [const { Slot::VACANT }; W],
            })),
        }
    }

    /// Wakes every task waiting now (from an interrupt handler or a task).
    /// Returns how many it woke.
    pub fn raise(&self) -> usize {
        self.settle_all(|state| state.raised = state.raised.wrapping_add(1))
    }

    /// Ends every wait, now and later, with [`Refusal::Closed`]: for a
    /// source that will not raise again (a device shut down). Returns how
    /// many waiting tasks it woke.
    pub fn close(&self) -> usize {
        self.settle_all(|state| state.closed = true)
    }

    /// Changes the state with `change`, then wakes every waiter that
    /// joined before it, in batches outside the critical section.
    fn settle_all(&self, change: impl FnOnce(&mut State<W>)) -> usize {
        let mut change = Some(change);
        let mut next = 0;
        let mut woken = 0;
        loop {
            let mut batch = WakeBatch::new();
            raw::wait::critical(&self.state, |state| {
                if let Some(change) = change.take() {
                    change(state);
                }
                let (raised, closed) = (state.raised, state.closed);
                // A waiter that joined after the change (between two
                // batches) joined at the count of raises since it: skipped,
                // unless a later raise or close came too.
                for slot in state.slots.iter_mut().skip(next) {
                    if !batch.has_room() {
                        break;
                    }
                    next += 1;
                    if slot.stage == Stage::Waiting && (closed || slot.from != raised) {
                        slot.stage = Stage::Woken;
                        batch.push(slot.waker.take());
                        woken += 1;
                    }
                }
            });
            batch.wake();
            if next >= W {
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
        raw::wait::critical(&self.state, |state| state.waiting())
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
                .field("waiting", &state.waiting())
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
    /// The index of this wait's slot, while it holds one.
    key: Option<u32>,
}

impl<const W: usize> Future for EventWait<'_, W> {
    type Output = Result<u32, Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let from = this.from;
        let key = &mut this.key;
        raw::wait::critical(&this.event.state, |state| {
            let since = state.raised.wrapping_sub(from);
            let done = if since > 0 {
                Some(Ok(since))
            } else if state.closed {
                Some(Err(Refusal::Closed))
            } else {
                None
            };
            if let Some(done) = done {
                if let Some(held) = key.take() {
                    vacate(state, held);
                }
                return Poll::Ready(done);
            }
            let held = match *key {
                Some(held) => held,
                None => match state
                    .slots
                    .iter()
                    .position(|slot| slot.stage == Stage::Vacant)
                {
                    Some(free) => {
                        let free = free as u32;
                        *key = Some(free);
                        free
                    }
                    None => return Poll::Ready(Err(Refusal::LineFull)),
                },
            };
            let slot = slot(state, held);
            // Joining, still waiting, or woken with nothing to report (the
            // count of raises wrapped round to this wait's): wait on.
            if !slot
                .waker
                .as_ref()
                .is_some_and(|kept| kept.will_wake(cx.waker()))
            {
                slot.waker = Some(cx.waker().clone());
            }
            slot.from = from;
            slot.stage = Stage::Waiting;
            Poll::Pending
        })
    }
}

/// Slot `index` of `state`; an index this module handed out that is out of
/// range is a broken invariant.
fn slot<const W: usize>(state: &mut State<W>, index: u32) -> &mut Slot {
    match state.slots.get_mut(index as usize) {
        Some(slot) => slot,
        None => crate::fmt::fail!("dinah: event slot out of range"),
    }
}

/// Frees the slot `index` for the next waiter.
fn vacate<const W: usize>(state: &mut State<W>, index: u32) {
    let slot = slot(state, index);
    slot.waker = None;
    slot.stage = Stage::Vacant;
}

impl<const W: usize> Drop for EventWait<'_, W> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            raw::wait::critical(&self.event.state, |state| vacate(state, key));
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
