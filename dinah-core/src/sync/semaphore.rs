//! [`Semaphore`]: permits in static storage, handed out first come, first
//! served, with its [`Permit`] and [`Acquire`] future.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use critical_section::Mutex;

use super::{PermitOverflow, Refusal, SemaphoreFigures};
use crate::raw;
use crate::raw::wait::{Acquiring, Lock, PermitLock, Permits, WaitEntry};

/// A count of permits where at most `W` tasks can wait at once: no heap,
/// a `const` constructor, safe from interrupt handlers.
///
/// ```
/// use dinah::executor::{AsyncExecutor, ReadyQueue};
/// use dinah::sync::Semaphore;
///
/// static RADIO: Semaphore = Semaphore::named("radio", 1);
/// static QUEUE: ReadyQueue<1> = ReadyQueue::new();
///
/// let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
/// let turns = executor.run_until(
///     async {
///         let permit = RADIO.acquire().await.unwrap();
///         assert!(RADIO.try_acquire().is_err(), "the one permit is taken");
///         drop(permit); // back to the semaphore
///         RADIO.try_acquire().map(|_| 1)
///     },
///     8,
///     || {},
/// );
/// assert_eq!(turns, Ok(1));
/// ```
///
/// # Guarantees
///
/// - Permits go to waiters strictly first in, first out: a task asking for
///   many permits is not passed by later tasks asking for few, and a
///   `try_acquire` never jumps the line.
/// - A [`Permit`] returns its permits when dropped (unless
///   [`forget`](Permit::forget)ten); an acquire dropped after it was
///   granted returns them too, to the next in line. No waiter spins.
/// - After [`close`](Self::close), every waiter and every later acquire is
///   refused with [`Refusal::Closed`]; permits held stay valid.
///
/// # What it does not do
///
/// It keeps no clock (its figures do not say how long tasks waited), and
/// `W` bounds the line: an acquire that finds `W` tasks waiting is refused
/// with [`Refusal::LineFull`].
pub struct Semaphore<const W: usize = 4> {
    name: Option<&'static str>,
    state: Mutex<RefCell<Permits<[WaitEntry; W]>>>,
}

impl<const W: usize> Semaphore<W> {
    const FITS: () = assert!(W < u32::MAX as usize, "too many waiters");

    /// A semaphore with `permits` permits and no name.
    #[must_use]
    pub const fn new(permits: u32) -> Self {
        Self::with_name(None, permits)
    }

    /// A semaphore with `permits` permits, named `name` in its figures.
    #[must_use]
    pub const fn named(name: &'static str, permits: u32) -> Self {
        Self::with_name(Some(name), permits)
    }

    const fn with_name(name: Option<&'static str>, permits: u32) -> Self {
        let () = Self::FITS;
        Self {
            name,
            state: Mutex::new(RefCell::new(Permits::new(
                permits,
                [const { WaitEntry::VACANT }; W],
            ))),
        }
    }

    /// Waits in line for one permit.
    ///
    /// # Errors
    ///
    /// [`Refusal::Closed`], or [`Refusal::LineFull`] when `W` tasks already
    /// wait.
    pub fn acquire(&self) -> Acquire<'_, W> {
        self.acquire_many(1)
    }

    /// Waits in line for `permits` permits, taken together.
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire).
    pub fn acquire_many(&self, permits: u32) -> Acquire<'_, W> {
        Acquire {
            inner: Acquiring::new(self, permits),
            permits,
        }
    }

    /// Takes one permit if one is free and nobody waits.
    ///
    /// # Errors
    ///
    /// [`Refusal::WouldWait`] (counted) or [`Refusal::Closed`].
    pub fn try_acquire(&self) -> Result<Permit<'_, W>, Refusal> {
        self.try_acquire_many(1)
    }

    /// Takes `permits` permits if they are free and nobody waits.
    ///
    /// # Errors
    ///
    /// As [`try_acquire`](Self::try_acquire).
    pub fn try_acquire_many(&self, permits: u32) -> Result<Permit<'_, W>, Refusal> {
        self.with(|state| state.try_take(permits))?;
        Ok(Permit {
            semaphore: self,
            permits,
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
        raw::wait::add_permits(self, permits)
    }

    /// Closes it: waiters and later acquires are refused.
    pub fn close(&self) {
        raw::wait::with_batch(self, Permits::close);
    }

    /// Permits free now.
    #[must_use]
    pub fn available(&self) -> u32 {
        self.with(|state| state.free())
    }

    /// Its free permits and who waits, now.
    #[must_use]
    pub fn figures(&self) -> SemaphoreFigures {
        self.with(|state| state.figures(self.name))
    }
}

impl<const W: usize> fmt::Debug for Semaphore<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("figures", &self.figures())
            .finish()
    }
}

impl<const W: usize> Lock for Semaphore<W> {
    type State = Permits<[WaitEntry; W]>;

    fn with<R>(&self, f: impl FnOnce(&mut Self::State) -> R) -> R {
        crate::raw::wait::critical(&self.state, f)
    }
}

impl<const W: usize> PermitLock for Semaphore<W> {
    type Store = [WaitEntry; W];
}

/// Permits taken from a [`Semaphore`]; dropping it gives them back. From a
/// `static` semaphore it is `'static` and moves into a task.
#[must_use = "dropping a permit gives it back at once"]
pub struct Permit<'a, const W: usize = 4> {
    semaphore: &'a Semaphore<W>,
    permits: u32,
}

impl<const W: usize> Permit<'_, W> {
    /// How many permits it holds.
    #[must_use]
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// Keeps the permits out of the semaphore for good (they no longer
    /// count toward its `u32::MAX`).
    pub fn forget(mut self) {
        raw::wait::forget_permits(self.semaphore, self.permits);
        self.permits = 0;
    }
}

impl<const W: usize> Drop for Permit<'_, W> {
    fn drop(&mut self) {
        if self.permits > 0 {
            raw::wait::release(self.semaphore, self.permits);
        }
    }
}

impl<const W: usize> fmt::Debug for Permit<'_, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("permits", &self.permits)
            .finish()
    }
}

/// The future of [`Semaphore::acquire`]. Dropping it gives up its place in
/// line; permits it had been granted go to the next.
#[must_use = "an acquire does nothing unless awaited"]
pub struct Acquire<'a, const W: usize> {
    inner: Acquiring<&'a Semaphore<W>>,
    permits: u32,
}

impl<'a, const W: usize> Future for Acquire<'a, W> {
    type Output = Result<Permit<'a, W>, Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        Pin::new(&mut this.inner).poll(cx).map(|taken| {
            taken.map(|semaphore| Permit {
                semaphore,
                permits: this.permits,
            })
        })
    }
}

impl<const W: usize> fmt::Debug for Acquire<'_, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("permits", &self.permits)
            .finish_non_exhaustive()
    }
}
