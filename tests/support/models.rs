//! Reference models, and checkers that drive dinah's types against them
//! with operations decoded from raw bytes.
//!
//! Shared by the property tests (which generate the bytes with proptest)
//! and the libFuzzer targets in `fuzz/` (which get them from the fuzzer), so
//! both check exactly the same contract. A broken contract is a panic.
#![allow(dead_code)]

use std::collections::VecDeque;

use dinah::config::LifecycleState;
use dinah::queue::{FifoQueue, QueuePushError};
use dinah::telemetry::{TraceBuffer, TraceEvent, TraceEventKind, TraceRecordError, TraceRing};
use dinah::{BoundedQueue, TaskId, TaskQueue, TaskState};

/// The capacity every queue and trace log under a model is built with.
pub(crate) const CAP: usize = 5;

/// A kind of queue, able to hold any item type.
pub(crate) trait QueueFamily {
    type Queue<T: Send>: FifoQueue<Item = T> + Send;
    /// An empty queue of capacity [`CAP`].
    fn empty<T: Send>() -> Self::Queue<T>;
}

/// The core's `TaskQueue<T, CAP>`.
pub(crate) struct Fixed;
impl QueueFamily for Fixed {
    type Queue<T: Send> = TaskQueue<T, CAP>;
    fn empty<T: Send>() -> Self::Queue<T> {
        TaskQueue::new()
    }
}

/// The hosted `BoundedQueue<T>` of capacity `CAP`.
pub(crate) struct Bounded;
impl QueueFamily for Bounded {
    type Queue<T: Send> = BoundedQueue<T>;
    fn empty<T: Send>() -> Self::Queue<T> {
        BoundedQueue::new(CAP).expect("CAP is not zero")
    }
}

/// Each byte is one operation: below 160 pushes the byte, otherwise pops.
/// The queue must behave exactly like a `VecDeque` bounded at [`CAP`].
pub(crate) fn check_queue<F: QueueFamily>(bytes: &[u8]) {
    let mut queue = F::empty::<u8>();
    let mut model = VecDeque::new();
    for &byte in bytes {
        if byte < 160 {
            let result = queue.try_push(byte);
            if model.len() < CAP {
                model.push_back(byte);
                assert_eq!(result, Ok(()));
            } else {
                assert_eq!(result, Err(QueuePushError::Full(byte)));
            }
        } else {
            assert_eq!(queue.pop(), model.pop_front());
        }
        assert_eq!(queue.len(), model.len());
        assert_eq!(queue.is_empty(), model.is_empty());
        assert_eq!(queue.is_full(), model.len() == CAP);
        assert_eq!(queue.capacity(), CAP);
    }
    while let Some(expected) = model.pop_front() {
        assert_eq!(queue.pop(), Some(expected));
    }
    assert_eq!(queue.pop(), None);
}

/// The shared API of the two trace logs.
pub(crate) trait TraceLog: Sync {
    fn empty() -> Self;
    fn record(&self, event: TraceEvent) -> Result<(), TraceRecordError>;
    fn pop(&self) -> Option<TraceEvent>;
    fn snapshot(&self) -> Vec<TraceEvent>;
    fn snapshot_into(&self, buffer: &mut [TraceEvent]) -> usize;
    fn drain(&self) -> Vec<TraceEvent>;
    fn clear(&self);
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool;
    fn is_full(&self) -> bool;
    fn capacity(&self) -> usize;
    fn rejected(&self) -> u64;
}

macro_rules! forward {
    ($type:ty, $empty:expr) => {
        impl TraceLog for $type {
            fn empty() -> Self {
                $empty
            }
            fn record(&self, event: TraceEvent) -> Result<(), TraceRecordError> {
                <$type>::record(self, event)
            }
            fn pop(&self) -> Option<TraceEvent> {
                <$type>::pop(self)
            }
            fn snapshot(&self) -> Vec<TraceEvent> {
                <$type>::snapshot(self).iter().copied().collect()
            }
            fn snapshot_into(&self, buffer: &mut [TraceEvent]) -> usize {
                <$type>::snapshot_into(self, buffer)
            }
            fn drain(&self) -> Vec<TraceEvent> {
                <$type>::drain(self).iter().copied().collect()
            }
            fn clear(&self) {
                <$type>::clear(self)
            }
            fn len(&self) -> usize {
                <$type>::len(self)
            }
            fn is_empty(&self) -> bool {
                <$type>::is_empty(self)
            }
            fn is_full(&self) -> bool {
                <$type>::is_full(self)
            }
            fn capacity(&self) -> usize {
                <$type>::capacity(self)
            }
            fn rejected(&self) -> u64 {
                <$type>::rejected(self)
            }
        }
    };
}

forward!(TraceRing<CAP>, TraceRing::new());
forward!(TraceBuffer, TraceBuffer::new(CAP).expect("CAP is not zero"));

/// Every event kind, indexable.
pub(crate) const KINDS: [TraceEventKind; 6] = [
    TraceEventKind::Submitted,
    TraceEventKind::Started,
    TraceEventKind::Completed,
    TraceEventKind::Failed,
    TraceEventKind::CancellationRequested,
    TraceEventKind::CancellationAcknowledged,
];

/// An event for `task` (not zero) whose kind cycles with `step`.
pub(crate) fn event(task: u64, step: usize) -> TraceEvent {
    TraceEvent::new(TaskId::new(task).unwrap(), KINDS[step % KINDS.len()])
}

/// Each byte is one operation, by its low three bits: record (0 to 3, the
/// high bits choosing task and kind), pop, drain, clear, or `snapshot_into`
/// a buffer of `byte >> 3` slots. The log must behave like a `VecDeque`
/// bounded at [`CAP`] plus a refusal count.
pub(crate) fn check_trace<L: TraceLog>(bytes: &[u8]) {
    let log = L::empty();
    let mut model = VecDeque::new();
    let mut rejected = 0u64;
    for &byte in bytes {
        match byte & 7 {
            0..=3 => {
                let e = event(u64::from(byte >> 6) + 1, usize::from(byte >> 3));
                if model.len() < CAP {
                    model.push_back(e);
                    assert_eq!(log.record(e), Ok(()));
                } else {
                    rejected += 1;
                    assert_eq!(log.record(e), Err(TraceRecordError::Full(e)));
                }
            }
            4 => assert_eq!(log.pop(), model.pop_front()),
            5 => assert_eq!(log.drain(), model.drain(..).collect::<Vec<_>>()),
            6 => {
                log.clear();
                model.clear();
                rejected = 0;
            }
            _ => {
                let filler = event(7, 0);
                let mut buffer = vec![filler; usize::from(byte >> 3)];
                let copied = log.snapshot_into(&mut buffer);
                assert_eq!(copied, model.len().min(buffer.len()));
                assert!(buffer.iter().zip(&model).all(|(a, b)| a == b));
                assert!(buffer[copied..].iter().all(|&e| e == filler));
            }
        }
        assert_eq!(log.len(), model.len());
        assert_eq!(log.is_empty(), model.is_empty());
        assert_eq!(log.is_full(), model.len() == CAP);
        assert_eq!(log.capacity(), CAP);
        assert_eq!(log.rejected(), rejected);
        assert_eq!(log.snapshot(), model.iter().copied().collect::<Vec<_>>());
    }
}

/// The lifecycle tables, written out independently of the code under test.
const TASK_EDGES: [(TaskState, TaskState); 5] = [
    (TaskState::Pending, TaskState::Running),
    (TaskState::Pending, TaskState::Cancelled),
    (TaskState::Running, TaskState::Completed),
    (TaskState::Running, TaskState::Failed),
    (TaskState::Running, TaskState::Cancelled),
];
const LIFECYCLE_EDGES: [(LifecycleState, LifecycleState); 4] = [
    (LifecycleState::Created, LifecycleState::Running),
    (LifecycleState::Created, LifecycleState::Stopped),
    (LifecycleState::Running, LifecycleState::Stopping),
    (LifecycleState::Stopping, LifecycleState::Stopped),
];

/// Each byte asks one `TaskState` and one `LifecycleState` for a transition
/// (low and high nibble choose the target). A refused transition leaves the
/// state as it was and names both ends; an allowed one moves it; terminal
/// states accept nothing.
pub(crate) fn check_state_machines(bytes: &[u8]) {
    let mut task = TaskState::Pending;
    let mut lifecycle = LifecycleState::Created;
    let mut task_moves = 0;
    for &byte in bytes {
        let next = TaskState::ALL[usize::from(byte & 0x0f) % TaskState::ALL.len()];
        let allowed = TASK_EDGES.contains(&(task, next));
        assert_eq!(task.can_transition_to(next), allowed);
        let before = task;
        match task.transition_to(next) {
            Ok(()) => {
                assert!(allowed);
                assert_eq!(task, next);
                task_moves += 1;
            }
            Err(refused) => {
                assert!(!allowed);
                assert_eq!((refused.from(), refused.to(), task), (before, next, before));
            }
        }
        assert_eq!(
            task.is_terminal(),
            matches!(
                task,
                TaskState::Completed | TaskState::Failed | TaskState::Cancelled
            )
        );
        assert!(task_moves <= 2, "no path is longer than two transitions");

        let next = LifecycleState::ALL[usize::from(byte >> 4) % LifecycleState::ALL.len()];
        let allowed = LIFECYCLE_EDGES.contains(&(lifecycle, next));
        let before = lifecycle;
        match lifecycle.transition_to(next) {
            Ok(()) => assert!(allowed && lifecycle == next),
            Err(_) => assert!(!allowed && lifecycle == before),
        }
    }
}

// The async executor against a model.

use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::cell::RefCell;
use std::sync::Mutex;

use dinah::executor::{CancelError, TaskRef};
use dinah::{AsyncExecutor, ReadyQueue, TickReport};

/// What a tick did, in the order the executor models answer it: polled,
/// completed, failed, cancelled, work remaining.
fn tick_outcome(report: &TickReport) -> (usize, usize, usize, usize, bool) {
    (
        report.polled,
        report.completed,
        report.failed,
        report.cancelled,
        report.work_remaining,
    )
}

/// Slots of the executor under the model.
pub(crate) const EXECUTOR_SLOTS: usize = 4;
/// Tasks one run can spawn.
const SCRIPTED_TASKS: usize = 12;

/// Queues handed out to models, kept reachable so that neither Miri nor
/// LeakSanitizer counts them as leaks (a queue must be `'static`).
static QUEUES: Mutex<Vec<&'static ReadyQueue<EXECUTOR_SLOTS>>> = Mutex::new(Vec::new());

/// A new `'static` queue of [`EXECUTOR_SLOTS`] slots, kept reachable.
pub(crate) fn fresh_queue() -> &'static ReadyQueue<EXECUTOR_SLOTS> {
    let queue: &'static ReadyQueue<EXECUTOR_SLOTS> = Box::leak(Box::new(ReadyQueue::new()));
    QUEUES.lock().unwrap().push(queue);
    queue
}

/// What a scripted task does when polled.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    /// Parks a clone of its waker with the harness and returns `Pending`.
    Park,
    /// Wakes itself and returns `Pending`.
    Yield,
    Complete,
    Fail,
}

impl Step {
    fn from_byte(byte: u8) -> Self {
        match byte % 4 {
            0 => Self::Park,
            1 => Self::Yield,
            2 => Self::Complete,
            _ => Self::Fail,
        }
    }
}

/// A task that follows a script, one step per poll (then completes).
struct Scripted<'a> {
    task: usize,
    steps: Vec<Step>,
    polls: usize,
    parked: &'a RefCell<Vec<Option<Waker>>>,
}

impl Future for Scripted<'_> {
    type Output = Result<(), usize>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), usize>> {
        let this = &mut *self;
        let step = next_step(&this.steps, &mut this.polls);
        match step {
            Step::Park => {
                // Replacing the old waker drops it: its reference goes back.
                let old = self.parked.borrow_mut()[self.task].replace(cx.waker().clone());
                drop(old);
                Poll::Pending
            }
            Step::Yield => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Step::Complete => Poll::Ready(Ok(())),
            Step::Fail => Poll::Ready(Err(self.task)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ModelLife {
    Pending,
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl ModelLife {
    fn is_live(self) -> bool {
        matches!(self, Self::Pending | Self::Running)
    }
}

/// The step a scripted task takes at its next poll (it completes once its
/// script runs out), counting the poll.
fn next_step(steps: &[Step], polls: &mut usize) -> Step {
    let step = steps.get(*polls).copied().unwrap_or(Step::Complete);
    *polls += 1;
    step
}

/// A task as the scheduling model sees it. The slot bookkeeping (`slot`,
/// `refs`, `failure`, `freed`, `reused`) is the fixed-slot executor's; the
/// hosted one's tasks have no slot, and `taken` is its handles'.
#[derive(Debug)]
struct ModelTask {
    /// Its slot in the fixed-slot executor; `None` on the hosted one.
    slot: Option<usize>,
    life: ModelLife,
    queued: bool,
    cancel: bool,
    /// Cloned wakers alive (the one parked with the harness).
    refs: usize,
    /// A returned error waits to be taken.
    failure: bool,
    /// Its slot went back on the free list.
    freed: bool,
    /// A new task took its slot: its id names nothing now.
    reused: bool,
    /// Its handle gave its result.
    taken: bool,
    steps: Vec<Step>,
    polls: usize,
}

impl ModelTask {
    fn live(&self) -> bool {
        self.life.is_live()
    }
}

/// The scheduling rules both async executors share, written out
/// independently of them: wakes coalesce while queued, a tick takes the
/// wakes so far and polls in wake order within its budget, a cancelled task
/// is dropped at its next turn, a task woken in a tick waits for the next.
/// The fixed-slot executor adds its slots (recycled only when no waker,
/// entry or failure is left); the hosted one a live-task cap and shutdown.
#[derive(Default)]
struct Model {
    tasks: Vec<ModelTask>,
    /// Free slots, head first (the executor's free list is a stack); empty
    /// for the hosted executor.
    free: Vec<usize>,
    stack: Vec<usize>,
    ready: std::collections::VecDeque<usize>,
    stale: u32,
    /// The hosted executor shut down.
    closed: bool,
}

impl Model {
    /// The fixed-slot executor's model, with [`EXECUTOR_SLOTS`] free slots.
    fn with_slots() -> Self {
        Self {
            free: (0..EXECUTOR_SLOTS).rev().collect(),
            ..Self::default()
        }
    }

    /// Tasks alive (spawned, not over).
    fn live(&self) -> usize {
        self.tasks.iter().filter(|task| task.live()).count()
    }

    /// A new task with script `steps`, in `slot` (the fixed-slot executor:
    /// any earlier task of that slot is forgotten by id), queued for its
    /// first poll. Returns its number.
    fn spawn(&mut self, slot: Option<usize>, steps: Vec<Step>) -> usize {
        if let Some(slot) = slot {
            for old in &mut self.tasks {
                if old.slot == Some(slot) {
                    old.reused = true;
                }
            }
        }
        let t = self.tasks.len();
        self.tasks.push(ModelTask {
            slot,
            life: ModelLife::Pending,
            queued: false,
            cancel: false,
            refs: 0,
            failure: false,
            freed: false,
            reused: false,
            taken: false,
            steps,
            polls: 0,
        });
        self.enqueue(t);
        t
    }

    /// Queues task `t` as a wake would (unless queued already).
    fn enqueue(&mut self, t: usize) {
        if !self.tasks[t].queued {
            self.tasks[t].queued = true;
            self.stack.push(t);
        }
    }

    fn release_if_reusable(&mut self, t: usize) {
        let task = &self.tasks[t];
        if let Some(slot) = task.slot
            && !task.live()
            && task.refs == 0
            && !task.queued
            && !task.failure
            && !task.freed
        {
            self.free.push(slot);
            self.tasks[t].freed = true;
        }
    }

    fn wake(&mut self, t: usize) {
        if self.tasks[t].live() {
            self.enqueue(t);
        } else {
            self.stale += 1;
        }
    }

    /// The parked waker of `t` is dropped.
    fn drop_waker(&mut self, t: usize) {
        let task = &mut self.tasks[t];
        task.refs -= 1;
        if task.refs == 0 && !task.live() && !task.queued {
            self.enqueue(t);
        }
    }

    /// A live task's handle or id asks to cancel it: it is dropped at its
    /// next turn.
    fn cancel(&mut self, t: usize) {
        self.tasks[t].cancel = true;
        self.enqueue(t);
    }

    fn finish(&mut self, t: usize, life: ModelLife) {
        self.tasks[t].life = life;
        self.tasks[t].cancel = false;
        self.release_if_reusable(t);
    }

    /// One tick; returns (polled, completed, failed, cancelled, remaining).
    fn tick(&mut self, budget: usize) -> (usize, usize, usize, usize, bool) {
        let (mut polled, mut completed, mut failed, mut cancelled) = (0, 0, 0, 0);
        self.ready.extend(self.stack.drain(..));
        while polled < budget {
            let Some(t) = self.ready.pop_front() else {
                break;
            };
            self.tasks[t].queued = false;
            if !self.tasks[t].live() {
                self.release_if_reusable(t);
                continue;
            }
            if self.tasks[t].cancel {
                cancelled += 1;
                self.finish(t, ModelLife::Cancelled);
                continue;
            }
            polled += 1;
            self.tasks[t].life = ModelLife::Running;
            let task = &mut self.tasks[t];
            let step = next_step(&task.steps, &mut task.polls);
            match step {
                Step::Park => {
                    // The new clone replaces (and drops) the old one.
                    if self.tasks[t].refs == 0 {
                        self.tasks[t].refs = 1;
                    }
                }
                Step::Yield => self.enqueue(t),
                Step::Complete => {
                    completed += 1;
                    self.finish(t, ModelLife::Completed);
                }
                Step::Fail => {
                    failed += 1;
                    self.tasks[t].failure = true;
                    self.finish(t, ModelLife::Failed);
                }
            }
        }
        let remaining = !self.ready.is_empty() || !self.stack.is_empty();
        (polled, completed, failed, cancelled, remaining)
    }

    /// The hosted executor shuts down: every live task is cancelled and
    /// nothing stays queued. Returns how many were live.
    fn shut_down(&mut self) -> usize {
        let left = self.live();
        for task in &mut self.tasks {
            if task.live() {
                task.life = ModelLife::Cancelled;
            }
            task.queued = false;
        }
        self.ready.clear();
        self.stack.clear();
        self.closed = true;
        left
    }

    /// What the hosted task `t`'s handle should hand out now.
    fn outcome(&self, t: usize) -> Option<Result<Result<(), usize>, JoinError>> {
        let task = &self.tasks[t];
        if task.taken {
            return None;
        }
        match task.life {
            ModelLife::Pending | ModelLife::Running => None,
            ModelLife::Completed => Some(Ok(Ok(()))),
            ModelLife::Failed => Some(Ok(Err(t))),
            ModelLife::Cancelled => Some(Err(JoinError::Cancelled)),
        }
    }
}

/// The [`SCRIPTED_TASKS`] tasks a run can spawn, their scripts read from the
/// start of `bytes`: a length byte (0 to 4 steps), then one byte per step.
fn scripted_tasks<'p>(
    bytes: &mut impl Iterator<Item = u8>,
    parked: &'p RefCell<Vec<Option<Waker>>>,
) -> Vec<Scripted<'p>> {
    (0..SCRIPTED_TASKS)
        .map(|task| {
            let length = usize::from(bytes.next().unwrap_or(0) % 5);
            let steps = (0..length)
                .map(|_| Step::from_byte(bytes.next().unwrap_or(2)))
                .collect();
            Scripted {
                task,
                steps,
                polls: 0,
                parked,
            }
        })
        .collect()
}

/// Each byte is one operation, by its low three bits: spawn a scripted task
/// (its script from the next bytes), tick with a budget of 1 to 4, wake,
/// drop the parked waker of, cancel, or take the failure of a task (the
/// high bits choose which). The executor must do exactly what the model
/// does: same reports, same states by id, same refusals.
pub(crate) fn check_executor(bytes: &[u8]) {
    let queue = fresh_queue();
    let parked: RefCell<Vec<Option<Waker>>> = RefCell::new(vec![None; SCRIPTED_TASKS]);
    let mut bytes = bytes.iter().copied();
    // Scripts come first so the storage can be built before the executor
    // borrows it.
    let tasks = scripted_tasks(&mut bytes, &parked);
    let scripts: Vec<Vec<Step>> = tasks.iter().map(|task| task.steps.clone()).collect();
    let mut storage: Vec<Option<Scripted<'_>>> = tasks.into_iter().map(Some).collect();
    let mut model = Model::with_slots();
    let mut ids: Vec<TaskId> = Vec::new();
    let mut unspawned = storage.iter_mut();
    let mut held = None;
    let mut executor: AsyncExecutor<'_, EXECUTOR_SLOTS, Result<(), usize>> =
        AsyncExecutor::new(queue).unwrap();
    for byte in bytes {
        let which = usize::from(byte >> 3);
        match byte & 7 {
            0 => {
                // A task refused earlier is offered again first, so tasks
                // are spawned in storage order and `t` indexes both.
                let task: TaskRef<'_, Result<(), usize>> = match held.take() {
                    Some(task) => task,
                    None => match unspawned.next() {
                        Some(storage) => {
                            let pinned: Pin<&mut Option<Scripted<'_>>> = Pin::new(storage);
                            pinned
                        }
                        None => continue,
                    },
                };
                match executor.try_spawn(task) {
                    Ok(id) => {
                        let slot = model.free.pop().expect("the model has a free slot too");
                        let t = model.spawn(Some(slot), scripts[ids.len()].clone());
                        assert_eq!(t, ids.len());
                        ids.push(id);
                    }
                    Err(refused) => {
                        assert!(model.free.is_empty(), "refused with a free slot");
                        let task = refused.into_inner();
                        assert!(task.has_future());
                        held = Some(task);
                    }
                }
            }
            1 | 2 => {
                let budget = 1 + which % 4;
                let report = executor.tick(budget);
                let (polled, completed, failed, cancelled, remaining) = model.tick(budget);
                assert_eq!(
                    tick_outcome(&report),
                    (polled, completed, failed, cancelled, remaining),
                    "tick({budget})"
                );
            }
            3 if !ids.is_empty() => {
                let t = which % ids.len();
                let waker = parked.borrow()[t].clone();
                if let Some(waker) = waker {
                    // The clone was taken and dropped here: balance it.
                    model.tasks[t].refs += 1;
                    waker.wake_by_ref();
                    model.wake(t);
                    drop(waker);
                    model.drop_waker(t);
                }
            }
            4 if !ids.is_empty() => {
                let t = which % ids.len();
                let waker = parked.borrow_mut()[t].take();
                if let Some(waker) = waker {
                    drop(waker);
                    model.drop_waker(t);
                }
            }
            5 if !ids.is_empty() => {
                let t = which % ids.len();
                let result = executor.cancel(ids[t]);
                let task = &mut model.tasks[t];
                if task.reused {
                    assert_eq!(result, Err(CancelError::UnknownTask(ids[t])));
                } else if task.live() {
                    assert_eq!(result, Ok(()));
                    model.cancel(t);
                } else {
                    assert_eq!(result, Err(CancelError::AlreadyFinished(ids[t])));
                }
            }
            6 if !ids.is_empty() => {
                let t = which % ids.len();
                let taken = executor.take_failure(ids[t]);
                let task = &model.tasks[t];
                let expected = !task.reused && task.life == ModelLife::Failed && task.failure;
                assert_eq!(taken.map(|f| f.into_error()), expected.then_some(t));
                if expected {
                    model.tasks[t].failure = false;
                    model.release_if_reusable(t);
                }
            }
            _ => {}
        }
        for (t, task) in model.tasks.iter().enumerate() {
            let expected = if task.reused {
                None
            } else {
                Some(match task.life {
                    ModelLife::Pending => dinah::TaskState::Pending,
                    ModelLife::Running => dinah::TaskState::Running,
                    ModelLife::Completed => dinah::TaskState::Completed,
                    ModelLife::Failed => dinah::TaskState::Failed,
                    ModelLife::Cancelled => dinah::TaskState::Cancelled,
                })
            };
            assert_eq!(executor.task_state(ids[t]), expected, "task {t}");
        }
    }
}

// The hosted LocalExecutor against the same scheduling model, with handles
// instead of ids, a live-task cap instead of slots, and shutdown.

use dinah::executor::ExecutorConfig;
use dinah::{JoinError, JoinHandle, LocalExecutor, SpawnError};

/// Each byte is one operation, by its low three bits: spawn the next
/// scripted task, tick with a budget of 1 to 4, wake or drop the parked
/// waker of a task, cancel or take the result of a task through its handle,
/// or shut down (the high bits choose which task). The hosted executor must
/// do exactly what the model does: same reports, same handle outcomes, same
/// refusals, and every future dropped exactly once.
pub(crate) fn check_local_executor(bytes: &[u8]) {
    let parked: RefCell<Vec<Option<Waker>>> = RefCell::new(vec![None; SCRIPTED_TASKS]);
    let mut bytes = bytes.iter().copied();
    let mut unspawned = scripted_tasks(&mut bytes, &parked);
    unspawned.reverse();
    let executor = LocalExecutor::with_config(ExecutorConfig {
        max_tasks: Some(EXECUTOR_SLOTS),
        ..ExecutorConfig::default()
    })
    .unwrap();
    let mut model = Model::default();
    let mut handles: Vec<JoinHandle<Result<(), usize>>> = Vec::new();
    for byte in bytes {
        let which = usize::from(byte >> 3);
        match byte & 7 {
            0 => {
                let Some(task) = unspawned.pop() else {
                    continue;
                };
                let steps = task.steps.clone();
                match executor.try_spawn(task) {
                    Ok(handle) => {
                        assert!(!model.closed && model.live() < EXECUTOR_SLOTS);
                        let t = model.spawn(None, steps);
                        assert_eq!(t, handles.len());
                        handles.push(handle);
                    }
                    Err(SpawnError::Full(task)) => {
                        assert!(!model.closed && model.live() == EXECUTOR_SLOTS);
                        assert_eq!(task.polls, 0, "handed back untouched");
                        unspawned.push(task);
                    }
                    Err(SpawnError::Shutdown(task)) => {
                        assert!(model.closed);
                        unspawned.push(task);
                    }
                    Err(other) => panic!("an executor refuses only Full or Shutdown: {other:?}"),
                }
            }
            1 | 2 => {
                let budget = 1 + which % 4;
                let report = executor.tick(budget);
                assert_eq!(tick_outcome(&report), model.tick(budget), "tick({budget})");
            }
            3 if !handles.is_empty() => {
                let t = which % handles.len();
                let waker = parked.borrow()[t].clone();
                if let Some(waker) = waker {
                    waker.wake();
                    model.wake(t);
                }
            }
            4 if !handles.is_empty() => {
                let t = which % handles.len();
                drop(parked.borrow_mut()[t].take());
            }
            5 if !handles.is_empty() => {
                let t = which % handles.len();
                let live = model.tasks[t].live();
                assert_eq!(handles[t].cancel(), live, "cancel {t}");
                if live {
                    model.cancel(t);
                }
            }
            6 if !handles.is_empty() => {
                let t = which % handles.len();
                let expected = model.outcome(t);
                assert_eq!(handles[t].try_take(), expected, "take {t}");
                if expected.is_some() {
                    model.tasks[t].taken = true;
                }
            }
            7 => {
                let report = executor.shutdown();
                assert_eq!(report.cancelled_tasks, model.shut_down());
            }
            _ => {}
        }
        assert_eq!(executor.live_tasks(), model.live());
        for (t, handle) in handles.iter().enumerate() {
            assert_eq!(handle.is_finished(), !model.tasks[t].live(), "task {t}");
        }
    }
}

// ---- The pools ----

use std::sync::{Arc, mpsc};

use dinah::pool::{BlockingConfig, PoolStats, ShutdownPolicy};
use dinah::{BlockingPool, CoreConfig, WorkerPool};

/// Either pool, behind one interface for the checks that hold for both.
pub(crate) enum ModelPool {
    Worker(WorkerPool),
    Blocking(BlockingPool),
}

impl ModelPool {
    /// A `WorkerPool` with one worker and room for `capacity` queued tasks.
    pub(crate) fn one_worker(capacity: usize) -> Self {
        Self::Worker(WorkerPool::new(CoreConfig::new(1).unwrap(), capacity).unwrap())
    }

    /// A `BlockingPool` with one thread and room for `capacity` queued jobs.
    pub(crate) fn one_blocking_thread(capacity: usize) -> Self {
        Self::Blocking(BlockingPool::new(BlockingConfig::new(1, capacity)).unwrap())
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Worker(_) => "WorkerPool",
            Self::Blocking(_) => "BlockingPool",
        }
    }

    pub(crate) fn spawn<F, R>(&self, f: F) -> Result<JoinHandle<R>, SpawnError<F, std::io::Error>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        match self {
            Self::Worker(pool) => pool.try_spawn(f),
            Self::Blocking(pool) => pool.try_spawn(f),
        }
    }

    pub(crate) fn stats(&self) -> PoolStats {
        match self {
            Self::Worker(pool) => pool.stats(),
            Self::Blocking(pool) => pool.stats(),
        }
    }

    pub(crate) fn shutdown(self, policy: ShutdownPolicy) -> dinah::pool::PoolReport {
        match self {
            Self::Worker(pool) => pool.shutdown(policy),
            Self::Blocking(pool) => pool.shutdown(policy),
        }
    }
}

/// Holds the pool's one thread until released, so the queue only changes
/// when the model says so.
struct Gate {
    release: mpsc::Sender<()>,
    handle: JoinHandle<()>,
}

fn hold(pool: &ModelPool) -> Gate {
    let (started_tx, started) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let handle = pool
        .spawn(move || {
            started_tx.send(()).expect("model waits");
            let _ = release_rx.recv();
        })
        .unwrap_or_else(|_| panic!("the queue is empty when the gate comes"));
    started.recv().expect("the gate starts");
    Gate { release, handle }
}

/// A task the model tracks: its number and whether its handle cancelled it.
struct Tracked {
    number: usize,
    handle: JoinHandle<usize>,
    cancelled: bool,
}

/// Drives a pool with one thread, held by a gate between releases, through
/// submit / cancel / release sequences and a final shutdown, against a FIFO
/// model: full and cancel answers, stats, the order tasks run in, every
/// handle's outcome, the tasks handed back and the report's counts.
pub(crate) fn check_pool(bytes: &[u8]) {
    let Some((&kind, ops)) = bytes.split_first() else {
        return;
    };
    let pool = if kind % 2 == 0 {
        ModelPool::one_worker(CAP)
    } else {
        ModelPool::one_blocking_thread(CAP)
    };
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut expected_log = Vec::new();
    let mut gate = hold(&pool);
    // Tasks accepted and not yet run, in FIFO order.
    let mut queued: VecDeque<Tracked> = VecDeque::new();
    let (mut accepted, mut rejected, mut cancelled, mut completed) = (1u64, 0u64, 0u64, 0u64);
    let mut next = 0usize;
    let mut policy = ShutdownPolicy::Drain;
    let mut ops = ops.iter();
    while let Some(&op) = ops.next() {
        match op % 8 {
            0..=3 => {
                let number = next;
                next += 1;
                let task_log = Arc::clone(&log);
                let task = move || {
                    task_log.lock().unwrap().push(number);
                    number
                };
                match pool.spawn(task) {
                    Ok(handle) => {
                        assert!(queued.len() < CAP, "accepted beyond the capacity");
                        accepted += 1;
                        queued.push_back(Tracked {
                            number,
                            handle,
                            cancelled: false,
                        });
                    }
                    Err(SpawnError::Full(task)) => {
                        assert_eq!(queued.len(), CAP, "refused below the capacity");
                        rejected += 1;
                        // Handed back intact: calling it runs it here.
                        assert_eq!(task(), number);
                        log.lock().unwrap().pop();
                    }
                    Err(other) => panic!("unexpected refusal: {other}"),
                }
            }
            4 | 5 => {
                let index = usize::from(ops.next().copied().unwrap_or(0));
                if queued.is_empty() {
                    continue;
                }
                let at = index % queued.len();
                let tracked = &mut queued[at];
                // Nothing queued has started while the gate holds the thread.
                assert_eq!(tracked.handle.cancel(), !tracked.cancelled);
                if !tracked.cancelled {
                    cancelled += 1;
                }
                tracked.cancelled = true;
                assert!(tracked.handle.is_finished());
            }
            6 => {
                // Release: the thread runs the queue in order, then the
                // gate holds it again.
                gate.release.send(()).unwrap();
                gate.handle.join().unwrap();
                completed += 1;
                for tracked in queued.drain(..) {
                    let outcome = tracked.handle.join();
                    if tracked.cancelled {
                        assert_eq!(outcome, Err(JoinError::Cancelled));
                    } else {
                        expected_log.push(tracked.number);
                        completed += 1;
                        assert_eq!(outcome, Ok(tracked.number));
                    }
                }
                // The thread may still be discarding cancelled tasks.
                while pool.stats().queued != 0 {
                    std::thread::yield_now();
                }
                accepted += 1;
                gate = hold(&pool);
            }
            _ => {
                policy = if op & 0x80 == 0 {
                    ShutdownPolicy::Drain
                } else {
                    ShutdownPolicy::CancelPending
                };
            }
        }
        let stats = pool.stats();
        assert_eq!(stats.queued, queued.len());
        assert_eq!((stats.accepted, stats.rejected), (accepted, rejected));
        assert_eq!(stats.threads, 1);
        assert_eq!(
            *log.lock().unwrap(),
            expected_log,
            "tasks run in FIFO order"
        );
    }

    // Shut down from another thread once the gate is released by it: the
    // gate must see the shutdown begin before it lets the thread go, so that
    // under CancelPending nothing queued starts.
    let watcher = match &pool {
        ModelPool::Worker(pool) => pool.spawner(),
        ModelPool::Blocking(pool) => pool.spawner(),
    };
    let releaser = std::thread::spawn(move || {
        while !watcher.is_shut_down() {
            std::thread::yield_now();
        }
        gate.release.send(()).unwrap();
        gate.handle.join().unwrap();
    });
    let report = pool.shutdown(policy);
    releaser.join().unwrap();
    completed += 1;
    let live: Vec<&Tracked> = queued.iter().filter(|t| !t.cancelled).collect();
    match policy {
        ShutdownPolicy::Drain => {
            assert!(report.handed_back.is_empty());
            expected_log.extend(live.iter().map(|t| t.number));
            completed += live.len() as u64;
        }
        _ => {
            let ids: Vec<_> = report.handed_back.iter().map(|t| t.id()).collect();
            let wanted: Vec<_> = live.iter().map(|t| t.handle.id()).collect();
            assert_eq!(ids, wanted, "handed back in FIFO order");
            cancelled += live.len() as u64;
        }
    }
    assert_eq!(*log.lock().unwrap(), expected_log);
    assert_eq!(
        (report.completed, report.panicked, report.cancelled),
        (completed, 0, cancelled)
    );
    assert_eq!(report.completed + report.cancelled, accepted);
    drop(report);
    for tracked in queued {
        let outcome = tracked.handle.join();
        if tracked.cancelled || policy == ShutdownPolicy::CancelPending {
            assert_eq!(outcome, Err(JoinError::Cancelled));
        } else {
            assert_eq!(outcome, Ok(tracked.number));
        }
    }
}
