//! [`CancellationHandle`]: an owned, clonable cancellation flag that tasks
//! can await, with child handles that a cancellation reaches.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};

use dinah_core::sync::CancellationToken;

use crate::primitives::{AtomicBool, Mutex, Ordering, lock};

/// One flag: whether it was requested (through the handle), its core
/// token (for `token()`), and who waits for it or hangs off it.
struct Node {
    /// Set by the request that reaches waiters and children. (A separate
    /// atomic from the core token's, so that loom models see it.)
    requested: AtomicBool,
    token: CancellationToken,
    /// Filled while the flag is clear; emptied, for good, by the request
    /// that sets it.
    waiting: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    /// Wakers of pending [`Cancelled`] futures; `None` is a free place.
    wakers: Vec<Option<Waker>>,
    /// Handles made by [`CancellationHandle::child`] that are still alive.
    children: Vec<Weak<Node>>,
}

impl Node {
    fn new() -> Self {
        Self {
            requested: AtomicBool::new(false),
            token: CancellationToken::new(),
            waiting: Mutex::new(Waiting::default()),
        }
    }

    /// Sets the flag without reaching anyone; `true` if this set it.
    fn set(&self) -> bool {
        let first = !self.requested.swap(true, Ordering::AcqRel);
        self.token.request_cancellation();
        first
    }

    /// Whether it was requested, through a handle or its core token.
    fn is_set(&self) -> bool {
        self.requested.load(Ordering::Acquire) || self.token.is_cancellation_requested()
    }

    /// Sets the flag; `true` for the request that set it. That request
    /// then wakes every waiter and cancels every child, and their children,
    /// without recursion. No lock is held while a waker runs.
    fn cancel(self: &Arc<Self>) -> bool {
        if !self.set() {
            return false;
        }
        let mut nodes = vec![Arc::clone(self)];
        while let Some(node) = nodes.pop() {
            // The flag is set before the lock is taken: a waiter that
            // looks under the lock after this either sees the flag or was
            // registered before this takes its waker.
            let Waiting { wakers, children } = std::mem::take(&mut *lock(&node.waiting));
            for waker in wakers.into_iter().flatten() {
                waker.wake();
            }
            for child in children.iter().filter_map(Weak::upgrade) {
                if child.set() {
                    nodes.push(child);
                }
            }
        }
        true
    }
}

/// An owned, clonable handle to one cooperative cancellation flag, which
/// tasks can await and which cancels its children.
///
/// Every clone shares one flag (one [`CancellationToken`]): any clone can
/// request cancellation and every clone observes it. `Clone + Send + Sync +
/// 'static`, so it moves into threads and tasks, in the shape of
/// `tokio_util`'s `CancellationToken`.
///
/// - [`cancelled`](Self::cancelled) is a future that completes once
///   cancellation is requested (at once if it was).
/// - [`child`](Self::child) makes a handle to a new flag that is cancelled
///   when this one is (and is born cancelled if this one is); cancelling a
///   child does not touch its parent or its siblings.
///
/// # Guarantees and limits
///
/// [`request_cancellation`](Self::request_cancellation) returns `true` to
/// exactly one caller across all clones; the request is published with
/// Release and observed with Acquire. Once it returns, every `cancelled`
/// future of this flag and of its descendants has been woken, and every
/// descendant reports the request. It interrupts nothing: tasks observe it
/// at safe points or await it, and a request is not proof that work
/// stopped. The flag never resets. A parent keeps only weak references to
/// its children, so dropping a child frees it.
///
/// ```
/// use dinah::LocalExecutor;
/// use dinah::sync::CancellationHandle;
///
/// let executor = LocalExecutor::new();
/// let shutdown = CancellationHandle::new();
/// let request = shutdown.child();
/// let worker = executor
///     .try_spawn({
///         let request = request.clone();
///         async move {
///             request.cancelled().await; // woken by the parent's request
///             Ok::<&str, ()>("stopped")
///         }
///     })
///     .unwrap();
/// executor.tick(usize::MAX);
/// assert!(shutdown.request_cancellation());
/// assert!(request.is_cancellation_requested());
/// assert_eq!(executor.block_on(worker).unwrap(), Ok("stopped"));
/// ```
#[derive(Clone)]
pub struct CancellationHandle {
    node: Arc<Node>,
}

impl Default for CancellationHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl CancellationHandle {
    /// A handle to a new flag with no cancellation requested.
    #[must_use]
    pub fn new() -> Self {
        Self {
            node: Arc::new(Node::new()),
        }
    }

    /// Requests cancellation of this flag and every descendant's; `true`
    /// only for the request that changed this flag.
    pub fn request_cancellation(&self) -> bool {
        self.node.cancel()
    }

    /// Whether cancellation has been requested through any clone (or
    /// reached this flag from an ancestor).
    #[must_use]
    pub fn is_cancellation_requested(&self) -> bool {
        self.node.is_set()
    }

    /// A handle to a new flag that this one's cancellation reaches: cancelled
    /// with this one, or at once if this one already is.
    #[must_use]
    pub fn child(&self) -> Self {
        let child = Self::new();
        {
            let mut waiting = lock(&self.node.waiting);
            if !self.is_cancellation_requested() {
                // Children dropped since are pruned as others are added.
                waiting.children.retain(|child| child.strong_count() > 0);
                waiting.children.push(Arc::downgrade(&child.node));
                return child;
            }
        }
        child.request_cancellation();
        child
    }

    /// A future that completes once cancellation is requested; it holds a
    /// clone of this handle, so it can move into a task on its own.
    ///
    /// Cancel safe: dropped before it completes, it leaves nothing behind.
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            handle: self.clone(),
            place: None,
        }
    }

    /// The shared core token, for code written against `&CancellationToken`
    /// (requesting through it sets the flag but reaches no waiter and no
    /// child: use [`request_cancellation`](Self::request_cancellation)).
    #[must_use]
    pub fn token(&self) -> &CancellationToken {
        &self.node.token
    }

    /// Whether `self` and `other` share one flag.
    #[must_use]
    pub fn same_flag(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.node, &other.node)
    }
}

impl fmt::Debug for CancellationHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellationHandle")
            .field("requested", &self.is_cancellation_requested())
            .finish()
    }
}

/// The future of [`CancellationHandle::cancelled`].
#[must_use = "a future does nothing unless awaited"]
pub struct Cancelled {
    handle: CancellationHandle,
    /// Where its waker is kept among the flag's, once it waits.
    place: Option<usize>,
}

impl Future for Cancelled {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.handle.is_cancellation_requested() {
            return Poll::Ready(());
        }
        let mut waiting = lock(&this.handle.node.waiting);
        // Looked at again under the lock: a request sets the flag before it
        // takes the lock to empty the waiters.
        if this.handle.is_cancellation_requested() {
            return Poll::Ready(());
        }
        let waker = Some(cx.waker().clone());
        match this.place {
            Some(place) if place < waiting.wakers.len() => waiting.wakers[place] = waker,
            _ => {
                let place = match waiting.wakers.iter().position(Option::is_none) {
                    Some(free) => {
                        waiting.wakers[free] = waker;
                        free
                    }
                    None => {
                        waiting.wakers.push(waker);
                        waiting.wakers.len() - 1
                    }
                };
                this.place = Some(place);
            }
        }
        Poll::Pending
    }
}

impl Drop for Cancelled {
    fn drop(&mut self) {
        if let Some(place) = self.place
            && !self.handle.is_cancellation_requested()
        {
            let mut waiting = lock(&self.handle.node.waiting);
            if let Some(slot) = waiting.wakers.get_mut(place) {
                *slot = None;
            }
        }
    }
}

impl fmt::Debug for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cancelled")
            .field("requested", &self.handle.is_cancellation_requested())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_flag() {
        let a = CancellationHandle::new();
        let b = a.clone();
        let unrelated = CancellationHandle::new();
        assert!(a.same_flag(&b) && !a.same_flag(&unrelated));
        assert!(b.request_cancellation());
        assert!(a.is_cancellation_requested());
        assert!(a.token().is_cancellation_requested());
        assert!(!a.request_cancellation());
        assert!(!unrelated.is_cancellation_requested());
    }

    #[test]
    fn a_cancellation_reaches_every_descendant_and_no_ancestor() {
        let root = CancellationHandle::new();
        let child = root.child();
        let grandchild = child.child();
        let sibling = root.child();
        assert!(grandchild.request_cancellation());
        assert!(!child.is_cancellation_requested() && !root.is_cancellation_requested());
        assert!(root.request_cancellation());
        assert!(child.is_cancellation_requested() && sibling.is_cancellation_requested());
        // Born after: cancelled at once.
        assert!(root.child().is_cancellation_requested());
        // Its own request did nothing more.
        assert!(!child.request_cancellation());
    }

    #[test]
    fn dropped_children_are_not_kept() {
        let root = CancellationHandle::new();
        for _ in 0..100 {
            drop(root.child());
        }
        let kept = root.child();
        assert!(lock(&root.node.waiting).children.len() <= 2);
        drop(kept);
    }

    #[test]
    fn a_waiting_future_dropped_frees_its_place() {
        let handle = CancellationHandle::new();
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut first = Box::pin(handle.cancelled());
        assert!(first.as_mut().poll(&mut cx).is_pending());
        drop(first);
        let mut second = Box::pin(handle.cancelled());
        assert!(second.as_mut().poll(&mut cx).is_pending());
        assert_eq!(
            lock(&handle.node.waiting).wakers.len(),
            1,
            "the place was reused"
        );
        handle.request_cancellation();
        assert!(second.as_mut().poll(&mut cx).is_ready());
        assert!(lock(&handle.node.waiting).wakers.is_empty());
    }
}
