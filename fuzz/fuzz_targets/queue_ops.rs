//! Push/pop sequences on `TaskQueue` and `BoundedQueue` against a bounded
//! `VecDeque` model (the checker the property tests use).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/models.rs"]
mod models;

fuzz_target!(|bytes: &[u8]| {
    models::check_queue::<models::Fixed>(bytes);
    models::check_queue::<models::Bounded>(bytes);
});
