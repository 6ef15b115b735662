//! [`Mutex`]: a value in static storage that one task at a time holds
//! across awaits, handed out first come, first served, with its
//! [`MutexGuard`] and [`Locking`] future.
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::fmt;
use core::future::Future;
use core::ops::{Deref, DerefMut};
use core::pin::Pin;
use core::task::{Context, Poll};

use super::{Refusal, SemaphoreFigures};
use crate::raw;
use crate::raw::wait::{Held, HeldLock, HeldValue, Lock, WaitEntry};

/// A value that one task at a time holds, across awaits, where at most `W`
/// tasks can wait at once: no heap, a `const` constructor, usable from any
/// priority (a `try_lock` from an interrupt handler never waits).
///
/// ```
/// use dinah::executor::{AsyncExecutor, ReadyQueue};
/// use dinah::sync::Mutex;
///
/// static BUS: Mutex<[u8; 4]> = Mutex::named("spi bus", [0; 4]);
/// static QUEUE: ReadyQueue<1> = ReadyQueue::new();
///
/// let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
/// let seen = executor.run_until(
///     async {
///         let mut bus = BUS.lock().await.unwrap();
///         bus[0] = 7; // held across awaits, by this task alone
///         assert!(BUS.try_lock().is_err());
///         drop(bus);
///         BUS.try_lock().map(|bus| bus[0])
///     },
///     8,
///     || {},
/// );
/// assert_eq!(seen, Ok(7));
/// ```
///
/// # Guarantees
///
/// - One guard at a time; the lock goes to waiters strictly first in, first
///   out, and a [`try_lock`](Self::try_lock) never jumps the line.
/// - A lock dropped after it was granted passes the lock to the next in
///   line. No waiter spins.
/// - The guard owns the value while it lives: it is `Send` when `T` is, and
///   it may be held across awaits.
/// - A lock and an unlock with nobody waiting each take one critical
///   section.
///
/// # What it does not do
///
/// - No poisoning: a guard dropped while its task unwinds puts the value
///   back as it is.
/// - The value moves into each guard and back (a copy of its bytes), so its
///   address is not stable between guards; keep large values behind a
///   reference in a `static` of their own.
/// - `W` bounds the line: a lock that finds `W` tasks waiting is refused
///   with [`Refusal::LineFull`]. A leaked guard (`mem::forget`) keeps the
///   lock and the value for good.
pub struct Mutex<T, const W: usize = 4> {
    name: Option<&'static str>,
    state: critical_section::Mutex<RefCell<Held<T, [WaitEntry; W]>>>,
}

impl<T, const W: usize> Mutex<T, W> {
    const FITS: () = assert!(W < u32::MAX as usize, "too many waiters");

    /// `value`, unlocked, with no name.
    #[must_use]
    pub const fn new(value: T) -> Self {
        Self::with_name(None, value)
    }

    /// `value`, unlocked, named `name` in its figures.
    #[must_use]
    pub const fn named(name: &'static str, value: T) -> Self {
        Self::with_name(Some(name), value)
    }

    const fn with_name(name: Option<&'static str>, value: T) -> Self {
        let () = Self::FITS;
        Self {
            name,
            state: critical_section::Mutex::new(RefCell::new(Held::new(
                value,
                [const { WaitEntry::VACANT }; W],
            ))),
        }
    }

    /// Waits in line for the value.
    ///
    /// # Errors
    ///
    /// [`Refusal::LineFull`] when `W` tasks already wait.
    pub fn lock(&self) -> Locking<'_, T, W> {
        Locking {
            inner: raw::wait::Locking::new(self),
        }
    }

    /// Takes the value if nobody holds it and nobody waits.
    ///
    /// # Errors
    ///
    /// [`Refusal::WouldWait`] (counted in its figures).
    pub fn try_lock(&self) -> Result<MutexGuard<'_, T, W>, Refusal> {
        HeldValue::try_new(self).map(|held| MutexGuard { held })
    }

    /// Whether a guard holds the value now.
    #[must_use]
    pub fn is_locked(&self) -> bool {
        self.with(|state| state.is_locked())
    }

    /// Who waits, now, and the lock's refused tries (one permit's figures,
    /// free or not).
    #[must_use]
    pub fn figures(&self) -> SemaphoreFigures {
        self.with(|state| state.figures(self.name))
    }
}

impl<T, const W: usize> Lock for Mutex<T, W> {
    type State = Held<T, [WaitEntry; W]>;

    fn with<R>(&self, f: impl FnOnce(&mut Self::State) -> R) -> R {
        raw::wait::critical(&self.state, f)
    }
}

impl<T, const W: usize> HeldLock for Mutex<T, W> {
    type Value = T;
    type Store = [WaitEntry; W];
}

impl<T, const W: usize> fmt::Debug for Mutex<T, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mutex")
            .field("figures", &self.figures())
            .finish_non_exhaustive()
    }
}

/// The value of a [`Mutex`], held; dropping it unlocks the mutex (the value
/// goes back, and the lock passes to the next in line).
#[must_use = "dropping a guard unlocks the mutex at once"]
pub struct MutexGuard<'a, T, const W: usize = 4> {
    held: HeldValue<&'a Mutex<T, W>>,
}

impl<T, const W: usize> Deref for MutexGuard<'_, T, W> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.held
    }
}

impl<T, const W: usize> DerefMut for MutexGuard<'_, T, W> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.held
    }
}

impl<T: fmt::Debug, const W: usize> fmt::Debug for MutexGuard<'_, T, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The future of [`Mutex::lock`]. Dropping it gives up its place in line;
/// a lock it had been granted goes to the next.
#[must_use = "a lock does nothing unless awaited"]
pub struct Locking<'a, T, const W: usize = 4> {
    inner: raw::wait::Locking<&'a Mutex<T, W>>,
}

impl<'a, T, const W: usize> Future for Locking<'a, T, W> {
    type Output = Result<MutexGuard<'a, T, W>, Refusal>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.inner)
            .poll(cx)
            .map(|taken| taken.map(|held| MutexGuard { held }))
    }
}

impl<T, const W: usize> fmt::Debug for Locking<'_, T, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locking")
            .field("waiting", &self.inner.is_waiting())
            .finish()
    }
}
