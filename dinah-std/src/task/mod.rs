//! A task's result, whichever hosted runtime runs it: [`JoinHandle`] and
//! [`JoinError`].
//!
//! The core's vocabulary for tasks (their states, outputs and failures, the
//! `Task` storage, `yield_now`) is in `dinah_core::task`; the `dinah`
//! facade's `task` module holds both.
#![forbid(unsafe_code)]

mod join;

pub(crate) use join::{CancelTarget, Join};
pub use join::{JoinError, JoinHandle};
