//! What tasks and threads share to coordinate: [`CancellationToken`], the
//! cooperative cancellation flag. (`dinah-std` adds an owned
//! `CancellationHandle` and `Shared`.)
#![forbid(unsafe_code)]

mod cancel;

pub use cancel::CancellationToken;
