//! dinah: a small task runtime with a `no_std`, heap-free core and a hosted layer.
//!
//! This crate is a facade. It re-exports [`dinah_core`] at its root, and with
//! the default `std` feature also `dinah_std`, so one `use dinah::…` reaches
//! both. No two different types share a name at this root.
//!
//! - Firmware: depend on `dinah-core`, or on `dinah` with
//!   `default-features = false`.
//! - Desktop and server: depend on `dinah-std` or on `dinah`.
//!
//! The runtime's contract, primitive by primitive, is in `docs/runtime.md`.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use dinah_core::*;

#[cfg(feature = "std")]
pub use dinah_std::*;

/// Without the `std` feature the hosted layer is not there at all:
///
/// ```compile_fail,E0432
/// use dinah::BoundedQueue;
/// ```
#[cfg(all(doctest, not(feature = "std")))]
struct CoreOnlyDoctests;

/// Compiles and runs the README's Rust examples as doctests.
#[cfg(all(doctest, feature = "telemetry"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(all(doctest, feature = "telemetry"))]
#[doc = include_str!("../docs/operations.md")]
struct OperationsDoctests;
