//! [`Driver`]: what an executor drives and waits in: its timer store and,
//! from its first socket, its reactor, with the [`Park`] word through which
//! other threads cut its wait short.
//!
//! One driver serves one executor today. It is `Send + Sync` and reached
//! through an `Arc` from every task header, timer handle and socket of the
//! executor, so several worker threads can share one: the timers and the
//! reactor are shared state, and only the thread that waits in the driver
//! at a time needs its park word.
#![forbid(unsafe_code)]

use std::io;
use std::sync::Arc;

use super::park::Park;
use super::timers::HostTimers;
use crate::io::Reactor;
use crate::primitives::Thread;

/// One executor's timers and reactor, and where its thread waits.
pub(crate) struct Driver {
    park: Park<Reactor>,
    timers: HostTimers,
}

impl Driver {
    /// The driver of the executor that runs on `thread`, its clock paused
    /// (virtual) or not, measuring its timers and reactor or not.
    pub(crate) fn new(thread: Thread, paused: bool, measured: bool) -> Self {
        Self {
            park: Park::new(thread).measuring(measured),
            timers: HostTimers::new(paused, measured),
        }
    }

    /// The timer store.
    #[inline]
    pub(crate) fn timers(&self) -> &HostTimers {
        &self.timers
    }

    /// The reactor, once the executor's first socket made it.
    #[inline]
    pub(crate) fn reactor(&self) -> Option<&Arc<Reactor>> {
        self.park.blocker()
    }

    /// The reactor, made now if there is none yet.
    pub(crate) fn reactor_or_install(&self) -> io::Result<Arc<Reactor>> {
        let measured = self.park.is_measured();
        self.park.install(|| Reactor::new(measured)).map(Arc::clone)
    }

    /// Makes the executor's current or next wait return.
    #[inline]
    pub(crate) fn unpark(&self) {
        self.park.unpark();
    }

    /// Lets the reactor hand out what is ready now, without waiting.
    pub(crate) fn poll_now(&self) {
        self.park.poll_now();
    }

    /// Waits for an unpark, a socket's readiness or the next timer, on the
    /// executor's thread. May return early.
    pub(crate) fn park(&self) {
        self.park.park(self.timers.park_limit());
    }

    /// [`park`](Self::park) for a driver that several workers share, by
    /// whichever one holds it: a paused clock jumps to the next timer only
    /// when `all_idle` (every worker sleeps and no queue holds work);
    /// otherwise the wait lasts until an unpark, since a paused clock
    /// cannot bring a timer due.
    #[cfg(not(loom))]
    pub(crate) fn park_shared(&self, all_idle: bool) {
        if self.timers.paused_clock().is_some() && !all_idle {
            self.park.park(None);
        } else {
            self.park.park(self.timers.park_limit());
        }
    }
}
