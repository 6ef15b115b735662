//! The timer core every timer store is built on: entries, keys, wakers and
//! fired timers over storage its owner picks ([`TimerQueue`],
//! [`TimerStore`]), kept in deadline order by the order that storage names
//! (a binary [`TimerHeap`] for a fixed array, a hierarchical [`Wheel`] for
//! a growing store), and the queue with its figures ([`TimerBook`]); with
//! the values they need: the [`Clock`] a store reads, the [`Divisor`] that
//! converts its ticks, its [`TimerFigures`] and the [`Log2Histogram`] they
//! keep lags in.
//!
//! | file | holds |
//! | --- | --- |
//! | `queue.rs` | [`TimerQueue`]: the timers of one store; [`TimerStore`] and the [`TimerOrder`] it names |
//! | `heap.rs` | [`TimerHeap`]: the binary heap that orders fixed stores (firmware) |
//! | `wheel.rs` | [`Wheel`]: the timer wheel that orders growing stores (hosts) |
//! | `book.rs` | [`TimerBook`]: a timer queue with its figures, the logic of every timer store; [`Rate`], the clock's rate it converts lags by |
//! | `clock.rs` | [`Clock`] and [`NoClock`] |
//! | `divisor.rs` | [`Divisor`]: division by a fixed number without a division routine |
//! | `figures.rs`, `histogram.rs` | [`TimerFigures`], [`Log2Histogram`] |
#![forbid(unsafe_code)]

mod book;
mod clock;
mod divisor;
mod figures;
mod heap;
mod histogram;
mod queue;
mod wheel;

pub use book::{Rate, TimerBook};
pub use clock::{Clock, NoClock};
pub use divisor::Divisor;
pub(crate) use divisor::bitwise_div_rem;
pub use figures::TimerFigures;
pub use heap::TimerHeap;
pub use histogram::Log2Histogram;
pub use queue::{Armed, TimerEntry, TimerIndex, TimerKey, TimerOrder, TimerQueue, TimerStore};
pub use wheel::Wheel;
