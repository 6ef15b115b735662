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

/// The core clock on each board, which SysTick counts: QEMU's
/// lm3s6965evb runs it at 12 MHz, its microbit board at 16 MHz. A
/// constant, so that divisions by it fold at compile time.
pub const CORE_HZ: u64 = {
    const fn on_thumbv6m() -> bool {
        let (target, prefix) = (TARGET.as_bytes(), b"thumbv6m");
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
    if on_thumbv6m() {
        16_000_000
    } else {
        12_000_000
    }
};

/// The timers' clock on these boards: SysTick, from `dinah-cortex-m`.
pub type BoardClock = dinah_cortex_m::systick::SysTickClock<CORE_HZ>;

/// The board's clock, as a value.
pub const BOARD_CLOCK: BoardClock = dinah_cortex_m::systick::SysTickClock;
