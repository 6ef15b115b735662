//! [`SharedSemaphore`]: permits shared by handles across tasks and threads,
//! with borrowed ([`SharedPermit`]) and owned ([`OwnedPermit`]) permits.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use dinah_core::raw;
use dinah_core::raw::wait::{Acquiring, Lock, PermitLock, Permits};
use dinah_core::sync::{PermitOverflow, Refusal, SemaphoreFigures};

use super::line::{Growing, Locked};

type Inner = Locked<Permits<Growing>>;

impl PermitLock for Inner {
    type Store = Growing;
}

/// A count of permits handed out first come, first served; clone the
/// handle to share it (every clone counts the same permits).
///
/// The same logic as the core's static
/// [`Semaphore`](dinah_core::sync::Semaphore) (one
/// [`Permits`](dinah_core::raw::wait::Permits)), behind a short-held lock, with a line that
/// grows and a clock for how long its first waiter has waited.
///
/// ```
/// use dinah::LocalExecutor;
/// use dinah::sync::SharedSemaphore;
///
/// let mut executor = LocalExecutor::new();
/// let disks = SharedSemaphore::named("disk writes", 2);
/// let mut handles = Vec::new();
/// for file in 0..5 {
///     let disks = disks.clone();
///     handles.push(executor.try_spawn(async move {
///         let permit = disks.acquire_owned().await.unwrap(); // at most 2 at once
///         let written = file * 100;
///         drop(permit);
///         Ok::<u32, ()>(written)
///     }).unwrap());
/// }
/// let written: u32 = executor.block_on(async {
///     let mut sum = 0;
///     for handle in handles {
///         sum += handle.await.unwrap().unwrap();
///     }
///     sum
/// });
/// assert_eq!(written, 1_000);
/// assert_eq!(disks.available(), 2);
/// ```
///
/// # Guarantees
///
/// Those of the core semaphore: strictly first in, first out (a large
/// request is not passed by later small ones, and `try_acquire` never jumps
/// the line); permits come back when a permit is dropped or a granted
/// acquire is dropped; after [`close`](Self::close) every waiter and later
/// acquire is refused, and permits held stay valid. Any number may wait.
///
/// # What it does not do
///
/// It does not check that permits given back were taken from it:
/// [`add_permits`](Self::add_permits) adds whatever it is told.
#[derive(Clone)]
pub struct SharedSemaphore {
    inner: Arc<Inner>,
}

impl SharedSemaphore {
    /// A semaphore with `permits` permits and no name.
    #[must_use]
    pub fn new(permits: u32) -> Self {
        Self::build(None, permits)
    }

    /// A semaphore with `permits` permits, named `name` in its figures and
    /// in what [`diagnose`](crate::executor::ExecutorMonitor::diagnose)
    /// reports about tasks waiting on it.
    #[must_use]
    pub fn named(name: &'static str, permits: u32) -> Self {
        Self::build(Some(name), permits)
    }

    fn build(name: Option<&'static str>, permits: u32) -> Self {
        Self {
            inner: Arc::new(Locked::new(name, Permits::new(permits, Growing::default()))),
        }
    }

    /// Waits in line for one permit, borrowed from this handle.
    ///
    /// # Errors
    ///
    /// [`Refusal::Closed`] once it is closed.
    pub fn acquire(&self) -> SharedAcquire<'_> {
        self.acquire_many(1)
    }

    /// Waits in line for `permits` permits, taken together.
    ///
    /// # Errors
    ///
    /// [`Refusal::Closed`] once it is closed.
    pub fn acquire_many(&self, permits: u32) -> SharedAcquire<'_> {
        SharedAcquire {
            inner: Acquiring::new(&*self.inner, permits),
            permits,
            name: self.inner.name,
        }
    }

    /// Waits in line for one permit that owns a handle, to move into a
    /// task or another thread.
    ///
    /// # Errors
    ///
    /// [`Refusal::Closed`] once it is closed.
    pub fn acquire_owned(&self) -> OwnedAcquire {
        OwnedAcquire {
            inner: Acquiring::new(Arc::clone(&self.inner), 1),
            name: self.inner.name,
        }
    }

    /// Takes one permit if one is free and nobody waits.
    ///
    /// # Errors
    ///
    /// [`Refusal::WouldWait`] (counted) or [`Refusal::Closed`].
    pub fn try_acquire(&self) -> Result<SharedPermit<'_>, Refusal> {
        self.try_acquire_many(1)
    }

    /// Takes `permits` permits if they are free and nobody waits.
    ///
    /// # Errors
    ///
    /// As [`try_acquire`](Self::try_acquire).
    pub fn try_acquire_many(&self, permits: u32) -> Result<SharedPermit<'_>, Refusal> {
        self.inner.with(|state| state.try_take(permits))?;
        Ok(SharedPermit {
            inner: &self.inner,
            permits,
        })
    }

    /// Takes one owned permit if one is free and nobody waits.
    ///
    /// # Errors
    ///
    /// As [`try_acquire`](Self::try_acquire).
    pub fn try_acquire_owned(&self) -> Result<OwnedPermit, Refusal> {
        self.inner.with(|state| state.try_take(1))?;
        Ok(OwnedPermit {
            inner: Arc::clone(&self.inner),
        })
    }

    /// Adds `permits` permits, handing them to waiters first.
    ///
    /// # Errors
    ///
    /// [`PermitOverflow`] when the semaphore would then hold more than
    /// `u32::MAX` permits, free and held together: none is added (never
    /// some of them), so no permit is lost silently.
    pub fn add_permits(&self, permits: u32) -> Result<(), PermitOverflow> {
        raw::wait::add_permits(&*self.inner, permits)
    }

    /// Closes it: waiters and later acquires are refused.
    pub fn close(&self) {
        raw::wait::with_batch(&*self.inner, Permits::close);
    }

    /// Permits free now.
    #[must_use]
    pub fn available(&self) -> u32 {
        self.inner.with(|state| state.free())
    }

    /// Its free permits and who waits, now.
    #[must_use]
    pub fn figures(&self) -> SemaphoreFigures {
        let (mut figures, since) = self
            .inner
            .with(|state| (state.figures(self.inner.name), state.line().oldest_since()));
        figures.longest_wait_micros = self.inner.waited(since);
        figures
    }
}

impl fmt::Debug for SharedSemaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedSemaphore")
            .field("figures", &self.figures())
            .finish()
    }
}

/// Permits borrowed from a [`SharedSemaphore`]; dropping it gives them
/// back.
#[must_use = "dropping a permit gives it back at once"]
pub struct SharedPermit<'a> {
    inner: &'a Inner,
    permits: u32,
}

impl SharedPermit<'_> {
    /// How many permits it holds.
    #[must_use]
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// Keeps the permits out of the semaphore for good (they no longer
    /// count toward its `u32::MAX`).
    pub fn forget(mut self) {
        raw::wait::forget_permits(self.inner, self.permits);
        self.permits = 0;
    }
}

impl Drop for SharedPermit<'_> {
    fn drop(&mut self) {
        if self.permits > 0 {
            raw::wait::release(self.inner, self.permits);
        }
    }
}

impl fmt::Debug for SharedPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedPermit")
            .field("permits", &self.permits)
            .finish()
    }
}

/// One permit that holds its semaphore, to move into a task or thread;
/// dropping it gives the permit back.
#[must_use = "dropping a permit gives it back at once"]
pub struct OwnedPermit {
    inner: Arc<Inner>,
}

impl Drop for OwnedPermit {
    fn drop(&mut self) {
        raw::wait::release(&*self.inner, 1);
    }
}

impl fmt::Debug for OwnedPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit")
            .field("name", &self.inner.name)
            .finish()
    }
}

/// The future of [`SharedSemaphore::acquire`]. Dropping it gives up its
/// place in line; permits it had been granted go to the next.
#[must_use = "an acquire does nothing unless awaited"]
pub struct SharedAcquire<'a> {
    inner: Acquiring<&'a Inner>,
    permits: u32,
    name: Option<&'static str>,
}

impl<'a> Future for SharedAcquire<'a> {
    type Output = Result<SharedPermit<'a>, Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let permits = this.permits;
        let joined = !this.inner.is_waiting();
        waited(this.name, joined, Pin::new(&mut this.inner).poll(cx))
            .map(|taken| taken.map(|inner| SharedPermit { inner, permits }))
    }
}

impl fmt::Debug for SharedAcquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedAcquire")
            .field("name", &self.name)
            .field("permits", &self.permits)
            .finish_non_exhaustive()
    }
}

/// The future of [`SharedSemaphore::acquire_owned`].
#[must_use = "an acquire does nothing unless awaited"]
pub struct OwnedAcquire {
    inner: Acquiring<Arc<Inner>>,
    name: Option<&'static str>,
}

impl Future for OwnedAcquire {
    type Output = Result<OwnedPermit, Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let joined = !this.inner.is_waiting();
        waited(this.name, joined, Pin::new(&mut this.inner).poll(cx))
            .map(|taken| taken.map(|inner| OwnedPermit { inner }))
    }
}

impl fmt::Debug for OwnedAcquire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedAcquire")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Notes a pending acquire for the executor's telemetry (`joined`: this
/// poll put it in line).
fn waited<T>(name: Option<&'static str>, joined: bool, poll: Poll<T>) -> Poll<T> {
    if poll.is_pending() {
        super::note_wait(name, joined);
    }
    poll
}
