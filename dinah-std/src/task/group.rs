//! [`TaskGroup`]: children owned by one parent, joined, cancelled and shut
//! down together, with a [`GroupReport`] naming each child's end.
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::fmt;
use std::future::{Future, poll_fn};
use std::io;
use std::marker::PhantomData;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use dinah_core::TaskId;
use dinah_core::executor::SpawnError;
use dinah_core::task::TaskOutput;
use dinah_core::telemetry::{Measure, Unmeasured};
use dinah_core::time::TimerDriver;

use super::{JoinError, JoinHandle};
use crate::executor::LocalSpawner;
#[cfg(not(loom))]
use crate::multi::MultiHandle;
use crate::pool::PoolSpawner;
use crate::primitives::lock_std;
use crate::time::TimerHandle;

/// How a child ended, as a [`GroupReport`] names it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum ChildEnd {
    /// It returned, and its output was not an error.
    Completed,
    /// It returned an error, or panicked.
    Failed,
    /// It was cancelled before it finished (its future dropped, or its
    /// blocking job never started).
    Cancelled,
    /// It was still running at the shutdown's deadline: a blocking job
    /// already started (a thread cannot be interrupted), or a task whose
    /// cancellation its executor had not yet carried out.
    Running,
}

/// Where a child runs.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum ChildKind {
    /// A task on the group's executor.
    Task,
    /// A job on a blocking or worker pool.
    Blocking,
}

/// One child in a [`GroupReport`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub struct ChildReport {
    /// Its id (unique within its runtime: the executor's, or the pool's).
    pub id: TaskId,
    /// Its name, if it was spawned with one.
    pub name: Option<&'static str>,
    /// Where it ran.
    pub kind: ChildKind,
    /// How it ended.
    pub end: ChildEnd,
}

/// Every child a group ever had, in the order they were spawned, and how
/// each ended.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
#[non_exhaustive]
pub struct GroupReport {
    /// Each child, in spawn order.
    pub children: Vec<ChildReport>,
}

impl GroupReport {
    /// How many children ended `end`.
    #[must_use]
    pub fn count(&self, end: ChildEnd) -> usize {
        self.children
            .iter()
            .filter(|child| child.end == end)
            .count()
    }
}

/// The children woken since the group last looked, and the group's own
/// waker.
#[derive(Default)]
struct Woken {
    children: Vec<usize>,
    parent: Option<Waker>,
}

/// Wakes the group for one child.
struct ChildWaker {
    index: usize,
    woken: Arc<Mutex<Woken>>,
}

impl Wake for ChildWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let parent = {
            let mut woken = lock_std(&self.woken);
            woken.children.push(self.index);
            woken.parent.take()
        };
        if let Some(parent) = parent {
            parent.wake();
        }
    }
}

struct Child<T> {
    id: TaskId,
    name: Option<&'static str>,
    kind: ChildKind,
    /// Until its result is taken.
    handle: Option<JoinHandle<T>>,
    waker: Waker,
    /// Once its result is taken.
    end: Option<ChildEnd>,
}

/// Children owned by one parent (a task, or `main`): spawned into the
/// group, joined in spawn order or as they finish, cancelled together, and
/// shut down with one deadline and a [`GroupReport`].
///
/// Children are tasks on one executor and jobs on any pool
/// ([`spawn_blocking`](Self::spawn_blocking)), all with output `T`. `S`
/// is what spawns the tasks:
///
/// - a [`LocalSpawner`] (the default): a group made with
///   [`LocalExecutor::group`](crate::LocalExecutor::group) or
///   [`LocalSpawner::group`], whose children need not be `Send`;
/// - a [`MultiHandle`]: a group made with
///   [`MultiHandle::group`] or
///   [`MultiExecutor::group`](crate::multi::MultiExecutor::group), whose
///   children are `Send + 'static`, and which is itself `Send`, so a task
///   on any worker can own it.
///
/// ```
/// use std::time::Duration;
/// use dinah::LocalExecutor;
/// use dinah::executor::ExecutorConfig;
/// use dinah::task::ChildEnd;
///
/// // A paused clock: the deadline passes only when the executor idles.
/// let executor = LocalExecutor::with_config(ExecutorConfig {
///     start_paused: true,
///     ..ExecutorConfig::default()
/// })
/// .unwrap();
/// let report = executor.block_on(async {
///     let mut group = executor.group::<Result<u32, ()>>();
///     group.spawn_named("quick", async { Ok(1) }).unwrap();
///     group.spawn_named("stuck", std::future::pending()).unwrap();
///     // The quick one finishes first.
///     let (_, first) = group.join_next().await.unwrap();
///     assert_eq!(first, Ok(Ok(1)));
///     group.shutdown(Duration::from_millis(10)).await
/// });
/// assert_eq!(report.children[0].end, ChildEnd::Completed);
/// assert_eq!((report.children[1].name, report.children[1].end), (Some("stuck"), ChildEnd::Cancelled));
/// ```
///
/// # Dropping a group
///
/// **Dropping a group cancels every child it has not joined** (as
/// [`cancel_all`](Self::cancel_all)): the parent owns its children's
/// lifetime, so a group that goes away (its parent returned, panicked or
/// was cancelled) leaves no task behind. A blocking job that already
/// started cannot be interrupted: it runs to its end, detached, and its
/// result is dropped. To let children outlive the group, spawn them on the
/// executor directly instead.
///
/// A group on a [`LocalExecutor`](crate::LocalExecutor) lives on its
/// executor's thread (it spawns there), so it is not `Send`:
///
/// ```compile_fail,E0277
/// fn send<T: Send>(_: T) {}
/// let executor = dinah::LocalExecutor::new();
/// send(executor.group::<()>());
/// ```
///
/// # What it does not do
///
/// It does not join in any order but the two offered (spawn order, or
/// finish order), and it keeps each child's id, name and end for its
/// report until the group is dropped (a few words per child).
pub struct TaskGroup<'a, T, S = LocalSpawner<'a, Unmeasured>> {
    spawner: S,
    /// The spawner's executor's timers, for [`shutdown`](Self::shutdown)'s
    /// deadline.
    timer: TimerHandle,
    children: Vec<Child<T>>,
    woken: Arc<Mutex<Woken>>,
    /// Children taken from `woken` and not looked at yet.
    to_look: VecDeque<usize>,
    /// Children whose result has not been taken.
    open: usize,
    /// The group borrows its executor for `'a`.
    lifetime: PhantomData<&'a ()>,
}

impl<'a, T, M: Measure> TaskGroup<'a, T, LocalSpawner<'a, M>> {
    /// An empty group whose tasks `spawner` spawns.
    #[must_use]
    pub fn new(spawner: LocalSpawner<'a, M>) -> Self {
        let timer = spawner.timer();
        Self::with_spawner(spawner, timer)
    }

    /// Spawns `future` as a child task; returns its id.
    ///
    /// # Errors
    ///
    /// As [`LocalSpawner::try_spawn`]: the future is handed back.
    pub fn spawn<F>(&mut self, future: F) -> Result<TaskId, SpawnError<F>>
    where
        F: Future<Output = T> + 'a,
        T: TaskOutput + 'a,
    {
        let handle = self.spawner.try_spawn(future)?;
        Ok(self.adopt(handle, None, ChildKind::Task))
    }

    /// Spawns `future` as a child task named `name` (see
    /// [`LocalExecutor::try_spawn_named`](crate::LocalExecutor::try_spawn_named)).
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn).
    pub fn spawn_named<F>(&mut self, name: &'static str, future: F) -> Result<TaskId, SpawnError<F>>
    where
        F: Future<Output = T> + 'a,
        T: TaskOutput + 'a,
    {
        let handle = self.spawner.try_spawn_named(name, future)?;
        Ok(self.adopt(handle, Some(name), ChildKind::Task))
    }
}

#[cfg(not(loom))]
impl<T> TaskGroup<'static, T, MultiHandle> {
    /// An empty group whose tasks `handle`'s executor runs.
    pub(crate) fn on(handle: MultiHandle) -> Self {
        let timer = handle.timer();
        Self::with_spawner(handle, timer)
    }

    /// Spawns `future` as a child task; returns its id.
    ///
    /// # Errors
    ///
    /// As [`MultiHandle::try_spawn`]: the future is handed back.
    pub fn spawn<F>(&mut self, future: F) -> Result<TaskId, SpawnError<F>>
    where
        F: Future<Output = T> + Send + 'static,
        T: TaskOutput + Send + 'static,
    {
        let handle = self.spawner.try_spawn(future)?;
        Ok(self.adopt(handle, None, ChildKind::Task))
    }

    /// Spawns `future` as a child task named `name` (see
    /// [`MultiHandle::try_spawn_named`]).
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn).
    pub fn spawn_named<F>(&mut self, name: &'static str, future: F) -> Result<TaskId, SpawnError<F>>
    where
        F: Future<Output = T> + Send + 'static,
        T: TaskOutput + Send + 'static,
    {
        let handle = self.spawner.try_spawn_named(name, future)?;
        Ok(self.adopt(handle, Some(name), ChildKind::Task))
    }
}

impl<'a, T, S> TaskGroup<'a, T, S> {
    fn with_spawner(spawner: S, timer: TimerHandle) -> Self {
        Self {
            spawner,
            timer,
            children: Vec::new(),
            woken: Arc::default(),
            to_look: VecDeque::new(),
            open: 0,
            lifetime: PhantomData,
        }
    }

    fn adopt(
        &mut self,
        handle: JoinHandle<T>,
        name: Option<&'static str>,
        kind: ChildKind,
    ) -> TaskId {
        let index = self.children.len();
        let id = handle.id();
        let waker = Waker::from(Arc::new(ChildWaker {
            index,
            woken: Arc::clone(&self.woken),
        }));
        self.children.push(Child {
            id,
            name,
            kind,
            handle: Some(handle),
            waker,
            end: None,
        });
        // A new child is looked at once before it wakes anything.
        lock_std(&self.woken).children.push(index);
        self.open += 1;
        id
    }

    /// Spawns `f` as a child job on `pool` (a blocking or worker pool);
    /// returns its id (the pool's).
    ///
    /// # Errors
    ///
    /// As [`PoolSpawner::try_spawn`]: `f` is handed back.
    pub fn spawn_blocking<F>(
        &mut self,
        pool: &PoolSpawner,
        f: F,
    ) -> Result<TaskId, SpawnError<F, io::Error>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let handle = pool.try_spawn(f)?;
        Ok(self.adopt(handle, None, ChildKind::Blocking))
    }

    /// Children whose result has not been taken.
    #[must_use]
    pub fn len(&self) -> usize {
        self.open
    }

    /// Whether every child's result has been taken (or there is none).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.open == 0
    }

    /// Requests cancellation of every child not yet joined (see
    /// [`JoinHandle::cancel`]); their results, when awaited, say how each
    /// ended. Blocking jobs already started run on.
    pub fn cancel_all(&self) {
        for child in &self.children {
            if let Some(handle) = &child.handle {
                handle.cancel();
            }
        }
    }

    /// Takes `child`'s result and records its end.
    fn settle(&mut self, index: usize, result: &Result<T, JoinError>) -> TaskId
    where
        T: TaskOutput,
    {
        let child = &mut self.children[index];
        child.handle = None;
        child.end = Some(match result {
            Ok(output) if output.is_failure() => ChildEnd::Failed,
            Ok(_) => ChildEnd::Completed,
            Err(JoinError::Panicked(_)) => ChildEnd::Failed,
            Err(_) => ChildEnd::Cancelled,
        });
        self.open -= 1;
        child.id
    }

    /// Polls the children woken since the last look; the first that has
    /// finished is taken.
    fn poll_next(&mut self, cx: &Context<'_>) -> Poll<Option<(TaskId, Result<T, JoinError>)>>
    where
        T: TaskOutput,
    {
        loop {
            if self.open == 0 {
                return Poll::Ready(None);
            }
            let Some(index) = self.to_look.pop_front() else {
                let mut woken = lock_std(&self.woken);
                if woken.children.is_empty() {
                    woken.parent = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                self.to_look.extend(woken.children.drain(..));
                continue;
            };
            let child = &mut self.children[index];
            let Some(handle) = child.handle.as_mut() else {
                continue;
            };
            let mut child_cx = Context::from_waker(&child.waker);
            if let Poll::Ready(result) = Pin::new(handle).poll(&mut child_cx) {
                let id = self.settle(index, &result);
                return Poll::Ready(Some((id, result)));
            }
        }
    }

    /// The next child to finish, with its id and result; `None` once every
    /// child's result has been taken. Each wake looks only at the children
    /// it concerns.
    pub async fn join_next(&mut self) -> Option<(TaskId, Result<T, JoinError>)>
    where
        T: TaskOutput,
    {
        poll_fn(|cx| self.poll_next(cx)).await
    }

    /// Every child not yet joined, in spawn order, with its id and result.
    pub async fn join_all(&mut self) -> Vec<(TaskId, Result<T, JoinError>)>
    where
        T: TaskOutput,
    {
        let mut results = Vec::with_capacity(self.open);
        for index in 0..self.children.len() {
            if let Some(handle) = self.children[index].handle.as_mut() {
                let result = handle.await;
                let id = self.settle(index, &result);
                results.push((id, result));
            }
        }
        lock_std(&self.woken).children.clear();
        self.to_look.clear();
        results
    }

    /// Cancels every child not yet joined and waits for them, at most
    /// `deadline` on the executor's clock; reports every child the group
    /// ever had, in spawn order. Results not yet taken are dropped.
    ///
    /// Children that finish before their cancellation lands are
    /// `Completed` or `Failed`; those dropped unfinished are `Cancelled`;
    /// those not ended at the deadline (started blocking jobs) are
    /// `Running`, and run on detached.
    pub async fn shutdown(mut self, deadline: Duration) -> GroupReport
    where
        T: TaskOutput,
    {
        self.cancel_all();
        let mut timeout = pin!(self.timer.clone().sleep(deadline));
        poll_fn(|cx| {
            loop {
                match self.poll_next(cx) {
                    Poll::Ready(Some(_)) => continue,
                    Poll::Ready(None) => return Poll::Ready(()),
                    Poll::Pending => return timeout.as_mut().poll(cx),
                }
            }
        })
        .await;
        let children = self
            .children
            .iter()
            .map(|child| ChildReport {
                id: child.id,
                name: child.name,
                kind: child.kind,
                end: child.end.unwrap_or(ChildEnd::Running),
            })
            .collect();
        GroupReport { children }
    }
}

impl<V, E, S> TaskGroup<'_, Result<V, E>, S> {
    /// Every child's value, in spawn order, for children that return
    /// `Result<V, E>`: one `Result` to `?`, with nothing to flatten. A
    /// child's own error, or its [`JoinError`] (through `E`'s
    /// `From<JoinError>`, as `Box<dyn Error + Send + Sync>` has), is
    /// returned as soon as it is found, in spawn order; the children not
    /// yet joined then stay in the group (dropping the group cancels
    /// them).
    ///
    /// # Errors
    ///
    /// The first error, in spawn order.
    pub async fn try_join_all(&mut self) -> Result<Vec<V>, E>
    where
        E: From<JoinError>,
    {
        let mut values = Vec::with_capacity(self.open);
        for index in 0..self.children.len() {
            if let Some(handle) = self.children[index].handle.as_mut() {
                let result = handle.await;
                self.settle(index, &result);
                values.push(result??);
            }
        }
        lock_std(&self.woken).children.clear();
        self.to_look.clear();
        Ok(values)
    }
}

impl<T, S> Drop for TaskGroup<'_, T, S> {
    /// Cancels every child not yet joined: see "Dropping a group".
    fn drop(&mut self) {
        self.cancel_all();
    }
}

impl<T, S> fmt::Debug for TaskGroup<'_, T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskGroup")
            .field("children", &self.children.len())
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}
