//! The errors of [`time`](super).
#![forbid(unsafe_code)]

use core::fmt;

/// A `timeout`'s time ran out before its future finished; the future was
/// dropped.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Elapsed;

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the deadline passed before the future finished")
    }
}

impl core::error::Error for Elapsed {}

/// A timer store had no free entry: its capacity is in use by timers that
/// are armed, fired and not yet seen, or held by futures not yet dropped.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TimerFull;

impl fmt::Display for TimerFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the timer store is full")
    }
}

impl core::error::Error for TimerFull {}

/// An interval's period was shorter than one tick of its clock.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ZeroPeriod;

impl fmt::Display for ZeroPeriod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an interval's period must be at least one tick")
    }
}

impl core::error::Error for ZeroPeriod {}
