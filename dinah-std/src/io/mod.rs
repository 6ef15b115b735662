//! The reactor: readiness from the operating system turned into wakes, for
//! the sockets of [`net`](crate::net).
//!
//! Each [`LocalExecutor`](crate::executor::LocalExecutor) gets a reactor
//! with its first socket: a [`mio`](https://docs.rs/mio) `Poll` (epoll on
//! Linux, kqueue on the BSDs and macOS, IOCP on Windows). From then on,
//! when no task is ready the executor waits in that reactor, with the next
//! timer's deadline as the timeout, and any wake from another thread (a
//! [`Spawner`](crate::executor::Spawner), a pool's completion, a plain
//! waker) cuts the wait short through the reactor's waker. Under load the
//! executor also looks at the reactor, without waiting, every
//! [`IO_INTERVAL`] ticks, so sockets are not starved by busy tasks.
//!
//! Readiness only wakes the task; the task's next poll does the
//! operation. A source is registered once, for reading and writing,
//! edge-triggered, and never re-armed: the steady state makes no
//! `epoll_ctl` call. A readiness event that arrives for a registration
//! already dropped, or for its slot reused since, is discarded and counted
//! ([`IoFigures::stale_events`]).
//!
//! Why `mio`: it is the tokio team's maintained 1.x layer over every
//! platform's readiness API, with persistent, edge-triggered registrations,
//! a safe API and a `Waker` for cross-thread wakes: exactly the parts a
//! reactor needs, and nothing of a runtime's.
//!
//! What this does not do: a socket belongs to the reactor of the executor
//! on whose thread it was made (or [`from_std`](crate::net::TcpStream::from_std)
//! converted), and is woken only while that executor runs. It may move to
//! another thread, but its readiness is still handed out by its own
//! executor.
#![forbid(unsafe_code)]

mod reactor;
mod scheduled;

use std::fmt;
use std::sync::Arc;

use dinah_core::telemetry::Log2Histogram;

pub(crate) use reactor::{Reactor, Registration};
#[cfg(loom)]
pub use scheduled::ModelSource;
pub(crate) use scheduled::WaitKey;

/// How many ticks with work pass between looks at the reactor that do not
/// wait (when nothing is ready the executor waits in it anyway).
pub const IO_INTERVAL: u32 = 61;

/// Which way a task waits on a socket.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Interest {
    /// To read (or accept, or receive).
    Read,
    /// To write (or connect, or send).
    Write,
}

impl fmt::Display for Interest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Read => "read",
            Self::Write => "write",
        })
    }
}

/// A task's wait on a socket: which one, and which way.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct IoWait {
    /// The socket, as its addresses name it (for example
    /// `tcp 127.0.0.1:40000 -> 127.0.0.1:7000`).
    pub resource: Arc<str>,
    /// The way it waits.
    pub interest: Interest,
}

impl fmt::Display for IoWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}", self.interest, self.resource)
    }
}

/// The figures of one executor's reactor.
///
/// Counts saturate. Guarantees: every registration and deregistration is
/// counted; every event the OS reported for a socket is in `events`, and
/// those that found no live registration also in `stale_events`. Not
/// promised: that one read is of one instant (each counter is read on its
/// own).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub struct IoFigures {
    /// Sources registered.
    pub registered: u64,
    /// Sources deregistered (dropped).
    pub deregistered: u64,
    /// Sources registered now.
    pub live: u64,
    /// Readiness events for sources.
    pub events: u64,
    /// Events that came for a registration already dropped or reused:
    /// discarded.
    pub stale_events: u64,
    /// Operations that were tried because readiness said so (or because
    /// the socket was new) and found `WouldBlock` after all.
    pub would_block: u64,
    /// Waits in the reactor cut short from another thread (each a system
    /// call).
    pub reactor_wakes: u64,
    /// From readiness arriving to the operation that used it, in
    /// microseconds; kept only by an executor built `with_telemetry` (an
    /// unmeasured one reads no clock for it, and this stays empty).
    pub ready_to_poll_micros: Log2Histogram<24>,
}
