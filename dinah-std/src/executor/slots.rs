//! The hosted executor's storage: each slot's stable [`Place`] and its
//! header, the [`SlotTable`], a draining shutdown's state ([`Drain`]), and
//! how a task leaves its slot ([`drop_task`], [`task_report`]).
#![forbid(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::task::Waker;

use std::panic::{AssertUnwindSafe, catch_unwind};

use dinah_core::TaskId;
use dinah_core::raw::sched::TaskState;
use dinah_core::telemetry::Measure;

use super::header::Header;
use super::hub::Hub;
use super::resolver::{AbortNote, BoxedTask};
use super::task_probe::TaskProbe;
use crate::task::{ChildEnd, ChildKind, ChildReport, JoinError};
use crate::telemetry::hook::Hook;
use crate::unwind::panic_text;

/// Where a slot's tasks live: a stable place (the slot table may grow while
/// a task is polled in place, since tasks spawn), reused by every task of
/// the slot while its header is.
pub(super) struct Place<'a, M: Measure> {
    /// The slot's header, to read its task's word after a poll without a
    /// borrow of the slot table.
    pub(super) header: Arc<Header<M>>,
    /// The slot's header as a `Waker`, lent to every poll.
    pub(super) waker: Waker,
    pub(super) task: RefCell<Option<BoxedTask<'a>>>,
    /// Where a panicking task's resolver leaves its join.
    pub(super) note: Rc<AbortNote<'a>>,
    /// The slot's telemetry (its header's), when kept.
    pub(super) probe: Hook<Arc<TaskProbe>>,
    /// The slot's latest task and its name, for shutdown reports.
    pub(super) who: Cell<Option<(TaskId, Option<&'static str>)>>,
}

pub(super) type TaskPlace<'a, M> = Rc<Place<'a, M>>;

pub(super) struct Slot<'a, M: Measure> {
    pub(super) header: Arc<Header<M>>,
    pub(super) task: TaskPlace<'a, M>,
}

impl<M: Measure> Slot<'_, M> {
    pub(super) fn new(index: u32, hub: &Arc<Hub>) -> Self {
        let header = Header::new(index, hub, true);
        Self {
            task: Rc::new(Place {
                header: Arc::clone(&header),
                waker: Waker::from(Arc::clone(&header)),
                task: RefCell::new(None),
                note: Rc::new(AbortNote::new()),
                probe: header.probe.clone(),
                who: Cell::new(None),
            }),
            header,
        }
    }
}

/// The tasks' slots: the table (it grows), the free ones, how many tasks
/// live and how many may.
pub(super) struct SlotTable<'a, M: Measure> {
    pub(super) slots: RefCell<Vec<Slot<'a, M>>>,
    pub(super) free: RefCell<Vec<u32>>,
    pub(super) live: Cell<usize>,
    pub(super) max_tasks: usize,
}

/// A draining shutdown's state (see `shutdown_with`).
pub(super) struct Drain {
    /// A draining shutdown runs: spawns are refused, accepted work runs.
    pub(super) active: Cell<bool>,
    /// While draining: each task that ends, as the report names it.
    pub(super) ended: RefCell<Option<Vec<ChildReport>>>,
    /// While draining: woken when the last live task ends.
    pub(super) idle_waker: RefCell<Option<Waker>>,
    /// While draining on a paused clock: the drain looks at the real
    /// clock after every tick that left work.
    pub(super) watch_real_time: Cell<bool>,
}

/// A task's line in a shutdown report.
pub(super) fn task_report(id: TaskId, name: Option<&'static str>, state: TaskState) -> ChildReport {
    ChildReport {
        id,
        name,
        kind: ChildKind::Task,
        end: match state {
            TaskState::Completed => ChildEnd::Completed,
            TaskState::Failed => ChildEnd::Failed,
            _ => ChildEnd::Cancelled,
        },
    }
}

/// Drops a task's future, which resolves its handle `Cancelled` through its
/// resolver; if the destructor panics, the resolver leaves the join in
/// `note` and it is resolved `Panicked` with the message here. Returns how
/// the task ended.
pub(super) fn drop_task<'a>(task: Option<BoxedTask<'a>>, note: &AbortNote<'a>) -> TaskState {
    match catch_unwind(AssertUnwindSafe(move || drop(task))) {
        Ok(()) => TaskState::Cancelled,
        Err(payload) => {
            if let Some(join) = note.take_orphan() {
                join.abort(JoinError::Panicked(panic_text(&*payload)));
            }
            crate::unwind::drop_quietly(payload);
            TaskState::Failed
        }
    }
}

/// Clears `running` when a `tick`, `block_on` or `shutdown` ends, even by
/// unwinding.
pub(super) struct Entered<'r>(pub(super) &'r Cell<bool>);

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}
