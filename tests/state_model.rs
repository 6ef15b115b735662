//! `TaskState` and `LifecycleState` against transition tables written out
//! independently of the code (the checker the fuzz target uses).

mod support;

#[test]
fn transitions_match_the_tables() {
    support::for_random_bytes(2048, 40, support::models::check_state_machines);
}

#[test]
fn the_async_executor_matches_its_model() {
    support::for_random_bytes(2048, 120, support::models::check_executor);
}

#[test]
fn the_local_executor_matches_its_model() {
    support::for_random_bytes(2048, 120, support::models::check_local_executor);
}
