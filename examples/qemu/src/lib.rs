//! What the firmware and its on-target tests share: the defmt logger, the
//! panic handler, and semihosting exit.
#![no_std]

use cortex_m_semihosting::debug;
use defmt_semihosting as _;

/// The target this firmware was built for, e.g. `thumbv6m-none-eabi`.
pub const TARGET: &str = env!("DINAH_TARGET");

/// Ends the QEMU run with exit status 0.
pub fn exit_success() -> ! {
    debug::exit(debug::EXIT_SUCCESS);
    #[allow(clippy::empty_loop)]
    loop {}
}

/// Ends the QEMU run with a non-zero exit status.
pub fn exit_failure() -> ! {
    debug::exit(debug::EXIT_FAILURE);
    #[allow(clippy::empty_loop)]
    loop {}
}

/// Fails the run unless `$holds`, logging `$what` (a string literal,
/// interned by defmt: its text stays in the ELF's non-loaded `.defmt`
/// section, not in flash).
#[macro_export]
macro_rules! check {
    ($holds:expr, $what:literal $(,)?) => {
        if !$holds {
            $crate::check_failed(defmt::intern!($what))
        }
    };
}

/// Logs the failed check `what` and fails the run; see [`check!`].
#[cold]
pub fn check_failed(what: defmt::Str) -> ! {
    defmt::error!("check failed: {=istr}", what);
    exit_failure()
}

/// Names the running context for a `ReadyQueue::with_context`: 0 in thread
/// mode, otherwise the number of the active exception or interrupt.
pub fn active_exception() -> usize {
    use cortex_m::peripheral::SCB;
    use cortex_m::peripheral::scb::VectActive;
    match SCB::vect_active() {
        VectActive::ThreadMode => 0,
        VectActive::Exception(exception) => (i16::from(exception.irqn()) + 16) as usize,
        VectActive::Interrupt { irqn } => usize::from(irqn) + 16,
    }
}

/// Logs where the panic happened and fails the run. It does not format the
/// message: `core::fmt` would more than double the firmware's flash.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    match info.location() {
        Some(at) => defmt::error!("panic at {=str}:{=u32}", at.file(), at.line()),
        None => defmt::error!("panic"),
    }
    exit_failure()
}

/// What the two wake-cost firmwares share: a free-running SysTick, the
/// round counts, and the report. Each binary keeps its own measuring loop,
/// so neither changes how the other's loop is compiled.
pub mod cost {
    use cortex_m::peripheral::SYST;
    use cortex_m::peripheral::syst::SystClkSource;

    /// Core clock ticks per second of SysTick on QEMU's lm3s6965evb (the
    /// thumbv7m board). The microbit board's is not verified, so on thumbv6m
    /// only the raw SysTick counts are reported.
    pub const LM3S6965_CORE_HZ: u64 = 12_000_000;
    /// Rounds of the short measurement.
    pub const SHORT: u32 = 1_000;
    /// Rounds of the long measurement.
    pub const LONG: u32 = 11_000;

    /// Takes the core peripherals and starts SysTick counting down from
    /// its 24-bit maximum, on the core clock, without interrupts: the
    /// measurement's clock.
    pub fn start() {
        let mut peripherals = cortex_m::Peripherals::take().unwrap_or_else(|| panic!("taken once"));
        free_running(&mut peripherals.SYST);
    }

    /// The measured task: it yields forever, one wake and one poll a round.
    pub async fn yield_forever() {
        loop {
            dinah_core::yield_now().await;
        }
    }

    fn free_running(syst: &mut SYST) {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(0x00ff_ffff);
        syst.clear_current();
        syst.enable_counter();
    }

    /// SysTick ticks since `start` (a reading of `SYST::get_current`).
    pub fn since(start: u32) -> u32 {
        start.wrapping_sub(SYST::get_current()) & 0x00ff_ffff
    }

    /// Logs the two counts of `what` and, on thumbv7m, the instructions per
    /// round (valid under `-icount shift=0`).
    pub fn report(what: &str, short: u32, long: u32) {
        crate::check!(long > short, "more rounds take longer");
        defmt::info!("target {=str}", crate::TARGET);
        defmt::info!(
            "{=str}: SysTick ticks for {=u32} and {=u32} rounds: {=u32} and {=u32}",
            what,
            SHORT,
            LONG,
            short,
            long
        );
        if crate::TARGET.starts_with("thumbv7m") {
            let hundredths = u64::from(long - short) * 1_000_000_000 / LM3S6965_CORE_HZ * 100
                / u64::from(LONG - SHORT);
            defmt::info!(
                "instructions per {=str} (valid under -icount shift=0): {=u64}.{=u64:02}",
                what,
                hundredths / 100,
                hundredths % 100
            );
        }
    }
}

/// SysTick as a tickless clock and alarm for dinah-core's timers.
///
/// SysTick counts down from its reload value and interrupts when it wraps.
/// The clock is the ticks of the periods that ended (added up by the
/// interrupt, [`on_systick`]) plus the ticks of the current one. The alarm
/// sets the reload to the time until the next deadline (at most 2^24
/// ticks), so the core sleeps in `WFI` until then: no periodic tick while a
/// timer is far off, and with no timer armed the period is the longest
/// SysTick has, only to keep counting time.
pub mod tickless {
    use core::cell::{Cell, RefCell};

    use cortex_m::peripheral::syst::SystClkSource;
    use cortex_m::peripheral::{SCB, SYST};
    use critical_section::{CriticalSection, Mutex};
    use dinah_core::telemetry::Clock;
    use dinah_core::time::{Alarm, Divisor};

    /// SysTick's longest reload.
    const MAX_RELOAD: u32 = 0x00FF_FFFF;
    /// The shortest period the alarm sets, in ticks.
    const MIN_PERIOD: u64 = 64;

    /// SysTick, shared by the alarm (thread mode) and its handler.
    static SYSTICK: Mutex<RefCell<Option<SYST>>> = Mutex::new(RefCell::new(None));
    /// Ticks counted before the current SysTick period began.
    static BASE: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));
    /// The current period's reload value (the period is one tick more).
    static RELOAD: Mutex<Cell<u32>> = Mutex::new(Cell::new(MAX_RELOAD));
    /// The reload register: the next period's reload.
    static NEXT: Mutex<Cell<u32>> = Mutex::new(Cell::new(MAX_RELOAD));
    /// The latest reading, so that readings never go back.
    static LAST: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));
    /// SysTick interrupts so far.
    static INTERRUPTS: Mutex<Cell<u32>> = Mutex::new(Cell::new(0));

    /// The core clock on each board: QEMU's lm3s6965evb runs SysTick at
    /// 12 MHz; its microbit board at 16 MHz. A constant, so that divisions
    /// by it fold at compile time.
    pub const fn core_hz() -> u64 {
        const fn on_thumbv6m() -> bool {
            let (target, prefix) = (super::TARGET.as_bytes(), b"thumbv6m");
            if target.len() < prefix.len() {
                return false;
            }
            let mut at = 0;
            while at < prefix.len() {
                if target[at] != prefix[at] {
                    return false;
                }
                at += 1;
            }
            true
        }
        const HZ: u64 = if on_thumbv6m() {
            16_000_000
        } else {
            12_000_000
        };
        HZ
    }

    /// Starts SysTick on the core clock with the longest period, its
    /// interrupt on, and keeps it for the alarm and the handler.
    pub fn start(mut syst: SYST) {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(MAX_RELOAD);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        critical_section::with(|cs| {
            if let Ok(mut cell) = SYSTICK.borrow(cs).try_borrow_mut() {
                *cell = Some(syst);
            }
        });
    }

    /// The SysTick handler's work: a period ended and the next began with
    /// the reload register's value; after an alarm's short period, the one
    /// after it is the longest again (so a core busy past its alarm is not
    /// interrupted at the alarm's rate).
    pub fn on_systick() {
        critical_section::with(|cs| {
            let base = BASE.borrow(cs);
            base.set(base.get() + u64::from(RELOAD.borrow(cs).get()) + 1);
            let next = NEXT.borrow(cs).replace(MAX_RELOAD);
            RELOAD.borrow(cs).set(next);
            if next != MAX_RELOAD
                && let Ok(mut cell) = SYSTICK.borrow(cs).try_borrow_mut()
                && let Some(syst) = cell.as_mut()
            {
                syst.set_reload(MAX_RELOAD);
            }
            let count = INTERRUPTS.borrow(cs);
            count.set(count.get() + 1);
        });
    }

    /// SysTick interrupts so far.
    pub fn interrupts() -> u32 {
        critical_section::with(|cs| INTERRUPTS.borrow(cs).get())
    }

    fn now_in(cs: CriticalSection<'_>) -> u64 {
        let base = BASE.borrow(cs).get();
        let reload = RELOAD.borrow(cs).get();
        let value = SYST::get_current();
        let ticks = if SCB::is_pendst_pending() {
            // The period ended and its interrupt waits for this critical
            // section to end: count it here. The next one began with the
            // reload register's value.
            let value = SYST::get_current();
            let next = NEXT.borrow(cs).get();
            let into_next = if value == 0 {
                0
            } else {
                next.saturating_sub(value)
            };
            base + u64::from(reload) + 1 + u64::from(into_next)
        } else if value == 0 {
            // Just restarted by the alarm, not yet reloaded.
            base
        } else {
            base + u64::from(reload.saturating_sub(value))
        };
        let last = LAST.borrow(cs);
        let ticks = ticks.max(last.get());
        last.set(ticks);
        ticks
    }

    /// SysTick ticks since [`start`], widened to 64 bits.
    #[derive(Clone, Copy, Default)]
    pub struct SysTickClock;

    impl Clock for SysTickClock {
        /// Out of line: a reading masks interrupts and checks SysTick's
        /// pending bit, and the timers read the clock in several places
        /// (about 200 B of flash when each place has its own copy).
        #[inline(never)]
        fn now(&self) -> u64 {
            critical_section::with(now_in)
        }

        fn ticks_per_second(&self) -> u64 {
            core_hz()
        }

        fn per_second(&self) -> Option<Divisor> {
            const PER_SECOND: Divisor = Divisor::new(core_hz());
            Some(PER_SECOND)
        }
    }

    /// SysTick's reload as the timers' alarm.
    #[derive(Default)]
    pub struct SysTickAlarm;

    /// Starts a new period of `ticks` (clamped to SysTick's range) now.
    fn restart(cs: CriticalSection<'_>, ticks: u64) {
        let now = now_in(cs);
        let reload = (ticks.clamp(MIN_PERIOD, u64::from(MAX_RELOAD) + 1) - 1) as u32;
        BASE.borrow(cs).set(now);
        RELOAD.borrow(cs).set(reload);
        NEXT.borrow(cs).set(reload);
        if let Ok(mut cell) = SYSTICK.borrow(cs).try_borrow_mut()
            && let Some(syst) = cell.as_mut()
        {
            syst.set_reload(reload);
            syst.clear_current();
        }
        // A wrap that was pending is counted in `now` already.
        SCB::clear_pendst();
    }

    impl Alarm for SysTickAlarm {
        fn set(&mut self, at: u64, cs: CriticalSection<'_>) -> bool {
            let now = now_in(cs);
            if at <= now {
                return false;
            }
            restart(cs, at - now);
            true
        }

        fn clear(&mut self, cs: CriticalSection<'_>) {
            restart(cs, u64::from(MAX_RELOAD) + 1);
        }
    }
}
