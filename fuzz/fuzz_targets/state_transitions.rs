//! Transition attempts on `TaskState` and `LifecycleState` against tables
//! written out independently of the code under test.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/models.rs"]
mod models;

fuzz_target!(|bytes: &[u8]| models::check_state_machines(bytes));
