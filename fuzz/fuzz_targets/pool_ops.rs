//! Submit / cancel / release / shutdown sequences on both pools against a
//! FIFO model (the checker the property tests use).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/models.rs"]
mod models;

fuzz_target!(|bytes: &[u8]| {
    models::check_pool(bytes);
});
