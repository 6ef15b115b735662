//! The crate's only `unsafe` code, in two parts, each with its numbered
//! invariants at the top of its file and a `// SAFETY:` comment on every
//! block:
//!
//! - `waker.rs`: the heap-free [`Waker`](core::task::Waker)'s vtable, which
//!   enqueues a task's identity into its `'static`
//!   [`ReadyQueue`](super::ReadyQueue).
//! - `handoff.rs`: the hand-off of an [`InterruptTasks`](super::InterruptTasks)
//!   borrowed for a scope to the interrupt handler that runs it, and the
//!   reason that set of tasks may be run from another context.
//!
//! Everything they build on (the queue's state, the executor, the
//! interrupt executor's protocol) is safe code in the other files of
//! [`executor`](super), and Miri and loom run over every path here.
#![deny(unsafe_op_in_unsafe_fn)]

pub(super) mod handoff;
mod waker;
