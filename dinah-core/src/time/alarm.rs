//! [`Alarm`], the binary's wake-up timer, and [`Tickless`], the run loop's
//! idle that fires timers and sets the alarm before it sleeps.
#![forbid(unsafe_code)]

use critical_section::CriticalSection;

use super::Timers;
use crate::executor::Idle;
use crate::telemetry::Clock;

/// The binary's wake-up timer: a compare register, or SysTick's reload.
/// [`Tickless`] sets it before the core sleeps, for the next time the
/// timers have work.
///
/// Contract for implementers: once [`set`](Self::set) returned `true`, an
/// interrupt becomes pending no later than the clock reading `at` (its
/// handler need do nothing: a pending interrupt ends `WFI`); a later `set`
/// or `clear` replaces it. An alarm may fire early (the timers are checked
/// again and the alarm set anew), never late by more than the hardware's
/// resolution.
///
/// Both methods are called inside the critical section in which the run
/// loop found no task ready, and get its token `cs`: an alarm that keeps
/// its state in a `critical_section::Mutex` borrows it with `cs` rather
/// than masking interrupts a second time.
pub trait Alarm {
    /// Arms the alarm for clock reading `at`, or returns `false`, arming
    /// nothing, when `at` has been reached already (the run loop then
    /// checks the timers again instead of sleeping).
    fn set(&mut self, at: u64, cs: CriticalSection<'_>) -> bool;

    /// No timer is armed: no alarm is needed. (An implementer that must
    /// keep counting time may keep a slow periodic interrupt.)
    fn clear(&mut self, cs: CriticalSection<'_>);
}

/// A run loop's [`Idle`] for firmware with timers: before each check for
/// work it fires the due timers of `timers`, and when no task is ready it
/// sets `alarm` for their next deadline and calls `sleep` (`WFI`) inside a
/// critical section, as the closure [`Idle`] does. No periodic tick is
/// needed while nothing is due.
///
/// No lost wake: a timer that comes due after the check fires the alarm,
/// whose interrupt ends `WFI`; an alarm whose time has passed already is
/// not set ([`Alarm::set`] returns `false`) and the loop goes round.
pub struct Tickless<'t, const T: usize, C: Clock, A: Alarm, S: FnMut()> {
    timers: &'t Timers<T, C>,
    alarm: A,
    sleep: S,
}

impl<'t, const T: usize, C: Clock, A: Alarm, S: FnMut()> Tickless<'t, T, C, A, S> {
    /// Fires `timers`, sets `alarm` and sleeps with `sleep`.
    pub fn new(timers: &'t Timers<T, C>, alarm: A, sleep: S) -> Self {
        Self {
            timers,
            alarm,
            sleep,
        }
    }
}

impl<const T: usize, C: Clock, A: Alarm, S: FnMut()> Idle for Tickless<'_, T, C, A, S> {
    fn idle(&mut self, ready: impl Fn() -> bool) {
        self.timers.expire();
        critical_section::with(|cs| {
            if ready() {
                return;
            }
            match self.timers.next_expiry_in(cs) {
                Some(at) if !self.alarm.set(at.ticks(), cs) => return,
                Some(_) => {}
                None => self.alarm.clear(cs),
            }
            (self.sleep)();
        });
    }
}

impl<const T: usize, C: Clock, A: Alarm, S: FnMut()> core::fmt::Debug for Tickless<'_, T, C, A, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tickless").finish_non_exhaustive()
    }
}
