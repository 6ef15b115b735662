//! [`WideCounter`]: a 32-bit hardware counter read as 64 bits.
#![forbid(unsafe_code)]

use core::cell::Cell;

use critical_section::Mutex;

/// Extends the readings of a 32-bit counter that wraps (a timer's count
/// register, a cycle counter) to a 64-bit count that does not.
///
/// Each [`extend`](Self::extend) compares the new reading with the last
/// one: a smaller reading means the counter wrapped once, and the high half
/// goes up by one. So the result is right as long as it is called at least
/// once per wrap of the counter (every 2³² ticks: 71 minutes at 1 MHz,
/// 36 days at 1 kHz), by anyone: an alarm that fires at least that often,
/// or the run loop. Readings must come in order: a reading taken before
/// another but passed after it reads as a wrap. Calls are serialized by a
/// critical section, so interrupt handlers may call it too.
///
/// ```
/// use dinah::time::WideCounter;
///
/// let wide = WideCounter::new();
/// assert_eq!(wide.extend(u32::MAX - 1), u64::from(u32::MAX - 1));
/// assert_eq!(wide.extend(3), (1 << 32) + 3, "wrapped once");
/// ```
#[derive(Debug)]
pub struct WideCounter {
    last: Mutex<Cell<u64>>,
}

impl WideCounter {
    /// A counter whose last reading was 0.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            last: Mutex::new(Cell::new(0)),
        }
    }

    /// The 64-bit count for the 32-bit reading `raw`.
    pub fn extend(&self, raw: u32) -> u64 {
        critical_section::with(|cs| {
            let last = self.last.borrow(cs);
            let previous = last.get();
            let mut high = previous >> 32;
            if raw < previous as u32 {
                high += 1;
            }
            let wide = (high << 32) | u64::from(raw);
            last.set(wide);
            wide
        })
    }
}

impl Default for WideCounter {
    fn default() -> Self {
        Self::new()
    }
}
