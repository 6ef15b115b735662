//! This thread's one runtime context: which executor runs here and its
//! local ready list, the driver that `time`, `io` and `net` use when called
//! from a task, and what the poll running now left waiting.
//!
//! It is kept in two thread-locals of this file, reached with `try_with`: a
//! thread whose thread-locals are being destroyed runs no executor, has no
//! current driver and keeps no notes. The executor's part owns a list and
//! references, so it has a destructor, and each access checks that it is
//! registered; the rest (the pool a worker thread serves, and the poll
//! notes) are plain copies with none, so the measuring executor reads its
//! notes after every poll without that check.
//!
//! - **Running here.** Which pool this thread works for, if any. A wake made on the executor's own thread while it
//!   runs is queued on the local list, with no atomics, no push and no
//!   unpark ([`mark_here`], [`queue_here`], [`RunningHere`]).
//! - **The worker this thread is.** On a worker of a
//!   [`MultiExecutor`](crate::executor::MultiExecutor), its own queues: a
//!   wake made on it goes there instead of the global queue
//!   ([`with_worker`]).
//! - **The current driver.** The driver of the executor made, or entered
//!   (by `block_on` or `tick`), last on this thread, until it is dropped:
//!   `executor.block_on(time::sleep(d))` uses `executor`'s timers, and a
//!   task always uses those of the executor that polls it. A few spare
//!   references are kept, so that timer handles made and dropped on this
//!   thread touch no reference count ([`current`], [`keep`]).
//! - **Poll notes.** What the poll running now armed or waits on: the
//!   earliest timer, a socket and its way, a channel's or semaphore's line.
//!   A measuring executor takes them after each poll, so a task waiting on
//!   a known wake path is not blamed as `NoWake`; each note is a plain
//!   store, so an unmeasured executor pays no more than that.
#![forbid(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::sync::Arc;

use super::Driver;
use crate::io::{Interest, IoWait, Reactor};

/// References to this thread's current driver kept by dropped handles, at
/// most.
pub(crate) const SPARES: usize = 8;

/// A poll that left a send or an acquire waiting in line, or a receive
/// waiting for a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineWait {
    /// The name of the channel, semaphore, lock, watch or broadcast.
    pub(crate) name: Option<&'static str>,
    /// That poll put it in line (it was not waiting before).
    pub(crate) joined: bool,
    /// It waits to receive a value (the sender wakes it when one comes),
    /// not for room or a permit.
    pub(crate) receive: bool,
}

/// This thread's runtime context.
struct Context {
    /// The executor running a tick or `block_on` on this thread right now
    /// (the address of its hub), or 0.
    running: Cell<usize>,
    /// That executor's tasks woken on this thread while it runs, oldest
    /// first: its local ready list, which needs no atomics.
    local: RefCell<Vec<u32>>,
    /// The current driver and spare references to it.
    current: RefCell<Current>,
    /// The multi-thread runtime's worker this thread is, if it is one: its
    /// own queues, where the wakes it makes go. Typed, so that a wake
    /// finds it with no dynamic call.
    #[cfg_attr(loom, allow(dead_code))]
    worker: RefCell<Option<Rc<WorkerState>>>,
}

/// A multi-thread runtime's worker, as its thread keeps it.
#[cfg(not(loom))]
pub(crate) type WorkerState = crate::multi::WorkerHere;
/// Loom does not build the multi-thread runtime.
#[cfg(loom)]
pub(crate) type WorkerState = ();

/// The context's parts that need no destructor: the pool whose worker this
/// thread is, and what the poll running on this thread left waiting.
struct Plain {
    /// The pool engine this thread works for (its address), or 0.
    pool: Cell<usize>,
    /// How far off (µs) the earliest timer armed by the poll running on
    /// this thread is due. `u64::MAX`: none.
    armed: Cell<u64>,
    /// The socket wait the poll running on this thread left: its token and
    /// way.
    io_wait: Cell<Option<(mio::Token, Interest)>>,
    /// What the poll running on this thread left waiting in a line.
    line_wait: Cell<Option<LineWait>>,
    /// What the worker read before the poll running on this thread now (a
    /// multi-thread executor's task): [`POLLED_CANCELLED`] if its handle
    /// had cancelled it (its poll drops it instead), else the runtime's
    /// cancel word.
    #[cfg_attr(loom, allow(dead_code))]
    polled_cancel: Cell<u64>,
    /// Socket operations the poll running now may still complete before
    /// it must yield (a multi-thread executor's cooperative budget);
    /// `u32::MAX` where no executor set one.
    budget: Cell<u32>,
}

#[cfg(not(loom))]
std::thread_local! {
    static CONTEXT: Context = const {
        Context {
            running: Cell::new(0),
            local: RefCell::new(Vec::new()),
            current: RefCell::new(Current { driver: None, spares: Vec::new() }),
            worker: RefCell::new(None),
        }
    };
    static PLAIN: Plain = const {
        Plain {
            pool: Cell::new(0),
            armed: Cell::new(u64::MAX),
            io_wait: Cell::new(None),
            line_wait: Cell::new(None),
            polled_cancel: Cell::new(POLLED_CANCELLED),
            budget: Cell::new(u32::MAX),
        }
    };
}

// Loom's threads share one OS thread, so they need loom's thread-locals.
#[cfg(loom)]
loom::thread_local! {
    static CONTEXT: Context = Context {
        running: Cell::new(0),
        local: RefCell::new(Vec::new()),
        current: RefCell::new(Current { driver: None, spares: Vec::new() }),
        worker: RefCell::new(None),
    };
    static PLAIN: Plain = Plain {
        pool: Cell::new(0),
        armed: Cell::new(u64::MAX),
        io_wait: Cell::new(None),
        line_wait: Cell::new(None),
        polled_cancel: Cell::new(POLLED_CANCELLED),
        budget: Cell::new(u32::MAX),
    };
}

// ---- running here ----

/// Whether the executor at `address` runs on this thread right now (never
/// while the thread's thread-locals are being destroyed).
#[inline]
pub(crate) fn is_running_here(address: usize) -> bool {
    CONTEXT
        .try_with(|here| here.running.get())
        .is_ok_and(|running| running == address)
}

/// Queues `index` on this thread's local list if the executor at `address`
/// is the one running here; otherwise hands it back. A thread whose
/// thread-locals are being destroyed runs no executor: the index is handed
/// back.
#[inline]
pub(crate) fn queue_here(address: usize, index: u32) -> Result<(), u32> {
    CONTEXT
        .try_with(|here| {
            if here.running.get() == address {
                here.local.borrow_mut().push(index);
                Ok(())
            } else {
                Err(index)
            }
        })
        .unwrap_or(Err(index))
}

/// One look at this thread for a wake: whether the executor at `address`
/// runs here, and `mark`'s answer given that; when it does and `mark` says
/// the task is to be queued (`Ok(true)`), `index` is put on the local list.
/// A thread whose thread-locals are being destroyed is never "here".
#[inline]
pub(crate) fn mark_here<E>(
    address: usize,
    index: u32,
    mark: impl Fn(bool) -> Result<bool, E>,
) -> (bool, Result<bool, E>) {
    match CONTEXT.try_with(|context| {
        let here = context.running.get() == address;
        let marked = mark(here);
        if here && matches!(marked, Ok(true)) {
            context.local.borrow_mut().push(index);
        }
        (here, marked)
    }) {
        Ok(seen) => seen,
        Err(_) => (false, mark(false)),
    }
}

/// Marks an executor as running on this thread until dropped, with its local
/// ready list installed; then restores whatever ran before (executors may
/// nest on one thread).
pub(crate) struct RunningHere<'r> {
    previous: usize,
    local: &'r RefCell<Vec<u32>>,
}

impl<'r> RunningHere<'r> {
    /// Enters the executor at `address`, whose local list is kept in
    /// `local` while it does not run.
    ///
    /// # Panics
    ///
    /// When called while this thread's thread-locals are being destroyed
    /// (an executor cannot run from a thread-local's destructor).
    #[inline]
    pub(crate) fn enter(address: usize, local: &'r RefCell<Vec<u32>>) -> Self {
        let previous = CONTEXT.with(|here| {
            here.local.swap(local);
            here.running.replace(address)
        });
        Self { previous, local }
    }

    /// Swaps the tasks woken locally since the last call into `ready` (which
    /// the caller has emptied; its storage is kept for the next round).
    #[inline]
    pub(crate) fn swap_local(&self, ready: &mut Vec<u32>) {
        CONTEXT.with(|here| std::mem::swap(&mut *here.local.borrow_mut(), ready));
    }

    /// Whether a task was woken locally since the last swap.
    #[inline]
    pub(crate) fn has_local(&self) -> bool {
        CONTEXT.with(|here| !here.local.borrow().is_empty())
    }
}

impl Drop for RunningHere<'_> {
    #[inline]
    fn drop(&mut self) {
        CONTEXT.with(|here| {
            here.running.set(self.previous);
            here.local.swap(self.local);
        });
    }
}

/// Names the calling thread, for a core
/// [`ReadyQueue::with_context`](dinah_core::ReadyQueue::with_context) on a
/// host: the address of a thread-local of this thread, distinct between
/// threads alive at once and never 0. With it, a core executor counts a
/// wake from another thread that lands during a poll as woken from
/// outside, not as the poll's own.
///
/// ```
/// use dinah::ReadyQueue;
/// use dinah::executor::thread_context;
///
/// static QUEUE: ReadyQueue<4> = ReadyQueue::new().with_context(thread_context);
/// # let _ = &QUEUE;
/// ```
///
/// Not promised: that a thread that ended and one made later get
/// different names (an ended thread's storage may be reused).
#[must_use]
pub fn thread_context() -> usize {
    std::thread_local! {
        static NAME: u8 = const { 0 };
    }
    NAME.with(|name| std::ptr::from_ref(name) as usize)
}

/// Marks this thread as a worker of the pool engine at `address`, for the
/// rest of its life.
pub(crate) fn enter_pool(address: usize) {
    PLAIN.with(|notes| notes.pool.set(address));
}

/// Whether this thread is a worker of the pool engine at `address` (never
/// while its thread-locals are being destroyed: a pool thread's loop has
/// ended then).
pub(crate) fn is_pool_thread(address: usize) -> bool {
    PLAIN
        .try_with(|notes| notes.pool.get() == address)
        .unwrap_or(false)
}

// ---- the worker this thread is ----

/// Makes this thread a worker of a multi-thread runtime (`worker` is its
/// state), until [`leave_worker`].
#[cfg(not(loom))]
pub(crate) fn enter_worker(worker: Rc<WorkerState>) {
    let _ = CONTEXT.try_with(|context| context.worker.replace(Some(worker)));
}

/// This thread is no longer a worker; its state is dropped here.
#[cfg(not(loom))]
pub(crate) fn leave_worker() {
    let left = CONTEXT.try_with(|context| context.worker.take());
    drop(left);
}

/// Runs `f` with the state of the worker this thread is, if it is one
/// (never while the thread's thread-locals are being destroyed).
#[cfg(not(loom))]
pub(crate) fn with_worker<R>(f: impl FnOnce(Option<&WorkerState>) -> R) -> R {
    let mut f = Some(f);
    let done = CONTEXT.try_with(|context| {
        // A shared borrow: `f` may reach here again (a wake inside a wake).
        let worker = context.worker.try_borrow().ok();
        let f = f.take().unwrap_or_else(|| unreachable!("called once"));
        f(worker.as_ref().and_then(|worker| worker.as_deref()))
    });
    match done {
        Ok(done) => done,
        // The thread-locals are being destroyed: no worker here.
        Err(_) => (f.take().unwrap_or_else(|| unreachable!("not called")))(None),
    }
}

/// What [`polled_cancel`] says of a task whose handle cancelled it.
pub(crate) const POLLED_CANCELLED: u64 = u64::MAX;

/// Says what the worker read before the poll it is about to run on this
/// thread: [`POLLED_CANCELLED`], or the runtime's cancel word.
#[cfg(not(loom))]
#[inline]
pub(crate) fn set_polled_cancel(seen: u64) {
    let _ = PLAIN.try_with(|plain| plain.polled_cancel.set(seen));
}

/// What the worker read before the poll running on this thread now (see
/// [`set_polled_cancel`]); [`POLLED_CANCELLED`] where none was set.
#[cfg(not(loom))]
#[inline]
pub(crate) fn polled_cancel() -> u64 {
    PLAIN
        .try_with(|plain| plain.polled_cancel.get())
        .unwrap_or(POLLED_CANCELLED)
}

/// Gives the poll about to run on this thread `budget` socket operations
/// before it must yield (`u32::MAX`: no limit).
#[cfg(not(loom))]
pub(crate) fn set_budget(budget: u32) {
    let _ = PLAIN.try_with(|plain| plain.budget.set(budget));
}

/// Spends one operation of the running poll's budget: `false` when none
/// is left, and the operation should yield instead (wake its task and
/// return `Pending`).
#[inline]
pub(crate) fn spend_budget() -> bool {
    PLAIN
        .try_with(|plain| {
            let left = plain.budget.get();
            if left == 0 {
                return false;
            }
            if left != u32::MAX {
                plain.budget.set(left - 1);
            }
            true
        })
        .unwrap_or(true)
}

// ---- the current driver ----

/// This thread's current driver.
struct Current {
    driver: Option<Arc<Driver>>,
    /// References to `driver` that dropped handles left, for the next
    /// handles to take: a handle made and dropped on this thread then
    /// touches no reference count. All point to `driver`.
    spares: Vec<Arc<Driver>>,
}

/// What [`Current::replace`] let go, for the caller to drop after the
/// thread-local is no longer borrowed.
type LetGo = (Option<Arc<Driver>>, Vec<Arc<Driver>>);

impl Current {
    /// A reference to the current driver, from a spare if there is one.
    fn take(&mut self) -> Option<Arc<Driver>> {
        let driver = self.driver.as_ref()?;
        Some(self.spares.pop().unwrap_or_else(|| Arc::clone(driver)))
    }

    fn is(&self, driver: &Arc<Driver>) -> bool {
        self.driver
            .as_ref()
            .is_some_and(|now| Arc::ptr_eq(now, driver))
    }

    /// Makes `driver` (or none) current; returns what was let go, for the
    /// caller to drop after the borrow ends.
    fn replace(&mut self, driver: Option<Arc<Driver>>) -> LetGo {
        let spares = std::mem::take(&mut self.spares);
        (std::mem::replace(&mut self.driver, driver), spares)
    }
}

/// Makes `driver` this thread's current driver (cheap when it is already).
pub(crate) fn enter(driver: &Arc<Driver>) {
    let _ = CONTEXT.try_with(|context| {
        let let_go = {
            let mut current = context.current.borrow_mut();
            if current.is(driver) {
                return;
            }
            current.replace(Some(Arc::clone(driver)))
        };
        drop(let_go);
    });
}

/// Forgets `driver` as this thread's current driver, if it is.
pub(crate) fn leave(driver: &Arc<Driver>) {
    let _ = CONTEXT.try_with(|context| {
        let let_go = {
            let mut current = context.current.borrow_mut();
            if !current.is(driver) {
                return;
            }
            current.replace(None)
        };
        drop(let_go);
    });
}

/// A reference to the driver of the executor made, or entered, last on
/// this thread; `None` when there is none or it was dropped.
pub(crate) fn current() -> Option<Arc<Driver>> {
    CONTEXT
        .try_with(|context| context.current.try_borrow_mut().ok()?.take())
        .ok()
        .flatten()
}

/// Keeps a reference a dropped handle held, for the next [`current`], when
/// it is to this thread's current driver and fewer than [`SPARES`] are
/// kept; otherwise lets it go.
pub(crate) fn keep(driver: Arc<Driver>) {
    // Moved into the closure: dropped with it when it is not kept (or when
    // the thread-locals are gone and it never runs).
    let _ = CONTEXT.try_with(move |context| {
        // Borrowed already: this drop runs inside `enter` or `leave`.
        if let Ok(mut current) = context.current.try_borrow_mut()
            && current.spares.len() < SPARES
            && current.is(&driver)
        {
            current.spares.push(driver);
        }
    });
}

/// The reactor of the executor running on this thread, made now if it has
/// none yet.
///
/// # Errors
///
/// When no executor was made or entered on this thread, or the reactor
/// could not be made.
pub(crate) fn current_reactor() -> io::Result<Arc<Reactor>> {
    with_current(Driver::reactor_or_install).unwrap_or_else(|| {
        Err(io::Error::other(
            "dinah: no executor on this thread (a LocalExecutor made or entered here, or a \
             MultiExecutor's task or block_on), so there is no reactor to register a socket with",
        ))
    })
}

/// `f`'s answer for this thread's current driver, if there is one, with
/// the reference it borrowed kept for the next [`current`].
fn with_current<R>(f: impl FnOnce(&Driver) -> R) -> Option<R> {
    let driver = current()?;
    let answer = f(&driver);
    keep(driver);
    Some(answer)
}

// ---- poll notes ----

/// Notes that the poll running on this thread armed a timer due in
/// `due_in` µs.
pub(crate) fn note_armed(due_in: u64) {
    // `u64::MAX` is "nothing armed": a timer due that far off (it saturated)
    // is noted one short of it, still a timer.
    let due_in = due_in.min(u64::MAX - 1);
    let _ = PLAIN.try_with(|notes| notes.armed.set(notes.armed.get().min(due_in)));
}

/// Notes that the poll running on this thread waits on socket `token`.
pub(crate) fn note_io_wait(token: mio::Token, interest: Interest) {
    let _ = PLAIN.try_with(|notes| notes.io_wait.set(Some((token, interest))));
}

/// Notes that the poll running on this thread waits in the line of the
/// channel or semaphore named `name` (`joined` when that poll put it
/// there), or, with `receive`, waits for a value from what is named
/// `name`.
pub(crate) fn note_line_wait(name: Option<&'static str>, joined: bool, receive: bool) {
    let wait = LineWait {
        name,
        joined,
        receive,
    };
    let _ = PLAIN.try_with(|notes| notes.line_wait.set(Some(wait)));
}

/// What the polls on this thread noted since the last take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PollNotes {
    /// How far off the earliest timer armed is due, in µs.
    pub(crate) armed: Option<u64>,
    /// A line waited in.
    pub(crate) line: Option<LineWait>,
    /// A socket waited on, and the way.
    io: Option<(mio::Token, Interest)>,
}

impl PollNotes {
    /// The socket wait, named by the reactor of the executor running here.
    pub(crate) fn io_wait(&self) -> Option<IoWait> {
        let (token, interest) = self.io?;
        let resource = with_current(|driver| driver.reactor()?.label(token))??;
        Some(IoWait { resource, interest })
    }
}

/// Takes (and clears) what the polls on this thread noted since the last
/// take: one look at the context for all three notes.
pub(crate) fn take_notes() -> PollNotes {
    PLAIN
        .try_with(|notes| PollNotes {
            armed: Some(notes.armed.replace(u64::MAX)).filter(|&due_in| due_in != u64::MAX),
            line: notes.line_wait.take(),
            io: notes.io_wait.take(),
        })
        .unwrap_or_default()
}
