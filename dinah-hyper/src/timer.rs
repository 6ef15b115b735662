//! hyper's timer over a dinah executor's timers.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use dinah_core::time::{Sleep, TimerDriver};
use dinah_std::time::{TimerHandle, try_current};

/// A dinah executor's timers as hyper's [`Timer`](hyper::rt::Timer), for
/// its header-read and keep-alive timeouts.
///
/// hyper speaks `std::time::Instant`; dinah's timers count microseconds on
/// the executor's own clock. The timer fixes, when it is made, the
/// `std::time::Instant` that the clock's zero stands for, and converts
/// through it both ways: so a paused clock
/// ([`start_paused`](dinah_std::executor::ExecutorConfig::start_paused)) is
/// followed exactly, and hyper's `now` is the clock's. A deadline before
/// the clock's zero is treated as due.
///
/// Guarantees: a sleep ends no earlier than its deadline on the executor's
/// clock, and wakes the task that polls it. Does not guarantee how late
/// (that is the executor's timer resolution and the operating system's).
#[derive(Clone, Debug)]
pub struct HyperTimer {
    timers: TimerHandle,
    /// The `Instant` the executor's clock reading 0 stands for.
    origin: Instant,
}

impl HyperTimer {
    /// hyper's timer over `timers` (from `dinah::time::current()` or an
    /// executor's handle).
    #[must_use]
    pub fn new(timers: TimerHandle) -> Self {
        let origin = Instant::now() - Duration::from_micros(timers.now().ticks());
        Self { timers, origin }
    }

    /// hyper's timer over the timers of the executor running on this
    /// thread.
    ///
    /// # Panics
    ///
    /// Outside a task or `block_on` of a live dinah executor (as
    /// `dinah::time::current`); [`try_current`](Self::try_current) says
    /// `None` instead.
    #[must_use]
    pub fn current() -> Self {
        Self::new(dinah_std::time::current())
    }

    /// [`current`](Self::current), or `None` when no executor runs on this
    /// thread.
    #[must_use]
    pub fn try_current() -> Option<Self> {
        try_current().map(Self::new)
    }
}

/// A dinah sleep as hyper's `Sleep`.
struct HyperSleep(Sleep<TimerHandle>);

impl Future for HyperSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl hyper::rt::Sleep for HyperSleep {}

impl hyper::rt::Timer for HyperTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(HyperSleep(self.timers.clone().sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        let micros = deadline.saturating_duration_since(self.origin).as_micros();
        let at = u64::try_from(micros).unwrap_or(u64::MAX);
        Box::pin(HyperSleep(
            self.timers
                .clone()
                .sleep_until(dinah_core::time::Instant::from_ticks(at)),
        ))
    }

    fn now(&self) -> Instant {
        self.origin + Duration::from_micros(self.timers.now().ticks())
    }
}
