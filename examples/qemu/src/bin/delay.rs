//! The embedded ecosystem's delay trait on dinah's timers: a task hands a
//! `dinah_core::time::Delay` over the firmware's `&Timers` to code that
//! knows only `embedded_hal_async::delay::DelayNs`, as a driver crate
//! does, and that code runs the trait's own cases.
//!
//! The trait asks that each delay last *at least* its time. Each case
//! measures its delay on the timers' clock (SysTick, tickless, from
//! `dinah-cortex-m`) and the
//! firmware checks the floor, and a ceiling of the delay's promise (two
//! ticks and a bounded lag more), then exits 0. A delay sleeps, it does not
//! spin: the run loop's idle counts its trips to `WFI`, at least one per
//! delay long enough to sleep through, none for a delay of zero.
//!
//! It also reports the size of a timer store: its fixed part (with its
//! figures) and each entry.
//!
//! It runs under QEMU's `-icount shift=0,sleep=off`, as the timers
//! firmware does, and CI compares its log with `ci/expected/`. The log
//! names each case and whether it held, not the measured ticks, which move
//! with every change of code under instruction-counted time.
#![no_std]
#![no_main]

use core::mem::size_of;
use core::pin::pin;

use cortex_m_rt::{entry, exception};
use defmt::info;
use dinah_core::time::{Delay, Tickless, TimerDriver, Timers};
use dinah_core::{AsyncExecutor, ReadyQueue};
use dinah_cortex_m::systick::{self, SysTickAlarm};
use dinah_qemu::{BOARD_CLOCK, BoardClock, CORE_HZ, TARGET, check, exit_success};
use embedded_hal_async::delay::DelayNs;
use portable_atomic::{AtomicU32, Ordering};

/// Clock ticks per microsecond (both boards' clocks count whole ones).
const TICKS_PER_MICRO: u64 = CORE_HZ / 1_000_000;
/// The most a delay may run past its time here: its two ticks of
/// rounding, and the time the run loop takes from the alarm to the poll
/// (well under 100 µs on these boards).
const SLACK_TICKS: u64 = 2 + 100 * TICKS_PER_MICRO;

static TIMERS: Timers<2, BoardClock> = Timers::new(BOARD_CLOCK);
static QUEUE: ReadyQueue<1> = ReadyQueue::new();

#[exception]
fn SysTick() {
    systick::on_interrupt();
}

/// Which of the trait's calls a case makes.
#[derive(Clone, Copy)]
enum Unit {
    Ns,
    Us,
    Ms,
}

/// One of the trait's calls: its unit, its amount, and its floor in ticks
/// (worked out when compiling: a Cortex-M0 has no divide instruction).
struct Case {
    unit: Unit,
    amount: u32,
    floor: u64,
}

impl Case {
    const fn new(unit: Unit, amount: u32) -> Self {
        let amount64 = amount as u64;
        let floor = match unit {
            // Rounded up to a whole tick.
            Unit::Ns => (amount64 * TICKS_PER_MICRO).div_ceil(1_000),
            Unit::Us => amount64 * TICKS_PER_MICRO,
            Unit::Ms => amount64 * 1_000 * TICKS_PER_MICRO,
        };
        Self {
            unit,
            amount,
            floor,
        }
    }
}

/// The cases: zero, under a tick, a few ticks, and sleeps long enough to
/// sleep through.
const CASES: [Case; 5] = [
    Case::new(Unit::Ns, 0),
    Case::new(Unit::Ns, 1),
    Case::new(Unit::Ns, 1_500),
    Case::new(Unit::Us, 250),
    Case::new(Unit::Ms, 3),
];

/// What a driver crate does with the delay it is given: it knows the
/// trait and nothing of dinah. Returns how long the call took, in ticks.
async fn run_case(delay: &mut impl DelayNs, case: &Case) -> u64 {
    let start = (&TIMERS).now();
    match case.unit {
        Unit::Ns => delay.delay_ns(case.amount).await,
        Unit::Us => delay.delay_us(case.amount).await,
        Unit::Ms => delay.delay_ms(case.amount).await,
    }
    (&TIMERS).now().ticks_since(start)
}

/// Trips of the run loop's idle to `WFI`.
static SLEEPS: AtomicU32 = AtomicU32::new(0);

fn sleep() {
    SLEEPS.fetch_add(1, Ordering::Relaxed);
    cortex_m::asm::wfi();
}

#[entry]
fn main() -> ! {
    let peripherals = cortex_m::Peripherals::take().unwrap_or_else(|| defmt::panic!("taken once"));
    info!("target {=str}", TARGET);
    let one = size_of::<Timers<1, BoardClock>>();
    let two = size_of::<Timers<2, BoardClock>>();
    let (entry, fixed) = (two - one, one - (two - one));
    info!(
        "size of a timer store: {=usize} bytes and {=usize} per timer",
        fixed, entry
    );
    check!(entry <= 32, "a timer takes at most 32 bytes");
    systick::start_tickless(peripherals.SYST);

    let cases = pin!(async {
        let mut delay = Delay::new(&TIMERS);
        for case in &CASES {
            let sleeps = SLEEPS.load(Ordering::Relaxed);
            let took = run_case(&mut delay, case).await;
            let name = match case.unit {
                Unit::Ns => "delay_ns",
                Unit::Us => "delay_us",
                Unit::Ms => "delay_ms",
            };
            let held = took >= case.floor && took <= case.floor + SLACK_TICKS;
            info!(
                "{=str}({=u32}): at least its time, within two ticks and the lag: {=bool}",
                name, case.amount, held
            );
            check!(held, "a delay lasts its time, and not much more");
            // A delay long enough to sleep through slept; one of a few
            // ticks may be over before the idle could set the alarm.
            let slept = SLEEPS.load(Ordering::Relaxed) > sleeps;
            check!(
                slept || case.floor < 100 * TICKS_PER_MICRO,
                "a long delay sleeps"
            );
            check!(!slept || case.floor > 0, "a zero delay returns at once");
        }
    });

    let mut executor: AsyncExecutor<'_, 1> =
        AsyncExecutor::new(&QUEUE).unwrap_or_else(|_| defmt::panic!("first executor"));
    let idle = Tickless::new(&TIMERS, SysTickAlarm, sleep);
    executor.run_until(cases, 8, idle);
    info!("all delay checks passed");
    exit_success()
}
