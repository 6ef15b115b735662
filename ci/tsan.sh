#!/usr/bin/env bash
# Runs the concurrency suites under ThreadSanitizer: dinah-std's unit tests
# and the root integration tests that start threads. std is rebuilt with
# the sanitizer (-Zbuild-std), so the first run takes about a minute more.
# Needs a nightly toolchain with rust-src; if rustup cannot provide one, this
# part says so and is skipped.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"
# shellcheck source=ci/nightly.sh
source "$(dirname "$0")/nightly.sh"

if ! nightly_with rust-src; then
    echo "tsan: SKIPPED: no nightly toolchain with rust-src could be installed on this machine"
    exit 0
fi

host=$(rustc -vV | sed -n 's/^host: //p')
suites=(scheduler cancellation stress runtime_determinism queue_contract trace_contract executor_contract runtime_contract multi_executor multi_executor_telemetry multi_executor_stress multi_executor_service local_executor task_combinations panics_in_user_code hostile_input pools diagnose chrome_trace relay_stall sync_contract sync_model notify_contract mutex_contract oneshot_contract watch_contract broadcast_contract service_tools task_group net relay)
args=()
for suite in "${suites[@]}"; do
    args+=(--test "$suite")
done
# Not under TSan: thread_limits caps the address space, and TSan's shadow
# memory needs terabytes of it.
echo "tsan: tests/thread_limits.rs is not run here (an address-space cap and TSan's shadow memory exclude each other)"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
export RUSTFLAGS="-Zsanitizer=thread" RUSTDOCFLAGS="-Zsanitizer=thread"
export CARGO_TARGET_DIR=target/tsan
# Reports become failures. The capacity tests ask for storage no allocator
# can give and check the typed error, so malloc must return null there
# rather than TSan aborting.
# ci/tsan.supp: the races crossbeam's queues make on purpose, or that TSan
# reports because it does not model fences (each with its reason there).
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 allocator_may_return_null=1 suppressions=$PWD/ci/tsan.supp"
# The multi-thread executor's stress test: a tenth of its million tasks.
export DINAH_STRESS_DIVISOR=10

step "ThreadSanitizer: dinah-std unit tests"
cargo +nightly test -Zbuild-std --target "$host" -p dinah-std --lib 2>&1 | tee "$log"
step "ThreadSanitizer: concurrency suites (${suites[*]})"
cargo +nightly test -Zbuild-std --target "$host" -p dinah "${args[@]}" 2>&1 | tee -a "$log"
record_test_counts "$log" tsan
