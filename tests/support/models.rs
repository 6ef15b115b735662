//! Reference models, and checkers that drive dinah's types against them
//! with operations decoded from raw bytes.
//!
//! Shared by the property tests (which generate the bytes with proptest)
//! and the libFuzzer targets in `fuzz/` (which get them from the fuzzer), so
//! both check exactly the same contract. A broken contract is a panic.
#![allow(dead_code)]

use std::collections::VecDeque;

use dinah::{
    BoundedQueue, FifoQueue, LifecycleState, QueuePushError, TaskId, TaskQueue, TaskState,
    TraceBuffer, TraceEvent, TraceEventKind, TraceRecordError, TraceRing,
};

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
