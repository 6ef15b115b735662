//! What other threads can reach: each task's [`Header`] (its shared cell and
//! its `std` waker), the executor's [`Shared`] wake stack and parked thread,
//! and the bounded ingress behind [`Spawner`].

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Wake;

use dinah_core::sched::{Link32, TaskCell, WakeStack};
use dinah_core::{TaskId, TaskOutput};

use super::join::{AbortNote, Join, JoinHandle, Resolve, wrap};
use super::probe::{ExecProbe, TaskProbe};
use super::{Measuring, TrySpawnError};
use crate::sync::{AtomicBool, Mutex, Ordering, Thread, lock};
use crate::telemetry::Hook;

/// This thread's running executor, if any, and its local ready list.
struct Here {
    /// The executor running a tick or `block_on` on this thread right now
    /// (the address of its `Shared`), or 0.
    running: Cell<usize>,
    /// That executor's tasks woken on this thread while it runs, oldest
    /// first: its local ready list, which needs no atomics.
    local: RefCell<Vec<u32>>,
}

#[cfg(not(loom))]
std::thread_local! {
    static HERE: Here = const {
        Here {
            running: Cell::new(0),
            local: RefCell::new(Vec::new()),
        }
    };
}

// Loom's threads share one OS thread, so they need loom's thread-locals.
#[cfg(loom)]
loom::thread_local! {
    static HERE: Here = Here {
        running: Cell::new(0),
        local: RefCell::new(Vec::new()),
    };
}

/// Queues `index` on this thread's local list if `shared`'s executor is the
/// one running here; otherwise hands it back. A thread whose thread-locals
/// are being destroyed runs no executor: the index is handed back.
#[inline]
fn queue_here(shared: &Shared, index: u32) -> Result<(), u32> {
    HERE.try_with(|here| {
        if here.running.get() == shared.address() {
            here.local.borrow_mut().push(index);
            Ok(())
        } else {
            Err(index)
        }
    })
    .unwrap_or(Err(index))
}

/// Marks an executor as running on this thread until dropped, with its local
/// ready list installed; then restores whatever ran before (executors may
/// nest on one thread).
pub(crate) struct RunningHere<'r> {
    previous: usize,
    local: &'r RefCell<Vec<u32>>,
}

impl<'r> RunningHere<'r> {
    /// Enters `shared`'s executor, whose local list is kept in `local`
    /// while it does not run.
    ///
    /// # Panics
    ///
    /// When called while this thread's thread-locals are being destroyed
    /// (an executor cannot run from a thread-local's destructor).
    #[inline]
    pub(crate) fn enter(shared: &Shared, local: &'r RefCell<Vec<u32>>) -> Self {
        let previous = HERE.with(|here| {
            here.local.swap(local);
            here.running.replace(shared.address())
        });
        Self { previous, local }
    }

    /// Swaps the tasks woken locally since the last call into `ready` (which
    /// the caller has emptied; its storage is kept for the next round).
    #[inline]
    pub(crate) fn swap_local(&self, ready: &mut Vec<u32>) {
        HERE.with(|here| std::mem::swap(&mut *here.local.borrow_mut(), ready));
    }

    /// Whether a task was woken locally since the last swap.
    #[inline]
    pub(crate) fn has_local(&self) -> bool {
        HERE.with(|here| !here.local.borrow().is_empty())
    }
}

/// Queues a newly started task from the executor's own thread: on the
/// local list while the executor runs here (with the wakes made in the same
/// run, in order); otherwise on the wake stack, in order with the wakes made
/// between runs. No unpark: the executor is not parked, this is its thread.
#[inline]
pub(crate) fn queue_started(shared: &Shared, cell: &TaskCell<Link32>) {
    if queue_here(shared, cell.index()).is_err() {
        shared.stack.push(cell);
    }
}

impl Drop for RunningHere<'_> {
    #[inline]
    fn drop(&mut self) {
        HERE.with(|here| {
            here.running.set(self.previous);
            here.local.swap(self.local);
        });
    }
}

/// A task's future as the executor stores it: its output says whether the
/// task succeeded.
pub(crate) type BoxedTask<'a> = Pin<Box<dyn Future<Output = bool> + 'a>>;

/// One task's shared part: its cell in the scheduling core, and the way
/// back to its executor. Its `Arc` is the task's waker. `M` says, in the
/// type, whether the executor measures itself, so that an unmeasured
/// executor's wakes do not even test for a probe.
pub(crate) struct Header<M: Measuring> {
    pub(crate) cell: TaskCell<Link32>,
    shared: Arc<Shared>,
    /// The slot's telemetry, when the executor keeps any.
    pub(crate) probe: Hook<Arc<TaskProbe>>,
    measuring: PhantomData<fn() -> M>,
}

/// Where a join handle sends its cancellation: a task's header, whatever
/// its executor's measuring.
pub(crate) trait CancelTarget: Send + Sync {
    /// Requests cancellation of generation `generation` of this cell; a
    /// task already over (or a cell reused since) is left alone.
    fn cancel(&self, generation: u32);
}

impl<M: Measuring> Header<M> {
    /// A task slot's header; `task` is false for `block_on`'s own future,
    /// which is not a task and is not measured.
    pub(crate) fn new(index: u32, shared: &Arc<Shared>, task: bool) -> Arc<Self> {
        let probe = shared
            .probe
            .get()
            .filter(|_| task && M::ON)
            .map(|probe| probe.slot());
        Arc::new(Self {
            cell: TaskCell::new(Link32::new(index)),
            shared: Arc::clone(shared),
            probe: Hook::new(probe),
            measuring: PhantomData,
        })
    }

    /// The slot's probe and its executor's, when `M` measures (always
    /// `None` for an unmeasured executor, known when compiling).
    #[inline(always)]
    pub(crate) fn probes(&self) -> Option<(&ExecProbe, &Arc<TaskProbe>)> {
        if !M::ON {
            return None;
        }
        Some((&**self.shared.probe.get()?, self.probe.get()?))
    }
}

impl<M: Measuring> CancelTarget for Header<M> {
    fn cancel(&self, generation: u32) {
        if let Ok(true) = self.shared.stack.cancel(&self.cell, generation) {
            self.shared.notify();
        }
    }
}

impl<M: Measuring> Wake for Header<M> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    /// Sets the cell's `QUEUED` bit (the scheduling core's rules: coalesced
    /// when queued, counted when stale) and queues it: on the executor's
    /// local list when this is the executor's thread and the executor is
    /// running (it will look there before it parks), otherwise on the wake
    /// stack, then unparking the executor's thread. Never polls, never locks.
    fn wake_by_ref(self: &Arc<Self>) {
        let shared = &self.shared;
        let index = self.cell.index();
        // One look at this thread's state: a wake on the executor's own
        // thread while it runs may be a poll's own, and is queued on the
        // local list; from anywhere else (another thread, or this one while
        // its thread-locals are being destroyed) it never is.
        let (here, marked) = HERE
            .try_with(|local| {
                let here = local.running.get() == shared.address();
                let marked = shared.stack.mark(&self.cell, || here);
                if here && marked == Ok(true) {
                    local.local.borrow_mut().push(index);
                }
                (here, marked)
            })
            .unwrap_or_else(|_| (false, shared.stack.mark(&self.cell, || false)));
        // The telemetry sees the wake before the executor can poll the task
        // (its ready stamp must come first); a hook's panic is held until
        // the wake is queued, then reaches the waker's caller.
        let hooks = self.probes().map(|(probe, slot)| {
            let scope = crate::telemetry::HookScope::enter();
            match marked {
                Ok(true) => probe.woken(slot, here && shared.stack.polling() == index + 1),
                Ok(false) => {}
                Err(_) => probe.stale(slot),
            }
            scope
        });
        if !here && marked == Ok(true) {
            shared.stack.push(&self.cell);
            shared.thread.unpark();
        }
        if let Some(scope) = hooks {
            scope.exit();
        }
    }
}

/// A future submitted through the ingress, with its join, not yet taken in.
pub(crate) trait Submission: Send {
    /// The task's id.
    fn id(&self) -> TaskId;
    /// When it was submitted, in the telemetry clock's nanoseconds (0
    /// without telemetry).
    fn submitted_at(&self) -> u64;
    /// Hands the future (wrapped) and its join to the executor.
    /// `note` is the slot's abort note, for the task's resolver.
    fn admit<'a>(
        self: Box<Self>,
        note: Rc<AbortNote<'a>>,
    ) -> (BoxedTask<'a>, Arc<dyn Resolve + Send + Sync>);
}

struct Remote<F, V, E> {
    future: Option<F>,
    join: Arc<Join<V, E>>,
    id: TaskId,
    submitted_at: u64,
}

impl<F, V, E> Submission for Remote<F, V, E>
where
    F: Future + Send + 'static,
    F::Output: TaskOutput<Value = V, Error = E>,
    V: Send + 'static,
    E: Send + 'static,
{
    fn id(&self) -> TaskId {
        self.id
    }

    fn submitted_at(&self) -> u64 {
        self.submitted_at
    }

    fn admit<'a>(
        mut self: Box<Self>,
        note: Rc<AbortNote<'a>>,
    ) -> (BoxedTask<'a>, Arc<dyn Resolve + Send + Sync>) {
        let future = self.future.take().expect("a submission is admitted once");
        let join = Arc::clone(&self.join);
        (Box::pin(wrap(future, Arc::clone(&join), note)), join)
    }
}

impl<F, V, E> Drop for Remote<F, V, E> {
    /// A submission dropped before the executor took it in (shutdown):
    /// the future is dropped first, then its handle resolves `Cancelled`,
    /// or `Panicked` if the future's destructor panicked.
    fn drop(&mut self) {
        if let Some(future) = self.future.take() {
            let why = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                drop(future);
            })) {
                Ok(()) => super::join::Abort::Cancelled,
                Err(payload) => {
                    let why = super::join::Abort::Panicked(crate::unwind::panic_text(&*payload));
                    crate::unwind::drop_quietly(payload);
                    why
                }
            };
            self.join.abort(why);
        }
    }
}

struct Ingress {
    items: VecDeque<Box<dyn Submission>>,
    open: bool,
}

/// The executor's state that wakers and spawners on other threads reach.
pub(crate) struct Shared {
    pub(crate) stack: WakeStack,
    /// The thread that runs the executor (it cannot move: it is `!Send`).
    pub(crate) thread: Thread,
    ingress: Mutex<Ingress>,
    /// Something waits in the ingress.
    pending: AtomicBool,
    capacity: usize,
    /// The next task id (a statistic's counter, outside loom's models).
    next_task: std::sync::atomic::AtomicU64,
    /// The executor's telemetry, if it keeps any.
    pub(crate) probe: Hook<Box<ExecProbe>>,
}

impl Shared {
    /// `items` has room reserved for `capacity` submissions.
    pub(crate) fn new(
        thread: Thread,
        capacity: usize,
        items: VecDeque<Box<dyn Submission>>,
        probe: Hook<Box<ExecProbe>>,
    ) -> Self {
        Self {
            stack: WakeStack::new(),
            thread,
            capacity,
            ingress: Mutex::new(Ingress { items, open: true }),
            pending: AtomicBool::new(false),
            next_task: std::sync::atomic::AtomicU64::new(1),
            probe,
        }
    }

    /// A new task id.
    pub(crate) fn next_id(&self) -> TaskId {
        let n = self
            .next_task
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        TaskId::new(n).unwrap_or(TaskId::MAX)
    }

    /// Submissions waiting in the ingress, and its capacity.
    pub(crate) fn ingress_fill(&self) -> (usize, usize) {
        (lock(&self.ingress).items.len(), self.capacity)
    }

    #[inline]
    fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Makes sure the executor's thread sees new work: unparks it, unless
    /// this is that thread running that executor right now (then it is not
    /// parked, and it checks for work before it parks, later on this same
    /// thread, so the push cannot be missed).
    #[inline]
    pub(crate) fn notify(&self) {
        if !self.is_running_here() {
            self.thread.unpark();
        }
    }

    /// Whether this executor is running a tick or `block_on` on this thread
    /// (never while the thread's thread-locals are being destroyed).
    #[inline]
    pub(crate) fn is_running_here(&self) -> bool {
        HERE.try_with(|here| here.running.get())
            .is_ok_and(|running| running == self.address())
    }

    /// Whether a submission waits.
    #[inline]
    pub(crate) fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Takes up to `room` submissions, oldest first.
    pub(crate) fn take_pending(&self, room: usize) -> Vec<Box<dyn Submission>> {
        if !self.has_pending() || room == 0 {
            return Vec::new();
        }
        let mut ingress = lock(&self.ingress);
        let count = room.min(ingress.items.len());
        let taken: Vec<_> = ingress.items.drain(..count).collect();
        self.pending
            .store(!ingress.items.is_empty(), Ordering::Release);
        taken
    }

    /// Closes the ingress for good and returns what waited in it.
    pub(crate) fn close(&self) -> Vec<Box<dyn Submission>> {
        let mut ingress = lock(&self.ingress);
        ingress.open = false;
        self.pending.store(false, Ordering::Release);
        ingress.items.drain(..).collect()
    }

    fn submit<F, V, E>(&self, future: F) -> Result<JoinHandle<V, E>, TrySpawnError<F>>
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput<Value = V, Error = E>,
        V: Send + 'static,
        E: Send + 'static,
    {
        {
            let id = self.next_id();
            let mut ingress = lock(&self.ingress);
            let open = ingress.open;
            if !open || ingress.items.len() >= self.capacity {
                drop(ingress);
                if let Some(probe) = self.probe.get() {
                    crate::telemetry::run_hooks(|| probe.rejected(id, open));
                }
                return Err(if open {
                    TrySpawnError::Full(future)
                } else {
                    TrySpawnError::Shutdown(future)
                });
            }
            let mut submitted_at = 0;
            if let Some(probe) = self.probe.get() {
                // A hook's panic reaches the caller before the future is
                // taken (and poisons nothing: the ingress lock ignores it).
                crate::telemetry::run_hooks(|| submitted_at = probe.submitted(id));
            }
            let join = Join::new(id, None);
            ingress.items.push_back(Box::new(Remote {
                future: Some(future),
                join: Arc::clone(&join),
                id,
                submitted_at,
            }));
            self.pending.store(true, Ordering::Release);
            drop(ingress);
            self.notify();
            Ok(JoinHandle::new(join))
        }
    }
}

/// Hands `Send` futures to a [`LocalExecutor`](crate::LocalExecutor) from any
/// thread, through its bounded ingress. `Send + Sync + Clone`.
///
/// # Guarantees
///
/// - [`try_spawn`](Self::try_spawn) never blocks on the executor and never
///   waits for room: a full ingress or a shut-down executor hands the future
///   back.
/// - Once accepted, a future belongs to the executor: it is taken in at the
///   executor's next tick (while its live-task cap allows, oldest first) and
///   polled there, or dropped at shutdown, on the executor's thread, with
///   its handle resolved [`Cancelled`](crate::JoinFailure::Cancelled).
///   Exactly one of the two, exactly once.
pub struct Spawner {
    shared: Arc<Shared>,
}

impl Spawner {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// Submits `future` and wakes the executor's thread.
    ///
    /// # Errors
    ///
    /// [`TrySpawnError::Full`] when the ingress holds its capacity of
    /// submissions not yet taken in, [`TrySpawnError::Shutdown`] when the
    /// executor has shut down or been dropped. The future is handed back.
    pub fn try_spawn<F, V, E>(&self, future: F) -> Result<JoinHandle<V, E>, TrySpawnError<F>>
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput<Value = V, Error = E>,
        V: Send + 'static,
        E: Send + 'static,
    {
        self.shared.submit(future)
    }
}

impl Clone for Spawner {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl fmt::Debug for Spawner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Spawner")
            .field("capacity", &self.shared.capacity)
            .finish_non_exhaustive()
    }
}
