//! SysTick as the clock and the alarm of dinah-core's timers, in one of two
//! modes:
//!
//! - **Tickless** ([`start_tickless`]): the alarm sets SysTick's period to
//!   the time left until the next deadline (at most 2^24 ticks), so the
//!   core sleeps in `WFI` until then, and with no timer armed SysTick runs
//!   its longest period only to keep counting. Each alarm restarts the
//!   counter: the clock loses the few cycles between its reading and the
//!   restart (tens of cycles per alarm, none while no alarm is set).
//! - **Periodic** ([`start_periodic`]): every period has the same length
//!   and the alarm sets nothing; the core wakes at each period's end, and a
//!   timer fires at the first period end at or after its deadline. The
//!   clock never drifts against the core clock. For a firmware that wants
//!   a regular tick for other work, or cannot let its alarm restart SysTick.
//!
//! In both, the clock ([`SysTickClock`]) reads at the core clock's
//! resolution: the ticks of the periods that ended (added up by
//! [`on_interrupt`]) plus those of the current one, widened to 64 bits
//! (at 64 MHz, nine thousand years). A reading masks interrupts briefly
//! and never goes back.
//!
//! The state is one per core, in a `critical_section::Mutex`: every
//! function here may be called from thread mode or any interrupt priority.
//!
//! # What it does not do
//!
//! It does not know the core clock's rate: the binary states it as
//! [`SysTickClock`]'s parameter, and a wrong one makes every span wrong by
//! the same factor. It does not share SysTick: a firmware using this module
//! leaves SysTick's registers to it.
#![forbid(unsafe_code)]

mod count;

use core::cell::Cell;
use core::fmt;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{SCB, SYST};
use critical_section::{CriticalSection, Mutex};
use dinah_core::telemetry::Clock;
use dinah_core::time::{Alarm, Divisor};

use count::{Count, MAX_RELOAD, Mode};

/// The shortest period the tickless alarm sets, in ticks: shorter ones
/// would end before the run loop reached `WFI`, and cost an exception for
/// nothing.
pub const SHORTEST_ALARM: u64 = 64;

/// The clock's bookkeeping, shared by the clock, the alarm and the
/// handler. In `Cell`s, not a `RefCell`: nothing to borrow, so nothing that
/// could fail (a `RefCell`'s failed borrow would link a panic and its
/// message into the firmware).
static COUNT: Mutex<Cell<Count>> = Mutex::new(Cell::new(Count::new()));
/// SysTick itself, once started.
static SYSTICK: Mutex<Cell<Option<SYST>>> = Mutex::new(Cell::new(None));

/// Changes the count in `cs`.
fn with<R>(cs: CriticalSection<'_>, f: impl FnOnce(&mut Count) -> R) -> R {
    let cell = COUNT.borrow(cs);
    let mut count = cell.get();
    let out = f(&mut count);
    cell.set(count);
    out
}

/// Works SysTick's registers in `cs`, if it was started.
fn with_systick(cs: CriticalSection<'_>, f: impl FnOnce(&mut SYST)) {
    let cell = SYSTICK.borrow(cs);
    if let Some(mut syst) = cell.take() {
        f(&mut syst);
        cell.set(Some(syst));
    }
}

/// A SysTick period for [`start_periodic`]: between [`SHORTEST_ALARM`]
/// and 2^24 ticks of the core clock.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Period {
    reload: u32,
}

impl Period {
    /// A period of `ticks` core clock ticks, or why SysTick cannot count it.
    ///
    /// ```
    /// use dinah_cortex_m::systick::Period;
    ///
    /// // 1 kHz on a 12 MHz core clock, checked when compiling.
    /// const TICK: Period = match Period::from_ticks(12_000) {
    ///     Ok(period) => period,
    ///     Err(_) => panic!("SysTick counts 12,000 ticks"),
    /// };
    /// assert_eq!(TICK.ticks(), 12_000);
    /// assert!(Period::from_ticks(1 << 25).is_err());
    /// ```
    pub const fn from_ticks(ticks: u32) -> Result<Self, PeriodOutOfRange> {
        if (ticks as u64) < SHORTEST_ALARM || ticks > MAX_RELOAD + 1 {
            return Err(PeriodOutOfRange { ticks });
        }
        Ok(Self { reload: ticks - 1 })
    }

    /// The period in core clock ticks.
    #[must_use]
    pub const fn ticks(self) -> u32 {
        self.reload + 1
    }
}

/// A [`Period`] that SysTick cannot count: shorter than
/// [`SHORTEST_ALARM`] or longer than 2^24 ticks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PeriodOutOfRange {
    /// The ticks asked for.
    pub ticks: u32,
}

impl fmt::Display for PeriodOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a SysTick period of {} ticks is outside {}..={}",
            self.ticks,
            SHORTEST_ALARM,
            MAX_RELOAD + 1
        )
    }
}

impl core::error::Error for PeriodOutOfRange {}

/// Starts SysTick on the core clock, tickless: its exception on, the
/// longest period until an alarm is set. Keeps `syst` for the alarm and
/// the handler. The clock counts from its reading at this call (0 the
/// first time).
pub fn start_tickless(syst: SYST) {
    start(syst, Mode::Tickless);
}

/// Starts SysTick on the core clock with a fixed `period`: its exception
/// on, once a period. Keeps `syst` for the handler. The clock counts from
/// its reading at this call (0 the first time).
pub fn start_periodic(syst: SYST, period: Period) {
    start(syst, Mode::Periodic(period.reload));
}

fn start(mut syst: SYST, mode: Mode) {
    critical_section::with(|cs| {
        let reload = with(cs, |count| count.started(mode));
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(reload);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        SYSTICK.borrow(cs).set(Some(syst));
    });
}

/// The SysTick exception's work: call it from the binary's `SysTick`
/// handler (and nothing else there needs doing for the timers: the
/// exception's return ends the run loop's `WFI`).
pub fn on_interrupt() {
    critical_section::with(|cs| {
        if let Some(reload) = with(cs, Count::wrapped) {
            with_systick(cs, |syst| syst.set_reload(reload));
        }
    });
}

/// SysTick exceptions handled so far (wrapping): a firmware's check that it
/// is tickless, or that its tick runs.
#[must_use]
pub fn interrupts() -> u32 {
    critical_section::with(|cs| COUNT.borrow(cs).get().interrupts())
}

/// The clock's reading in `cs`.
fn now_in(cs: CriticalSection<'_>) -> u64 {
    let value = SYST::get_current();
    let wrapped = SCB::is_pendst_pending();
    // After a wrap, the counter read before the pending bit may be the old
    // period's: read it again.
    let value = if wrapped { SYST::get_current() } else { value };
    with(cs, |count| count.reading(value, wrapped))
}

/// SysTick's ticks since it was started, widened to 64 bits, for a core
/// clock of `HZ` ticks a second: the timers' [`Clock`].
///
/// It reads 0 until [`start_tickless`] or [`start_periodic`] runs.
#[derive(Clone, Copy, Default, Debug)]
pub struct SysTickClock<const HZ: u64>;

impl<const HZ: u64> Clock for SysTickClock<HZ> {
    /// Out of line: a reading masks interrupts and checks SysTick's
    /// pending bit, and timers read the clock in several places (on a
    /// Cortex-M0, about 200 B of flash when each place has its own copy).
    #[inline(never)]
    fn now(&self) -> u64 {
        critical_section::with(now_in)
    }

    fn ticks_per_second(&self) -> u64 {
        HZ
    }

    fn per_second(&self) -> Option<Divisor> {
        Some(const { Divisor::new(HZ) })
    }
}

/// SysTick's reload as the timers' [`Alarm`], for the run loop's
/// [`Tickless`](dinah_core::time::Tickless) idle.
///
/// Tickless, it starts a period that ends at the deadline (at least
/// [`SHORTEST_ALARM`] ticks, so it may fire early, and the run loop then
/// sets it again); with no timer armed, the longest period. Periodic, it
/// sets nothing: the next period's end, at most one period away, wakes the
/// core, so a timer fires up to one period late. Before SysTick is
/// started, it arms nothing and says so only when the deadline has
/// passed: the run loop would sleep until another interrupt.
#[derive(Clone, Copy, Default, Debug)]
pub struct SysTickAlarm;

/// Starts a new tickless period of `ticks` now.
fn restart(cs: CriticalSection<'_>, ticks: u64) {
    let now = now_in(cs);
    let reload = with(cs, |count| count.restarted(now, ticks, SHORTEST_ALARM));
    with_systick(cs, |syst| {
        syst.set_reload(reload);
        syst.clear_current();
    });
    // A wrap that was pending is counted in `now` already.
    SCB::clear_pendst();
}

fn tickless(cs: CriticalSection<'_>) -> bool {
    COUNT.borrow(cs).get().mode() == Mode::Tickless
}

impl Alarm for SysTickAlarm {
    fn set(&mut self, at: u64, cs: CriticalSection<'_>) -> bool {
        let now = now_in(cs);
        if at <= now {
            return false;
        }
        if tickless(cs) {
            restart(cs, at - now);
        }
        true
    }

    fn clear(&mut self, cs: CriticalSection<'_>) {
        if tickless(cs) {
            restart(cs, u64::from(MAX_RELOAD) + 1);
        }
    }
}
