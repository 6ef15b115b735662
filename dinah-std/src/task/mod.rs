//! A task's result, whichever hosted runtime runs it: [`JoinHandle`] and
//! [`JoinError`]; and [`TaskGroup`], children owned by one parent and shut
//! down together with a [`GroupReport`].
//!
//! The core's vocabulary for tasks (their states, outputs and failures, the
//! `Task` storage, `yield_now`) is in `dinah_core::task`; the `dinah`
//! facade's `task` module holds both.
#![forbid(unsafe_code)]

pub(crate) mod cell;
mod group;
mod join;

pub use group::{ChildEnd, ChildKind, ChildReport, GroupReport, TaskGroup};
pub(crate) use join::{CancelTarget, Join, park_on};
pub use join::{JoinError, JoinHandle};
