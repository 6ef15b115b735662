//! Operation sequences on the bounded channel, the semaphore, the mutex and
//! the read-write lock, the oneshot and the watch, against
//! their reference models (the checkers `tests/sync_model.rs` uses): every
//! outcome, and every wake, as the model says.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/sync_model.rs"]
mod sync_model;

fuzz_target!(|bytes: &[u8]| {
    sync_model::check_channel(bytes);
    sync_model::check_semaphore(bytes);
    sync_model::check_locks(bytes);
    sync_model::check_oneshot(bytes);
    sync_model::check_watch(bytes);
});
