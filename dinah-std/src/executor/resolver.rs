//! How an executor task resolves its join: [`wrap`] makes the future the
//! executor stores, which hands the task's output to its join when it
//! finishes, and whose [`Resolver`] resolves the join when the future is
//! dropped first (cancelled, shut down, or unwound by a panic, through the
//! slot's [`AbortNote`]).
#![forbid(unsafe_code)]

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;

use dinah_core::task::TaskOutput;

use crate::task::{CancelTarget, Join, JoinError};

/// A task's future as the executor stores it: its output says whether the
/// task succeeded.
pub(super) type BoxedTask<'a> = Pin<Box<dyn Future<Output = bool> + 'a>>;

/// The executor's side of a join, whatever the task's output type.
pub(super) trait Resolve {
    /// Resolves the handle without a value (the first outcome wins).
    fn abort(&self, why: JoinError);
    /// Tells the join where its task now lives (a task that came through
    /// the ingress); carries out a cancellation requested before that.
    fn attach(&self, header: Arc<dyn CancelTarget>, generation: u32);
}

impl<T> Resolve for Join<T> {
    fn abort(&self, why: JoinError) {
        Join::abort(self, why);
    }

    fn attach(&self, header: Arc<dyn CancelTarget>, generation: u32) {
        Join::attach(self, header, generation);
    }
}

/// Where a task's resolver leaves its join when the task's future is
/// dropped by a panic unwinding out of its poll: the executor, which caught
/// the panic and holds its message, resolves it `Panicked`. One per slot,
/// reused by its tasks.
pub(super) struct AbortNote<'a>(RefCell<Option<Arc<dyn Resolve + 'a>>>);

impl<'a> AbortNote<'a> {
    pub(super) fn new() -> Self {
        Self(RefCell::new(None))
    }

    /// The join of the task whose poll just panicked, if its resolver left
    /// it here.
    pub(super) fn take_orphan(&self) -> Option<Arc<dyn Resolve + 'a>> {
        self.0.borrow_mut().take()
    }
}

/// Lives inside a task's future and resolves its join when that future is
/// dropped before finishing: `Cancelled` (cancelled, or shut down), or, when
/// a panic unwinds out of the task's poll, through the [`AbortNote`] to the
/// executor. Until the first poll it also holds the task's future, so that
/// even a task dropped before it ever ran drops its future, then resolves.
struct Resolver<'a, F, T: 'a> {
    future: Option<F>,
    join: Option<Arc<Join<T>>>,
    note: Rc<AbortNote<'a>>,
}

impl<'a, F, T: 'a> Drop for Resolver<'a, F, T> {
    fn drop(&mut self) {
        // The future first (if it was never polled, it is still here). Its
        // destructor is the task's code: if it panics, the join is left in
        // the note and the panic goes on, so that the executor, which
        // catches it, resolves the handle `Panicked`.
        let future = self.future.take();
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(future)));
        if let Some(join) = self.join.take() {
            if dropped.is_err() || std::thread::panicking() {
                *self.note.0.borrow_mut() = Some(join);
            } else {
                join.abort(JoinError::Cancelled);
            }
        }
        if let Err(payload) = dropped {
            std::panic::resume_unwind(payload);
        }
    }
}

/// The future a task runs: the task's future, then its output handed to
/// the join; or, if dropped first, the join resolved by the [`Resolver`].
/// Its output says whether the task succeeded (an `Err` output is a
/// failure, counted as one, and still handed to the join as the value).
pub(super) fn wrap<'a, F>(
    future: F,
    join: Arc<Join<F::Output>>,
    note: Rc<AbortNote<'a>>,
) -> impl Future<Output = bool> + 'a
where
    F: Future + 'a,
    F::Output: TaskOutput + 'a,
{
    let resolver = Resolver {
        future: Some(future),
        join: Some(join),
        note,
    };
    async move {
        // Moved into the body at the first poll: from here on the resolver
        // is declared before the awaited future, so it is dropped after it.
        let mut resolver = resolver;
        let Some(future) = resolver.future.take() else {
            return false;
        };
        let output = future.await;
        let ok = !output.is_failure();
        if let Some(join) = resolver.join.take() {
            join.finish(Ok(output));
        }
        ok
    }
}
