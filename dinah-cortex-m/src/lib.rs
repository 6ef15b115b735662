//! Cortex-M time for [`dinah-core`](dinah_core)'s timers: SysTick as the
//! timers' [`Clock`](dinah_core::telemetry::Clock) and
//! [`Alarm`](dinah_core::time::Alarm), so that a firmware depends on this
//! crate instead of copying a clock driver into its own sources.
//!
//! ```no_run
//! # #![allow(non_snake_case)]
//! use dinah::executor::{AsyncExecutor, ReadyQueue};
//! use dinah::time::{Tickless, TimerDriver, Timers};
//! use dinah_cortex_m::systick::{self, SysTickAlarm, SysTickClock};
//!
//! /// The core clock, which SysTick counts: the binary knows it, the
//! /// crate does not.
//! type Clock = SysTickClock<12_000_000>;
//!
//! static TIMERS: Timers<4, Clock> = Timers::new(SysTickClock);
//! static QUEUE: ReadyQueue<4> = ReadyQueue::new();
//!
//! // With cortex-m-rt, under `#[exception]`:
//! fn SysTick() {
//!     systick::on_interrupt();
//! }
//!
//! fn main() {
//!     let peripherals = cortex_m::Peripherals::take().unwrap();
//!     systick::start_tickless(peripherals.SYST);
//!     let mut executor: AsyncExecutor<'_, 4> = AsyncExecutor::new(&QUEUE).unwrap();
//!     let idle = Tickless::new(&TIMERS, SysTickAlarm, cortex_m::asm::wfi);
//!     let five_ms = (&TIMERS).sleep(core::time::Duration::from_millis(5));
//!     executor.run_until(five_ms, 8, idle);
//! }
//! ```
//!
//! # What it needs from the binary
//!
//! - The core clock's rate, as [`SysTickClock`](systick::SysTickClock)'s parameter.
//! - The SysTick exception handler, which calls [`systick::on_interrupt`]
//!   (the binary names its handlers; this crate has no macros).
//! - A `critical-section` implementation (on a single-core Cortex-M,
//!   cortex-m's `critical-section-single-core` feature). This crate never
//!   chooses it.
#![no_std]

pub mod systick;
