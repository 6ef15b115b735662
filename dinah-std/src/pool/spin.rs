//! [`Spin`]: how long an idle pool thread looks for work before it sleeps.
#![forbid(unsafe_code)]

use crate::primitives::yield_now;

/// How long a thread with nothing to do looks for work before it sleeps:
/// first `busy` checks with a CPU spin hint between them, then `yields`
/// checks with a yield to the scheduler between them.
#[derive(Clone, Copy)]
pub(crate) struct Spin {
    pub(crate) busy: u32,
    pub(crate) yields: u32,
}

/// About 20 µs of busy checks and then some tens of microseconds of yields
/// on the machines measured: long enough to bridge the gap between
/// back-to-back batches and bursts, short enough that an idle pool goes quiet
/// at once. None under loom, whose models would only grow.
#[cfg(not(any(loom, miri)))]
pub(crate) const SPIN: Spin = Spin {
    busy: 2_000,
    yields: 64,
};
/// Under Miri a short spin, which keeps the spinning path checked: every
/// interpreted spin costs real seconds there, and the tests wait for idle
/// threads many times.
#[cfg(all(miri, not(loom)))]
pub(crate) const SPIN: Spin = Spin {
    busy: 20,
    yields: 2,
};
#[cfg(loom)]
pub(crate) const SPIN: Spin = Spin { busy: 0, yields: 0 };

impl Spin {
    /// Checks `ready` until it is true (returns `true`) or the spin is over
    /// (returns `false`).
    pub(crate) fn until(self, mut ready: impl FnMut() -> bool) -> bool {
        for _ in 0..self.busy {
            if ready() {
                return true;
            }
            std::hint::spin_loop();
        }
        for _ in 0..self.yields {
            if ready() {
                return true;
            }
            yield_now();
        }
        ready()
    }

    pub(crate) fn is_off(self) -> bool {
        self.busy == 0 && self.yields == 0
    }
}
