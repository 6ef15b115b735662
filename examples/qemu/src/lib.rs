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

/// Logs `what` and fails the run unless `holds`.
pub fn check(holds: bool, what: &str) {
    if !holds {
        defmt::error!("check failed: {=str}", what);
        exit_failure();
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
