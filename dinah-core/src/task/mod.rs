//! What a task is: its lifecycle ([`TaskState`]), how it fails
//! ([`TaskFailure`]), what it may return ([`TaskOutput`], [`Never`]), the
//! storage the core executor polls it in ([`Task`]), and the cooperative
//! helpers [`yield_now`] and [`chunked`]. A task's id is [`TaskId`](crate::id::TaskId).
//!
//! | file | holds |
//! | --- | --- |
//! | `state.rs` | [`TaskState`], [`InvalidTaskTransition`] |
//! | `failure.rs` | [`TaskFailure`], [`TaskFailureKind`] |
//! | `output.rs` | [`TaskOutput`], [`Never`], [`Returns`] |
//! | `storage.rs` | [`Task`] |
//! | `cooperate.rs` | [`yield_now`], [`YieldNow`], [`chunked`] |
#![forbid(unsafe_code)]

mod cooperate;
mod failure;
mod output;
mod storage;

pub use crate::raw::sched::{InvalidTaskTransition, TaskState};
pub use cooperate::{YieldNow, chunked, yield_now};
pub use failure::{TaskFailure, TaskFailureKind};
pub use output::{Never, Returns, TaskOutput};
pub use storage::Task;
