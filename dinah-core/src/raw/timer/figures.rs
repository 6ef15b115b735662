//! [`TimerFigures`]: what a timer store counts.
#![forbid(unsafe_code)]

use super::histogram::Log2Histogram;

/// The figures of one timer store: how many timers are armed, how many
/// fired, were cancelled or were refused, and how late they completed.
///
/// The counts start at zero with the store and move by one per event, so
/// a `u64` count does not wrap in practice (at a billion events a second it
/// would take 584 years): they wrap rather than saturate, which takes less
/// code where 64-bit arithmetic is done in software (a Cortex-M0). The lag
/// histogram saturates, as [`Log2Histogram`] says.
///
/// Guarantees: each arming that reaches its deadline is counted in `fired`
/// once, whether the store fired it or its future found it due; each armed
/// timer dropped before that is counted in `cancelled`.
/// Not promised: that the figures of one read are of one instant (they are
/// read under the store's lock, so they are, but `armed` changes as soon as
/// the lock is let go).
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct TimerFigures {
    /// Timers armed now, waiting for their deadline.
    pub armed: u64,
    /// Timers that reached their deadline.
    pub fired: u64,
    /// Armed timers dropped before their deadline.
    pub cancelled: u64,
    /// Timer futures that found the store full (each poll that did counts).
    pub refused: u64,
    /// Completions whose lag exceeded `late_after_micros`.
    pub late: u64,
    /// The threshold for `late`, in microseconds (`None`: none).
    pub late_after_micros: Option<u64>,
    /// Lag, deadline to the poll that saw the timer complete, in
    /// microseconds (the last bucket holds 2²² µs, about 4 s, and more).
    pub lag_micros: Log2Histogram<24>,
}

impl TimerFigures {
    /// All zero, with no late threshold.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            armed: 0,
            fired: 0,
            cancelled: 0,
            refused: 0,
            late: 0,
            late_after_micros: None,
            lag_micros: Log2Histogram::new(),
        }
    }
}

impl Default for TimerFigures {
    fn default() -> Self {
        Self::new()
    }
}
