//! What both pools own: the engine and whether it was shut down. Dropping
//! it unshut drains the engine.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "telemetry")]
use super::PoolMonitor;
use super::engine::Engine;
use super::{PoolReport, PoolSpawner, PoolStats, ShutdownPolicy};

/// What both pools own: the engine, and whether it was shut down.
/// Dropping it unshut drains the engine.
pub(super) struct Owner {
    pub(super) engine: Arc<Engine>,
    closed: bool,
}

impl Owner {
    pub(super) fn new(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            closed: false,
        }
    }

    pub(super) fn spawner(&self) -> PoolSpawner {
        PoolSpawner::new(Arc::clone(&self.engine))
    }

    pub(super) fn stats(&self) -> PoolStats {
        self.engine.stats()
    }

    #[cfg(feature = "telemetry")]
    pub(super) fn monitor(&self) -> Option<PoolMonitor> {
        self.engine
            .probe()
            .is_some()
            .then(|| PoolMonitor::new(Arc::clone(&self.engine)))
    }

    pub(super) fn shutdown(
        &mut self,
        policy: ShutdownPolicy,
        deadline: Option<Duration>,
    ) -> PoolReport {
        self.closed = true;
        self.engine.shutdown(policy, deadline)
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        if !self.closed {
            drop(self.engine.shutdown(ShutdownPolicy::Drain, None));
        }
    }
}
