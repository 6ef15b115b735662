//! [`CapacityError`]: a capacity chosen at run time that cannot be had, and
//! the one place storage for such a capacity is reserved.
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::fmt;
use std::num::NonZeroUsize;

/// A queue or buffer could not be built with the capacity asked for.
///
/// Returned by [`BoundedQueue::new`](super::BoundedQueue::new) and [`TraceBuffer::new`](crate::telemetry::TraceBuffer::new).
/// Nothing is allocated when either is returned, and the process keeps
/// running: a capacity that cannot be reserved is refused here rather than
/// aborting the process the way an infallible allocation would.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum CapacityError {
    /// A capacity of zero was asked for where at least one slot is needed.
    Zero,
    /// Storage for `requested` items of `item_size` bytes each could not be
    /// reserved: the size overflows the address space or the allocator
    /// refused it.
    Allocation {
        /// The capacity that was asked for.
        requested: usize,
        /// The size of one item in bytes.
        item_size: usize,
    },
}

impl fmt::Display for CapacityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Zero => f.write_str("capacity must be at least 1"),
            Self::Allocation {
                requested,
                item_size,
            } => write!(
                f,
                "could not reserve storage for {requested} items of {item_size} bytes each"
            ),
        }
    }
}

impl std::error::Error for CapacityError {}

/// Reserves a `VecDeque` for exactly `capacity` items, fallibly.
pub(crate) fn reserve<T>(capacity: usize) -> Result<(NonZeroUsize, VecDeque<T>), CapacityError> {
    let capacity = NonZeroUsize::new(capacity).ok_or(CapacityError::Zero)?;
    let mut items = VecDeque::new();
    items
        .try_reserve_exact(capacity.get())
        .map_err(|_| CapacityError::Allocation {
            requested: capacity.get(),
            item_size: size_of::<T>(),
        })?;
    Ok((capacity, items))
}
