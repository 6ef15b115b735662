//! The runtime wing: what every hosted executor stands on.
//!
//! - [`context`]: this thread's one context: which executor runs here and
//!   its local ready list, the driver that `time`, `io` and `net` use when
//!   called from a task, and what the poll running now left waiting (a
//!   timer, a socket, a line), for the executor's telemetry.
//! - [`Driver`]: an executor's timer store and reactor, and the park word
//!   through which other threads cut its wait short.
//! - [`idle`] and [`parker`]: for an executor of several workers, who is
//!   awake, searching or asleep and whom new work wakes, and one worker's
//!   sleep, on its thread or in the driver.
//!
//! [`time`](crate::time), [`io`](crate::io) and [`net`](crate::net) are thin
//! APIs over these; the executors enter the context and drive the driver.
//! Nothing here imports the modules above it.
#![forbid(unsafe_code)]

pub(crate) mod context;
mod driver;
pub(crate) mod idle;
pub(crate) mod park;
pub(crate) mod parker;
mod slack;
pub(crate) mod timers;

pub(crate) use driver::Driver;
