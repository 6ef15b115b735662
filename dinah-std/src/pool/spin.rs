//! [`Spin`]: how long an idle pool thread looks for work before it sleeps,
//! per kind of pool.
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

/// A `BlockingPool`'s threads: 2,000 busy checks (tens of microseconds:
/// the spin hint's pause is 10 to 140 cycles, depending on the CPU) and
/// then some tens of microseconds of yields: long enough to bridge the gap
/// between bursts of blocking jobs, short enough that an idle pool goes
/// quiet at once. (Without the yields, jobs submitted one after another
/// took 0.9-1.2x tokio's time instead of 0.23-0.37x.) None under loom,
/// whose models would only grow.
#[cfg(not(any(loom, miri)))]
pub(crate) const SPIN: Spin = Spin {
    busy: 2_000,
    yields: 64,
};
/// A `WorkerPool`'s workers, and a caller waiting for its batch: the busy
/// checks only, then sleep. A worker pool's work comes in batches whose
/// gaps the busy checks bridge; and on a machine whose cores are all busy,
/// a thread that yields stays runnable and waits a whole time slice behind
/// the busy threads, while a sleeping one is woken ahead of them.
/// (Measured beside one busy thread per core: 200 batches of 16 took
/// 1.0-2.1x rayon's time with the yields, and 0.26-0.46x without;
/// unloaded, 0.35-0.40x against 0.38-0.50x.)
///
/// 500 checks: about 13 µs where a spin hint costs 65 cycles. Long enough
/// to bridge back-to-back batches, whose gap is the caller's own few
/// microseconds; short, because a worker that has just ended a batch and
/// woken a parked caller spins on its core, and the scheduler may have
/// placed the caller there: on a machine whose other cores are busy, the
/// caller then runs only once the spin ends. Traced beside one busy
/// thread per core, with 2,000 checks a caller woke about 53 µs after the
/// batch ended, in every batch of some runs (the whole spin), and a
/// fork-join of 256 no-op tasks took about 4x rayon's time in those runs;
/// with 500, about 1.7x. Unloaded, the two lengths are level within the
/// noise (medians of ten runs 0.86x and 0.92x rayon's).
#[cfg(not(any(loom, miri)))]
pub(crate) const WORKER_SPIN: Spin = Spin {
    busy: 500,
    yields: 0,
};
/// Under Miri a short spin, which keeps the spinning path checked: every
/// interpreted spin costs real seconds there, and the tests wait for idle
/// threads many times.
#[cfg(all(miri, not(loom)))]
pub(crate) const SPIN: Spin = Spin {
    busy: 20,
    yields: 2,
};
#[cfg(all(miri, not(loom)))]
pub(crate) const WORKER_SPIN: Spin = Spin {
    busy: 20,
    yields: 0,
};
#[cfg(loom)]
pub(crate) const SPIN: Spin = Spin { busy: 0, yields: 0 };
#[cfg(loom)]
pub(crate) const WORKER_SPIN: Spin = Spin { busy: 0, yields: 0 };

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
