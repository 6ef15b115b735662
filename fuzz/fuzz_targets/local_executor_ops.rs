//! Spawn / tick / wake / drop-waker / cancel / take / shutdown sequences on
//! the hosted `LocalExecutor` against a model of its rules (the checker the
//! property tests use).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/models.rs"]
mod models;

fuzz_target!(|bytes: &[u8]| models::check_local_executor(bytes));
