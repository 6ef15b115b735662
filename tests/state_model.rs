//! `TaskState` and `LifecycleState` against transition tables written out
//! independently of the code (the checker the fuzz target uses).

use proptest::prelude::*;

mod support;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 2048 }))]

    #[test]
    fn transitions_match_the_tables(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        support::models::check_state_machines(&bytes);
    }
}
