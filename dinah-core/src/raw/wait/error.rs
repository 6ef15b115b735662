//! Why a channel or a semaphore turned a caller away: [`Refusal`],
//! [`SendError`] and [`TryRecvError`].
#![forbid(unsafe_code)]

use core::fmt;

/// Why a channel did not take a value, or a semaphore did not hand out
/// permits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Refusal {
    /// A `try_` call found no free slot or permit, or found others already
    /// waiting for one (it never jumps the line). Waiting would have
    /// helped.
    WouldWait,
    /// Closed: by the receiver, by its going away, or by `close`. Waiting
    /// would not help.
    Closed,
    /// The line of waiters is full. Only a store fixed at compile time
    /// (the core's, with its `W` waiters) can refuse this way; `dinah-std`'s
    /// lines grow.
    LineFull,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::WouldWait => "no room now, and it would have to wait",
            Self::Closed => "closed",
            Self::LineFull => "the line of waiters is full",
        })
    }
}

impl core::error::Error for Refusal {}

/// `add_permits` would have taken a semaphore past `u32::MAX` permits,
/// counting those free and those held together: nothing was added, and
/// the semaphore is as it was.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct PermitOverflow {
    /// How many permits could still have been added.
    pub room: u32,
}

impl fmt::Display for PermitOverflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a semaphore holds at most u32::MAX permits; only {} more fit",
            self.room
        )
    }
}

impl core::error::Error for PermitOverflow {}

/// A value a channel did not take, handed back with the [`Refusal`].
///
/// The value is never lost: it is here, to send again or to drop.
#[derive(Clone, PartialEq, Eq)]
pub struct SendError<T> {
    value: T,
    reason: Refusal,
}

impl<T> SendError<T> {
    /// `value`, refused for `reason`.
    pub const fn new(value: T, reason: Refusal) -> Self {
        Self { value, reason }
    }

    /// Why it was refused.
    #[must_use]
    pub fn reason(&self) -> Refusal {
        self.reason
    }

    /// The value, back.
    #[must_use]
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendError")
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "value not sent: {}", self.reason)
    }
}

impl<T> core::error::Error for SendError<T> {}

/// Why `try_recv` returned no value.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum TryRecvError {
    /// Nothing to receive now; a value may still come.
    Empty,
    /// The end: closed, or every sender gone, and nothing left.
    Closed,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "nothing to receive now",
            Self::Closed => "the channel has ended",
        })
    }
}

impl core::error::Error for TryRecvError {}
