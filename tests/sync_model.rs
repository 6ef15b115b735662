//! The channel, the semaphore, the mutex, the read-write lock, the oneshot,
//! the watch, the broadcast, the notify, the cancellation flags, the shared
//! receiver and the once cell against reference models, on random
//! operation sequences: every outcome and every wake as the model says.
//! (The `sync_ops` fuzz target runs the same checkers.)

use proptest::prelude::*;

mod support;

use support::sync_model::{check_channel, check_semaphore};
use support::toolbox_model::{check_cancel, check_notify, check_once_cell, check_shared_receiver};
use support::wait_model::{check_broadcast, check_locks, check_oneshot, check_watch};

fn cases() -> ProptestConfig {
    ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 512 })
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn the_channel_follows_its_model(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
        check_channel(&bytes);
    }

    #[test]
    fn the_semaphore_follows_its_model(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
        check_semaphore(&bytes);
    }

    #[test]
    fn the_mutex_and_the_rwlock_follow_their_model(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
        check_locks(&bytes);
    }

    #[test]
    fn the_oneshot_follows_its_model(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
        check_oneshot(&bytes);
    }

    #[test]
    fn the_watch_follows_its_model(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        check_watch(&bytes);
    }

    #[test]
    fn the_broadcast_follows_its_model(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        check_broadcast(&bytes);
    }

    #[test]
    fn the_notify_follows_its_model(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        check_notify(&bytes);
    }

    #[test]
    fn the_cancellation_flags_follow_their_model(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        check_cancel(&bytes);
    }

    #[test]
    fn the_shared_receiver_follows_its_model(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        check_shared_receiver(&bytes);
    }

    #[test]
    fn the_once_cell_follows_its_model(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        check_once_cell(&bytes);
    }
}
