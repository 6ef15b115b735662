//! Operation sequences on the bounded channel, the semaphore, the mutex and
//! the read-write lock, the oneshot, the watch, the broadcast, the notify,
//! the cancellation flags, the shared receiver and the once cell, against
//! their reference models (the checkers `tests/sync_model.rs` uses): every
//! outcome, and every wake, as the model says.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/sync_model.rs"]
mod sync_model;
#[path = "../../tests/support/toolbox_model.rs"]
mod toolbox_model;
#[path = "../../tests/support/wait_model.rs"]
mod wait_model;

fuzz_target!(|bytes: &[u8]| {
    sync_model::check_channel(bytes);
    sync_model::check_semaphore(bytes);
    wait_model::check_locks(bytes);
    wait_model::check_oneshot(bytes);
    wait_model::check_watch(bytes);
    wait_model::check_broadcast(bytes);
    toolbox_model::check_notify(bytes);
    toolbox_model::check_cancel(bytes);
    toolbox_model::check_shared_receiver(bytes);
    toolbox_model::check_once_cell(bytes);
});
