#!/usr/bin/env bash
# Every host test: unit, integration, property and doc tests, on each feature set.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

log=$(mktemp)
trap 'rm -f "$log"' EXIT

step "cargo test --workspace"
cargo test --workspace 2>&1 | tee -a "$log"
step "cargo test -p dinah --no-default-features (the facade without std: tests/facade.rs and a doctest that the hosted layer is absent)"
cargo test -p dinah --no-default-features 2>&1 | tee -a "$log"
step "cargo test -p dinah --features tracing --test tracing_bridge (the tracing bridge, seen by a tracing-subscriber layer)"
cargo test -p dinah --features tracing --test tracing_bridge 2>&1 | tee -a "$log"
step "cargo run --example runtime_basics"
cargo run --example runtime_basics
step "cargo run --example executor_basics"
cargo run --example executor_basics
step "cargo run --example pools"
cargo run --example pools

record_test_counts "$log" host-tests
