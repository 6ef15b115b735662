//! Event sources: how an interrupt's news reaches the tasks that wait for
//! it, with no heap.
//!
//! An interrupt handler that has news (a byte arrived, a conversion ended,
//! a pin changed) calls [`Event::raise`]; every task waiting on that
//! [`Event`] is woken, and each sees how many raises it missed. Data goes
//! beside it: in a [`Channel`](crate::sync::Channel) (`try_send` works
//! from a handler), an atomic, or the device's own registers.
//!
//! The hosted layer's reactor (`dinah_std::io`) does the same job for
//! sockets.
#![forbid(unsafe_code)]

mod event;

pub use event::{Event, EventWait};
